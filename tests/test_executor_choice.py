"""`collective sweep --executor auto`: serial when Ray's start-up would not pay off, Ray when its
workers win it back (the issue's small sweep: 2.5 s serially, 50 s on an embedded Ray; the quickstart
sweep: 6 s serially, 18 s on an embedded Ray)."""
import tomllib
from pathlib import Path

import pytest

from collective.sweeps.command import choose_executor
from collective.sweeps.plan import PlanSize, plan_size
from collective.sweeps.spec import load_spec, parse_spec

IMPORT_SECONDS = 3.0  # the driver's Python and imports on a quiet 2-core machine
EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
# Large landscapes: generation and ceilings grow with cells x T (~50 s serially, ~25 s a worker on 2)
LARGE_LANDSCAPES = """
name = "large_landscapes"
seed = 1
profile = "sound"
episodes = 20000
iterations = 1000
[settings]
landscape_normalisation = "centre"
[factors]
grid = ["80x80"]
group_size = [1]
environment = ["landscape"]
[groups]
behaviours = ["random", "local_search", "oracle"]
protocols = [{ name = "none" }]
"""


def sized(cost: int, rows: int) -> PlanSize:
    """A plan of `cost` (a local searcher's agent-steps, ~40 M a second) and `rows`."""
    return PlanSize(1, 1, True, rows, cost, environments=0, environment_cell_steps=0, cost=cost)


@pytest.mark.parametrize("size, cpus, address, expected", [
    (sized(25_000_000, 5_100), 2, None, "serial"),  # the 5,100 rows: ~2.5 s serially
    (sized(6_000_000_000, 5_100), 2, None, "ray"),  # 2.5 minutes of kernel work: two workers save more than a minute
    (sized(6_000_000_000, 5_100), 1, None, "serial"),  # one worker saves nothing
    (sized(25_000_000, 5_100), 2, "127.0.0.1:6379", "ray"),  # a cluster named: the user asked for Ray
])
def test_auto_picks_the_executor_that_finishes_first(size, cpus, address, expected):
    picked, why = choose_executor(size, cpus, IMPORT_SECONDS, address)
    assert picked == expected and why and "\n" not in why


@pytest.mark.parametrize("spec, expected", [
    ("quickstart", "serial"),  # 6 s serially, 18 s on an embedded Ray (2 cores, load ~4)
    ("communication", "serial"),  # shams at 85x a searcher's step: 12.5 s of CPU serially (issue 46 item 4)
    ("factors", "ray"),  # ~45 s of kernel and rows serially
    ("large_landscapes", "ray"),  # few agent-steps and rows, but 80x80 fields over T = 1000
])
def test_auto_weighs_the_environments_of_real_specs(spec, expected):
    loaded = (parse_spec(tomllib.loads(LARGE_LANDSCAPES), spec) if spec == "large_landscapes"
              else load_spec(EXPERIMENTS / f"{spec}.toml"))
    picked, why = choose_executor(plan_size(loaded), 2, IMPORT_SECONDS, None)
    assert picked == expected, why
