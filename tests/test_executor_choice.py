"""`collective sweep --executor auto`: serial when Ray's start-up would not pay off, Ray when its
workers win it back (the issue's small sweep: 2.5 s serially, 50 s on an embedded Ray)."""
import pytest

from collective.sweeps.command import choose_executor

IMPORT_SECONDS = 3.0  # the driver's Python and imports on a quiet 2-core machine


@pytest.mark.parametrize("agent_steps, rows, cpus, address, expected", [
    (25_000_000, 5_100, 2, None, "serial"),  # the 5,100 rows: ~2.5 s serially
    (6_000_000_000, 5_100, 2, None, "ray"),  # ten minutes of kernel work: two workers save five
    (21_150_000, 36_000, 2, None, "serial"),  # the quickstart sweep: 6 s serially, 18 s on an embedded Ray
    (290_000_000, 348_000, 2, None, "ray"),  # the factor study: ~45 s of kernel and rows serially
    (6_000_000_000, 5_100, 1, None, "serial"),  # one worker saves nothing
    (25_000_000, 5_100, 2, "127.0.0.1:6379", "ray"),  # a cluster named: the user asked for Ray
])
def test_auto_picks_the_executor_that_finishes_first(agent_steps, rows, cpus, address, expected):
    picked, why = choose_executor(agent_steps, rows, cpus, IMPORT_SECONDS, address)
    assert picked == expected and why and "\n" not in why
