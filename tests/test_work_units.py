"""The sweep plan: every row in exactly one unit, and workers that run out of work together."""
import heapq
import tomllib
from pathlib import Path

import pytest

from collective.sweeps.spec import SweepSpec, load_spec, parse_spec
from collective.sweeps.plan import TAIL_UNIT_AGENT_STEPS, TARGET_UNIT_AGENT_STEPS, plan
from sweep_support import BLOCKS_SPEC, SLOW_SPEC

EXPERIMENTS = Path(__file__).parent.parent / "experiments"
SPECS = {"slow": SLOW_SPEC, "blocks": BLOCKS_SPEC}


def finishing_times(costs: list[int], workers: int) -> list[float]:
    """When each worker runs out of work, handing units out in plan order to the first idle one."""
    free = [0.0] * workers
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return sorted(free)


def load(name: str) -> SweepSpec:
    """A test spec, or one of experiments/ (scaling: benchmarks/sweep_scaling.py's few large units)."""
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
