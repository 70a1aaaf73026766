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

from collections import namedtuple

import numpy as np
from numba import njit

from collective.environments.lambda_star import EnvironmentBatch
from collective.environments.torus import axis_proximities, cell_coordinates, wrap


LANES = 8  # Λ* episodes solved side by side (`_zone_totals`): the values of one cell lie next to each other


@njit(cache=True, nogil=True)
def best_totals(good, evil, landscapes, starts, rows, cols, iterations, radius, out):
    """out (episodes, agents) ← V_0(starts[e, i]): the best total reward over the episode from each
    start cell. good, evil (episodes, T+1) cells; landscapes (episodes, cells) base fields, (episodes, 0)
    for Λ*; starts (episodes, agents)."""
    row_of, column_of = cell_coordinates(rows, cols)
    if landscapes.shape[1] > 0:
        _field_totals(good, landscapes, starts, rows, cols, iterations, row_of, column_of, out)
    else:
        _zone_totals(good, evil, starts, rows, cols, iterations, radius, row_of, column_of, out)


@njit(cache=True, nogil=True)
def _field_totals(good, landscapes, starts, rows, cols, iterations, row_of, column_of, out):
    """`best_totals` of landscapes, one episode at a time: every cell pays, the field moved with ⊕
    (`scene.scene_reward`), in straight runs of a row (`_pay_field`)."""
    n_cells = rows * cols
    value = np.empty(n_cells)  # V_{t+1}, then R_{t+1} + V_{t+1} in place, then V_t
    across = np.empty(n_cells)  # the maximum over each cell and its two row neighbours
    for e in range(good.shape[0]):
        first_r, first_c = row_of[good[e, 0]], column_of[good[e, 0]]
        field = landscapes[e]
        value[:] = 0.0
        for t in range(iterations - 1, -1, -1):
            _pay_field(value, field, wrap(row_of[good[e, t + 1]] - first_r, rows),
                       wrap(column_of[good[e, t + 1]] - first_c, cols), rows, cols)
            _king_max(value, across, rows, cols)
        for i in range(starts.shape[1]):
            out[e, i] = value[starts[e, i]]


@njit(cache=True, nogil=True)
def _zone_totals(good, evil, starts, rows, cols, iterations, radius, row_of, column_of, out):
    """`best_totals` of Λ*: only the cells within the reward radius of ⊕ or ⊖ pay, each once (`_pay_zones`).
    LANES episodes at a time, each in its own lane of `value`: cell (r, c) of lane l at `_held(r, c, cols) + l`,
    on the grid with a halo (a row and a column on each side), so that the king-move maximum is the same
    straight loops for every lane at once (`_lanes_king_max`). Each lane gets the very operations its episode
    alone would: lanes never mix."""
    value = np.zeros((rows + 2) * (cols + 2) * LANES)  # V_{t+1}, then R_{t+1} + V_{t+1} in place, then V_t
    across = np.zeros(value.shape[0])  # the maximum over each cell and its two row neighbours
    zone = reward_zones(rows, cols, radius)
    for first in range(0, good.shape[0], LANES):
        used = min(LANES, good.shape[0] - first)  # the lanes of the last group beyond the batch play nothing
        value[:] = 0.0
        for t in range(iterations - 1, -1, -1):
            _pay_zones(value, zone, good, evil, row_of, column_of, first, used, t + 1, rows, cols)
            _lanes_king_max(value, across, rows, cols)
        for lane in range(used):
            for i in range(starts.shape[1]):
                cell = starts[first + lane, i]
                out[first + lane, i] = value[_held(row_of[cell], column_of[cell], cols) + lane]


@njit(cache=True, inline="always")
def _held(r, c, cols):
    """Where `_zone_totals` holds lane 0 of cell (r, c): row-major on the grid with a halo, LANES values a cell."""
    return ((r + 1) * (cols + 2) + c + 1) * LANES


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


# `_pay_zones`' tables (`reward_zones`): f(d) of the distance along each axis between a row (column) and an
# object's, by their difference (near_rows[rows + r - r'], near_cols[cols + c - c']); the rows (columns) of
# the zone around each row (column), span of them (zone_rows[r·span_rows + i]); f of each cell's distance to
# its zone's centre, by its place in the zone (own[i·span_cols + j]).
RewardZones = namedtuple("RewardZones", "near_rows near_cols zone_rows zone_cols own span_rows span_cols")


@njit(cache=True)
def reward_zones(rows, cols, radius):
    """`_pay_zones`' tables for a grid and reward radius, every f value `proximity` itself."""
    near_rows, near_cols = axis_proximities(rows, radius), axis_proximities(cols, radius)
    zone_rows, zone_cols = _zone_lines(rows, radius), _zone_lines(cols, radius)
    span_rows, span_cols = zone_rows.shape[0] // rows, zone_cols.shape[0] // cols
    own = np.empty(span_rows * span_cols)
    for i in range(span_rows):  # the zone around cell (0, 0): a cell's place in a zone fixes its distance
        for j in range(span_cols):
            own[i * span_cols + j] = min(near_rows[rows + zone_rows[i]], near_cols[cols + zone_cols[j]])
    return RewardZones(near_rows, near_cols, zone_rows, zone_cols, own, span_rows, span_cols)


@njit(cache=True)
def _zone_lines(size, radius):
    """The min(2·radius + 1, size) distinct rows (or columns) within `radius` of each one, from radius before it
    on (as `scene.scene_reward`'s zone is read), flat: centre·span + i."""
    span = min(2 * radius + 1, size)
    lines = np.empty(size * span, np.int64)
    for centre in range(size):
        x = wrap(centre - radius, size) if radius <= size else (centre - radius) % size  # no division when it can
        for i in range(span):
            lines[centre * span + i] = x
            x = x + 1 if x + 1 < size else 0
    return lines


@njit(cache=True, inline="always")
def _pay_zones(value, zone, good, evil, row_of, column_of, first, used, t, rows, cols):
    """value[c] += R(c) = f(d(c, ⊕)) - f(d(c, ⊖)) at iteration t (paper 003 §4.1.2, as `scene.scene_reward`
    computes it) over the cells within the reward radius of ⊕ and then of ⊖ (those within it of both paid once,
    with ⊕'s), for the `used` episodes from `first` on, each in its lane of LANES. d is the larger of the row and
    column distances and f does not increase, so f(d) is the smaller of f(row distance) and f(column distance),
    the very float (`scene.moore_rewards`): table loads and a min per cell, not two distances and a division."""
    near_rows, near_cols, own = zone.near_rows, zone.near_cols, zone.own
    zone_rows, zone_cols = zone.zone_rows, zone.zone_cols
    span_rows, span_cols = np.uint64(zone.span_rows), np.uint64(zone.span_cols)
    stride, u = np.uint64(LANES), np.uint64
    for lane in range(used):
        e = first + lane
        good_r, good_c = row_of[good[e, t]], column_of[good[e, t]]
        evil_r, evil_c = row_of[evil[e, t]], column_of[evil[e, t]]
        for evils in (False, True):  # ⊕'s zone, then ⊖'s
            centre_r, centre_c = (evil_r, evil_c) if evils else (good_r, good_c)
            other_r, other_c = (good_r, good_c) if evils else (evil_r, evil_c)
            for i in range(span_rows):
                r = zone_rows[u(centre_r) * span_rows + i]
                other_row = near_rows[u(rows + r - other_r)]
                held = u(_held(r, 0, cols) + lane)
                for j in range(span_cols):
                    c = zone_cols[u(centre_c) * span_cols + j]
                    near_own = own[i * span_cols + j]
                    near_other = min(other_row, near_cols[u(cols + c - other_c)])
                    if not evils:
                        value[held + u(c) * stride] += near_own - near_other
                    elif near_other == 0.0:  # f > 0 exactly within the radius: ⊕'s zone paid this cell
                        value[held + u(c) * stride] += near_other - near_own


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
def _lanes_king_max(value, across, rows, cols):
    """`_king_max` in every lane of `_zone_totals`' layout at once: each row's last cell copied into the halo
    before its first and its first after its last, a row pass into `across` over the whole grid in one straight
    loop (no border cases), the last row's maxima copied into the halo above the first and the first's below
    the last, then a column pass back in one straight loop. The halo of `value` comes out meaningless and is
    copied anew before it is read."""
    row_length = (cols + 2) * LANES
    for r in range(1, rows + 1):
        for lane in range(LANES):
            value[r * row_length + lane] = value[_held(r - 1, cols - 1, cols) + lane]
            value[(r + 1) * row_length - LANES + lane] = value[_held(r - 1, 0, cols) + lane]
    step, first, stop = np.uint64(LANES), np.uint64(row_length), np.uint64((rows + 1) * row_length)
    for i in range(first, stop):
        across[i] = max3(value[i - step], value[i], value[i + step])
    for i in range(LANES, (cols + 1) * LANES):
        across[i] = across[rows * row_length + i]
        across[(rows + 1) * row_length + i] = across[row_length + i]
    step = np.uint64(row_length)
    for i in range(first, stop):
        value[i] = max3(across[i - step], across[i], across[i + step])


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
