"""Spec §9 reference vectors (5×5 grid, cells numbered 1..25 row-major), for both simulators'
geometry: the compiled torus functions and the plain reference world."""
import pytest

from collective.simulation.reference import ReferenceWorld
from collective.environments.torus import chebyshev, proximity

WORLD = ReferenceWorld(rows=5, cols=5, iterations=1)


def fast_observation(centre: int, good: int, evil: int) -> list[float]:
    """Observation as the compiled kernel computes it (torus.chebyshev, torus.proximity)."""
    rows = cols = 5
    r, c = divmod(centre - 1, cols)
    g, e = divmod(good - 1, cols), divmod(evil - 1, cols)
    values = []
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            rr, cc = (r + dr) % rows, (c + dc) % cols
            values.append(proximity(chebyshev(rr, cc, *g, rows, cols), 1)
                          - proximity(chebyshev(rr, cc, *e, rows, cols), 1))
    return values


def reference_observation(centre: int, good: int, evil: int) -> list[float]:
    return [WORLD.reward(cell, good - 1, evil - 1) for cell, _, _ in WORLD.window(centre - 1)]


VECTORS = [
    (7, 7, 19, [.5, .5, .5, .5, 1, .5, .5, .5, 0]),
    (19, 7, 19, [0, -.5, -.5, -.5, -1, -.5, -.5, -.5, -.5]),
    (9, 7, 19, [.5, 0, 0, .5, 0, 0, 0, -.5, -.5]),
    (7, 7, 8, [.5, 0, 0, .5, .5, -.5, .5, 0, 0]),
]


@pytest.mark.parametrize("observe", [fast_observation, reference_observation])
@pytest.mark.parametrize("centre, good, evil, expected", VECTORS)
def test_observations(observe, centre, good, evil, expected):
    assert observe(centre, good, evil) == pytest.approx(expected)


@pytest.mark.parametrize("centre, expected", [
    (7, [1, 2, 3, 6, 7, 8, 11, 12, 13]),
    (25, [19, 20, 16, 24, 25, 21, 4, 5, 1]),
])
def test_moore_neighbourhood(centre, expected):
    assert [cell + 1 for cell, _, _ in WORLD.window(centre - 1)] == expected


def test_toroidal_distance_example_from_paper():
    """Paper 003 §4.1.1: on 5×5, cells (1,3) and (5,3) are 1 apart."""
    assert chebyshev(0, 2, 4, 2, 5, 5) == 1
    assert WORLD.distance(2, 22) == 1
