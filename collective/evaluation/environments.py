"""Which environments each episode plays: its test episode (pooled draws in whole blocks), its held-out
training episodes and its ceiling of R̄, all from the episode's own seeds, whatever batch it falls in."""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import replace

import numpy as np

from collective.config import EvaluationConfig
from collective.environments.ceiling import upsilon_best
from collective.environments.complexity import alphabet_normalised
from collective.environments.lambda_star import EnvironmentBatch
from collective.simulation.random_streams import episode_seed_table, training_seed_table


def generate_environments(config: EvaluationConfig, episodes: np.ndarray, seed_prefix: tuple[int, ...] = (),
                          training: bool | None = None) -> EnvironmentBatch:
    """The environments of the given episode indices; every group given the same episodes,
    seed and prefix faces the same patterns and start cells (a paired design). With `training`
    (default: when the configuration's learners train on held-out episodes) each episode also
    gets `config.training_episodes` held-out training episodes (`held_out_training`). Normalised K
    is rescaled here to the config's `k_normalisation`, for every environment class."""
    environment = config.environment()
    if config.pattern_pool:  # whole blocks of episodes draw their patterns together (`LambdaStar.generate`)
        blocks, keep = pool_blocks(np.asarray(episodes, np.int64), config.pattern_pool)
        batch = environment.generate(episode_seed_table(config.seed, blocks, seed_prefix), config.group_size, keep)
    else:
        batch = environment.generate(episode_seed_table(config.seed, episodes, seed_prefix), config.group_size)
    batch = replace(batch, episode_index=np.asarray(episodes, np.int64), seed_prefix=tuple(seed_prefix))
    if config.k_normalisation == "log_alphabet":
        batch = replace(batch, k_normalised=alphabet_normalised(batch.k_normalised, config.rows * config.cols))
    if config.trains_on_held_out if training is None else training:
        batch = replace(batch, training=held_out_training(
            environment, config.seed, episodes, seed_prefix, batch, config.training_episodes, config.group_size))
    return batch


def pool_blocks(episodes: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """(the episode indices of every whole block of `block` episodes, from 0, that holds one of `episodes`,
    the row of each of `episodes` among them): an episode's patterns then depend on its block alone, never
    on how episodes are split into batches or among workers."""
    numbers = np.unique(episodes // block)
    blocks = (numbers[:, None] * block + np.arange(block)).ravel()
    return blocks, np.searchsorted(numbers, episodes // block) * block + episodes % block


def with_ceiling(config: EvaluationConfig, environments: EnvironmentBatch) -> EnvironmentBatch:
    """The batch with each episode's ceiling of R̄ for the configured group (`ceiling.upsilon_best`),
    which depends on the environments, the start cells and the reward radius only."""
    return replace(environments, upsilon_best=upsilon_best(environments, config.rows, config.cols, config.iterations,
                                                           config.reward_radius))


TRAINING_REDRAWS = 100  # further draws per episode to replace training episodes identical to it


def held_out_training(environment, seed: int, episodes: np.ndarray, seed_prefix: tuple[int, ...],
                      tests: EnvironmentBatch, count: int, group_size: int) -> EnvironmentBatch:
    """`count` training episodes for each test episode of `tests` (the given episode indices), rows
    episode-major (e·count + j), drawn by the environment class's own `generate`, so with the same
    grid, T, K distribution and ⊖ pairing, from the training branch of the seed tree
    (`training_seed_table`), never from a test episode's seeds. A draw that equals its test episode
    (start cells, ⊕, ⊖ and field; possible in tiny classes only) is replaced by the episode's next
    draw: a learner is never scored on an episode it trained on (paper 000 §5.2). Depends on the
    episode indices only, not on how episodes are batched."""
    seeds = np.concatenate([training_seed_table(seed, int(e), np.arange(count), seed_prefix) for e in episodes]
                           or [np.empty((0, 3), np.uint64)])
    training = environment.generate(seeds, group_size)
    next_draw = np.full(len(episodes), count)
    for _ in range(TRAINING_REDRAWS):
        repeats = np.flatnonzero(_equals_its_test(training, tests, count))
        if not len(repeats):
            return training
        redraws = []
        for owner in repeats // count:  # in slot order, each takes its episode's next unused draw
            redraws.append(training_seed_table(seed, int(episodes[owner]), next_draw[owner:owner + 1], seed_prefix))
            next_draw[owner] += 1
        replacement = environment.generate(np.concatenate(redraws), group_size)
        for field in dataclasses.fields(EnvironmentBatch):
            values = getattr(training, field.name)
            if values is not None and field.name not in ("training", "seed_prefix"):
                values[repeats] = getattr(replacement, field.name)
    raise ValueError(f"the environment class has too few distinct episodes: {TRAINING_REDRAWS} draws did not "
                     "give a training episode unlike its test episode")


def _equals_its_test(training: EnvironmentBatch, tests: EnvironmentBatch, count: int) -> np.ndarray:
    """(episodes·count,) whether each training episode is its test episode: same start cells, ⊕ and ⊖
    paths and (landscapes) field."""
    same = np.ones(len(training), bool)
    for name in ("starts", "good", "evil", "landscapes"):
        values = getattr(training, name)
        if values is not None:
            same &= (values.reshape(len(tests), count, -1) == getattr(tests, name)[:, None, :]).all(axis=2).ravel()
    return same


def prepared_environments(config: EvaluationConfig, episodes: np.ndarray,
                          stopping: threading.Event | None = None) -> EnvironmentBatch | None:
    """A batch's environments with their ceilings (`with_ceiling`), ready to play and score; None when
    `stopping` is set once they are generated (nobody will play them: `batches_ahead`)."""
    generated = generate_environments(config, episodes)
    return None if stopping is not None and stopping.is_set() else with_ceiling(config, generated)
