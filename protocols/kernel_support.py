"""Compiled helpers shared by the protocols' iteration rules.

Every rule has one signature, `rule(values, members, pos_r, pos_c, good_r, good_c, evil_r, evil_c,
rows, cols, view, radius, streams, window, field, state, choice, observed, targets, comm)`: it reads
the searchers' positions (members: indices of the participating agents, in agent order), writes a
target cell for each participant into `targets` (agents,), and adds messages and bits to comm (2,).
`field` (cells,) and `state` (2,) hold protocol state for the current pass; `choice` (agents, 3)
is scratch for each searcher's local choice (row offset, column offset, reward), `observed`
(agents, window cells) for its observation.
"""
from __future__ import annotations

import math

from numba import njit

from collective.behaviours.decisions import local_best
from collective.torus import axis_distance, chebyshev, proximity, wrap

FLOAT_BITS = 64  # a reward travels as a double


@njit(cache=True, inline="always")
def observed_reward(r, c, good_r, good_c, evil_r, evil_c, rows, cols, radius):
    """R(c) of the cell at (r, c) (paper 003 §4.1.2)."""
    return (proximity(chebyshev(r, c, good_r, good_c, rows, cols), radius)
            - proximity(chebyshev(r, c, evil_r, evil_c, rows, cols), radius))


@njit(cache=True, inline="always")
def cell_bits(rows, cols):
    """Bits that name one cell of the grid."""
    return math.ceil(math.log2(rows * cols))


@njit(cache=True)
def local_choices(members, pos_r, pos_c, good_r, good_c, evil_r, evil_c, rows, cols, view, radius,
                  streams, window, choice):
    """Each searcher's own best cell (one draw each): choice[i] = (row offset, column offset, reward)."""
    for i in members:
        dr, dc, value = local_best(pos_r[i], pos_c[i], good_r, good_c, evil_r, evil_c, rows, cols, view,
                                   radius, streams[i], window)
        choice[i, 0], choice[i, 1], choice[i, 2] = dr, dc, value


@njit(cache=True, inline="always")
def chosen_cell(i, pos_r, pos_c, choice, rows, cols):
    """Cell index of searcher i's own choice."""
    return wrap(pos_r[i] + int(choice[i, 0]), rows) * cols + wrap(pos_c[i] + int(choice[i, 1]), cols)


@njit(cache=True)
def observe_window(r, c, good_r, good_c, evil_r, evil_c, rows, cols, view, radius, out):
    """out[k] = R of the k-th cell of the range-`view` window around (r, c), row by row: the same
    values as `observed_reward`, with each axis distance computed once per row or column."""
    side = 2 * view + 1
    for i in range(side):
        rr = wrap(r + i - view, rows)
        row_good, row_evil = axis_distance(rr, good_r, rows), axis_distance(rr, evil_r, rows)
        for j in range(side):
            cc = wrap(c + j - view, cols)
            out[i * side + j] = (proximity(max(row_good, axis_distance(cc, good_c, cols)), radius)
                                 - proximity(max(row_evil, axis_distance(cc, evil_c, cols)), radius))
