"""Toroidal grid geometry shared by the compiled kernels (spec §1, paper 003 §4.1.1).

Cells are indexed row-major 0..N-1. The nine actions, in the paper's order, are
up-left, up, up-right, left, stay, right, down-left, down, down-right: action a moves by
(a // 3 - 1 rows, a % 3 - 1 columns).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def wrap(x, size):
    """x in [-size, 2*size) brought back onto the ring [0, size)."""
    if x < 0:
        return x + size
    if x >= size:
        return x - size
    return x


@njit(cache=True)
def king_moves(rows, cols):
    """The torus as a table, (cells, 9): [cell, a] is the cell action a leads to from `cell` (wrapped), a load
    instead of a division and two wraps per move."""
    moves = np.empty((rows * cols, 9), np.int64)
    for cell in range(rows * cols):
        for action in range(9):
            moves[cell, action] = wrap(cell // cols + action // 3 - 1, rows) * cols + wrap(cell % cols + action % 3 - 1,
                                                                                         cols)
    return moves


@njit(cache=True)
def cell_coordinates(rows, cols):
    """Each cell's row and column, (cells,) each: a load instead of a division."""
    row, column = np.empty(rows * cols, np.int64), np.empty(rows * cols, np.int64)
    for cell in range(rows * cols):
        row[cell], column[cell] = cell // cols, cell % cols
    return row, column


@njit(cache=True)
def axis_distance(a, b, size):
    """Distance along one toroidal axis (the surpassing rule, paper 003 §4.1.1)."""
    d = abs(a - b)
    return min(d, size - d)


@njit(cache=True)
def chebyshev(r1, c1, r2, c2, rows, cols):
    """Toroidal Chebyshev distance: king moves with wrap-around (spec §1)."""
    return max(axis_distance(r1, r2, rows), axis_distance(c1, c2, cols))


@njit(cache=True)
def axis_step_toward(a, b, size, direct_ties):
    """-1, 0 or +1: one step from a toward b the shorter way round; exactly half-way goes +1 (spec §5), or with
    `direct_ties` (`cpp_approach_position`) the way that does not wrap, as the 2016 program's approachPosition
    (src/General.cpp: a distance of at most ⌊side/2⌋ goes straight, a longer one round)."""
    forward = wrap(b - a, size)  # a wrap, not a modulo: no integer division
    if forward == 0:
        return 0
    if 2 * forward == size and direct_ties:
        return 1 if b > a else -1
    if 2 * forward <= size:
        return 1
    return -1


@njit(cache=True)
def proximity(distance, radius):
    """f(d) = 1/(d+1) inside the reward radius, else 0 (paper 003 §4.1.2)."""
    if distance <= radius:
        return _unit_fraction(distance)
    return 0.0


@njit(cache=True, inline="always")
def branchless_proximity(distance, radius):
    """`proximity` to the bit, without a branch: 1/(d+1) times 1.0 inside the radius, times 0.0 beyond
    (+0.0, as `proximity`). For the local searcher's window, where inside or not is a coin toss to the
    branch predictor."""
    return (distance <= radius) * _unit_fraction(distance)


@njit(cache=True)
def axis_proximities(size, radius):
    """f(axis distance) by difference: entry size + a - b for a, b on a ring of `size` (paper 003 §4.1.2), each
    `proximity` itself."""
    near = np.empty(2 * size)
    for difference in range(-size, size):
        near[size + difference] = proximity(axis_distance(difference % size, 0, size), radius)
    return near


@njit(cache=True, inline="always")
def _unit_fraction(distance):
    """1/(d+1), f inside the reward radius (paper 003 §4.1.2)."""
    return 1.0 / (distance + 1.0)
