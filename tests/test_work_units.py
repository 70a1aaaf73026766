"""The sweep plan: every row in exactly one unit, and workers that run out of work together."""
import heapq
import importlib.util
import json
import math
from collections import deque
import tomllib
from pathlib import Path

import pytest

from collective.sweeps.spec import SweepSpec, load_spec, parse_spec
from collective.sweeps.plan import (CACHED_SPANS, TAIL_UNIT_AGENT_STEPS, TARGET_UNIT_AGENT_STEPS, episode_cost, plan,
                                   plan_size)
from collective.sweeps.runtime import CALLS_PER_HOST, next_host
from sweep_support import BLOCKS_SPEC, SLOW_SPEC

ROOT = Path(__file__).parent.parent
EXPERIMENTS = ROOT / "experiments"
SPECS = {"slow": SLOW_SPEC, "blocks": BLOCKS_SPEC}


def finishing_times(costs: list[int], workers: int) -> list[float]:
    """When each worker runs out of work, units handed out in plan order as the Ray executor does
    (`runtime.next_host`: a worker holds its next unit while it plays one, until the queue runs short),
    each unit taking its cost in time."""
    queue, calls = deque(costs), {h: 0 for h in range(workers)}
    ends, finished = [0.0] * workers, []  # when each worker's last call ends; (time, worker) of each call's end
    now = 0.0
    while True:
        while queue and (h := next_host(calls, len(queue))) is not None:
            ends[h] = max(now, ends[h]) + queue.popleft()  # a worker plays its calls in order
            calls[h] += 1
            heapq.heappush(finished, (ends[h], h))
        if not finished:
            return sorted(ends)
        now, h = heapq.heappop(finished)
        calls[h] -= 1


def load(name: str) -> SweepSpec:
    """A test spec, or one of experiments/ (scaling: benchmarks/cluster_scaling.py local --spec experiments/scaling.toml: few large units)."""
    return parse_spec(tomllib.loads(SPECS[name]), name) if name in SPECS else load_spec(EXPERIMENTS / f"{name}.toml")


@pytest.mark.parametrize("name", [*SPECS, "scaling", "factors"])
def test_every_row_is_in_exactly_one_unit(name):
    spec = load(name)
    blocks = plan(spec)
    played = [(block.cell, episode, group) for block in blocks for unit in block.units
              for episode in range(unit.first, unit.stop) for group in unit.groups]
    expected = {(c, e, g) for c, cell in enumerate(spec.cells) for e in range(spec.episodes) for g in cell.playing}
    assert len(played) == len(set(played)) and set(played) == expected
    units = [unit for block in blocks for unit in block.units]
    assert len({unit.id for unit in units}) == len(units)
    assert all(block.first <= unit.first < unit.stop <= block.stop and unit.cell == block.cell
               for block in blocks for unit in block.units)


@pytest.mark.parametrize("name", [*SPECS, "scaling"])
@pytest.mark.parametrize("workers", [2, 3, 4])
def test_workers_run_out_of_work_within_a_tail_unit(name, workers):
    """With durations proportional to the planned cost, the plan's tail is cut fine enough that the
    last worker finishes within one tail unit of the ideal (total / workers). Without the taper the
    scaling sweep's 2 workers finish 11% apart (full units of 18 to 24 M agent-steps)."""
    spec = load(name)
    costs = [unit.cost for block in plan(spec) for unit in block.units]
    assert max(costs) <= 2 * TARGET_UNIT_AGENT_STEPS
    assert finishing_times(costs, workers)[-1] - sum(costs) / workers <= TAIL_UNIT_AGENT_STEPS


def test_a_worker_holds_its_next_unit_while_the_queue_is_long_and_only_an_idle_one_takes_the_last():
    """The executor's hand-out (`runtime.next_host`): the least busy worker, up to CALLS_PER_HOST calls
    each while more units are queued than there are workers, then only a worker with nothing to play."""
    assert CALLS_PER_HOST == 2
    assert next_host({0: 0, 1: 0}, 10) == 0 and next_host({0: 1, 1: 0}, 10) == 1
    assert next_host({0: 1, 1: 1}, 10) == 0 and next_host({0: 2, 1: 2}, 10) is None
    assert next_host({0: 1, 1: 1}, 3) == 0 and next_host({0: 1, 1: 1}, 2) is None
    assert next_host({0: 1, 1: 0}, 1) == 1 and next_host({0: 2, 1: 1}, 1) is None


def one_group_spec() -> SweepSpec:
    """The issue's one-group sweep, as benchmarks/cluster_scaling.py times it."""
    module = importlib.util.module_from_spec(
        spec := importlib.util.spec_from_file_location("cluster_scaling", ROOT / "benchmarks" / "cluster_scaling.py"))
    spec.loader.exec_module(module)
    return module.named_spec("one-group")


@pytest.mark.parametrize("name", [*SPECS, "scaling", "factors", "one group"])
def test_a_worker_generates_each_episode_of_the_units_it_plays_once(name):
    """Spans (`plan._spans`): each unit's span holds its episodes, and a block's spans are equal or
    disjoint, so one worker playing every unit in plan order (as the serial executor does, keeping
    CACHED_SPANS spans) generates each cell's episodes exactly once; a group split by episodes (the
    one-group sweep) generates only its own piece, whichever worker plays it."""
    spec = one_group_spec() if name == "one group" else load(name)
    blocks = plan(spec)
    recent, generated = deque(maxlen=CACHED_SPANS), 0
    for block in blocks:
        spans = {unit.span for unit in block.units}
        assert all(a == b or a[1] <= b[0] or b[1] <= a[0] for a in spans for b in spans)
        for unit in block.units:
            assert unit.span[0] <= unit.first < unit.stop <= unit.span[1]
            if unit.span_key not in recent:
                recent.append(unit.span_key)
                generated += unit.span[1] - unit.span[0]
    assert generated == spec.episodes * len(spec.cells)
    if name == "one group":
        assert all(unit.span == (unit.first, unit.stop) for block in blocks for unit in block.units)


@pytest.mark.parametrize("measurements", ["group_costs.json", "group_costs_plugins.json"])
def test_the_plan_costs_each_group_of_a_sweep_as_measured(measurements):
    """`plan.episode_cost` beside what benchmarks/group_costs.py measured (benchmarks/group_costs.json: the
    communication sweep; group_costs_plugins.json: the plug-ins' sweep, experiments/byo_agent.toml): within each
    cell, every group's predicted cost relative to the others' (over their geometric mean) within 2x of its
    measured one. The sham control once counted twice its protocol's agent-steps; it costs 57-136x a plain group's.
    A plug-in's group once counted as the kernel's; the stepping core costs it 17-44x."""
    measured = json.loads((ROOT / "benchmarks" / measurements).read_text())
    spec = load_spec(ROOT / measured["spec"])
    labels = [group.label for group in spec.groups]
    cells = {json.dumps(dict(cell.factors)): cell for cell in spec.cells}
    by_cell = {}
    for row in measured["groups"]:
        cell = cells[json.dumps(row["cell"])]
        ratio = episode_cost(cell.configs[labels.index(row["group"])]) / row["seconds_per_episode"]
        by_cell.setdefault(json.dumps(row["cell"]), {})[row["group"]] = ratio
    assert len(by_cell) == len(spec.cells) and all(set(groups) == {labels[g] for g in cells[key].playing}
                                                   for key, groups in by_cell.items())  # the data is the spec's
    for key, ratios in by_cell.items():
        mean = math.exp(sum(math.log(ratio) for ratio in ratios.values()) / len(ratios))
        off = {group: round(ratio / mean, 2) for group, ratio in ratios.items() if not 0.5 <= ratio / mean <= 2}
        assert not off, f"cell {key}: model/measured over the cell's mean {off}"


def test_the_taper_never_cuts_a_unit_whose_learners_keep_tables():
    """Each piece of a unit trains its kept tables again (`plan.unit_trainings`): on the quickstart sweep the
    taper once cut learner units in two or three, 170 trainings where every group trains each of its runs once
    per block (120), for a plan 17% more work and 2 workers' makespan 11% longer."""
    spec = load_spec(EXPERIMENTS / "quickstart.toml")
    trainings = plan_size(spec).trainings
    blocks = plan(spec)
    once = {(c, g): sum(block.cell == c for block in blocks) * cell.configs[g].runs_played(spec.episodes)
            for c, cell in enumerate(spec.cells) for g in cell.playing if cell.configs[g].keeps_tables}
    assert trainings == once and sum(once.values()) == 120
