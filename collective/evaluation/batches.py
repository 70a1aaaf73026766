"""Which episodes each batch holds, and their environments prepared ahead: a batch large enough to amortise
a kernel call, a ramp of small first batches so that play starts early, and the next batches generated in
background threads while the current one plays."""
from __future__ import annotations

import collections
import sys
import threading
import time

import numpy as np

from collective.config import BATCHES_PREPARED_AHEAD, TARGET_AGENT_STEPS_PER_BATCH, EvaluationConfig
from collective.evaluation.environments import prepared_environments


def batch_episodes(config: EvaluationConfig) -> int:
    """Episodes per batch: enough work per kernel call to amortise its overhead, or fewer when a
    plug-in declares `batch_episodes` (a persistent learner learns from batch to batch). With pooled
    draws (`pattern_pool`) on an evaluation whose numbers do not depend on where batches end (`ramps`),
    a whole number of pool blocks (rounded down: never more than the memory check counts): no batch of
    `batch_indices`, ramped or not (its ramp goes in whole blocks too), then cuts a block, which both batches
    would draw whole (`pool_blocks`)."""
    declared = [plugin.batch_episodes for plugin in config.plugins if plugin.batch_episodes]
    size = int(max(1, min([config.episodes, TARGET_AGENT_STEPS_PER_BATCH // episode_agent_steps(config)] + declared)))
    if config.pattern_pool and not declared and size >= config.pattern_pool and ramps(config):
        return size // config.pattern_pool * config.pattern_pool
    return size


def episode_agent_steps(config: EvaluationConfig) -> int:
    """Agent-steps the kernel plays per episode: its scored pass, training passes and a sham's shadow included."""
    steps = config.group_size * config.iterations * (2 if config.sham else 1)  # a sham plays each episode's shadow
    return steps * (1 + config.passes_per_episode)


FIRST_BATCH_SHARE = 8  # a ramped evaluation's first batch: 1/8 of a batch (`batch_indices`)


def batch_indices(episodes: int, size: int, ramp: bool = False, granule: int = 1) -> list[np.ndarray]:
    """The episode indices 0..episodes-1 in batches of `size`; with `ramp` the first batch holds
    1/FIRST_BATCH_SHARE of one and each next twice the last, up to `size`: play starts after a small
    batch's generation, and each next batch is generated while the last, half as large, plays
    (`batches_ahead`). When `granule` (a pool block) divides `size`, the ramp's first batch is a whole
    number of granules too, at least one, so that every batch edge is a block edge."""
    current = max(1, size // FIRST_BATCH_SHARE) if ramp else size
    if ramp and size % granule == 0:
        current = max(granule, current // granule * granule)
    indices, first = [], 0
    while first < episodes:
        indices.append(np.arange(first, min(first + current, episodes)))
        first += current
        current = min(size, 2 * current)
    return indices


def ramps(config: EvaluationConfig) -> bool:
    """Whether an evaluation may start with small batches (`batch_indices`): a group on the fused kernel
    whose learners do not learn in the test episodes. On the stepping core what a group records may
    depend on where batches end (a plug-in protocol's messages are counted per call, a persistent
    plug-in learns from batch to batch), and online learners carry their tables from batch to batch."""
    return not (config.learns_online or config.on_stepping_core)


def batches_ahead(config: EvaluationConfig, size: int, ramp: bool = False):
    """(episode indices, `prepared_environments`) for the evaluation's batches in order (`batch_indices`),
    the next BATCHES_PREPARED_AHEAD batches prepared in background threads while the caller plays the current
    one (the compiled generator, the ceiling and the kernel release the GIL), and the seconds the caller
    waited for each batch. When preparing costs more than playing (a fast group such as the oracle), two
    batches are prepared at once, on the core the kernel leaves idle while it waits; when playing costs
    more, one thread at a time refills what was played. Generation is pure, so the environments are the ones
    generated in turn. Closing the generator (the caller's error or Ctrl-C: use it in `contextlib.closing`)
    waits for the threads still preparing (`_join_preparing`), which skip their ceilings: a thread still
    inside compiled code when the interpreter finalises can abort the process (SIGABRT) as it comes back
    for the GIL."""
    indices = batch_indices(config.episodes, size, ramp, config.pattern_pool or 1)

    stopping = threading.Event()  # the caller stopped early: nobody will play what is being prepared

    def prepare(episodes: np.ndarray, outcome: list) -> None:
        try:
            outcome.append((True, prepared_environments(config, episodes, stopping)))
        except BaseException as error:  # handed to the caller, raised there
            outcome.append((False, error))

    def start(position: int) -> tuple[threading.Thread, list]:
        outcome: list = []
        thread = threading.Thread(target=prepare, args=(indices[position], outcome), daemon=True,
                                  name="collective-generation")
        thread.start()
        return thread, outcome

    ahead = collections.deque(start(position) for position in range(min(BATCHES_PREPARED_AHEAD, len(indices))))
    try:
        for position, episodes in enumerate(indices):
            waited = time.perf_counter()
            thread, outcome = ahead[0]
            while thread.is_alive():
                thread.join(0.1)  # a timed join, so that Ctrl-C reaches the caller at once
            ahead.popleft()
            waited = time.perf_counter() - waited
            done, value = outcome[0]
            if not done:
                raise value
            if position + BATCHES_PREPARED_AHEAD < len(indices):
                ahead.append(start(position + BATCHES_PREPARED_AHEAD))
            yield episodes, value, waited
    finally:
        stopping.set()
        _join_preparing([thread for thread, _ in ahead])


STOP_NOTICE_SECONDS = 1.0  # a stop that waits longer for the threads preparing batches says so


def _join_preparing(threads: list[threading.Thread]) -> None:
    """Wait for `batches_ahead`'s threads still preparing: each is inside one compiled call, which cannot be
    stopped (on a large grid with a long T a batch's generation can take seconds). A wait beyond
    STOP_NOTICE_SECONDS says so on stderr; a second Ctrl-C ends the wait (the threads then run on)."""
    started, told = time.perf_counter(), False
    for thread in threads:
        while thread.is_alive():
            thread.join(0.1)
            if not told and time.perf_counter() - started > STOP_NOTICE_SECONDS:
                print("collective: stopping: finishing the environments being prepared (Ctrl-C again to quit "
                      "at once)", file=sys.stderr, flush=True)
                told = True
