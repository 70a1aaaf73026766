"""Ray's memory resource bounds a sweep's concurrent work: every actor holds the memory its work
needs on a real embedded Ray, and the worker count is cut to what the nodes' memory holds."""
import time
import tomllib

import pytest

from collective.sweeps.plan import CACHED_SPANS, ROW_BYTES, largest_span_bytes, largest_unit_bytes
from collective.sweeps.runtime import ACTOR_BASE_BYTES, RayExecutor, ResourceError, memory_capped_workers
from collective.sweeps.spec import parse_spec

GIB = 2**30

# Two Q-learners on a 30x30 torus, T=100: a unit's Q-tables dominate its arrays.
LEARNERS_SPEC = """
name = "learners"
seed = 1
profile = "paper"
episodes = 40
iterations = 100

[factors]
grid = ["30x30"]
group_size = [2]

[groups]
behaviours = ["q_learning"]

[settings]
q_training_passes = 10
"""


def learners_spec():
    return parse_spec(tomllib.loads(LEARNERS_SPEC))


def test_the_largest_unit_counts_its_q_tables_and_rows():
    # one unit plays all 40 episodes (40 x 2 agents x 100 x 11 passes = 88,000 agent-steps); each
    # learner's table: 900 cells x 100 iterations states x (9 float64 values + a written flag)
    tables = 2 * 900 * 100 * (9 * 8 + 1)
    assert tables + 40 * ROW_BYTES <= largest_unit_bytes(learners_spec()) < 2 * (tables + 40 * ROW_BYTES)


def test_every_actor_holds_its_memory_on_a_real_ray():
    import ray

    spec = learners_spec()
    with RayExecutor(spec, workers=2) as executor:
        # a host's base, its largest unit and the environments of the spans it keeps: 40 episodes of
        # (2 x 101 positions + 2 starts) int32 and 52 bytes of per-episode values
        assert largest_span_bytes(spec) == 40 * ((2 * 101 + 2) * 4 + 52)
        assert executor.workers == 2 and executor.host_bytes == (ACTOR_BASE_BYTES + largest_unit_bytes(spec)
                                                                 + CACHED_SPANS * largest_span_bytes(spec))
        expected = 2 * executor.host_bytes  # the GroupHosts: nothing else holds memory
        deadline = time.monotonic() + 30  # Ray reports its resources with a delay
        while True:
            held = ray.cluster_resources()["memory"] - ray.available_resources().get("memory", 0.0)
            if held == pytest.approx(expected, rel=1e-6) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert held == pytest.approx(expected, rel=1e-6)


def test_workers_are_cut_to_what_the_nodes_memory_holds(capsys):
    nodes = [{"CPU": 4.0, "memory": 10 * GIB}, {"CPU": 2.0, "memory": 3 * GIB}]
    # the 10 GiB node holds 4 workers of 2 GiB (as many as its CPUs); the 3 GiB node holds 1
    assert memory_capped_workers(6, nodes, 2 * GIB) == 5
    assert "6 workers capped at 5" in capsys.readouterr().err
    assert memory_capped_workers(3, nodes, 2 * GIB) == 3 and capsys.readouterr().err == ""
    with pytest.raises(ResourceError, match=r"needs ~12\.0 GiB .* largest work unit"):
        memory_capped_workers(1, nodes, 12 * GIB)
