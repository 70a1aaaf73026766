"""Compiled decision rules of the behaviours (spec §5, paper 003 §5.2.1).

Each function decides one agent's move for one iteration and returns the (row, column) step.
Random draws follow a fixed discipline that `collective.simulation.reference` mirrors:
random and local search draw exactly one number per decision, the oracle none, a learner one
(plus one more when ε-exploration is on and fires: first the ε test, then the random action).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from collective.simulation.random_streams import uniform_float, uniform_int
from collective.environments.scene import is_landscape, is_reset, scene_blind, scene_reward
from collective.environments.torus import axis_distance, axis_step_toward, chebyshev, proximity, wrap


@njit(cache=True, inline="always")
def random_step(stream):
    """Uniform action among the nine (paper 003 §5.2.1, random agent)."""
    action = uniform_int(stream, 9)
    return action // 3 - 1, action % 3 - 1


@njit(cache=True)
def local_best(r, c, scene, view, stream, scratch):
    """The local searcher's choice (paper 003 §5.2.1): (row offset, column offset, reward) of the
    best cell in its range-`view` Moore window of `scene`, uniform tie-break; one draw.

    `scratch` is an int64 work array of at least (2·view+1)² + 4·(2·view+1) entries.
    """
    side = 2 * view + 1
    if scene_blind(scene, r, c, view):  # all observed rewards are 0: the tie-break alone picks
        j = uniform_int(stream, side * side)
        return j // side - view, j % side - view, 0.0
    rows, cols, radius = scene.rows, scene.cols, scene.radius
    direct = is_landscape(scene) or is_reset(scene)  # R read cell by cell, not from axis distances
    ties_at = side * side  # scratch layout: tie list, then Λ*'s per-offset axis distances
    if not direct:
        for k in range(side):
            scratch[ties_at + k] = axis_distance(wrap(r + k - view, rows), scene.good_r, rows)
            scratch[ties_at + side + k] = axis_distance(wrap(r + k - view, rows), scene.evil_r, rows)
            scratch[ties_at + 2 * side + k] = axis_distance(wrap(c + k - view, cols), scene.good_c, cols)
            scratch[ties_at + 3 * side + k] = axis_distance(wrap(c + k - view, cols), scene.evil_c, cols)
    best = -np.inf
    ties = 0
    for i in range(side):
        for j in range(side):
            if direct:
                value = scene_reward(scene, wrap(r + i - view, rows), wrap(c + j - view, cols))
            else:  # R(c) from distances computed once per row and column
                value = (proximity(max(scratch[ties_at + i], scratch[ties_at + 2 * side + j]), radius)
                         - proximity(max(scratch[ties_at + side + i], scratch[ties_at + 3 * side + j]), radius))
            if value > best:
                best = value
                ties = 0
            if value == best:
                scratch[ties] = i * side + j
                ties += 1
    chosen = scratch[uniform_int(stream, ties)]
    return chosen // side - view, chosen % side - view, best


@njit(cache=True, inline="always")
def local_search_step(r, c, scene, view, stream, scratch):
    """Move toward the best observed cell, one step per axis (spec §5: for view > 1 the cell may
    be further than one step)."""
    dr, dc, _ = local_best(r, c, scene, view, stream, scratch)
    return np.sign(dr), np.sign(dc)


@njit(cache=True)
def oracle_step(r, c, t, path_r, path_c, horizon, rows, cols, pointer, slot):
    """Paper 003 §5.2.1 expert agent: head for the earliest future ⊕ position it can reach in time.

    At iteration t (0-based) the agent's move lands at t+1; ⊕ at time τ is reachable when the
    Chebyshev distance is at most τ - t. Heading there reduces the distance by one per step, so
    the earliest reachable τ never moves back and `pointer[slot]` keeps it between iterations
    (the reference simulator rescans from t+1 every time). When ⊕ outruns it, the earliest
    interception lies the other way round the torus. With no reachable τ it heads for ⊕'s last cell.
    """
    tau = max(pointer[slot], t + 1)
    while tau <= horizon and chebyshev(r, c, path_r[tau], path_c[tau], rows, cols) > tau - t:
        tau += 1
    pointer[slot] = tau
    target = min(tau, horizon)
    return axis_step_toward(r, path_r[target], rows), axis_step_toward(c, path_c[target], cols)


@njit(cache=True, inline="always")
def greedy_action(q_table, base, stream):
    """argmax_a Q(s, a) over q_table[base:base+9], uniform tie-break (paper 003 Algorithm 1)."""
    best = q_table[base]
    first = 0
    ties = 1
    for a in range(1, 9):
        value = q_table[base + a]
        if value > best:
            best, first, ties = value, a, 1
        elif value == best:
            ties += 1
    pick = uniform_int(stream, ties)
    if ties == 1:
        return first
    for a in range(first, 9):
        if q_table[base + a] == best:
            if pick == 0:
                return a
            pick -= 1
    return first


@njit(cache=True, inline="always")
def learner_action(q_table, base, epsilon, stream):
    """ε-greedy over Q(s, ·); with ε = 0 (both profiles) purely greedy as in Algorithm 1."""
    if epsilon > 0.0 and uniform_float(stream) < epsilon:
        return uniform_int(stream, 9)
    return greedy_action(q_table, base, stream)


@njit(cache=True, inline="always")
def max_q(q_table, base):
    """max_a Q(s, a) as a pairwise tree, so the nine comparisons do not wait on one another."""
    q = q_table
    b = base
    return max(max(max(q[b], q[b + 1]), max(q[b + 2], q[b + 3])),
               max(max(q[b + 4], q[b + 5]), max(max(q[b + 6], q[b + 7]), q[b + 8])))
