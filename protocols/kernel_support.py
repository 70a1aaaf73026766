"""Compiled helpers shared by the protocols' iteration rules.

Every rule has one signature, `rule(values, members, pos_r, pos_c, scene, view, streams, window,
field, state, choice, observed, targets, comm)`: it reads the searchers' positions (members:
indices of the participating agents, in agent order) in `scene` (see `collective.environments.scene`), writes
a target cell for each participant into `targets` (agents,), and adds messages and bits to comm
(2,). `field` (cells,) and `state` (2,) hold protocol state for the current pass; `choice`
(agents, 3) is scratch for each searcher's local choice (row offset, column offset, reward),
`observed` (agents, window cells) for its observation.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from collective.behaviours.decisions import local_best
from collective.environments.scene import scene_reward
from collective.environments.torus import wrap

FLOAT_BITS = 64  # a reward travels as a double


@njit(cache=True, inline="always")
def cell_bits(rows, cols):
    """Bits that name one cell of the grid."""
    return math.ceil(math.log2(rows * cols))


@njit(cache=True)
def local_choices(members, pos_r, pos_c, scene, view, streams, window, choice):
    """Each searcher's own best cell (one draw each): choice[i] = (row offset, column offset, reward)."""
    for i in members:
        dr, dc, value = local_best(pos_r[i], pos_c[i], scene, view, streams[i], window)
        choice[i, 0], choice[i, 1], choice[i, 2] = dr, dc, value


@njit(cache=True, inline="always")
def chosen_cell(i, pos_r, pos_c, choice, rows, cols):
    """Cell index of searcher i's own choice."""
    return wrap(pos_r[i] + int(choice[i, 0]), rows) * cols + wrap(pos_c[i] + int(choice[i, 1]), cols)


@njit(cache=True, inline="always")
def observe_window(r, c, scene, view, observed, i):
    """observed[i, k] = R of the k-th cell of the range-`view` window around (r, c), row by row;
    returns the smallest and the largest. Inlined, and written through the 2-D array rather than
    a row view, whose reference count would cost more than the window's arithmetic."""
    low, high = np.inf, -np.inf
    k = 0
    for dr in range(-view, view + 1):
        row = wrap(r + dr, scene.rows)
        for dc in range(-view, view + 1):
            value = scene_reward(scene, row, wrap(c + dc, scene.cols))
            observed[i, k] = value
            low, high = min(low, value), max(high, value)
            k += 1
    return low, high
