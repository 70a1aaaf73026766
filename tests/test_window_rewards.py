"""The local searcher's fast window (issue 25) against its slow twins, to the bit: `window_reward` and
`moore_rewards` (objects beyond reach unread, f of row and column distances) against `scene_reward` cell
by cell, and `local_best` against a plain-Python restatement of its rule (paper 003 §5.2.1: the best cell
of the window, uniform tie-break in row-major order, one draw), on every grid size from 1 to 12, views 1
to 3 (windows wider than the grid included) and reward radii 0 to 3."""
import numba
import numpy as np
import pytest

from collective.behaviours.decisions import local_best
from collective.environments.scene import (RESET_RADIUS, FieldRef, Scene, moore_rewards, scene_blind, scene_reward,
                                           window_reach, window_reward)
from collective.simulation.random_streams import SplitMix64

SIZES = range(1, 13)
VIEWS = (1, 2, 3)
RADII = (0, 1, 2, 3)
NO_FIELD = FieldRef(np.uintp(0), 0)


@numba.njit
def _mismatches(rows, cols, radius, view, positions):
    """Cells where the fast window differs from `scene_reward` (bit for bit; -0.0 is not 0.0 here), over
    scenes (r, c, ⊕ row, ⊕ column, ⊖ row, ⊖ column), and scenes where `window_reach` disagrees with
    `scene_blind`."""
    bad = 0
    for k in range(positions.shape[0]):
        r, c, gr, gc, er, ec = positions[k]
        scene = Scene(gr, gc, er, ec, FieldRef(np.uintp(0), 0), 0, 0, rows, cols, radius)
        good_reaches, evil_reaches = window_reach(scene, r, c, view)
        bad += (not (good_reaches or evil_reaches)) != scene_blind(scene, r, c, view)
        ring = moore_rewards(scene, r, c, good_reaches, evil_reaches)
        for i in range(-view, view + 1):
            row = (r + i) % rows
            for j in range(-view, view + 1):
                col = (c + j) % cols
                slow = scene_reward(scene, row, col)
                fast = window_reward(scene, row, col, good_reaches, evil_reaches)
                bad += fast != slow or np.signbit(fast) != np.signbit(slow)
                if view == 1:
                    moore = ring[(i + 1) * 3 + j + 1]
                    bad += moore != slow or np.signbit(moore) != np.signbit(slow)
    return bad


def _positions(rng, rows, cols, count):
    return np.column_stack([rng.integers(0, size, count) for size in (rows, cols) * 3]).astype(np.int64)


def test_fast_window_rewards_match_scene_reward_cell_by_cell():
    rng = np.random.default_rng(25)
    for rows in SIZES:
        for cols in SIZES:
            for radius in RADII:
                for view in VIEWS:
                    # 12 random scenes and the agent on ⊕, on ⊖, and one cell beside each (the reach's edge)
                    positions = _positions(rng, rows, cols, 16)
                    positions[12, 2:4] = positions[12, :2]
                    positions[13, 4:6] = positions[13, :2]
                    positions[14, 2] = (positions[14, 0] + view + radius) % rows
                    positions[15, 5] = (positions[15, 1] + view + radius + 1) % cols
                    assert _mismatches(rows, cols, radius, view, positions) == 0, (rows, cols, radius, view)


def _slow_local_best(r, c, rows, cols, view, pays, stream):
    """Paper 003 §5.2.1's local searcher restated: the window's cells row by row, the best reward, its
    ties in that order, one draw among them: (chosen cell, best reward)."""
    window = [((r + i) % rows, (c + j) % cols) for i in range(-view, view + 1) for j in range(-view, view + 1)]
    values = [pays(row, col) for row, col in window]
    best = max(values)
    ties = [cell for cell, value in zip(window, values) if value == best]
    return ties[stream.uniform_int(len(ties))], best


def _lambda_star_pays(rows, cols, radius, gr, gc, er, ec):
    def distance(r1, c1, r2, c2):
        dr, dc = abs(r1 - r2), abs(c1 - c2)
        return max(min(dr, rows - dr), min(dc, cols - dc))

    def f(d):  # paper 003 §4.1.2
        return 1.0 / (d + 1.0) if d <= radius else 0.0
    return lambda row, col: f(distance(row, col, gr, gc)) - f(distance(row, col, er, ec))


@pytest.mark.parametrize("kind", ["lambda_star", "landscape", "reset"])
def test_local_best_matches_its_slow_twin(kind):
    rng = np.random.default_rng(2025)
    cases = 0
    for rows in SIZES:
        for cols in SIZES:
            for view in VIEWS:
                if view > min(rows, cols):  # the kernels' window wraps once at most (config: view < side / 2)
                    continue
                for _ in range(3):
                    radius = int(rng.integers(0, 4))
                    r, c, gr, gc, er, ec = (int(x) for x in _positions(rng, rows, cols, 1)[0])
                    field = np.round(rng.normal(size=rows * cols), 1)  # coarse values: ties happen
                    shift_r, shift_c = int(rng.integers(0, rows)), int(rng.integers(0, cols))
                    if kind == "lambda_star":
                        scene = Scene(gr, gc, er, ec, NO_FIELD, 0, 0, rows, cols, radius)
                        pays = _lambda_star_pays(rows, cols, radius, gr, gc, er, ec)
                    elif kind == "landscape":
                        scene = Scene(gr, gc, er, ec, FieldRef(np.uintp(field.ctypes.data), field.size), shift_r,
                                      shift_c, rows, cols, radius)
                        pays = lambda row, col: field[((row - shift_r) % rows) * cols + (col - shift_c) % cols]
                    else:
                        scene = Scene(0, 0, 0, 0, NO_FIELD, 0, 0, rows, cols, RESET_RADIUS)
                        pays = lambda row, col: -0.5 if row == 0 and col == 0 else 0.0
                    seed = int(rng.integers(0, 2 ** 63))
                    state, dr, dc, best = local_best(r, c, scene, view, np.uint64(seed))
                    stream = SplitMix64(seed)
                    cell, slow_best = _slow_local_best(r, c, rows, cols, view, pays, stream)
                    assert ((r + dr) % rows, (c + dc) % cols) == cell, (kind, rows, cols, view, radius)
                    assert best == slow_best and np.signbit(best) == np.signbit(slow_best)
                    assert int(state) == stream.state  # exactly one draw
                    cases += 1
    assert cases > 1000
