"""The anytime test (spec §8; paper 000 §5.2-5.3, Definitions 18 and 19).

Definition 18's algorithm, as this module runs it:

    Υ ← 0, ξ ← 1, n ← n₀ (or τ ← τ₀), S_used ← ∅
    while the test is not stopped:
        μ ← an environment of S \\ S_used with ξ − 1 ≤ K(μ) ≤ ξ;  if none: ξ ← ξ + 1, try again
        reward ← R̄ of the group on μ over n iterations (over τ seconds in Definition 18)
        Υ ← Υ + reward;  ξ ← ξ + ξ·reward/2;  n ← n + ⌊n/2⌋ (τ ← τ + τ/2);  S_used ← S_used ∪ {μ}
    return Υ / |S_used|

Where the paper leaves the mapping to the environment class open, our choices (all parameters):
- **ξ → environment.** The complexity function is the pattern complexity K (LZ76 phrases, spec §2)
  and the budget is the episode length T. The window ξ − 1 ≤ K ≤ ξ holds one integer, ⌊ξ⌋, when ξ is
  not whole (and ⌊ξ⌋ is the upper end when it is), so environment i has K = ⌊ξ⌋ and T = n, one
  episode of the configured group. K is limited to the configuration's K range and to the values
  the pattern generator reaches on the grid with T iterations (probed with `reachable_k` at
  min(T, `PROBE_ITERATIONS`)): below the smallest such K no environment exists and ξ rises by 1,
  as in Definition 18; above the largest, K is clamped to it.
- **Starting budget.** Definition 19 starts at n = 1, which n ← n + ⌊n/2⌋ never grows, so the
  first environment has n₀ iterations (default `START_BUDGET`, at least 2).
- **Physical time (Definition 18, `time_based`).** The slot τ starts at τ₀ (default 1 µs, the
  paper's) and grows by half each environment. A compiled episode cannot be stopped half-way, so τ
  is converted into iterations at the group's measured speed (iterations per kernel second so far):
  T = max(n₀, ⌊τ·speed⌋); the trace records the kernel seconds actually spent.
- **Never reused.** Environment i draws its seeds from the spawn key (i, draw) (`random_streams`);
  two environments count as the same when the agents' start cells, ⊕'s and ⊖'s first n₀ + 1
  cells (and a landscape's field) agree. A draw that repeats a used environment is redrawn; after
  `DRAWS_PER_LEVEL` repeats no unused environment is left at this ξ, and ξ rises by 1 (Definition 18).
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
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from collective.config import ConfigError, EvaluationConfig
from collective.evaluate import learner_count, play
from collective.environments.lambda_star import EnvironmentBatch
from collective.environments.patterns import PATTERN_GENERATORS, reachable_k
from collective.simulation.random_streams import episode_seed_table

START_BUDGET = 10  # n₀: iterations of the first environment
START_SECONDS = 1e-6  # τ₀ of Definition 18: one microsecond
PROBE_ITERATIONS = 200  # reachable K are probed at min(T, this); K saturates with longer episodes
DRAWS_PER_LEVEL = 20  # redraws of a used environment before ξ counts as exhausted
MEMORY_LIMIT_BYTES = 1 << 29


@dataclass(frozen=True)
class AnytimeConfig:
    """The group and environment class (`evaluation`; its iterations and episodes are unused) and
    the anytime test's own parameters."""

    evaluation: EvaluationConfig
    start_budget: int = START_BUDGET
    time_based: bool = False
    start_seconds: float = START_SECONDS
    budget_seconds: float | None = None  # Θ; None: until interrupted
    max_environments: int | None = None
    memory_limit_bytes: int = MEMORY_LIMIT_BYTES

    def __post_init__(self) -> None:
        _require_whole(self, "start_budget", 2, " (n ← n + ⌊n/2⌋ never grows from 1)")
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

    @property
    def xi_next(self) -> float:
        """ξ ← ξ + ξ·reward/2 (Definition 18, line 20)."""
        return self.xi + self.xi * self.reward / 2


@dataclass(frozen=True)
class AnytimeResult:
    config: AnytimeConfig
    trace: tuple[AnytimeStep, ...]
    # "interrupted" (Ctrl-C), "budget_seconds" (Θ), "max_environments", "memory_limit" (the next
    # episode would not fit), "exhausted" (no unused environment at any reachable K)
    stopped: str
    wall_seconds: float

    @property
    def upsilon(self) -> float:
        """Υ / |S_used|; the initial Υ = 0 before any environment is complete."""
        return self.trace[-1].upsilon if self.trace else 0.0

    @property
    def xi_final(self) -> float:
        return self.trace[-1].xi_next if self.trace else 1.0

    @property
    def interactions(self) -> int:
        """Iterations played over all environments (the scored pass; learners also train)."""
        return sum(step.budget for step in self.trace)

    def as_record(self) -> dict[str, object]:
        evaluation = self.config.evaluation
        return {
            "upsilon": self.upsilon, "xi_final": self.xi_final, "environments": len(self.trace),
            "interactions": self.interactions, "agent_steps": self.interactions * evaluation.group_size,
            "stopped": self.stopped, "wall_seconds": self.wall_seconds,
            "kernel_seconds": sum(step.kernel_seconds for step in self.trace),
            "time_based": self.config.time_based, "start_budget": self.config.start_budget,
            "seed": evaluation.seed, "behaviour": evaluation.behaviour, "mix": evaluation.mix,
            "group_size": evaluation.group_size, "protocol": evaluation.protocol, "profile": evaluation.profile,
            "env": evaluation.env, "grid": evaluation.grid, "version": version("collective"),
            "config": self.config.as_record(),
            "trace": [dataclasses.asdict(step) for step in self.trace],
        }


def draw_environment(config: AnytimeConfig, environment: int, draw: int, budget: int, k: int) -> EnvironmentBatch:
    """Environment `environment` (draw `draw`) of the test: one episode of `budget` iterations with
    pattern complexity K = k, seeded by the spawn key (environment, draw)."""
    episode = _episode_config(config, budget)
    environment_class = dataclasses.replace(episode.environment(), k_min=k, k_max=k)
    seeds = episode_seed_table(episode.seed, np.array([draw]), (environment,))
    return environment_class.generate(seeds, episode.group_size)


def _episode_config(config: AnytimeConfig, budget: int) -> EvaluationConfig:
    """The group's configuration for one episode of `budget` iterations; K is set per environment,
    so the K range is left open here (its reachability probe would cost O(T) per episode)."""
    return config.evaluation.with_changes(iterations=budget, episodes=1, k_min=None, k_max=None)


def episode_bytes(config: EvaluationConfig, iterations: int) -> tuple[int, int]:
    """Upper bound of the arrays of one episode of `iterations`: ⊕/⊖ paths and the kernel's copies
    of them (about 80 bytes per iteration), and per learner a Q-table of N·T states × 9 actions
    with its bookkeeping (`simulation.learner_workspace`); as (paths, tables)."""
    states = config.rows * config.cols * iterations
    return 80 * (iterations + 1), learner_count(config) * states * (9 * 8 + 1 + 8)


def planned_budgets(config: AnytimeConfig) -> list[int]:
    """The budgets of the environments the test plays until it stops by itself, at
    `max_environments` or before an episode above `memory_limit_bytes`: n₀, then n ← n + ⌊n/2⌋
    (Definition 19). With `time_based` the budgets follow the group's speed from n₀ up to the same
    memory limit, so these are an estimate. Ctrl-C, Θ or running out of environments stop sooner."""
    budgets, budget = [], config.start_budget
    while (config.max_environments is None or len(budgets) < config.max_environments) and \
            sum(episode_bytes(config.evaluation, budget)) <= config.memory_limit_bytes:
        budgets.append(budget)
        budget += budget // 2
    return budgets


def planned_agent_steps(config: AnytimeConfig) -> int:
    """Agent-steps of `planned_budgets`: every agent's scored steps and the learners' training passes."""
    evaluation = config.evaluation
    per_iteration = evaluation.group_size + learner_count(evaluation) * evaluation.q_training_passes
    return sum(planned_budgets(config)) * per_iteration


def anytime_steps(config: AnytimeConfig) -> Iterator[AnytimeStep]:
    """Definition 19 (or 18 with `time_based`): one step per environment, for as long as it is
    iterated; returns (StopIteration.value) "memory_limit" or "exhausted" when it cannot go on."""
    evaluation = config.evaluation
    generator = PATTERN_GENERATORS[evaluation.pattern_generator]()
    low = evaluation.k_min if evaluation.k_min is not None else 0
    high = evaluation.k_max if evaluation.k_max is not None else np.iinfo(np.int32).max
    reachable_at: dict[int, np.ndarray] = {}
    used: set[bytes] = set()
    xi, n, tau = 1.0, config.start_budget, config.start_seconds
    total_reward = kernel_seconds = 0.0
    played = 0
    for index in itertools.count():
        if config.time_based:  # τ at the group's speed so far, in iterations per kernel second
            speed = played / kernel_seconds if kernel_seconds > 0 else 0.0
            budget = max(config.start_budget, math.floor(tau * speed))
        else:
            budget = n
        if sum(episode_bytes(evaluation, budget)) > config.memory_limit_bytes:
            return "memory_limit"
        episode = _episode_config(config, budget)
        probe = min(budget, PROBE_ITERATIONS)
        if probe not in reachable_at:
            found = reachable_k(generator, evaluation.rows, evaluation.cols, probe)
            reachable_at[probe] = found[(found >= low) & (found <= high)]
        reachable = reachable_at[probe]
        if not len(reachable):
            return "exhausted"
        batch = None
        while batch is None:
            while math.floor(xi) < reachable[0]:
                xi += 1  # Definition 18: no environment at this ξ, so ξ <- ξ + 1
            k = int(reachable[reachable <= math.floor(xi)].max())
            batch, draw = _unused_environment(config, index, budget, k, used)
            if batch is None:
                if k == reachable[-1]:
                    return "exhausted"
                xi += 1
        run = play(episode, batch)
        reward = float(run.mean_rewards[0])
        total_reward += reward
        kernel_seconds += run.kernel_seconds
        played += budget
        yield AnytimeStep(environment=index, draw=draw, xi=xi, k=int(batch.k_raw[0]), budget=budget,
                          seconds=tau if config.time_based else None, reward=reward,
                          upsilon=total_reward / (index + 1), kernel_seconds=run.kernel_seconds)
        xi += xi * reward / 2  # Definition 18, line 20
        n += n // 2  # Definition 19, line 21
        tau += tau / 2  # Definition 18, line 21


def _unused_environment(config: AnytimeConfig, index: int, budget: int, k: int,
                        used: set[bytes]) -> tuple[EnvironmentBatch | None, int]:
    """The first draw of environment `index` that is not in S_used (then added to it), or None."""
    prefix = config.start_budget + 1
    for draw in range(DRAWS_PER_LEVEL):
        batch = draw_environment(config, index, draw, budget, k)
        identity = b"".join(np.ascontiguousarray(part).tobytes() for part in
                            (batch.starts, batch.good[:, :prefix], batch.evil[:, :prefix], batch.fields()))
        if identity not in used:
            used.add(identity)
            return batch, draw
    return None, DRAWS_PER_LEVEL


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
    return (f"{step.environment:>5}{step.xi:>12.6g}{step.k:>5}{step.budget:>10}{seconds}"
            f"{step.reward:>+10.4f}{step.upsilon:>+10.4f}")


def format_summary(result: AnytimeResult) -> str:
    evaluation = result.config.evaluation
    return (f"Υ = {result.upsilon:+.4f} after {len(result.trace)} environments and {result.interactions} "
            f"interactions; ξ final {result.xi_final:.3f}; stopped: {result.stopped} after "
            f"{result.wall_seconds:.2f} s ({evaluation.mix or evaluation.behaviour} x{evaluation.group_size}, "
            f"{evaluation.env} {evaluation.grid}, profile {evaluation.profile}, seed {evaluation.seed})")


def write_trace(result: AnytimeResult, path: str) -> None:
    """The trace as a Parquet table, one row per environment; the run's record in its metadata."""
    schema = pa.schema([("environment", pa.int64()), ("draw", pa.int64()), ("xi", pa.float64()),
                        ("k", pa.int64()), ("budget", pa.int64()), ("seconds", pa.float64()),
                        ("reward", pa.float64()), ("upsilon", pa.float64()), ("kernel_seconds", pa.float64())])
    record = {k: v for k, v in result.as_record().items() if k != "trace"}
    table = pa.Table.from_pylist([dataclasses.asdict(step) for step in result.trace], schema=schema)
    pq.write_table(table.replace_schema_metadata({"collective_anytime": json.dumps(record)}), path)
