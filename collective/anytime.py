"""The anytime test (spec §8; paper 000 §5.2-5.3, Definitions 18 and 19).

Definition 18's algorithm, as this module runs it:

    Υ ← 0, ξ ← 1, n ← n₀ (or τ ← τ₀), S_used ← ∅
    while the test is not stopped:
        μ ← an environment of S \\ S_used with ξ − 1 ≤ K(μ) ≤ ξ;  if none: ξ ← ξ + 1, try again
        reward ← R̄ of the group on μ over n iterations (over τ seconds in Definition 18)
        Υ ← Υ + reward;  ξ ← ξ + ξ·reward/2;  n ← ⌈n + n/2⌉ (τ ← τ + τ/2);  S_used ← S_used ∪ {μ}
    return Υ / |S_used|

Where the paper leaves the mapping to the environment class open, our choices (all parameters):
- **ξ → environment.** The complexity function is the pattern complexity K (LZ76 phrases, spec §2)
  and the budget is the episode length T. The window ξ − 1 ≤ K ≤ ξ holds one integer, ⌊ξ⌋, when ξ is
  not whole (and ⌊ξ⌋ is the upper end when it is), so environment i has K = ⌊ξ⌋ and T = n, one
  episode of the configured group. K is limited to the configuration's K range and to the values
  the pattern generator reaches on the grid with T iterations (probed with `reachable_k` at
  min(T, `PROBE_ITERATIONS`)): below the smallest such K no environment exists and ξ rises by 1,
  as in Definition 18; above the largest, K is clamped to it.
- **Exhausted class.** The class is finite: once ξ − 1 exceeds the largest K it holds (the K range's
  top, as the generator reaches it at `PROBE_ITERATIONS`), no environment fits Definition 18's
  window and ξ, which keeps growing with the rewards, no longer names a complexity. The test goes on
  at the largest K (more environments still refine Υ), each such step is marked `exhausted`, the
  result records where it began (`exhausted_at`, `k_top`), and `xi_final` is reported as None.
- **Budget (Definition 19).** Paper 000 §5.3 changes line 6 to n ← 1 and line 21 to
  n ← ⌈n + n/2⌉ (the ceiling brackets: with n ← 1 a floor would never grow): `budget_rounding`
  "ceiling", `start_budget` 1 (profile `sound`). Profiles `paper` and `lambdastar2016` keep the
  earlier reading, spec §8's n ← n + ⌊n/2⌋, from n₀ = 10 (`budget_rounding` "floor").
- **Physical time (Definition 18, `time_based`).** The slot τ starts at τ₀ (default 1 µs, the
  paper's) and grows by half each environment. A compiled episode cannot be stopped half-way, so τ
  is converted into iterations at the group's measured speed (iterations per kernel second so far; a
  compiled group's kernel seconds are the CPU seconds of the thread that plays, a plug-in's wall seconds):
  T = max(n₀, ⌊τ·speed⌋); the trace records that speed and the kernel seconds actually spent. The
  speed is the simulator's on this machine, environment and training passes included: the built-in
  agents decide inside one compiled loop with the environment, where their own decision time cannot
  be timed apart. A time-based result therefore measures the machine as much as the agent: it is
  marked `machine_dependent` with the machine it ran on, and only interaction-based (Definition 19)
  results are to be compared across groups or machines.
- **Never reused.** Environment i draws its seeds from the spawn key (i, draw) (`random_streams`);
  two environments count as the same when the agents' start cells and a landscape's field agree and
  ⊕'s and ⊖'s paths agree over their common length, at most `IDENTITY_CELLS` cells (ceiling rule;
  the floor rule compares their first n₀ + 1 cells). A draw that repeats a used environment is
  redrawn; after `DRAWS_PER_LEVEL` repeats no unused environment is left at this ξ, and ξ rises by
  1 (Definition 18). Learners that
  train on held-out episodes (`learning_protocol` "held_out") train on `training_episodes` fresh
  episodes of the environment's K and budget (`evaluation.environments.held_out_training`, on the
  training branch of the environment's seeds, never equal to it); with "replay" they train on the scored
  environment itself, as paper 003 §5.2.1 does; either way their table is reset per environment
  (`learner_training` per_episode, whatever the profile says).
- **Reward-sensitive environments** (`reward_sensitive`, profile `sound`). Paper 000 draws the test's
  environments among the n_i-actions reward-sensitive ones (Definitions 10 and 15, §4: an environment that
  pays 0 whatever the agent does for its first interactions tells nothing about it). With the first budgets
  (T = 1-3 under the ceiling rule) an agent's reach is T king moves, so on a grid much wider than 2(T + 1)
  ⊕ and ⊖ are usually beyond every agent's reach: every group, the oracle included, scores 0 there, and ξ
  stands still. With `reward_sensitive` a draw is kept only when the first agent could stand within the
  reward radius of ⊕ or ⊖ at some iteration t <= T (its start within t + radius king moves of the object's
  cell at t), a necessary condition for its actions to change its reward. The first agent only, whatever the
  group's size: "some agent" would keep more draws for larger groups, so groups of different sizes would be
  tested on different environment distributions and their Υ would not compare; other draws are skipped without
  counting as repeats, up to `INSENSITIVE_DRAWS`. Draws are generated in batches (1, 2, 4, ... draws per
  call of the batch generator; draw d of a batch is the draw d generated alone). Off (`paper`,
  `lambdastar2016`): every draw is played, as before.
- **Stopping.** Between environments: KeyboardInterrupt, `budget_seconds` (Θ), `max_environments`,
  or an episode whose arrays (mostly learners' Q-tables, N·T·9 values each) would exceed
  `memory_limit_bytes` (a first environment above it is refused up front; `planned_agent_steps`,
  the work until the test stops by itself, is what `collective anytime --yes` confirms when huge).
  An environment in progress when Ctrl-C arrives is not counted; before the first
  environment completes the estimate is the algorithm's initial Υ = 0.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import platform
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from collective.config import PROFILES, ConfigError, EvaluationConfig
from collective.evaluation.environments import held_out_training
from collective.evaluation.play import play
from collective.environments.lambda_star import EnvironmentBatch
from collective.environments.patterns import PATTERN_GENERATORS, UnreachableK, reachable_k
from collective.output_files import replacing
from collective.simulation.kernel import heard_symbols
from collective.simulation.random_streams import episode_seed_table
from collective.version import VERSION

BUDGET_ROUNDINGS = ("ceiling", "floor")  # n ← ⌈n + n/2⌉ (paper 000 Definition 19), n ← n + ⌊n/2⌋ (spec §8)
START_BUDGET = 10  # n₀ of the floor rule, which cannot grow from n = 1
START_SECONDS = 1e-6  # τ₀ of Definition 18: one microsecond
PROBE_ITERATIONS = 200  # reachable K are probed at min(T, this); K saturates with longer episodes
DRAWS_PER_LEVEL = 20  # redraws of a used environment before ξ counts as exhausted
IDENTITY_CELLS = 1001  # path cells S_used keeps per environment (ceiling rule; see `_unused_environment`)
MEMORY_LIMIT_BYTES = 1 << 29
INSENSITIVE_DRAWS = 4096  # draws skipped as not reward-sensitive before ξ's level counts as exhausted


@dataclass(frozen=True)
class AnytimeConfig:
    """The group and environment class (`evaluation`; its iterations and episodes are unused) and
    the anytime test's own parameters."""

    evaluation: EvaluationConfig
    start_budget: int | None = None  # n₀; None: the profile's (1 with the ceiling rule, else START_BUDGET)
    time_based: bool = False
    start_seconds: float = START_SECONDS
    budget_seconds: float | None = None  # Θ; None: until interrupted
    max_environments: int | None = None
    memory_limit_bytes: int = MEMORY_LIMIT_BYTES
    budget_rounding: str | None = None  # BUDGET_ROUNDINGS; None: the profile's ("floor" unless it says)
    # only environments an agent can score in within the budget (module docstring); None: the profile's (False
    # unless it says)
    reward_sensitive: bool | None = None

    def __post_init__(self) -> None:
        defaults = PROFILES.get(self.evaluation.profile, {}).get("anytime_defaults", {})
        if self.evaluation.k_sampling == "stratified":  # the test picks each environment's K itself
            # (Definition 19, from K = 1 at n = 1), so a stratified K range, meant for fixed-T episodes,
            # gives way to the generator drawing the exact K asked, with the range's top kept; one K per
            # environment leaves a pool of draws (`pattern_pool`) nothing to share
            object.__setattr__(self, "evaluation", self.evaluation.with_changes(k_sampling="generator", k_min=1,
                                                                                pattern_pool=0))
        if self.evaluation.learner_training != "per_episode":  # sound's pretrained table is trained on a cell's
            # fixed-T episodes; here each environment has its own K and budget, so its learners train on held-out
            # episodes of that K and budget (issue 12 point 6), with the profile's state (issue 21)
            object.__setattr__(self, "evaluation", self.evaluation.with_changes(learner_training="per_episode"))
        if self.budget_rounding is None:
            object.__setattr__(self, "budget_rounding", defaults.get("budget_rounding", "floor"))
        if self.budget_rounding not in BUDGET_ROUNDINGS:
            raise ConfigError("budget_rounding", f"unknown value {self.budget_rounding!r}; allowed: "
                                                 f"{', '.join(BUDGET_ROUNDINGS)}")
        if self.reward_sensitive is None:
            object.__setattr__(self, "reward_sensitive", defaults.get("reward_sensitive", False))
        if not isinstance(self.reward_sensitive, bool):
            raise ConfigError("reward_sensitive", f"must be true or false (got {self.reward_sensitive!r})")
        if self.start_budget is None:
            object.__setattr__(self, "start_budget", defaults.get("start_budget", START_BUDGET))
        if self.budget_rounding == "floor":
            _require_whole(self, "start_budget", 2, " (n ← n + ⌊n/2⌋ never grows from 1)")
        else:
            _require_whole(self, "start_budget", 1)
        _require_positive(self, "start_seconds")
        if self.budget_seconds is not None:
            _require_positive(self, "budget_seconds")
        if self.max_environments is not None:
            _require_whole(self, "max_environments", 1)
        _require_whole(self, "memory_limit_bytes", 1)
        if not isinstance(self.time_based, bool):
            raise ConfigError("time_based", f"must be true or false (got {self.time_based!r})")
        try:  # the K range must be reachable, and the first episode fit in memory, at n₀
            self.evaluation.with_changes(iterations=self.start_budget)
        except ConfigError as error:
            raise ConfigError("start_budget" if error.field == "iterations" else error.field, error.message) from None
        paths, tables = episode_bytes(self.evaluation, self.start_budget)
        if paths + tables > self.memory_limit_bytes:  # the test would stop before its first environment
            raise ConfigError("rows" if tables > paths else "start_budget",
                              f"the first environment (T = {self.start_budget}) needs ~{(paths + tables) / 2**20:,.0f} "
                              f"MiB, above the test's memory limit of {self.memory_limit_bytes / 2**20:,.0f} MiB; use a "
                              "smaller grid or start budget")

    def as_record(self) -> dict[str, object]:
        unused = ("iterations", "episodes")
        record = {k: v for k, v in self.evaluation.as_record().items() if k not in unused}
        return {**record, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "evaluation"}}


def _require_whole(config, name: str, minimum: int, why: str = "") -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(name, f"must be a whole number >= {minimum}{why} (got {value!r})")


def _require_positive(config, name: str) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(name, f"must be a positive number of seconds (got {value!r})")


@dataclass(frozen=True)
class AnytimeStep:
    """One environment of the test, one pass of Definition 18's loop: the trace row."""

    environment: int  # i: its seeds come from the spawn key (environment, draw)
    draw: int
    xi: float  # ξ the environment was chosen at
    k: int  # its pattern complexity K (LZ76 phrases)
    budget: int  # T = n iterations (Definition 19), or τ converted (Definition 18)
    seconds: float | None  # τ, the time slot (Definition 18 only)
    reward: float  # R̄ of the group on it (paper 003 Definition 2)
    upsilon: float  # running estimate Υ / |S_used| after it
    kernel_seconds: float
    exhausted: bool = False  # ξ − 1 above the class's largest K: no environment fits ξ's window
    speed: float | None = None  # iterations per kernel second that turned τ into `budget` (time-based only)

    @property
    def xi_next(self) -> float:
        """ξ ← ξ + ξ·reward/2 (Definition 18, line 20)."""
        return self.xi + self.xi * self.reward / 2


@dataclass(frozen=True)
class AnytimeResult:
    config: AnytimeConfig
    trace: tuple[AnytimeStep, ...]
    # "interrupted" (Ctrl-C), "budget_seconds" (Θ), "max_environments", "memory_limit" (the next
    # episode would not fit), "exhausted" (no unused environment at any reachable K), "unreachable_k" (the
    # generator found no pattern of the environment's K at its budget within its tries: stopped, not guessed)
    stopped: str
    wall_seconds: float

    @property
    def upsilon(self) -> float:
        """Υ / |S_used|; the initial Υ = 0 before any environment is complete."""
        return self.trace[-1].upsilon if self.trace else 0.0

    @property
    def exhausted_at(self) -> int | None:
        """The first environment played with ξ beyond the class's largest K (see `exhausted`)."""
        return next((step.environment for step in self.trace if step.exhausted), None)

    @property
    def xi_final(self) -> float | None:
        """ξ after the last environment; None once the class is exhausted (ξ then names no complexity)."""
        if self.exhausted_at is not None:
            return None
        return self.trace[-1].xi_next if self.trace else 1.0

    @property
    def k_top(self) -> int | None:
        """The class's largest K, which ξ passed (None while it has not)."""
        return int(class_k(self.config.evaluation, PROBE_ITERATIONS)[-1]) if self.exhausted_at is not None else None

    @property
    def interactions(self) -> int:
        """Iterations played over all environments (the scored pass; learners also train)."""
        return sum(step.budget for step in self.trace)

    def as_record(self) -> dict[str, object]:
        evaluation = self.config.evaluation
        return {
            "upsilon": self.upsilon, "xi_final": self.xi_final, "exhausted_at": self.exhausted_at,
            "k_top": self.k_top, "environments": len(self.trace),
            "interactions": self.interactions, "agent_steps": self.interactions * evaluation.group_size,
            "stopped": self.stopped, "wall_seconds": self.wall_seconds,
            "kernel_seconds": sum(step.kernel_seconds for step in self.trace),
            "time_based": self.config.time_based, "start_budget": self.config.start_budget,
            "budget_rounding": self.config.budget_rounding,
            # Definition 18's τ becomes iterations at this machine's simulator speed (module docstring)
            "machine_dependent": self.config.time_based, "machine": machine() if self.config.time_based else None,
            "seed": evaluation.seed, "behaviour": evaluation.behaviour, "mix": evaluation.mix,
            "group_size": evaluation.group_size, "protocol": evaluation.protocol, "profile": evaluation.profile,
            "env": evaluation.env, "grid": evaluation.grid, "version": VERSION,
            "config": self.config.as_record(),
            "trace": [dataclasses.asdict(step) for step in self.trace],
        }


def draw_environment(config: AnytimeConfig, environment: int, draw: int, budget: int, k: int,
                     training: bool = True) -> EnvironmentBatch:
    """Environment `environment` (draw `draw`) of the test: one episode of `budget` iterations with
    pattern complexity K = k, seeded by the spawn key (environment, draw); with `training`, and
    learners that train on held-out episodes, its training episodes too (`_with_training`)."""
    batch = draw_environments(config, environment, np.array([draw]), budget, k)
    return _with_training(config, environment, draw, budget, k, batch) if training else batch


def draw_environments(config: AnytimeConfig, environment: int, draws: np.ndarray, budget: int,
                      k: int) -> EnvironmentBatch:
    """Draws `draws` of environment `environment` in one call of the batch generator: row i is what
    `draw_environment` gives for draws[i] (each row has its own seeds), without training episodes."""
    episode = _episode_config(config, budget)
    environment_class = dataclasses.replace(episode.environment(), k_min=k, k_max=k)
    return environment_class.generate(episode_seed_table(episode.seed, draws, (environment,)), episode.group_size)


def reward_sensitive(batch: EnvironmentBatch, rows: int, cols: int, reward_radius: int) -> np.ndarray:
    """(episodes,) whether the first agent can stand within `reward_radius` of ⊕ or ⊖ at some iteration
    t = 1..T: its start cell within t + radius king moves (toroidal Chebyshev distance, spec §1) of the
    object's cell at t, the necessary condition for its actions to change its reward (module docstring). The
    first agent alone, so that the draws kept do not depend on the group's size. A landscape pays on every
    cell: always True."""
    if batch.landscapes is not None:
        return np.ones(len(batch), bool)
    starts = batch.starts.astype(np.int64)[:, :1, None]  # (episodes, 1, 1): the first agent's start
    reach = np.arange(1, batch.good.shape[1])[None, None, :] + reward_radius  # t + radius, t = 1..T
    sensitive = np.zeros(len(batch), bool)
    for path in (batch.good, batch.evil):
        cells = path[:, None, 1:].astype(np.int64)  # (episodes, 1, T)
        dr, dc = np.abs(starts // cols - cells // cols), np.abs(starts % cols - cells % cols)
        distance = np.maximum(np.minimum(dr, rows - dr), np.minimum(dc, cols - dc))
        sensitive |= (distance <= reach).any(axis=(1, 2))
    return sensitive


def _with_training(config: AnytimeConfig, environment: int, draw: int, budget: int, k: int,
                   batch: EnvironmentBatch) -> EnvironmentBatch:
    """The environment with its held-out training episodes when the learners train on such (same K
    and budget, from the training branch of its spawn key:
    `evaluation.environments.held_out_training`)."""
    episode = _episode_config(config, budget)
    if not episode.trains_on_held_out:
        return batch
    environment_class = dataclasses.replace(episode.environment(), k_min=k, k_max=k)
    return dataclasses.replace(batch, training=held_out_training(
        environment_class, episode.seed, np.array([draw]), (environment,), batch, episode.training_episodes,
        episode.group_size))


def _episode_config(config: AnytimeConfig, budget: int) -> EvaluationConfig:
    """The group's configuration for one episode of `budget` iterations; K is set per environment,
    so the K range is left open here (its reachability probe would cost O(T) per episode)."""
    return config.evaluation.with_changes(iterations=budget, episodes=1, k_min=None, k_max=None)


def episode_bytes(config: EvaluationConfig, iterations: int) -> tuple[int, int]:
    """Upper bound of the arrays of one episode of `iterations`: ⊕/⊖ paths and the kernel's copies
    of them (about 80 bytes per iteration, for the episode and each held-out training episode),
    and per learner a Q-table of N·T states × 9 actions with its bookkeeping, each state paired with what the
    learner hears when it hears a protocol (`simulation.learner_workspace`); as (paths, tables)."""
    states = config.rows * config.cols * iterations * heard_symbols(config.hearing)
    episodes = 1 + (config.training_episodes if config.trains_on_held_out else 0)
    return 80 * (iterations + 1) * episodes, config.learner_count * states * (9 * 8 + 1 + 8)


def planned_budgets(config: AnytimeConfig) -> list[int]:
    """The budgets of the environments the test plays until it stops by itself, at
    `max_environments` or before an episode above `memory_limit_bytes`: n₀, then Definition 19's
    rule (`next_budget`). With `time_based` the budgets follow the group's speed from n₀ up to the
    same memory limit, so these are an estimate. Ctrl-C, Θ or running out of environments stop sooner."""
    budgets, budget = [], config.start_budget
    while (config.max_environments is None or len(budgets) < config.max_environments) and \
            sum(episode_bytes(config.evaluation, budget)) <= config.memory_limit_bytes:
        budgets.append(budget)
        budget = next_budget(budget, config.budget_rounding)
    return budgets


def planned_agent_steps(config: AnytimeConfig) -> int:
    """Agent-steps of `planned_budgets`: every agent's scored steps and the learners' training passes."""
    evaluation = config.evaluation
    per_iteration = evaluation.group_size + evaluation.learner_count * evaluation.q_training_passes
    return sum(planned_budgets(config)) * per_iteration


def class_k(evaluation: EvaluationConfig, iterations: int) -> np.ndarray:
    """The K of the class (within the K range) the generator reaches with `iterations` iterations,
    probed at min(iterations, PROBE_ITERATIONS) (`reachable_k`, cached)."""
    generator = PATTERN_GENERATORS[evaluation.pattern_generator]()
    low = evaluation.k_min if evaluation.k_min is not None else 0
    high = evaluation.k_max if evaluation.k_max is not None else np.iinfo(np.int32).max
    found = reachable_k(generator, evaluation.rows, evaluation.cols, min(iterations, PROBE_ITERATIONS))
    return found[(found >= low) & (found <= high)]


def next_budget(n: int, rounding: str) -> int:
    """Definition 19, line 21: n ← ⌈n + n/2⌉ (paper 000 §5.3), or spec §8's n ← n + ⌊n/2⌋."""
    return n + (n + 1) // 2 if rounding == "ceiling" else n + n // 2


def anytime_steps(config: AnytimeConfig) -> Iterator[AnytimeStep]:
    """Definition 19 (or 18 with `time_based`): one step per environment, for as long as it is
    iterated; returns (StopIteration.value) "memory_limit" or "exhausted" when it cannot go on."""
    evaluation = config.evaluation
    used: dict[bytes, list[EnvironmentBatch]] = {}
    xi, n, tau = 1.0, config.start_budget, config.start_seconds
    total_reward = kernel_seconds = 0.0
    played = 0
    for index in itertools.count():
        speed = None
        if config.time_based:  # τ at the group's speed so far, in iterations per kernel second
            speed = played / kernel_seconds if kernel_seconds > 0 else 0.0
            budget = max(config.start_budget, math.floor(tau * speed))
        else:
            budget = n
        if sum(episode_bytes(evaluation, budget)) > config.memory_limit_bytes:
            return "memory_limit"
        episode = _episode_config(config, budget)
        ks = class_k(evaluation, budget)
        if not len(ks):
            return "exhausted"
        batch = None
        while batch is None:
            while math.floor(xi) < ks[0]:
                xi += 1  # Definition 18: no environment at this ξ, so ξ <- ξ + 1
            k = int(ks[ks <= math.floor(xi)].max())
            batch, draw = _unused_environment(config, index, budget, k, used)
            if batch is None:
                if k == ks[-1]:
                    return "exhausted"
                xi += 1
        # the class is exhausted when no K it holds fits ξ's window (probed only once K is clamped)
        exhausted = bool(math.floor(xi) > ks[-1] and xi - 1 > class_k(evaluation, PROBE_ITERATIONS)[-1])
        run = play(episode, batch)
        reward = float(run.mean_rewards[0])
        total_reward += reward
        kernel_seconds += run.kernel_seconds
        played += budget
        yield AnytimeStep(environment=index, draw=draw, xi=xi, k=int(batch.k_raw[0]), budget=budget,
                          seconds=tau if config.time_based else None, reward=reward,
                          upsilon=total_reward / (index + 1), kernel_seconds=run.kernel_seconds,
                          exhausted=exhausted, speed=speed)
        xi += xi * reward / 2  # Definition 18, line 20
        n = next_budget(n, config.budget_rounding)  # Definition 19, line 21
        tau += tau / 2  # Definition 18, line 21


def _identity(batch: EnvironmentBatch, cells: int) -> tuple[bytes, EnvironmentBatch]:
    """A used environment as S_used keeps it: a key of the parts every comparison covers (start
    cells, field, ⊕'s and ⊖'s first two cells) and its paths' first `cells` cells."""
    key = b"".join(np.ascontiguousarray(part).tobytes() for part in
                   (batch.starts, batch.fields(), batch.good[:, :2], batch.evil[:, :2]))
    return key, dataclasses.replace(batch, good=batch.good[:, :cells], evil=batch.evil[:, :cells], training=None)


def _unused_environment(config: AnytimeConfig, index: int, budget: int, k: int,
                        used: dict[bytes, list[EnvironmentBatch]]) -> tuple[EnvironmentBatch | None, int]:
    """The first draw of environment `index` that is not in S_used (then added to it), with its
    training episodes if the learners train on held-out ones, or None. Two environments are the
    same when their start cells and fields agree and their ⊕ and ⊖ paths agree over their common
    length, at most IDENTITY_CELLS cells (ceiling rule), or over n₀ + 1 cells (floor rule)."""
    cells = config.start_budget + 1 if config.budget_rounding == "floor" else IDENTITY_CELLS
    evaluation = config.evaluation
    limit = DRAWS_PER_LEVEL + (INSENSITIVE_DRAWS if config.reward_sensitive else 0)
    draw = repeats = 0
    size = 1
    while draw < limit and repeats < DRAWS_PER_LEVEL:
        draws = np.arange(draw, min(draw + size, limit))
        candidates = draw_environments(config, index, draws, budget, k)
        keep = reward_sensitive(candidates, evaluation.rows, evaluation.cols, evaluation.reward_radius) \
            if config.reward_sensitive else np.ones(len(draws), bool)
        for row, draw in enumerate(draws):
            if not keep[row]:  # not reward-sensitive: skipped, not a repeat (module docstring)
                continue
            batch = candidates.episodes(row, row + 1)
            key, kept = _identity(batch, cells)
            if not any(_same_paths(kept, other) for other in used.get(key, ())):
                used.setdefault(key, []).append(kept)
                return _with_training(config, index, int(draw), budget, k, batch), int(draw)
            repeats += 1
            if repeats == DRAWS_PER_LEVEL:
                break
        draw, size = int(draws[-1]) + 1, 2 * size
    return None, DRAWS_PER_LEVEL


def _same_paths(a: EnvironmentBatch, b: EnvironmentBatch) -> bool:
    """Whether ⊕'s and ⊖'s kept paths agree over their common length."""
    cells = min(a.good.shape[1], b.good.shape[1])
    return np.array_equal(a.good[:, :cells], b.good[:, :cells]) and np.array_equal(a.evil[:, :cells], b.evil[:, :cells])


def run_anytime(config: AnytimeConfig, on_step: Callable[[AnytimeStep], None] | None = None) -> AnytimeResult:
    """Run the test until Ctrl-C or a stop condition; `on_step` sees each environment as it ends."""
    started = time.perf_counter()
    trace: list[AnytimeStep] = []
    steps = anytime_steps(config)
    try:
        while True:
            if config.max_environments is not None and len(trace) >= config.max_environments:
                stopped = "max_environments"
                break
            if config.budget_seconds is not None and time.perf_counter() - started >= config.budget_seconds:
                stopped = "budget_seconds"  # Definition 18: WHILE TotalElapsedTime < Θ
                break
            try:
                step = next(steps)
            except StopIteration as end:
                stopped = end.value
                break
            except UnreachableK:
                stopped = "unreachable_k"
                break
            trace.append(step)
            if on_step is not None:
                on_step(step)
    except KeyboardInterrupt:
        stopped = "interrupted"
    finally:
        steps.close()
    return AnytimeResult(config, tuple(trace), stopped, time.perf_counter() - started)


TRACE_HEADER = f"{'env':>5}{'ξ':>12}{'K':>5}{'budget':>10}{'τ s':>11}{'reward':>10}{'Υ':>10}"


def format_step(step: AnytimeStep) -> str:
    seconds = f"{step.seconds:>11.3g}" if step.seconds is not None else f"{'-':>11}"
    xi = f"{'exhausted':>12}" if step.exhausted else f"{step.xi:>12.6g}"
    return (f"{step.environment:>5}{xi}{step.k:>5}{step.budget:>10}{seconds}"
            f"{step.reward:>+10.4f}{step.upsilon:>+10.4f}")


def format_summary(result: AnytimeResult) -> str:
    evaluation = result.config.evaluation
    if result.exhausted_at is not None:
        xi = (f"ξ final: class exhausted at environment {result.exhausted_at} (ξ passed its largest K, "
              f"{result.k_top}, + 1; K has stayed at most {result.k_top} since)")
    else:
        xi = f"ξ final {result.xi_final:.3f}"
    timing = ""
    if result.config.time_based:
        timing = (f"; time-based: budgets follow this machine's simulator speed ({machine()}), "
                  "so compare only interaction-based runs")
    return (f"Υ = {result.upsilon:+.4f} after {len(result.trace)} environments and {result.interactions} "
            f"interactions; {xi}; stopped: {result.stopped} after "
            f"{result.wall_seconds:.2f} s ({evaluation.mix or evaluation.behaviour} x{evaluation.group_size}, "
            f"{evaluation.env} {evaluation.grid}, profile {evaluation.profile}, seed {evaluation.seed}){timing}")


def machine() -> str:
    """The machine a time-based test ran on: its CPU model and platform."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"


def write_trace(result: AnytimeResult, path: str) -> None:
    """The trace as a Parquet table, one row per environment; the run's record in its metadata."""
    schema = pa.schema([("environment", pa.int64()), ("draw", pa.int64()), ("xi", pa.float64()),
                        ("k", pa.int64()), ("budget", pa.int64()), ("seconds", pa.float64()),
                        ("reward", pa.float64()), ("upsilon", pa.float64()), ("kernel_seconds", pa.float64()),
                        ("exhausted", pa.bool_()), ("speed", pa.float64())])
    record = {k: v for k, v in result.as_record().items() if k != "trace"}
    table = pa.Table.from_pylist([dataclasses.asdict(step) for step in result.trace], schema=schema)
    with replacing(path) as handle:  # a failed write removes only its temporary file, never `path`
        pq.write_table(table.replace_schema_metadata({"collective_anytime": json.dumps(record)}), handle)
