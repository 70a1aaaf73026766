"""What a sweep's workers do: plan it into environment blocks and work units, generate a unit's
environments, play a unit. Every executor (serial or Ray) runs these same functions.

An *environment block* is a range of one cell's episodes, shared by every group of the cell (the
paired design). A *work unit* is one or more groups playing a sub-range of a block; the worker that
plays it generates the environments of the unit's *span* (the episodes of the block's units that
overlap it, `_spans`), keeps its latest spans (`EnvironmentCache`) and serves the span's other units
from them, so environments are drawn where they are played, at most once per worker; units aim at `TARGET_UNIT_AGENT_STEPS` (about one to two seconds of kernel time at the
rates of `benchmarks/throughput.py`), so the scheduler's overhead stays small and Ray never enters
the step loop; only the sweep's last units are smaller, so that workers finish together. The
plan depends only on the spec, never on the worker count, so a resumed sweep finds the same units
whatever `--workers` it is given; and its units start on a grid of their block's episodes that does not
depend on the episode count (`_units`), so the plan of a sweep grown to more episodes holds every whole
unit of the smaller sweep's, whose chunks it keeps.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from collective.config import EvaluationConfig, memory_needs, mix_counts
from collective.evaluation.batches import batch_episodes
from collective.evaluation.compiled_code import load_code, load_generator
from collective.evaluation.environments import generate_environments, with_ceiling
from collective.evaluation.play import play
from collective.evaluation.runs import joined_runs, scores_by_behaviour
from collective.evaluation.stepping_group import plugin_group
from collective.evaluation.tables import episode_runs, trained_tables
from collective.environments.pattern_probability import pattern_log2_probabilities
from collective.environments.motion import pattern_motion, row_motion
from collective.simulation.plugins import PluginError
from collective.simulation.random_streams import keyed_seed_states
from collective.environments.lambda_star import EnvironmentBatch
from collective.sweeps.store import NO_TRAINING_RUN, config_column_value, row_schema
from collective.sweeps.spec import SweepSpec
from collective.version import VERSION

TARGET_UNIT_AGENT_STEPS = 20_000_000  # agent-steps (training passes included) per work unit
TAIL_UNIT_AGENT_STEPS = 4_000_000  # the smallest units, cut at the end of a sweep (see _taper)
PACK_EPISODES = 1_000  # groups cheaper than a unit over this many episodes are packed into units together
MAX_BLOCK_BYTES = 64 << 20  # environment arrays held per block
SUMMARY_BLOCKS = 2_000  # `plan_size` enumerates plans of at most this many blocks
SAMPLE_AGENT_STEPS = 100_000  # `time_sample` plays each (cell, group) for this many agent-steps ...
SAMPLE_EPISODES = 200  # ... in at most this many episodes


@dataclass(frozen=True)
class WorkUnit:
    """Groups `groups` of cell `cell` playing episodes [first, stop) of the block starting at `block_first`."""

    id: str  # stable across runs: names the unit's chunk in the results store
    cell: int  # index into SweepSpec.cells
    block_first: int
    first: int
    stop: int
    groups: tuple[int, ...]  # indices into SweepSpec.groups
    cost: int  # estimated agent-steps
    span: tuple[int, int] = (0, 0)  # the episodes whose environments its worker generates (set by `plan`)

    @property
    def rows(self) -> int:
        return (self.stop - self.first) * len(self.groups)

    @property
    def span_key(self) -> tuple[int, int, int]:
        """(cell, first, stop) of its span: the environments a worker keeps for it (`EnvironmentCache`)."""
        return (self.cell, *self.span)


@dataclass(frozen=True)
class EnvironmentBlock:
    """Episodes [first, stop) of one cell, and the units that play them."""

    cell: int
    first: int
    stop: int
    units: tuple[WorkUnit, ...]


# What an agent-step costs beside a local searcher's without a protocol (1), as measured by
# `benchmarks/group_costs.py` (`benchmarks/group_costs.json`, experiments/communication.toml; best of 3 CPU times
# on 2 cores): each protocol's (2.6-8.1x) and a sham's, its shadow episode included (57-136x, any protocol);
# on experiments/quickstart.toml (5 Dec, load 1.1) a learner's, which grows with the group (q_learning and sarsa
# 1.5-2.1x alone, 3.4-5.4x in fives, 4.2-7x in tens: LEARNER_STEP_COST + LEARNER_STEP_COST_PER_AGENT x (G - 1)),
# shared Q 0.6-0.8x a learner's own. Behaviours and protocols not measured count as 1.
PROTOCOL_STEP_COST = {"broadcast": 5, "wisdom": 7, "auction": 3, "hierarchy": 3, "stigmergy": 6, "shared_q": 0.7}
SHAM_STEP_COST = 85
# A group on the stepping core for a plug-in (its behaviour or protocol; not a sham, costed above) pays the core's
# per-iteration work in Python and NumPy, whatever the plug-in does: 17-25x a kernel searcher's agent-step
# without a protocol, 1.1-1.7x that under one (benchmarks/group_costs.py on experiments/byo_agent.toml at 100
# episodes, benchmarks/group_costs_plugins.json, G = 4; heading_search and the NumPy twin of local_search at
# G = 5 and 10, 17-20x, 6 Dec, load 1.5). A plug-in that computes more (a neural policy) costs more again.
PLUGIN_STEP_COST, PLUGIN_PROTOCOL_FACTOR = 20, 1.6
LEARNERS = ("q_learning", "sarsa")
LEARNER_STEP_COST, LEARNER_STEP_COST_PER_AGENT = 1.5, 0.4
# A local searcher's agent-steps a second, what `--executor auto` converts a plan's cost with: 67-74 M/s in groups
# of 5 and 10 at T = 200 (experiments/communication.toml, CPU time, load 0.4); alone at T = 100 an episode's own
# work dominates (17 M/s). At this rate the communication study's plan is 11.6 s of play (measured 10.8 s),
# and the quickstart's 1.0 s (measured 1.0 s, load 1.1).
COST_PER_SECOND = 70e6


def episode_agent_steps(config: EvaluationConfig) -> int:
    """Agent-steps of one episode: scored pass, plus training passes when the group learns, plus the shadow
    episode of a sham."""
    return config.iterations * config.group_size * (1 + config.passes_per_episode) * (2 if config.sham else 1)


def behaviour_weight(config: EvaluationConfig) -> float:
    """What an agent-step of the group's members costs beside a local searcher's (a mix: its members' mean)."""
    members = mix_counts(config.mix) if config.mix else ((config.behaviour, config.group_size),)
    learner = LEARNER_STEP_COST + LEARNER_STEP_COST_PER_AGENT * (config.group_size - 1)
    return sum(count * (learner if name in LEARNERS else 1.0) for name, count in members) / config.group_size


def episode_cost(config: EvaluationConfig) -> int:
    """Estimated cost of one episode in agent-steps of local searchers without a protocol: scored pass, plus
    training passes when the group learns, each agent-step weighted by what its members (`behaviour_weight`)
    and its protocol, the sham control or a plug-in's stepping core cost (PROTOCOL_STEP_COST, SHAM_STEP_COST,
    PLUGIN_STEP_COST)."""
    if config.sham:
        weight = SHAM_STEP_COST
    elif config.uses_plugins:
        weight = PLUGIN_STEP_COST * (PLUGIN_PROTOCOL_FACTOR if config.protocol != "none" else 1)
    else:
        weight = PROTOCOL_STEP_COST.get(config.protocol, 1)
    steps = config.iterations * config.group_size * (1 + config.passes_per_episode)
    return max(1, round(steps * weight * behaviour_weight(config)))


def training_cost(config: EvaluationConfig) -> int:
    """Agent-steps of one training run of a kept table (`learner_training` pretrained or online): q_training_passes
    passes of the whole group (`evaluation.tables.trained_tables`), done again by every unit that plays the
    group for each run its episodes play (a process keeps the latest tables only), so counted per unit and run
    (`unit_trainings`); 0 for other groups."""
    return config.iterations * config.group_size * config.q_training_passes if config.keeps_tables else 0


def unit_trainings(config: EvaluationConfig, unit: WorkUnit) -> int:
    """Kept-table trainings a unit does for a group: one per training run its episodes play (episode e plays run
    e mod training_runs, `evaluation.tables.episode_runs`); 0 without kept tables."""
    return config.runs_played(unit.stop - unit.first)


def plan(spec: SweepSpec) -> tuple[EnvironmentBlock, ...]:
    """Split every cell into blocks and units. A group whose block costs more than a unit's target
    is split by episodes; cheaper groups are packed together over the whole block. Executors play
    the blocks in order and each block's units in the order given (costliest first). The units of
    the sweep's last stretch are cut finer (`_taper`), so that workers finish together."""
    blocks = []
    for c, cell in enumerate(spec.cells):
        size = block_episodes(spec, c)
        for first in range(0, spec.episodes, size):
            stop = min(first + size, spec.episodes)
            units = _units(spec, c, first, first, stop, spec.cells[c].playing, TARGET_UNIT_AGENT_STEPS)
            blocks.append(EnvironmentBlock(c, first, stop, units))
    return tuple(replace(block, units=_spans(block.units)) for block in _taper(spec, blocks))


def _spans(units: tuple[WorkUnit, ...]) -> tuple[WorkUnit, ...]:
    """The block's units, each with its span: the episodes of the run of units whose ranges overlap it,
    one after another. Units that split one group by episodes are disjoint, so each generates its own
    episodes; units that share episodes (groups packed over the block next to a split group's pieces)
    share one span, generated once by a worker that plays several of them."""
    runs: list[list[int]] = []  # [first, stop) of each run, in episode order
    for unit in sorted(units, key=lambda u: u.first):
        if runs and unit.first < runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], unit.stop)
        else:
            runs.append([unit.first, unit.stop])
    return tuple(replace(unit, span=next((a, b) for a, b in runs if a <= unit.first < b)) for unit in units)


def _episode_bytes(config: EvaluationConfig, training: bool) -> int:
    """Bytes of one episode's environment arrays, its held-out training episodes' included."""
    landscape = config.rows * config.cols * 8 if config.env == "landscape" else 0
    one = (2 * (config.iterations + 1) + config.group_size) * 4 + 52 + landscape
    return one * (1 + (config.training_episodes if training else 0))


def _cell_trains_on_held_out(cell) -> bool:
    """Whether a group of the cell learns from held-out episodes: its blocks then carry them,
    shared by every group of the cell like the test episodes."""
    return any(cell.configs[g].trains_on_held_out for g in cell.playing)


def block_episodes(spec: SweepSpec, c: int) -> int:
    """Episodes per environment block of cell c: as many as MAX_BLOCK_BYTES holds, at least one."""
    cell = spec.cells[c]
    episode = _episode_bytes(cell.configs[cell.playing[0]], _cell_trains_on_held_out(cell))
    return max(1, min(spec.episodes, MAX_BLOCK_BYTES // episode))


@dataclass(frozen=True)
class PlanSize:
    """How big a spec's plan is (`plan_size`)."""

    blocks: int
    units: int
    units_exact: bool  # False: counted before `_taper` cuts the last units finer
    rows: int
    agent_steps: int
    environments: int  # episodes generated: each cell's, shared by its groups
    environment_cell_steps: int  # Σ over them of cells x T: what generating one and its ceiling scale with
    trainings: dict[tuple[int, int], int] = field(default_factory=dict)  # (cell, group) -> trainings of its kept
    # tables, one per unit and training run (`unit_trainings`, `training_cost`, counted in agent_steps)
    cost: int = 0  # agent_steps weighted by what each costs (`episode_cost`): what the work takes, in a searcher's steps


def plan_size(spec: SweepSpec) -> PlanSize:
    """The plan's size in time independent of the number of episodes and of the training passes (a dry
    run of 10**12 of either stays instant): counted from `plan` up to SUMMARY_BLOCKS blocks, else by
    arithmetic per cell from one full and one partial block, without `_taper`'s finer tail. Its
    agent-steps (and their weighted cost) count every unit's training of each run of a kept table
    (`unit_trainings`, `training_cost`)."""
    sizes = [block_episodes(spec, c) for c in range(len(spec.cells))]
    blocks = sum(math.ceil(spec.episodes / size) for size in sizes)
    rows = spec.episodes * sum(len(cell.playing) for cell in spec.cells)
    steps = spec.episodes * sum(episode_agent_steps(cell.configs[g]) for cell in spec.cells for g in cell.playing)
    cost = spec.episodes * sum(episode_cost(cell.configs[g]) for cell in spec.cells for g in cell.playing)
    environments = spec.episodes * len(spec.cells)
    cell_steps = spec.episodes * sum(config.rows * config.cols * config.iterations
                                     for config in (cell.configs[cell.playing[0]] for cell in spec.cells))
    trainings: Counter[tuple[int, int]] = Counter()

    def count(units: tuple[WorkUnit, ...], times: int = 1) -> int:
        for unit in units:
            configs = spec.cells[unit.cell].configs
            trainings.update({(unit.cell, g): times * unit_trainings(configs[g], unit) for g in unit.groups
                              if configs[g].keeps_tables})
        return len(units) * times

    if blocks <= SUMMARY_BLOCKS:
        units, exact = sum(count(block.units) for block in plan(spec)), True
    else:
        units, exact = 0, False
        for c, (cell, size) in enumerate(zip(spec.cells, sizes)):
            full, rest = divmod(spec.episodes, size)
            units += count(_units(spec, c, 0, 0, size, cell.playing, TARGET_UNIT_AGENT_STEPS), full)
            units += count(_units(spec, c, 0, 0, rest, cell.playing, TARGET_UNIT_AGENT_STEPS)) if rest else 0
    steps += sum(n * training_cost(spec.cells[c].configs[g]) for (c, g), n in trainings.items())
    cost += sum(round(n * training_cost(spec.cells[c].configs[g]) * behaviour_weight(spec.cells[c].configs[g]))
                for (c, g), n in trainings.items())
    return PlanSize(blocks, units, exact, rows, steps, environments, cell_steps, dict(trainings), cost)


ROW_BYTES = 2 << 10  # a result row while a unit builds its table: ~0.5 KB of Python lists, twice ~0.46 KB of Arrow


def largest_unit_bytes(spec: SweepSpec) -> int:
    """Memory of the spec's largest work unit, from its arrays' shapes (`config.memory_needs` for the
    unit's episodes in one call, a persistent plug-in's in its batches) and its rows. A cell's
    first full block holds its largest units (the plan's tail is cut finer)."""
    largest = 0
    for c, cell in enumerate(spec.cells):
        for unit in _units(spec, c, 0, 0, block_episodes(spec, c), cell.playing, TARGET_UNIT_AGENT_STEPS):
            configs = [cell.configs[g] for g in unit.groups]
            arrays = max(sum(memory_needs(config, batch_episodes(config) if config.persistent
                                          else unit.stop - unit.first).values()) for config in configs)
            largest = max(largest, arrays + unit.rows * ROW_BYTES)
    return largest


def _units(spec: SweepSpec, c: int, block_first: int, first: int, stop: int, groups: tuple[int, ...],
           limit: int) -> tuple[WorkUnit, ...]:
    """Units playing `groups` of cell c on episodes [first, stop), each costing about `limit` or
    less, costliest first: a group costing `limit` over PACK_EPISODES episodes or more plays alone;
    cheaper ones are packed together. Each group or pack is cut by
    episodes on a grid from `first` (every `limit` // its cost per episode), which depends on the
    groups and `limit`, never on `stop`: a sweep grown to more episodes plans every whole unit of the
    smaller sweep's again (`collective sweep` keeps their chunks; only the units the old count cut
    short are played again). A group with a persistent plug-in, or with learners that learn online,
    is never split (see `_play_in_order`; an online learner's table starts from its pretrained table
    in each block, as a plug-in's object does)."""
    cell = spec.cells[c]
    units, packed, packed_cost = [], [], 0

    def unit(groups: tuple[int, ...], start: int, end: int, cost: int) -> WorkUnit:
        return _unit(spec, c, block_first, groups, start, end, cost)

    def pieces(groups: tuple[int, ...], per_episode: int) -> list[WorkUnit]:
        size = max(1, limit // per_episode)
        return [unit(groups, a, min(a + size, stop), per_episode * (min(a + size, stop) - a))
                for a in range(first, stop, size)]

    for g in groups:
        config = cell.configs[g]
        per_episode = episode_cost(config)
        if config.persistent or config.learns_online:  # one unit, the episodes in order
            units.append(unit((g,), first, stop, per_episode * (stop - first)))
        elif per_episode * PACK_EPISODES >= limit:
            units += pieces((g,), per_episode)
        else:
            if packed and (packed_cost + per_episode) * PACK_EPISODES > limit:
                units += pieces(tuple(packed), packed_cost)
                packed, packed_cost = [], 0
            packed.append(g)
            packed_cost += per_episode
    if packed:
        units += pieces(tuple(packed), packed_cost)
    # Costliest first: the cheap units of the sweep's last block then fill the workers' tails.
    return tuple(sorted(units, key=lambda u: -u.cost))


def _unit(spec: SweepSpec, c: int, block_first: int, groups: tuple[int, ...], start: int, end: int,
          cost: int) -> WorkUnit:
    """The unit of `groups` of cell c on episodes [start, end), its id naming them (a chunk's name)."""
    group_digest = hashlib.sha256(",".join(str(spec.groups[g].key) for g in groups).encode()).hexdigest()[:8]
    return WorkUnit(f"c{spec.cells[c].key:015x}-e{start}-{end}-g{group_digest}", c, block_first, start, end,
                    groups, cost)


def _taper(spec: SweepSpec, blocks: list[EnvironmentBlock]) -> tuple[EnvironmentBlock, ...]:
    """Cut the units near the end of the plan finer: a unit may cost at most a quarter of the work
    planned after it, and no less than TAIL_UNIT_AGENT_STEPS (guided self-scheduling, Polychronopoulos
    & Kuck 1987, for a notional 4 workers). Workers then run out of work within a small unit of
    one another instead of one waiting up to a whole unit for the other. Units of learners that keep tables are
    not cut: every piece would train the tables again (`unit_trainings`), more work than the cut balances (on
    experiments/quickstart.toml 50 more trainings than its 120, the makespan of 2 workers 11% longer). Depends
    only on the spec."""
    after = 0  # agent-steps planned after the unit being considered
    tapered = []
    for block in reversed(blocks):
        pieces = []
        for unit in reversed(block.units):
            limit = max(TAIL_UNIT_AGENT_STEPS, min(TARGET_UNIT_AGENT_STEPS, after // 4))
            configs = [spec.cells[unit.cell].configs[g] for g in unit.groups]
            if unit.cost > limit and not any(config.persistent or config.keeps_tables for config in configs):
                # even pieces: a grid's remainder would leave one piece as large as the limit at the very end
                count = min(math.ceil(unit.cost / limit), unit.stop - unit.first)
                bounds = np.linspace(unit.first, unit.stop, count + 1).round().astype(int)
                pieces.append(tuple(_unit(spec, unit.cell, unit.block_first, unit.groups, int(a), int(b),
                                          unit.cost // (unit.stop - unit.first) * int(b - a))
                                    for a, b in zip(bounds, bounds[1:])))
            else:
                pieces.append((unit,))
            after += unit.cost
        units = [unit for piece in reversed(pieces) for unit in piece]
        tapered.append(replace(block, units=tuple(sorted(units, key=lambda u: -u.cost))))
    return tuple(reversed(tapered))


def prepare_process(spec: SweepSpec) -> None:
    """Load what playing the spec's units needs before anything is timed: the compiled code
    (`load_code`: every variant of the kernel and the stepping core that its groups play; the
    generator variant of each cell's environments) and pyarrow's table builder, which imports
    pandas (~0.4 s) when it builds its first table."""
    for cell in spec.cells:
        for config in (config for config in cell.configs if config is not None):
            load_code(config)  # cached: each variant loads once
        load_generator(cell.configs[cell.playing[0]])  # the cell's groups share its environments
    row_schema().empty_table()


@dataclass(frozen=True)
class SampleTimes:
    """Seconds measured on a sample of a spec in this process (`time_sample`)."""

    kernel: dict[tuple[int, int], float]  # (cell, group) -> kernel seconds per episode
    generation: dict[int, float]  # cell -> seconds to generate one of its episodes
    load_seconds: float  # loading (or compiling) the code, as every worker does first
    seconds: float  # the whole sample
    training: dict[tuple[int, int], float] = field(default_factory=dict)  # (cell, group) -> seconds of one
    # training of its kept table (`training_cost`)


def time_sample(spec: SweepSpec) -> SampleTimes:
    """Play every (cell, group) of the spec on a few of its cell's own episodes, SAMPLE_AGENT_STEPS
    or SAMPLE_EPISODES of them (at least one), as a worker plays them, and time its kernel and the
    cell's environment generation; a kept table's training is timed on SAMPLE_AGENT_STEPS of its passes
    (at least one) and scaled to all of them: the dry-run's basis, in time independent of the episodes
    and the training passes."""
    started = time.perf_counter()
    prepare_process(spec)
    loaded = time.perf_counter() - started
    kernel, generation, training = {}, {}, {}
    for c, cell in enumerate(spec.cells):
        counts = {g: max(1, min(spec.episodes, SAMPLE_EPISODES,
                                SAMPLE_AGENT_STEPS // episode_agent_steps(cell.configs[g]))) for g in cell.playing}
        generating = time.perf_counter()
        environments = generate_environments(cell.configs[cell.playing[0]], np.arange(max(counts.values())),
                                             seed_prefix=(cell.key,), training=_cell_trains_on_held_out(cell))
        generation[c] = (time.perf_counter() - generating) / max(counts.values())
        for g, count in counts.items():
            config = cell.configs[g]
            if training_cost(config):
                passes = max(1, min(config.q_training_passes,
                                    SAMPLE_AGENT_STEPS // (config.iterations * config.group_size)))
                full, config = config, config.with_changes(q_training_passes=passes,
                                                           training_episodes=min(config.training_episodes, passes))
                training_started = time.perf_counter()
                trained_tables(config, environments.seed_prefix)  # kept (cached) for the sample's play
                training[c, g] = (time.perf_counter() - training_started) * full.q_training_passes / passes
            kernel[c, g] = _play_in_order(config, environments.episodes(0, count)).kernel_seconds / count
    return SampleTimes(kernel, generation, loaded, time.perf_counter() - started, training)


CACHED_SPANS = 2  # spans a worker keeps (`EnvironmentCache`): the one it plays and the one queued behind it


def largest_span_bytes(spec: SweepSpec) -> int:
    """Memory of the largest span a worker generates: at most a block's environments."""
    return max(block_episodes(spec, c) * _episode_bytes(cell.configs[cell.playing[0]], _cell_trains_on_held_out(cell))
               for c, cell in enumerate(spec.cells))


class EnvironmentCache:
    """A worker's environments of its latest CACHED_SPANS spans: a unit whose span it holds is served
    from it, any other generates its span (`generate_block`), the same episodes whichever worker does."""

    def __init__(self, spec: SweepSpec):
        self.spec = spec
        self.recent: OrderedDict[tuple[int, int, int], EnvironmentBatch] = OrderedDict()  # (cell, first, stop)

    def environments(self, unit: WorkUnit) -> EnvironmentBatch:
        key = unit.span_key
        if key in self.recent:
            self.recent.move_to_end(key)
            return self.recent[key]
        batch = self.recent[key] = generate_block(self.spec, EnvironmentBlock(unit.cell, *unit.span, ()))
        while len(self.recent) > CACHED_SPANS:
            self.recent.popitem(last=False)
        return batch


def generate_block(spec: SweepSpec, block: EnvironmentBlock) -> EnvironmentBatch:
    """The block's environments, keyed by (cell, episode): the same for every group of the cell, as
    is each episode's ceiling of R̄ (grid, T, group size and reward radius are the cell's)."""
    cell = spec.cells[block.cell]
    config = cell.configs[cell.playing[0]]
    return with_ceiling(config, generate_environments(config, np.arange(block.first, block.stop),
                                                      seed_prefix=(cell.seed_key,),
                                                      training=_cell_trains_on_held_out(cell)))


def group_agent_seeds(seed: int, cell_key: int, episodes: np.ndarray, group_key: int) -> np.ndarray:
    """(episodes,) uint64 seeds of a group's agents: SeedSequence(seed, spawn_key=(cell, episode, group))."""
    return keyed_seed_states([seed], (cell_key,), episodes, 1, (group_key,))[:, 0]


def play_unit(spec: SweepSpec, unit: WorkUnit, environments: EnvironmentBatch) -> pa.Table:
    """Play each of the unit's groups on its episodes of `environments` (consecutive episodes of the
    cell, holding the unit's: its span or its block); one row per (episode, group). A plug-in's error
    names the cell, the group and the episodes it was playing."""
    cell = spec.cells[unit.cell]
    offset = int(environments.episode_index[0])
    batch = environments.episodes(unit.first - offset, unit.stop - offset)
    episodes = np.arange(unit.first, unit.stop)
    log2_probability = pattern_log2_probabilities(cell.configs[unit.groups[0]], batch)  # the cell's environments
    first = cell.configs[unit.groups[0]]
    good_motion, evil_motion = (pattern_motion(paths, first.rows, first.cols) for paths in (batch.good, batch.evil))
    motion_columns = {"good_period": good_motion.period, "good_drift": good_motion.drift,
                      "good_displacement_per_iteration": good_motion.displacement_per_iteration,
                      "evil_period": evil_motion.period, "evil_drift": evil_motion.drift,
                      "evil_displacement_per_iteration": evil_motion.displacement_per_iteration,
                      "motion": row_motion(good_motion, evil_motion)}
    tables = []
    for g in unit.groups:
        config, group = cell.configs[g], spec.groups[g]
        seeds = group_agent_seeds(spec.seed, cell.seed_key, episodes, group.key)
        # the plug-ins' code and data as they are when play starts (a model replaced during it is not what loaded)
        digests = json.dumps({plugin.spec: plugin.source_digest for plugin in config.plugins}, separators=(",", ":"))
        started = time.perf_counter()
        try:
            run = _play_in_order(config, replace(batch, agent_seeds=seeds))
        except PluginError as error:
            factors = ", ".join(f"{name}={value}" for name, value in cell.factors)
            raise PluginError(error.plugin, error.method, f"{error.message} (cell {factors}; group {group.label}; "
                                                          f"episodes {unit.first}-{unit.stop - 1})") from error
        wall = time.perf_counter() - started
        n = len(episodes)
        by_behaviour = scores_by_behaviour_json(config, run)
        columns = {
            "sweep_id": [spec.sweep_id] * n, "cell": [cell.key] * n, "group": [group.label] * n,
            "group_key": [group.key] * n, "episode": episodes, "grid": [config.grid] * n,
            "score": run.mean_rewards, "k_raw": batch.k_raw.astype(np.int64),
            "k_normalised": batch.k_normalised, "entropy_bits": [config.environment().entropy_bits] * n,
            "pattern_log2_probability": log2_probability,
            "k_evil": [None] * n if batch.k_evil is None else batch.k_evil.astype(np.int64),
            "upsilon_best": batch.upsilon_best,
            "local_optima": [None] * n if batch.local_optima is None else batch.local_optima,
            "correlation_length": [None] * n if batch.correlation_length is None else batch.correlation_length,
            "spawn_key": [[cell.seed_key, int(e), group.key] for e in episodes],
            # the protocol's totals over the batch (training passes included) per scored iteration
            "messages_per_iteration": [run.messages / (n * config.iterations)] * n,
            "bits_per_iteration": [run.bits / (n * config.iterations)] * n,
            "message_entropy_bits": run.message_entropy,
            "information_bits_per_iteration": information_per_iteration(run, n, config.iterations),
            "distinct_messages_per_iteration": run.distinct_messages / config.iterations,
            "distinct_information_bits_per_iteration": run.message_entropy * run.distinct_messages / config.iterations,
            "score_by_behaviour": by_behaviour, "plugin_digests": [digests] * n,
            "wall_seconds": [wall / n] * n, "kernel_seconds": [run.kernel_seconds / n] * n,
            "version": [VERSION] * n, "centralised": [config.centralised] * n, **motion_columns,
        }
        columns.update({name: [config_column_value(value)] * n for name, value in config.as_record().items()})
        runs = episode_runs(config, episodes)
        columns["training_run"] = np.full(n, NO_TRAINING_RUN) if runs is None else runs
        tables.append(pa.table(columns, schema=row_schema()))
    return pa.concat_tables(tables)


def information_per_iteration(run, episodes: int, iterations: int) -> np.ndarray:
    """(episodes,) each episode's message entropy times the batch's reads_and_writes messages per scored
    iteration (protocols/__init__.py); 0 where nothing was sent."""
    per_iteration = run.transfers / (episodes * iterations)
    return run.message_entropy * per_iteration if per_iteration else np.zeros(episodes)


def _play_in_order(config: EvaluationConfig, batch: EnvironmentBatch):
    """One `play` of the unit's episodes on the fused kernel. On the stepping core, the episodes in
    order, in `collective evaluate`'s batches, with one group object: a persistent plug-in keeps what it
    learns (the plan never splits such a group's block, so the order is the same for any worker count),
    and the core's per-episode message logs stay the size of one batch."""
    if not config.on_stepping_core:
        return play(config, batch)
    group = plugin_group(config)
    size = batch_episodes(config)
    runs = [play(config, batch.episodes(first, min(first + size, len(batch))), group=group)
            for first in range(0, len(batch), size)]
    return joined_runs(runs, batch)


def scores_by_behaviour_json(config: EvaluationConfig, run) -> list[str]:
    """Per episode, each behaviour's per-capita R̄ as a canonical JSON object {"name":R̄,...} (a homogeneous
    group's is the group's R̄): exactly json.dumps of the dict with separators (",", ":"), its numbers written
    by one json.dumps per behaviour for the whole unit rather than one call per row."""
    by_behaviour = scores_by_behaviour(config.behaviours, run)
    keys, columns = [json.dumps(name) for name in by_behaviour], list(by_behaviour.values())
    values = [json.dumps(column.tolist(), separators=(",", ":"))[1:-1].split(",") if len(column) else []
              for column in columns]
    return ["{" + ",".join(f"{key}:{column[e]}" for key, column in zip(keys, values)) + "}"
            for e in range(len(run.mean_rewards))]
