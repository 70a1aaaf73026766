"""Which threads play a batch: how many the process may use, how many a batch is worth (its agent-steps, the
learner tables that fit in memory, a sham's lanes), and a batch cut into runs of consecutive episodes played
in threads at once and joined in episode order, every number the one a single call gives."""
from __future__ import annotations

import functools
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from collective.config import (BATCHES_PREPARED_AHEAD, EvaluationConfig, learner_table_bytes, memory_needs,
                               physical_memory_limit)
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluation.batches import episode_agent_steps
from collective.evaluation.fused_kernel import play_fused
from collective.evaluation.runs import EpisodeRun, joined_runs
from collective.simulation.kernel import Tables

MIN_STEPS_PER_THREAD = 200_000  # agent-steps (~5 ms of kernel): fewer would not win back starting a thread (~0.1 ms)
# A sham's thread steps episodes x agents at each iteration, between which Python holds the GIL: with fewer, the
# second thread saves less than the turns cost (notes/communication-speed.md, "The sham in threads").
MIN_SHAM_LANES_PER_THREAD = 500
CHUNKS_PER_THREAD = 4  # a batch is cut finer than its threads, so that a thread slowed by other work takes fewer


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, within a cgroup's CPU quota): `evaluate`'s default
    number of kernel threads."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:  # a container's quota, "max" or "<quota> <period>" (cgroup v2)
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        return min(cores, max(1, math.ceil(int(quota) / int(period)))) if quota != "max" else cores
    except (OSError, ValueError):
        return cores


def kernel_threads(config: EvaluationConfig, environments: EnvironmentBatch, threads: int, record: bool) -> int:
    """The threads `play` cuts a batch on the fused kernel across: at most `threads`, each with at least
    MIN_STEPS_PER_THREAD agent-steps and room for its learner tables (`threads_with_room`); one for a
    recorded batch or one that may not be cut (`plays_in_threads`)."""
    if not plays_in_threads(config) or record:
        return 1
    steps = len(environments) * episode_agent_steps(config)
    return min(threads, len(environments), steps // MIN_STEPS_PER_THREAD, threads_with_room(config))


def sham_threads(config: EvaluationConfig, environments: EnvironmentBatch, threads: int, record: bool) -> int:
    """The threads `play` cuts a sham batch across (`sham.sham_in_threads`): at most `threads`, each stepping
    at least MIN_SHAM_LANES_PER_THREAD episodes x agents; one for a recorded batch or a group with plug-ins
    (built-ins keep no state beyond the batch, a plug-in may)."""
    if record or config.uses_plugins:
        return 1
    return min(threads, len(environments) * config.group_size // MIN_SHAM_LANES_PER_THREAD)


def plays_in_threads(config: EvaluationConfig) -> bool:
    """Whether `play` may cut a batch across threads: on the fused kernel, unless the learners learn online
    (their one table is written episode after episode, in order)."""
    return not (config.on_stepping_core or config.learns_online)


@functools.lru_cache(maxsize=256)
def threads_with_room(config: EvaluationConfig) -> int:
    """The most kernel threads whose learner tables fit in memory beside the run's arrays: the memory check
    (`config.memory_needs`) counts one set of per-episode tables, and each further thread makes its own (at
    most 2 x `learner_table_bytes` with its written-state list and reward table). Pretrained tables are shared."""
    if config.keeps_tables or not config.learner_count:
        return sys.maxsize
    needs = sum(memory_needs(config, batches=1 + BATCHES_PREPARED_AHEAD).values())
    return 1 + max(0, (physical_memory_limit() - needs) // (2 * learner_table_bytes(config)))


def play_in_threads(config: EvaluationConfig, environments: EnvironmentBatch, threads: int,
                    tables: Tables | None) -> EpisodeRun:
    """The batch cut into CHUNKS_PER_THREAD x `threads` runs of consecutive episodes (`EnvironmentBatch.split`),
    played on the fused kernel by `threads` threads at once (the kernel releases the GIL), each run with a
    protocol workspace and learner tables of its own (pretrained `tables`: shared, only read while scoring; each
    run its own count of written states, which stays 0), and joined in episode order (`joined_runs`). Every
    number is the one a single call gives: an episode's play depends on its own arrays only (tables reset per
    episode or read-only; the batch's message counts are whole numbers, exact in any order)."""
    def played(chunk: EnvironmentBatch) -> EpisodeRun:
        own = None if tables is None else tables._replace(n_written=np.zeros(1, np.int64))
        return play_fused(config, chunk, False, own)

    return joined_in_threads(played, environments, min(len(environments), CHUNKS_PER_THREAD * threads), threads)


def joined_in_threads(played, environments: EnvironmentBatch, parts: int, threads: int) -> EpisodeRun:
    """`played` (a run of episodes -> its EpisodeRun) on `parts` runs of consecutive episodes of the batch
    (`EnvironmentBatch.split`), by `threads` threads at once, joined in episode order (`joined_runs`)."""
    with ThreadPoolExecutor(threads, thread_name_prefix="collective-play") as pool:
        runs = list(pool.map(played, environments.split(parts)))
    return joined_runs(runs, environments, threads)
