"""Which learner tables a group keeps (`learner_training` pretrained or online): `training_runs` independent
sets, each trained once per configuration and seed prefix on held-out episodes no test episode is drawn from;
which set plays which test episode; and the copy the test episodes start from."""
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
def trained_tables(config: EvaluationConfig, seed_prefix: tuple[int, ...] = (), run: int = 0) -> TrainedTables:
    """The tables of training run `run` a group's learners keep (`learner_training` pretrained or online; issue
    21), trained once per configuration, seed prefix (a sweep's cell) and run: the group plays q_training_passes passes as it plays
    test episodes, its learners learning ε-greedily (ONLINE), the tables never reset; pass p plays held-out
    episode p mod training_episodes, drawn by the environment class from the seeds of
    `table_training_seed_table` (a root no test episode is drawn from, one branch per run; paper 000 §5.2's
    no-reuse rule), with the agents' streams of row p. So the tables depend on the configuration, the prefix and
    the run only, never on the batch, the worker or the episodes scored."""
    tables = fresh_tables(config, ONLINE)
    rewards, seconds = [], 0.0
    for first in range(0, config.q_training_passes, training_chunk(config)):
        played = play_fused(config, table_training_batch(config, seed_prefix, first, first + training_chunk(config),
                                                         run), False, tables, ONLINE)
        rewards.append(played.mean_rewards)
        seconds += played.kernel_seconds
    return TrainedTables(tables, np.concatenate(rewards) if rewards else np.empty(0), seconds)


def table_training_batch(config: EvaluationConfig, seed_prefix: tuple[int, ...] = (), first: int = 0,
                         stop: int | None = None, run: int = 0) -> EnvironmentBatch:
    """Passes [first, stop) of the q_training_passes episodes `trained_tables` plays for run `run`, in order:
    pass p is held-out episode p mod training_episodes (the environment and start cells of seed row p mod n of
    the run's `table_training_seed_table`) with the agents' seed of row p."""
    passes = np.arange(first, min(config.q_training_passes, config.q_training_passes if stop is None else stop))
    count = min(config.training_episodes, config.q_training_passes)
    # each held-out episode drawn once (each row is drawn from its own seeds alone), then repeated in pass order
    held_out, pass_rows = np.unique(passes % count, return_inverse=True)
    drawn = config.environment().generate(table_training_seed_table(config.seed, held_out, seed_prefix, run),
                                          config.group_size).take(pass_rows)
    return replace(drawn, agent_seeds=table_training_seed_table(config.seed, passes, seed_prefix,
                                                                run)[:, AGENT_SEED].copy())


def starting_tables(config: EvaluationConfig, seed_prefix: tuple[int, ...] = (), run: int = 0) -> Tables:
    """The tables of run `run` the test episodes start from: the trained ones, copied when they keep learning
    (online)."""
    return _starting(config, trained_tables(config, tuple(seed_prefix), run).tables)


def _starting(config: EvaluationConfig, tables: Tables) -> Tables:
    return Tables(*(array.copy() for array in tables)) if config.learns_online else tables


def evaluation_tables(config: EvaluationConfig) -> tuple[dict[int, Tables], float]:
    """An evaluation's starting tables by training run, for the runs its episodes play (none without kept
    tables), and the kernel seconds their training took."""
    trained = {run: trained_tables(config, (), run) for run in range(config.runs_played(config.episodes))}
    return ({run: _starting(config, kept.tables) for run, kept in trained.items()},
            sum(kept.kernel_seconds for kept in trained.values()))


def episode_runs(config: EvaluationConfig, episodes: np.ndarray) -> np.ndarray | None:
    """(episodes,) the training run whose tables play each episode: episode e plays run e mod training_runs, so
    an episode's run depends on its index alone (never on how a cell is cut into units or batches, nor on how
    many episodes a sweep grows to), every run plays every stretch of a cell's episodes, and an online run's
    episodes come in episode order. None without kept tables: a per-episode learner trains its own table for
    every episode (each episode is its own run), and a group without learners has none."""
    return np.asarray(episodes, np.int64) % config.training_runs if config.keeps_tables else None
