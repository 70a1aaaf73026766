"""Which learner tables a group keeps (`learner_training` pretrained or online): trained once per
configuration and seed prefix on held-out episodes no test episode is drawn from, and the copy the test
episodes start from."""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from collective.config import EvaluationConfig, training_chunk
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluation.fused_kernel import fresh_tables, play_fused
from collective.simulation.kernel import ONLINE, Tables
from collective.simulation.random_streams import AGENT_SEED, table_training_seed_table


@dataclass(frozen=True)
class TrainedTables:
    """A group's learner tables after training (`trained_tables`)."""

    tables: Tables  # as `learner_workspace` makes them
    mean_rewards: np.ndarray  # (q_training_passes,) R̄ of each training pass, in order: the training curve
    kernel_seconds: float


@functools.lru_cache(maxsize=2)  # a sweep unit's or an evaluation's batches reuse it; few, tables may be large
def trained_tables(config: EvaluationConfig, seed_prefix: tuple[int, ...] = ()) -> TrainedTables:
    """The tables a group's learners keep (`learner_training` pretrained or online; issue 21), trained once
    per configuration and seed prefix (a sweep's cell): the group plays q_training_passes passes as it plays
    test episodes, its learners learning ε-greedily (ONLINE), the tables never reset; pass p plays held-out
    episode p mod training_episodes, drawn by the environment class from the seeds of
    `table_training_seed_table` (a root no test episode is drawn from; paper 000 §5.2's no-reuse rule),
    with the agents' streams of row p. So the tables depend on the configuration and the prefix only,
    never on the batch, the worker or the episodes scored."""
    tables = fresh_tables(config, ONLINE)
    rewards, seconds = [], 0.0
    for first in range(0, config.q_training_passes, training_chunk(config)):
        run = play_fused(config, table_training_batch(config, seed_prefix, first, first + training_chunk(config)),
                         False, tables, ONLINE)
        rewards.append(run.mean_rewards)
        seconds += run.kernel_seconds
    return TrainedTables(tables, np.concatenate(rewards) if rewards else np.empty(0), seconds)


def table_training_batch(config: EvaluationConfig, seed_prefix: tuple[int, ...] = (), first: int = 0,
                         stop: int | None = None) -> EnvironmentBatch:
    """Passes [first, stop) of the q_training_passes episodes `trained_tables` plays, in order: pass p is
    held-out episode p mod training_episodes (the environment and start cells of seed row p mod n of
    `table_training_seed_table`) with the agents' seed of row p."""
    passes = np.arange(first, min(config.q_training_passes, config.q_training_passes if stop is None else stop))
    count = min(config.training_episodes, config.q_training_passes)
    # each held-out episode drawn once (each row is drawn from its own seeds alone), then repeated in pass order
    held_out, pass_rows = np.unique(passes % count, return_inverse=True)
    drawn = config.environment().generate(table_training_seed_table(config.seed, held_out, seed_prefix),
                                          config.group_size).take(pass_rows)
    return replace(drawn, agent_seeds=table_training_seed_table(config.seed, passes, seed_prefix)[:, AGENT_SEED].copy())


def starting_tables(config: EvaluationConfig, seed_prefix: tuple[int, ...] = ()) -> Tables:
    """The tables the test episodes start from: the trained ones, copied when they keep learning (online)."""
    tables = trained_tables(config, tuple(seed_prefix)).tables
    return Tables(*(array.copy() for array in tables)) if config.learns_online else tables
