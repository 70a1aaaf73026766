"""Each episode's ceiling: the best R̄ an agent can achieve (issue 12 point 8).

With the ⊕/⊖ paths known, the best total reward of one agent from a start cell is a shortest-path
problem over (t, cell), solved exactly by dynamic programming backwards in time (Bellman 1957):

    V_T(c) = 0,    V_t(c) = max over the 9 king moves c -> c' (staying included) of R_{t+1}(c') + V_{t+1}(c')

with the kernel's timing (spec §1; `collective.simulation.kernel._play_pass`): the agent decides at
t, moves, and is paid R of its new cell from the scene at t+1 (`scene.scene_reward`, so Λ* and
fitness landscapes alike). The 3x3 maximum is taken as a row pass then a column pass (the max
filter is separable), O(T·N) per episode for N cells, whatever the group size.

`upsilon_best` of an episode is the mean over the group's agents of V_0(start_i) / T. With the
coordination threshold at 1 an agent's reward depends on its own cell only, so every agent can
earn its own optimum at once and this is exactly the best achievable R̄ of the group. Above 1 the
positive part is paid only to a quorum near ⊕ (paper 003 §6.1), an agent never earns more than
its cell's R, and upsilon_best is an upper bound, not necessarily achievable.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from collective.environments.lambda_star import EnvironmentBatch
from collective.environments.torus import chebyshev, proximity, wrap


@njit(cache=True, nogil=True)
def best_totals(good, evil, landscapes, starts, rows, cols, iterations, radius, out):
    """out (episodes, agents) ← V_0(starts[e, i]): the best total reward over the episode from each
    start cell. good, evil (episodes, T+1) cells; landscapes (episodes, cells) base fields, (episodes, 0)
    for Λ*; starts (episodes, agents)."""
    n_cells = rows * cols
    value = np.empty(n_cells)  # V_{t+1}, then R_{t+1} + V_{t+1} in place, then V_t
    across = np.empty(n_cells)  # the maximum over each cell and its two row neighbours
    span_r, span_c = min(2 * radius + 1, rows), min(2 * radius + 1, cols)  # distinct cells of a reward zone
    row_of, column_of = np.empty(n_cells, np.int64), np.empty(n_cells, np.int64)  # a load, not a division, per cell
    for cell in range(n_cells):
        row_of[cell], column_of[cell] = cell // cols, cell % cols
    for e in range(good.shape[0]):
        first_r, first_c = good[e, 0] // cols, good[e, 0] % cols
        field = landscapes[e]  # (cells,), empty for Λ*
        value[:] = 0.0
        for t in range(iterations - 1, -1, -1):
            good_r, good_c = row_of[good[e, t + 1]], column_of[good[e, t + 1]]
            evil_r, evil_c = row_of[evil[e, t + 1]], column_of[evil[e, t + 1]]
            if field.shape[0] > 0:  # a landscape: every cell pays, the field moved with ⊕ (`scene.scene_reward`)
                _pay_field(value, field, (good_r - first_r) % rows, (good_c - first_c) % cols, rows, cols)
            else:  # Λ*: only the cells within the reward radius of ⊕ or ⊖ pay; each is paid once
                _pay_zone(value, good_r, good_c, good_r, good_c, evil_r, evil_c, False, rows, cols, radius, span_r,
                          span_c)
                _pay_zone(value, evil_r, evil_c, good_r, good_c, evil_r, evil_c, True, rows, cols, radius, span_r,
                          span_c)
            _king_max(value, across, rows, cols)
        for i in range(starts.shape[1]):
            out[e, i] = value[starts[e, i]]


@njit(cache=True, inline="always")
def _pay_field(value, field, shift_r, shift_c, rows, cols):
    """value[c] += R(c) = field[c shifted back by (shift_r, shift_c)] for every cell, as `scene.scene_reward`
    reads a landscape: row by row, each row in two straight runs (before and after the column wrap), so no
    division or wrap per cell."""
    width, shift = np.uint64(cols), np.uint64(shift_c)
    for r in range(rows):
        target = np.uint64(r) * width
        source = np.uint64(r - shift_r if r >= shift_r else r - shift_r + rows) * width
        for c in range(shift, width):  # columns shift_c.. read source columns 0..
            value[target + c] += field[source + c - shift]
        for c in range(shift):  # columns ..shift_c - 1 read the source row's last shift_c columns
            value[target + c] += field[source + width - shift + c]


@njit(cache=True, inline="always")
def _pay_zone(value, centre_r, centre_c, good_r, good_c, evil_r, evil_c, skip_good, rows, cols, radius, span_r,
              span_c):
    """value[c] += R(c) = f(d(c, ⊕)) - f(d(c, ⊖)) (paper 003 §4.1.2, as `scene.scene_reward` computes it) over
    the cells within the reward radius of (centre_r, centre_c), except, with `skip_good`, those within it of ⊕
    (already paid)."""
    r = wrap(centre_r - radius, rows) if radius <= rows else (centre_r - radius) % rows  # no division when it can
    first_c = wrap(centre_c - radius, cols) if radius <= cols else (centre_c - radius) % cols
    for _ in range(span_r):
        c = first_c
        for _ in range(span_c):
            to_good = chebyshev(r, c, good_r, good_c, rows, cols)
            if not (skip_good and to_good <= radius):
                value[r * cols + c] += proximity(to_good, radius) - proximity(
                    chebyshev(r, c, evil_r, evil_c, rows, cols), radius)
            c = c + 1 if c + 1 < cols else 0
        r = r + 1 if r + 1 < rows else 0


@njit(cache=True, inline="always")
def _king_max(value, across, rows, cols):
    """value[c] ← the maximum of value over c's 3x3 toroidal neighbourhood. A row pass into
    `across`, then a column pass back, each one straight loop over the whole grid (which the compiler
    vectorises: unsigned indices carry no negative-index check, and no array views are made per step,
    each of which counts two atomic references), then the cells where the loops cross a border are
    redone with wrap-around."""
    n_cells, width = np.uint64(rows * cols), np.uint64(cols)
    one, two = np.uint64(1), np.uint64(2)
    if cols >= 3:
        for i in range(n_cells - two):
            across[i + one] = max3(value[i], value[i + one], value[i + two])
    for r in range(rows):  # each row's first and last cells wrap within the row
        row = r * cols
        across[row] = max3(value[row + cols - 1], value[row], value[row + (1 if cols > 1 else 0)])
        across[row + cols - 1] = max3(value[row + cols - 2 if cols > 1 else row], value[row + cols - 1], value[row])
    if rows >= 3:
        for i in range(n_cells - two * width):
            value[i + width] = max3(across[i], across[i + width], across[i + two * width])
    for r in (0, rows - 1):  # the first and last rows wrap to each other
        above, below = (r - 1 if r > 0 else rows - 1) * cols, (r + 1 if r < rows - 1 else 0) * cols
        for c in range(cols):
            value[r * cols + c] = max3(across[above + c], across[r * cols + c], across[below + c])


@njit(cache=True, inline="always")
def max3(a, b, c):
    larger = a if a > b else b
    return larger if larger > c else c


def upsilon_best(environments: EnvironmentBatch, rows: int, cols: int, iterations: int,
                 reward_radius: int) -> np.ndarray:
    """(episodes,) the ceiling of R̄: the mean over the group's agents of their best total reward
    from their own start cells, divided by T. Exact at coordination threshold 1, an upper bound
    above it (see the module docstring)."""
    totals = np.empty(environments.starts.shape, np.float64)  # (episodes, agents)
    best_totals(environments.good, environments.evil, environments.fields(), environments.starts,
                rows, cols, iterations, reward_radius, totals)
    return totals.mean(axis=1) / iterations
