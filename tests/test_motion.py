"""Pattern descriptors (issue 22 point 3): hand-built paths of known period, drift and displacement on the torus,
and the paper generator's patterns, whose stationary ones are exactly its K <= 2 ones."""
import numpy as np
import pytest

from collective.environments.motion import pattern_motion, row_motion
from collective.environments.patterns import CyclicPatternGenerator

ROWS = COLS = 10
T = 84  # a multiple of every period below, so a mean per iteration is the segment's
MOVES = {"stay": (0, 0), "right": (0, 1), "left": (0, -1), "down": (1, 0), "up": (-1, 0), "down_right": (1, 1)}


def path(segment: list[str], start: tuple[int, int] = (3, 8), rows: int = ROWS, cols: int = COLS) -> np.ndarray:
    """The cells of `segment` repeated for T moves from `start`."""
    r, c = start
    cells = [r * cols + c]
    for t in range(T):
        dr, dc = MOVES[segment[t % len(segment)]]
        r, c = (r + dr) % rows, (c + dc) % cols
        cells.append(r * cols + c)
    return np.array(cells)


CASES = [  # segment, period, drift, displacement per iteration, motion
    (["stay"], 1, 0, 0.0, "stationary"),
    (["right", "left"], 2, 0, 1.0, "periodic"),
    (["right", "down", "left", "up"], 4, 0, 1.0, "periodic"),
    (["right"], 1, 1, 1.0, "drifting"),  # crosses the right edge (column 8 -> 9 -> 0) and keeps drifting
    (["right", "stay", "down"], 3, 1, 2 / 3, "drifting"),  # one row and one column per period: 1 king move
    (["right", "right", "stay", "left"], 4, 1, 0.75, "drifting"),
    (["down_right", "down_right", "stay", "up", "left", "up", "left"], 7, 0, 6 / 7, "periodic"),
]


@pytest.mark.parametrize("segment,period,drift,per_iteration,motion", CASES)
def test_hand_built_paths_have_their_known_descriptors(segment, period, drift, per_iteration, motion):
    found = pattern_motion(path(segment)[None, :], ROWS, COLS)
    assert (found.period[0], found.drift[0], found.motion[0]) == (period, drift, motion)
    assert found.displacement_per_iteration[0] == pytest.approx(per_iteration)


def test_a_drift_that_goes_round_the_torus_in_one_period_returns():
    """Five moves right on a 5-column torus bring the object back: drift 0 on the torus (a ring, not a line)."""
    segment = ["right"] * 5 + ["down", "up"]
    found = pattern_motion(path(segment, start=(1, 1), rows=5, cols=5)[None, :], 5, 5)
    assert (found.period[0], found.drift[0], found.motion[0]) == (7, 0, "periodic")


def test_descriptors_are_per_row_and_the_row_kind_is_the_more_mobile_objects():
    good = pattern_motion(np.stack([path(["stay"]), path(["right", "left"]), path(["stay"])]), ROWS, COLS)
    evil = pattern_motion(np.stack([path(["stay"]), path(["stay"]), path(["right"])]), ROWS, COLS)
    assert list(good.period) == [1, 2, 1] and list(evil.drift) == [0, 0, 1]
    assert list(row_motion(good, evil)) == ["stationary", "periodic", "drifting"]


def test_the_paper_generators_stationary_patterns_are_its_k_two_ones_and_periods_hold():
    """On the cyclic generator's own draws (paper 003 §4.2): a pattern stands still exactly when K <= 2 (one cell
    repeated is two LZ76 phrases), each period's net move is the drift (the path repeats after a period when
    the drift is 0), and a period is at most the longest segment ⌊T/2⌋."""
    rows, cols, iterations = 6, 7, 40
    seeds = np.random.SeedSequence(5).generate_state(400, dtype=np.uint64)
    batch = CyclicPatternGenerator(segment_cap="half_T").generate(seeds, rows, cols, iterations, 0, iterations + 1)
    found = pattern_motion(batch.positions, rows, cols)
    assert np.array_equal(found.motion == "stationary", batch.k_raw <= 2)
    assert (found.period <= iterations // 2).all()
    assert set(found.motion) == {"stationary", "periodic", "drifting"}
    for e in np.flatnonzero(found.motion == "periodic"):
        p = found.period[e]
        assert np.array_equal(batch.positions[e, p:], batch.positions[e, :-p])
    for e in np.flatnonzero(found.motion == "drifting"):
        p = found.period[e]
        assert not np.array_equal(batch.positions[e, p:], batch.positions[e, :-p])
