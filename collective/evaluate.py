"""Evaluate one agent group on Λ*: stream batches of episodes through the simulator and score them.

A group of built-ins plays in the fused kernel (`collective.simulation.kernel`); a group with a
plug-in behaviour or protocol plays on the stepping core (`collective.simulation.stepping`), its
plug-in objects made once per evaluation (`plugin_group`), so a persistent agent keeps what it
learned from batch to batch, in episode order. Memory stays flat whatever the number of episodes:
each batch is generated, simulated and folded into a `ScoreAccumulator`, then dropped. Episode e
always gets the same seeds (see `random_streams`), so the result does not depend on the batch size,
nor on the number of threads a batch is played in (`play`'s `threads`: episodes are independent).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from collective.behaviours import load_behaviour
from collective.config import (BATCHES_PREPARED_AHEAD, LEARNER_STATES, LEARNER_TRAININGS, TARGET_AGENT_STEPS_PER_BATCH,
                               EvaluationConfig, learner_table_bytes, memory_needs, physical_memory_limit,
                               training_chunk)
from collective.environments.ceiling import upsilon_best
from collective.environments.complexity import alphabet_normalised
from collective.progress import Progress, announce_compilation, compilation_done
from collective.environments.lambda_star import EnvironmentBatch
from collective.simulation.random_streams import (AGENT_SEED, episode_seed_table, table_training_seed_table,
                                                 training_seed_table)
from collective.analysis.scores import ExactSum, ScoreAccumulator, UpsilonEstimate, legg_hutter_log2_weights
from collective.environments.pattern_probability import pattern_log2_probabilities
from collective.simulation.compiled_plugins import CompiledBehaviour, CompiledProtocol
from collective.simulation.kernel import (ONLINE, KernelSwitches, Tables, learner_workspace, simulate_batch,
                                          table_blocks, talk_workspace)
from collective.simulation.stepping import Group, Member, play_group, play_overhearing
from collective.version import VERSION
from collective.protocols import NONE, load_protocol
from collective.protocols.kernel_support import READS_AND_WRITES


@dataclass(frozen=True)
class EvaluationResult:
    config: EvaluationConfig
    estimate: UpsilonEstimate
    entropy_bits: float
    wall_seconds: float
    # The compiled kernel's: CPU seconds of the threads that played (`time.thread_time`, summed over `threads`),
    # their own work, not the minutes the threads preparing the next batches took from them on a busy machine.
    # The stepping core's (plug-ins, the sham): wall seconds, since a plug-in may work in threads of its own
    # (a built-in group's sham played in threads: each thread's, summed).
    kernel_seconds: float
    agent_steps: int  # scored agent-steps
    training_steps: int  # learner agent-steps spent in training passes
    messages: float  # protocol messages over all passes (spec §6)
    bits: float
    compile_seconds: float = 0.0  # loading or compiling the kernels, outside wall_seconds
    local_optima_mean: float | None = None  # landscapes only (spec §7)
    correlation_length_mean: float | None = None
    transfers: float = 0.0  # messages under the reads_and_writes accounting, over all passes
    message_entropy_bits: float = math.nan  # mean over the episodes with messages (protocols/__init__.py)
    # means over the episodes with messages of D/T and entropy x D/T, D the scored pass's distinct messages
    distinct_messages_per_iteration: float = math.nan
    distinct_information_bits_per_iteration: float = math.nan

    @property
    def information_bits_per_iteration(self) -> float:
        """Entropy per message times the reads_and_writes messages per scored iteration (0 without any)."""
        per_iteration = self.transfers / (self.estimate.episodes * self.config.iterations)
        return per_iteration * self.message_entropy_bits if per_iteration else 0.0
    upsilon_best: float | None = None  # mean ceiling of R̄ (`ceiling.upsilon_best`; exact at threshold 1)
    k_evil_mean: float | None = None  # mean K of ⊖'s played path (Λ* only)
    # of wall_seconds, the time spent waiting for environments and ceilings (`batches_ahead`); not recorded
    generation_wait_seconds: float = 0.0
    threads: int = 1  # the most kernel threads a batch was played in (`play`); no number depends on it

    def as_record(self) -> dict[str, object]:
        """Flat JSON-ready record: results first, then every config field (spec §3-4)."""
        e = self.estimate
        total_steps = self.agent_steps + self.training_steps
        return {
            "upsilon": e.upsilon, "ci95_low": e.ci95_low, "ci95_high": e.ci95_high, "std": e.std,
            "upsilon_legg_hutter": e.upsilon_legg_hutter, "legg_hutter_ci95_low": e.legg_hutter_ci95_low,
            "legg_hutter_ci95_high": e.legg_hutter_ci95_high,
            "legg_hutter_effective_episodes": e.legg_hutter_effective_episodes, **e.interval_notes(),
            "episodes": e.episodes, "iterations": self.config.iterations,
            "group_size": self.config.group_size, "grid": self.config.grid,
            "behaviour": self.config.behaviour, "protocol": self.config.protocol,
            "profile": self.config.profile, "k_mean": e.k_mean, "k_normalised_mean": e.k_normalised_mean,
            "k_evil_mean": self.k_evil_mean, "upsilon_best": self.upsilon_best,
            "entropy_bits": self.entropy_bits, "seed": self.config.seed,
            "wall_seconds": self.wall_seconds, "kernel_seconds": self.kernel_seconds,
            "compile_seconds": self.compile_seconds, "kernel_threads": self.threads,
            "agent_steps": self.agent_steps, "training_steps": self.training_steps,
            "agent_steps_per_second": total_steps / self.kernel_seconds if self.kernel_seconds else None,
            "messages_per_iteration": self.messages / (e.episodes * self.config.iterations),
            "bits_per_iteration": self.bits / (e.episodes * self.config.iterations),
            "message_entropy_bits": _finite(self.message_entropy_bits),
            "information_bits_per_iteration": _finite(self.information_bits_per_iteration),
            "distinct_messages_per_iteration": _finite(self.distinct_messages_per_iteration),
            "distinct_information_bits_per_iteration": _finite(self.distinct_information_bits_per_iteration),
            "communication_accounting": self.config.communication_accounting,
            "communication_control": self.config.communication_control,
            "mix": self.config.mix, "protocol_params": dict(self.config.protocol_params), "env": self.config.env,
            "local_optima_mean": self.local_optima_mean, "correlation_length_mean": self.correlation_length_mean,
            "version": VERSION,
            "config": self.config.as_record(),
        }


def _finite(value: float) -> float | None:
    """A float for JSON: None where it is NaN (not measured)."""
    return None if math.isnan(value) else value


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


@dataclass(frozen=True)
class EpisodeRun:
    """One simulated batch of episodes."""

    mean_rewards: np.ndarray  # (episodes,) R̄ per episode (paper 003 Definition 2)
    environments: EnvironmentBatch
    kernel_seconds: float
    messages: float  # sent by the protocol over the batch, training passes included (the config's accounting)
    bits: float
    # (episodes, agents) each agent's mean reward per iteration; None for a homogeneous group on the fused
    # kernel (its per-capita score is R̄; see `simulate_batch`)
    agent_scores: np.ndarray | None = None
    positions: np.ndarray | None = None  # (episodes, T+1, agents) with record=True
    rewards: np.ndarray | None = None  # (episodes, T, agents) with record=True
    transfers: float = 0.0  # messages under the reads_and_writes accounting (protocols/__init__.py)
    message_entropy: np.ndarray | None = None  # (episodes,) bits per message, NaN without messages
    distinct_messages: np.ndarray | None = None  # (episodes,) distinct messages of the scored pass, NaN without
    threads: int = 1  # kernel threads that played the batch (`play`)


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


def play(config: EvaluationConfig, environments: EnvironmentBatch, record: bool = False,
         group: Group | None = None, tables: Tables | None = None, threads: int = 1) -> EpisodeRun:
    """Play the configured group on a batch of environments; `record` keeps the scored trajectories.
    A plug-in group plays on the stepping core with `group` (made once per evaluation by
    `plugin_group`, so that persistent plug-ins keep their state), or a fresh one; so does the sham
    control (`play_sham`). Learners that keep their tables (`learner_training`) play with `tables`
    (an online learner's, carried from batch to batch by `evaluate`), or with their pretrained
    tables (`trained_tables`; an online learner's copied, so each call starts from them). On the
    fused kernel, and for a built-in group's sham, up to `threads` threads play runs of the batch's
    episodes at once (`_play_in_threads`, `_sham_in_threads`)."""
    load_code(config)
    if config.on_stepping_core:
        if config.sham and not (record or config.uses_plugins):  # built-ins: no state beyond the batch
            threads = min(threads, len(environments) * config.group_size // MIN_SHAM_LANES_PER_THREAD)
            if threads > 1:
                return _sham_in_threads(config, environments, threads)
        group = group or plugin_group(config)
        if config.sham:
            return play_sham(config, environments, record, group)
        return _episode_run(play_group(group, environments, record), environments)
    if config.keeps_tables and tables is None:
        tables = starting_tables(config, environments.seed_prefix)
    if plays_in_threads(config) and not record:
        steps = len(environments) * episode_agent_steps(config)
        threads = min(threads, len(environments), steps // MIN_STEPS_PER_THREAD, threads_with_room(config))
        if threads > 1:
            return _play_in_threads(config, environments, threads, tables)
    return _play(config, environments, record, tables)


def plays_in_threads(config: EvaluationConfig) -> bool:
    """Whether `play` may cut a batch across threads: on the fused kernel, unless the learners learn online
    (their one table is written episode after episode, in order)."""
    return not (config.on_stepping_core or config.learns_online)


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


@functools.lru_cache(maxsize=256)
def threads_with_room(config: EvaluationConfig) -> int:
    """The most kernel threads whose learner tables fit in memory beside the run's arrays: the memory check
    (`config.memory_needs`) counts one set of per-episode tables, and each further thread makes its own (at
    most 2 x `learner_table_bytes` with its written-state list and reward table). Pretrained tables are shared."""
    if config.keeps_tables or not config.learner_count:
        return sys.maxsize
    needs = sum(memory_needs(config, batches=1 + BATCHES_PREPARED_AHEAD).values())
    return 1 + max(0, (physical_memory_limit() - needs) // (2 * learner_table_bytes(config)))


def _play_in_threads(config: EvaluationConfig, environments: EnvironmentBatch, threads: int,
                     tables: Tables | None) -> EpisodeRun:
    """The batch cut into CHUNKS_PER_THREAD x `threads` runs of consecutive episodes (`EnvironmentBatch.split`),
    played by `threads` threads at once (the kernel releases the GIL), each run with a protocol workspace and
    learner tables of its own (pretrained `tables`: shared, only read while scoring; each run its own count of
    written states, which stays 0), and joined in episode order (`joined_runs`). Every number is the one a
    single call gives: an episode's play depends on its own arrays only (tables reset per episode or
    read-only; the batch's message counts are whole numbers, exact in any order)."""
    def played(chunk: EnvironmentBatch) -> EpisodeRun:
        own = None if tables is None else tables._replace(n_written=np.zeros(1, np.int64))
        return _play(config, chunk, False, own)

    return _joined_in_threads(played, environments, min(len(environments), CHUNKS_PER_THREAD * threads), threads)


def _joined_in_threads(played, environments: EnvironmentBatch, parts: int, threads: int) -> EpisodeRun:
    """`played` (a run of episodes -> its EpisodeRun) on `parts` runs of consecutive episodes of the batch
    (`EnvironmentBatch.split`), by `threads` threads at once, joined in episode order (`joined_runs`)."""
    with ThreadPoolExecutor(threads, thread_name_prefix="collective-play") as pool:
        runs = list(pool.map(played, environments.split(parts)))
    return joined_runs(runs, environments, threads)


def joined_runs(runs: list[EpisodeRun], environments: EnvironmentBatch, threads: int = 1) -> EpisodeRun:
    """Runs of consecutive parts of `environments` (without records), played in `threads` threads, as one run
    of the whole batch: per-episode arrays joined in order, counts and kernel seconds summed."""
    def joined(name: str):
        parts = [getattr(run, name) for run in runs]
        return None if parts[0] is None else np.concatenate(parts)

    return EpisodeRun(joined("mean_rewards"), environments, sum(run.kernel_seconds for run in runs),
                      sum(run.messages for run in runs), sum(run.bits for run in runs), joined("agent_scores"),
                      transfers=sum(run.transfers for run in runs), message_entropy=joined("message_entropy"),
                      distinct_messages=joined("distinct_messages"), threads=threads)


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
    tables = _workspace(config, ONLINE)
    rewards, seconds = [], 0.0
    for first in range(0, config.q_training_passes, training_chunk(config)):
        run = _play(config, table_training_batch(config, seed_prefix, first, first + training_chunk(config)),
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


def _workspace(config: EvaluationConfig, table_mode: int) -> Tables:
    """Fresh learner tables for the configured group, played in `table_mode`."""
    codes = np.array([load_behaviour(name).cls.code for name in config.behaviours], np.int64)
    protocol = load_protocol(config.protocol).cls
    states = LEARNER_STATES.index(config.learner_state)
    blocks = table_blocks(config.learner_count, config.coordination_threshold, protocol.code, table_mode, states,
                          config.rows, config.cols, config.iterations)
    return learner_workspace(codes, config.rows, config.cols, config.iterations, config.passes_per_episode,
                             config.q_initial, blocks, states, table_mode)


def _episode_run(run, environments: EnvironmentBatch) -> EpisodeRun:
    """A stepping-core `GroupRun` as the fused kernel's `EpisodeRun`."""
    return EpisodeRun(run.mean_rewards, environments, run.seconds, run.messages, run.bits, run.agent_scores,
                      run.positions, run.rewards, run.transfers, run.message_entropy, run.distinct_messages)


SHADOW_BRANCH = 1  # spawn key of a shadow episode's SeedSequence under its scored episode's agent seed


def shadow_environments(config: EvaluationConfig, environments: EnvironmentBatch) -> EnvironmentBatch:
    """Each episode's shadow: another environment of the same class (pattern, ⊖, start cells, agents'
    seed) drawn from SeedSequence(the episode's agent seed, spawn_key=(SHADOW_BRANCH,)), a branch of the
    episode's own seeds, so a shadow never depends on the batch or the worker that plays it."""
    table = np.array([np.random.SeedSequence(int(seed), spawn_key=(SHADOW_BRANCH,)).generate_state(3, np.uint64)
                      for seed in environments.agent_seeds], np.uint64).reshape(-1, 3)
    return config.environment().generate(table, config.group_size)


def play_sham(config: EvaluationConfig, environments: EnvironmentBatch, record: bool, group: Group) -> EpisodeRun:
    """The sham-communication control (issue 14 point 4, issue 22 point 2): a second copy of the group plays
    each episode's shadow for real; in the episode, each member keeps its own sensing and its own part in
    the protocol (its report, bid, deposit or write), and hears at every iteration what the protocol tells
    it when every other member is where it is in the shadow (`play_overhearing`). The group keeps the
    protocol's rule, traffic and herding, but no other member tells it about its own episode. Traffic and
    message entropy are the shadow's (what the others said)."""
    return _episode_run(play_overhearing(group, plugin_group(config), environments,
                                         shadow_environments(config, environments), record), environments)


def _sham_in_threads(config: EvaluationConfig, environments: EnvironmentBatch, threads: int) -> EpisodeRun:
    """A built-in group's sham control on `threads` runs of consecutive episodes at once, each with a group
    of its own (the stepping core's compiled steps release the GIL), joined in episode order (`joined_runs`):
    the numbers of one call, as each episode's play and shadow depend on its own seeds only."""
    return _joined_in_threads(lambda part: play_sham(config, part, False, plugin_group(config)), environments,
                              threads, threads)


def plugin_group(config: EvaluationConfig) -> Group:
    """The configured group as stepping-core members: one object per distinct behaviour (serving all
    agents of that behaviour) and one for the protocol; kernel built-ins as their compiled forms."""
    behaviours = np.array(config.behaviours)
    members = []
    for name in dict.fromkeys(config.behaviours):
        plugin = load_behaviour(name)
        instance = CompiledBehaviour(plugin.cls.code) if plugin.builtin else \
            plugin.instantiate(config.behaviour_plugin_params(plugin))
        members.append(Member(plugin, instance, np.flatnonzero(behaviours == name)))
    protocol = load_protocol(config.protocol)
    talker = None
    if not protocol.builtin:
        talker = Member(protocol, protocol.instantiate(dict(config.protocol_params)),
                        np.flatnonzero(config.protocol_members))
    elif protocol.cls.code != NONE:
        talker = Member(protocol, CompiledProtocol(protocol.cls.code, config.protocol_values, config.accounting_offset),
                        np.flatnonzero(config.protocol_members))
    return Group(members, talker, config.group_size, config.rows, config.cols, config.iterations,
                 config.observation_range, config.reward_radius, config.coordination_threshold,
                 kernel_switches(config, None))


# The smallest episode, played once per process to load the compiled code before any timing.
TINY = EvaluationConfig(behaviour="random", rows=3, cols=3, iterations=2, episodes=1, k_min=None, k_max=None)


def load_code(config: EvaluationConfig) -> None:
    """Load (or compile) everything `config` plays on, before anything is timed: the kernel of its
    environment class in the variant it needs, and the stepping core when it plays there (a plug-in
    or the sham control)."""
    load_kernel(config.env)
    if config.on_stepping_core:
        load_stepping_core(config.env)
    if config.sham:
        load_sham(config.env)


@functools.lru_cache(maxsize=256)
def load_generator(config: EvaluationConfig) -> None:
    """Once per run, before timing (not per played batch: an anytime test plays a new T per step):
    compile what generating `config`'s environments needs by generating one episode (with its
    held-out training episodes): the `sound` profile's stratified K, K on the played paths and
    independent ⊖ run compiled functions that the tiny paper episode of `load_kernel` never calls. Pooled
    draws run in a block of one episode here: a block of the run's own (512 episodes, ~7 ms) would be drawn
    outside the run's timing and kept for it (`pooled_patterns`), so that its wall would miss that draw."""
    generate_environments(config.with_changes(pattern_pool=1) if config.pattern_pool else config, np.arange(1))


@functools.cache
def load_kernel(env: str = "lambda_star") -> None:
    """Have numba load (or compile) the simulator and the pattern generators in this process now,
    before anything is timed, so that kernel_seconds measure simulation only: one tiny episode of
    the environment class (its generator). Every class and group, mixed or not, plays one compiled
    kernel (a landscape's field travels by address, a group of one behaviour keeps no per-agent
    totals in an empty array), so only the first call compiles it; and the exact sums that score it."""
    tiny = TINY.with_changes(env=env, landscape_peaks=1)
    _play(tiny, with_ceiling(tiny, generate_environments(tiny, np.arange(1))), record=False)
    ExactSum().add(np.zeros(1))


# The smallest talking group of the stepping core: two searchers under a protocol.
TINY_TALKING = TINY.with_changes(behaviour="local_search", group_size=2, protocol="broadcast", landscape_peaks=1)


@functools.cache
def load_stepping_core(env: str = "lambda_star") -> None:
    """The same for the stepping core and the built-ins' compiled forms, in the processes that
    play plug-ins only: one tiny episode of searchers under a protocol in the environment class
    (its generator)."""
    talking = TINY_TALKING.with_changes(env=env)
    play_group(plugin_group(talking), generate_environments(talking, np.arange(1)))


@functools.cache
def load_sham(env: str = "lambda_star") -> None:
    """The same for the sham control, whose rule loop (`compiled_plugins.builtin_overhear`, every protocol's
    rule on an `Overheard` scene) the stepping core's tiny episode does not compile: left to the first sham,
    its ~25 s of compilation were timed as play. The tiny episode under its protocol's sham."""
    talking = TINY_TALKING.with_changes(env=env)
    sham = talking.with_changes(communication_control="sham")
    play_sham(sham, generate_environments(talking, np.arange(1)), False, plugin_group(talking))


def kernel_cached() -> bool:
    """Whether numba's cache for these sources (`numba_cache`) holds the simulator, so that
    `load_kernel` loads it rather than compiling it (about half a minute)."""
    from numba.core import config

    return any(Path(config.CACHE_DIR).rglob("*simulate_batch*.nbi"))


def load_compiled(config: EvaluationConfig, notify: bool = False) -> float:
    """Load (or compile) the code `config` plays on; returns the seconds it took. With `notify`,
    a compilation is announced on stderr as it starts (`progress.announce_compilation`) and its
    end once everything is loaded, so that the first run is not silent for a minute."""
    if notify:
        announce_compilation()
    started = time.perf_counter()
    load_code(config)
    load_generator(config)
    seconds = time.perf_counter() - started
    if notify:
        compilation_done()
    return seconds


def _play(config: EvaluationConfig, environments: EnvironmentBatch, record: bool, tables: Tables | None = None,
          table_mode: int | None = None) -> EpisodeRun:
    """Play on the fused kernel; learners with `tables` (else fresh ones), in `table_mode` (else the config's)."""
    table_mode = LEARNER_TRAININGS.index(config.learner_training) if table_mode is None else table_mode
    codes = np.array([load_behaviour(name).cls.code for name in config.behaviours], np.int64)
    protocol = load_protocol(config.protocol).cls
    talk = talk_workspace(protocol.code, config.protocol_values, config.protocol_members, config.group_size,
                          config.rows, config.cols, config.observation_range, config.iterations, len(environments))
    shape = (len(environments), config.group_size, config.iterations) if record else (0, 0, 0)
    positions = np.zeros((shape[0], shape[1], shape[2] + record), np.int32)  # (episodes, agents, T+1)
    rewards = np.zeros(shape, np.float64)  # (episodes, agents, T)
    mixed = len(set(config.behaviours)) > 1  # a mix's per-capita scores need each agent's total
    agent_totals = np.zeros((len(environments), config.group_size if mixed else 0))  # (episodes, agents), or none kept
    learner = config.learner
    tables = _workspace(config, table_mode) if tables is None else tables
    training = training_arrays(config, environments)
    start = time.thread_time()  # the playing thread's CPU: not the time preparing threads take from it
    mean_rewards = simulate_batch(
        codes, config.rows, config.cols, config.iterations, config.observation_range, config.reward_radius,
        config.coordination_threshold, environments.good, environments.evil, environments.fields(),
        environments.starts, environments.agent_seeds, *training,
        learner.training_passes, learner.alpha, learner.gamma, learner.epsilon,
        learner.q_initial, learner.reward_scale, tables, talk, record, positions, rewards, agent_totals,
        kernel_switches(config, environments), LEARNER_STATES.index(config.learner_state), table_mode)
    seconds = time.thread_time() - start
    messages, bits = talk.comm[config.accounting_offset:config.accounting_offset + 2]
    agent_scores = agent_totals / config.iterations if mixed else None
    traffic = dict(transfers=float(talk.comm[READS_AND_WRITES]), message_entropy=talk.entropy,
                   distinct_messages=talk.distinct)
    if record:  # reported as (episodes, T+1, agents) and (episodes, T, agents)
        return EpisodeRun(mean_rewards, environments, seconds, messages, bits, agent_scores,
                          positions.transpose(0, 2, 1), rewards.transpose(0, 2, 1), **traffic)
    return EpisodeRun(mean_rewards, environments, seconds, messages, bits, agent_scores, **traffic)


def kernel_switches(config: EvaluationConfig, environments: EnvironmentBatch | None) -> KernelSwitches:
    """The 2016 switches the kernel's behaviours read, and the batch row of the evaluation's episode 0
    (-1 when the batch does not hold it or its indices are unknown)."""
    indices = environments.episode_index if environments is not None else None
    first = np.flatnonzero(indices == 0) if indices is not None else ()
    return KernelSwitches(int(config.cpp_first_observation), int(config.cpp_imitation),
                          int(config.cpp_learner_bootstrap), int(config.cpp_oracle), int(first[0]) if len(first) else -1)


def training_arrays(config: EvaluationConfig, environments: EnvironmentBatch) -> tuple:
    """What the learners train on, as `simulate_batch` takes it: ⊕ and ⊖ paths (episodes, n, T+1),
    fields (episodes, n, cells) ((episodes, n, 0) for Λ*), start cells (episodes, n, agents) and world seeds
    (episodes, n). Held out: the batch's training episodes (n = training_episodes), reshaped, not
    copied; replay: the scored episodes themselves as views with n = 1 (paper 003 §5.2.1)."""
    if not config.trains_on_held_out:
        return (environments.good[:, None], environments.evil[:, None], environments.fields()[:, None],
                environments.starts[:, None],
                environments.agent_seeds[:, None])
    training, count = environments.training, config.training_episodes
    if training is None or environments.training_episodes != count:
        raise ValueError(f"learning_protocol held_out needs {count} training episodes per episode; the batch has "
                         f"{environments.training_episodes} (generate it with generate_environments)")
    episodes = len(environments)
    fields = training.fields()  # (episodes x n, cells), converted once
    return (training.good.reshape(episodes, count, -1), training.evil.reshape(episodes, count, -1),
            fields.reshape(episodes, count, fields.shape[1]),
            training.starts.reshape(episodes, count, -1), training.agent_seeds.reshape(episodes, count))


def run_episodes(config: EvaluationConfig, episodes: np.ndarray, seed_prefix: tuple[int, ...] = (),
                 record: bool = False, group: Group | None = None, tables: Tables | None = None) -> EpisodeRun:
    """Generate the given episode indices' environments and play them."""
    return play(config, generate_environments(config, episodes, seed_prefix), record, group, tables)


def prepared_environments(config: EvaluationConfig, episodes: np.ndarray,
                          stopping: threading.Event | None = None) -> EnvironmentBatch | None:
    """A batch's environments with their ceilings (`with_ceiling`), ready to play and score; None when
    `stopping` is set once they are generated (nobody will play them: `batches_ahead`)."""
    generated = generate_environments(config, episodes)
    return None if stopping is not None and stopping.is_set() else with_ceiling(config, generated)


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


def evaluate(config: EvaluationConfig, batch_size: int | None = None, progress: bool = False,
             threads: int | None = None) -> EvaluationResult:
    """Υ of the configured group over `config.episodes` episodes (paper 003 Definitions 2-3).
    `progress` shows progress on stderr (a bar on a terminal, else plain lines) and announces a
    compilation; compiling is timed apart (`compile_seconds`), outside `wall_seconds`. The next
    batch's environments are generated while the current one plays (`batches_ahead`); without a
    `batch_size`, the first batches ramp up to a full one (`ramps`). Each batch is played in up to
    `threads` kernel threads (default: `usable_cores`), with the same numbers as in one."""
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be 1 or more (got {threads})")
    threads = threads or usable_cores()
    used_threads = 1
    compile_seconds = load_compiled(config, notify=progress)
    started = time.perf_counter()
    size = batch_size or batch_episodes(config)
    group = plugin_group(config) if config.on_stepping_core else None
    tables = starting_tables(config) if config.keeps_tables else None  # online: carried from batch to batch
    accumulator = ScoreAccumulator()
    kernel_seconds = trained_tables(config).kernel_seconds if config.keeps_tables else 0.0
    messages = bits = transfers = 0.0  # whole numbers: exact in any order
    # float sums over episodes, exact so that no number depends on where batches end (`ExactSum`)
    best, k_evil, entropy_sum, distinct_sum, distinct_information_sum, optima, correlation = (
        ExactSum() for _ in range(7))
    entropy_episodes = 0
    generation_wait = 0.0
    label = f"{config.mix or config.behaviour} x{config.group_size}"
    with Progress(config.episodes, "episodes", "collective", label, enabled=progress) as bar, \
            contextlib.closing(batches_ahead(config, size, batch_size is None and ramps(config))) as batches:
        for episodes, environments, waited in batches:
            generation_wait += waited
            run = play(config, environments, group=group, tables=tables, threads=threads)
            used_threads = max(used_threads, run.threads)
            k_raw = run.environments.k_raw
            weights = legg_hutter_log2_weights(  # the patterns' probabilities only where the estimator reads them
                config.legg_hutter_estimator, k_raw, config.rows * config.cols,
                pattern_log2_probabilities(config, run.environments)
                if config.legg_hutter_estimator == "importance_bits" else None)
            accumulator.add(run.mean_rewards, k_raw, run.environments.k_normalised, weights)
            best.add(run.environments.upsilon_best)
            if run.environments.k_evil is not None:
                k_evil.add(run.environments.k_evil)
            kernel_seconds += run.kernel_seconds
            messages += run.messages
            bits += run.bits
            transfers += run.transfers
            measured = run.message_entropy[~np.isnan(run.message_entropy)]
            entropy_sum.add(measured)
            entropy_episodes += len(measured)
            spoke = ~np.isnan(run.distinct_messages)
            distinct_sum.add(run.distinct_messages[spoke])
            distinct_information_sum.add((run.distinct_messages * run.message_entropy)[spoke])
            if run.environments.landscapes is not None:
                optima.add(run.environments.local_optima)
                correlation.add(run.environments.correlation_length)
            bar.update(len(episodes))
    agent_steps = config.episodes * config.iterations * config.group_size
    return EvaluationResult(
        config=config, estimate=accumulator.estimate(), entropy_bits=config.environment().entropy_bits,
        wall_seconds=time.perf_counter() - started, kernel_seconds=kernel_seconds, compile_seconds=compile_seconds,
        agent_steps=agent_steps,
        training_steps=config.training_steps(config.episodes),
        messages=messages, bits=bits, transfers=transfers,
        message_entropy_bits=entropy_sum.value / entropy_episodes if entropy_episodes else math.nan,
        distinct_messages_per_iteration=distinct_sum.value / (entropy_episodes * config.iterations) if entropy_episodes
        else math.nan,
        distinct_information_bits_per_iteration=distinct_information_sum.value / (entropy_episodes * config.iterations)
        if entropy_episodes else math.nan,
        local_optima_mean=optima.value / config.episodes if config.env == "landscape" else None,
        correlation_length_mean=correlation.value / config.episodes if config.env == "landscape" else None,
        upsilon_best=best.value / config.episodes,
        k_evil_mean=k_evil.value / config.episodes if config.env != "landscape" else None,
        generation_wait_seconds=generation_wait, threads=used_threads)
