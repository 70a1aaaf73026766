"""The protocols' fast helpers against their slow twins, to the bit: `observe_window` (the local searcher's
fast window: read from the grid's `SearchTable`, or `moore_rewards` with objects beyond reach unread) against
`observe_window_cells` (`scene_reward` cell by cell) on Λ*, landscape and reset scenes, every grid from 3x3 to
9x9, views 1 and 2, radii 0 to 3, with the table and without;
`best_cells` (no branches) against NumPy's `flatnonzero(values == values.max())` on values with many ties; and
the windows that skip their wraps (`window_fits`) against the ring's modular arithmetic."""
import numba
import numpy as np
import pytest

from collective.behaviours.decisions import search_table, untabled
from collective.environments.scene import RESET_RADIUS, FieldRef, Scene
from collective.protocols.kernel_support import (best_cells, observe_window, observe_window_cells, window_column,
                                                 window_fits, window_row)

NO_FIELD = FieldRef(np.uintp(0), 0)


@numba.njit
def _windows(r, c, scene, view, fast, slow, tabled):
    """Both windows of one searcher into row 0 of fast and slow; their (low, high) pairs."""
    search = search_table(scene.rows, scene.cols, max(scene.radius, 0)) if tabled else untabled()
    return (observe_window(r, c, scene, view, fast, 0, search.reach, search.keys, search.parts),
            observe_window_cells(r, c, scene, view, slow, 0))


@pytest.mark.parametrize("tabled", [True, False])
@pytest.mark.parametrize("kind", ["lambda_star", "landscape", "reset"])
def test_observe_window_matches_its_slow_twin(kind, tabled):
    rng = np.random.default_rng(26)
    cases = 0
    for rows in range(3, 10):
        for cols in range(3, 10):
            for view in (1, 2):
                if 2 * view >= min(rows, cols):  # the kernels' window wraps once at most
                    continue
                for _ in range(6):
                    radius = int(rng.integers(0, 4))
                    r, gr, er = (int(x) for x in rng.integers(0, rows, 3))
                    c, gc, ec = (int(x) for x in rng.integers(0, cols, 3))
                    if cases % 3 == 0:  # the searcher beside ⊕: objects at the edge of the reach
                        gr = (r + view + radius) % rows
                    field = np.round(rng.normal(size=rows * cols), 1)
                    field[rng.integers(0, rows * cols, 3)] = -0.0
                    if kind == "lambda_star":
                        scene = Scene(gr, gc, er, ec, NO_FIELD, 0, 0, rows, cols, radius)
                    elif kind == "landscape":
                        scene = Scene(gr, gc, er, ec, FieldRef(np.uintp(field.ctypes.data), field.size),
                                      int(rng.integers(0, rows)), int(rng.integers(0, cols)), rows, cols, radius)
                    else:
                        scene = Scene(0, 0, 0, 0, NO_FIELD, 0, 0, rows, cols, RESET_RADIUS)
                        r, c = int(rng.integers(0, 2)), int(rng.integers(0, 2))  # near the reset cell
                    fast = np.full((1, (2 * view + 1) ** 2), np.nan)
                    slow = np.full((1, (2 * view + 1) ** 2), np.nan)
                    (low, high), (slow_low, slow_high) = _windows(r, c, scene, view, fast, slow, tabled)
                    assert np.array_equal(fast.view(np.uint64), slow.view(np.uint64)), (kind, rows, cols, view)
                    assert (low, high) == (slow_low, slow_high)
                    assert np.signbit([low, high]).tolist() == np.signbit([slow_low, slow_high]).tolist()
                    cases += 1
    assert cases > 400


def test_best_cells_matches_flatnonzero():
    """Against NumPy on values with many ties, signed zeros and infinities, of every length up to 130 (every
    remainder of the four-way running maxima, and a 10x10 grid's 100 cells); NaN is never among the best
    (NumPy's max would be NaN: compared with the non-NaN values' max), runs of NaN do not beat either, and
    n = 0 gives none."""
    rng = np.random.default_rng(26)
    for n in range(0, 131):
        for _ in range(20):
            values = rng.choice([-np.inf, -1.0, -0.0, 0.0, 0.25, 0.5, np.inf, np.nan], size=n + 3,
                                p=[0.15, 0.15, 0.15, 0.15, 0.15, 0.15, 0.02, 0.08])
            cells = np.full(n + 3, -7, np.int64)
            ties = best_cells(values, n, cells)
            numbers = values[:n][~np.isnan(values[:n])]
            expected = np.flatnonzero(values[:n] == numbers.max()) if numbers.size else []
            assert cells[:ties].tolist() == list(expected), values[:n]
    for values in (np.array([-1.0, -2.0, -1.0] + [-3.0] * 5 + [np.nan] * 8),  # a run of NaN after numbers
                   np.array([np.nan] * 8 + [-1.0, -2.0, -1.0] + [-3.0] * 5)):  # and before
        cells = np.full(values.shape[0], -7, np.int64)
        ties = best_cells(values, values.shape[0], cells)
        assert cells[:ties].tolist() == ([0, 2] if values[0] == -1.0 else [8, 10])


def test_windows_that_fit_name_the_cells_the_wraps_name():
    """`window_row` and `window_column` skip the wrap only where `window_fits`: the same cells as the ring's
    (row + dr) mod rows, (column + dc) mod cols, on every cell of grids 3x3 to 8x8, views 1 and 2."""
    fitting = 0
    for rows in range(3, 9):
        for cols in range(3, 9):
            for view in (1, 2):
                if 2 * view >= min(rows, cols):
                    continue
                for r in range(rows):
                    for c in range(cols):
                        fits = window_fits(r, c, view, rows, cols)
                        fitting += fits
                        cells = [window_row(r, dr, rows, cols, fits) + window_column(c, dc, cols, fits)
                                 for dr in range(-view, view + 1) for dc in range(-view, view + 1)]
                        assert cells == [((r + dr) % rows) * cols + (c + dc) % cols
                                         for dr in range(-view, view + 1) for dc in range(-view, view + 1)]
    assert fitting > 500
