"""Compiled decision rules of the behaviours (spec §5, paper 003 §5.2.1).

Each function decides one agent's move for one iteration and returns the (row, column) step.
Random draws follow a fixed discipline that `collective.simulation.reference` mirrors:
random and local search draw exactly one number per decision, the oracle none, a learner one
(plus one more when ε-exploration is on and fires: first the ε test, then the random action).
The deciding functions take the agent's splitmix64 stream as its state, a uint64 the caller holds
in a local variable, and return it advanced first: a per-agent view of the streams array, or an array
argument of a compiled call, would cost two atomic reference counts each time (issue 25).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from collective.simulation.random_streams import advance_uniform_float, advance_uniform_int
from collective.environments.scene import (Scene, field_ref, is_landscape, is_reset, moore_rewards, window_reach,
                                           window_reward)
from collective.environments.torus import axis_step_toward, chebyshev, proximity, wrap

# The local searcher's range-1 window of Λ* and its reward, tabled by the objects' offsets (`search_table`). An
# offset is δr·cols + δc, δ = (object - agent) wrapped onto the ring; the window's rewards depend on ⊕'s and ⊖'s
# offsets alone (the torus looks the same from every cell). reach (cells,): an offset's key, 1.. for the
# offsets within view + radius of the agent, 0 for the rest (`window_reach`: the object pays nothing in the
# window); keys: how many keys; ties (keys²,): the window's best cells for ⊕'s key · keys + ⊖'s key; best
# (keys² · 9,): their actions, ascending (`greedy_action`'s tie order); pays (cells,): `proximity` of the
# object at an offset from the agent's cell, the reward's part from it; parts (keys · 9,): what an object at a
# key pays each cell of the window (`moore_rewards`' min of its row and column proximities), 0 at key 0.
SearchTable = namedtuple("SearchTable", "reach keys ties best pays parts")
SEARCH_TABLE_KEYS = 128  # the most keys tabled: 128² pairs of 9 actions (a byte each, 147 KB), radius <= 3


@njit(cache=True, inline="always")
def random_step(state):
    """Uniform action among the nine (paper 003 §5.2.1, random agent): (state', row step, column step)."""
    state, action = advance_uniform_int(state, 9)
    return state, action // 3 - 1, action % 3 - 1


@njit(cache=True)
def local_best(r, c, scene, view, state):
    """`inline_local_best` as a call: the body compiled once for the kernel's general loop and the protocol rules."""
    return inline_local_best(r, c, scene, view, state)


@njit(cache=True, inline="always")
def inline_local_best(r, c, scene, view, state):
    """The local searcher's choice (paper 003 §5.2.1): (state', row offset, column offset, reward) of
    the best cell in its range-`view` Moore window of `scene`, uniform tie-break among the best cells
    in row-major order; one draw from the stream whose state is `state`.

    Objects beyond view + radius are not read (`window_reach`; neither: the window is blind). A range-1
    window of Λ* is `moore_rewards`' nine values with `greedy_action`'s tie-break (the same order and
    draw). Other windows: two passes and no work array (scalar arguments only: no reference counts), the
    first finds the best reward, its first cell and the number of ties; the second, only when the draw
    picks a later tie, walks on to it, cell by cell (no integer division).
    """
    side = 2 * view + 1
    lambda_star = not (is_landscape(scene) or is_reset(scene))
    good_reaches, evil_reaches = True, True  # a landscape's or the reset field's cells are read whole
    if lambda_star:
        good_reaches, evil_reaches = window_reach(scene, r, c, view)
    if not (good_reaches or evil_reaches):  # `scene_blind`: all observed rewards are 0, the tie-break alone picks
        state, j = advance_uniform_int(state, side * side)
        return state, j // side - view, j % side - view, 0.0
    if view == 1 and lambda_star:  # the usual window, from 12 proximities
        values = moore_rewards(scene, r, c, good_reaches, evil_reaches)
        state, a = greedy_action(values, state)  # the same tie-break: row-major order, one draw
        return state, a // 3 - 1, a % 3 - 1, values[a]
    rows, cols = scene.rows, scene.cols
    best = -np.inf
    first_i, first_j = 0, 0
    ties = 0
    for i in range(side):
        row = wrap(r + i - view, rows)
        for j in range(side):
            value = window_reward(scene, row, wrap(c + j - view, cols), good_reaches, evil_reaches)
            # without branches (the comparisons are coin tosses to the predictor): a better cell is the
            # first of its ties, an equal one one more tie; the first cell beats best = -inf
            above = value > best
            first_i = i if above else first_i
            first_j = j if above else first_j
            ties = 1 if above else ties + (value == best)
            best = value if above else best
    state, pick = advance_uniform_int(state, ties)
    i, j = first_i, first_j
    while pick > 0:  # the pick-th tie after the first, in row-major order (cell by cell: no division)
        j += 1
        if j == side:
            i, j = i + 1, 0
        if window_reward(scene, wrap(r + i - view, rows), wrap(c + j - view, cols), good_reaches,
                         evil_reaches) == best:
            pick -= 1
    return state, i - view, j - view, best


@njit(cache=True)
def search_table(rows, cols, radius):
    """The `SearchTable` of a rows x cols torus and reward radius, from `moore_rewards` and `greedy_action`'s
    tie rule: a tabled choice and window are `inline_local_best`'s and `moore_rewards`' to the bit
    (tests/test_search_pass.py). With more than SEARCH_TABLE_KEYS keys (radius > 3 on a large grid) the table is
    `untabled`: the kernel then computes every window."""
    if min(rows, (3 + 2 * radius)) * min(cols, (3 + 2 * radius)) + 1 > SEARCH_TABLE_KEYS:
        return untabled()
    reach = np.zeros(rows * cols, np.uint8)
    key_r, key_c = np.zeros(rows * cols + 1, np.int64), np.zeros(rows * cols + 1, np.int64)
    pays = np.empty(rows * cols)
    keys = 1
    for dr in range(rows):
        for dc in range(cols):
            distance = chebyshev(0, 0, dr, dc, rows, cols)
            pays[dr * cols + dc] = proximity(distance, radius)
            if distance <= 1 + radius:
                reach[dr * cols + dc] = keys
                key_r[keys], key_c[keys] = dr, dc
                keys += 1
    ties, best, parts = np.empty(keys * keys, np.uint8), np.empty(keys * keys * 9, np.uint8), np.zeros(keys * 9)
    no_field = field_ref(np.empty(0))
    for good in range(keys):
        for evil in range(keys):
            scene = Scene(key_r[good], key_c[good], key_r[evil], key_c[evil], no_field, 0, 0, rows, cols, radius)
            values = moore_rewards(scene, 0, 0, good > 0, evil > 0)
            if evil == 0:  # ⊕ alone: what it pays each cell (x - 0.0 is x)
                for a in range(9):
                    parts[good * 9 + a] = values[a]
            top = values[0]
            for a in range(1, 9):
                top = values[a] if values[a] > top else top
            pair, n = good * keys + evil, 0
            for a in range(9):
                if values[a] == top:
                    best[pair * 9 + n] = a
                    n += 1
            ties[pair] = n
    return SearchTable(reach, keys, ties, best, pays, parts)


@njit(cache=True)
def untabled():
    """A `SearchTable` without keys: every window is computed (the stepping core's, the twins' in the tests)."""
    return SearchTable(np.zeros(0, np.uint8), 0, np.zeros(0, np.uint8), np.zeros(0, np.uint8), np.zeros(0),
                       np.zeros(0))


@njit(cache=True, inline="always")
def tables_window(scene, view, keys):
    """Whether a `SearchTable` of `keys` keys tables the range-`view` window of `scene`: range 1 in Λ* (not the
    2016 reset field)."""
    return view == 1 and keys > 0 and not (is_landscape(scene) or is_reset(scene))


@njit(cache=True, inline="always")
def object_offset(r, c, object_r, object_c, rows, cols):
    """The `SearchTable` offset of an object at (object_r, object_c) from the cell (r, c)."""
    return np.uintp(wrap(object_r - r, rows) * cols + wrap(object_c - c, cols))


@njit(cache=True, inline="always")
def object_keys(r, c, good_r, good_c, evil_r, evil_c, rows, cols, reach):
    """The `SearchTable` keys of ⊕'s and ⊖'s offsets from the cell (r, c)."""
    return (np.int64(reach[object_offset(r, c, good_r, good_c, rows, cols)]),
            np.int64(reach[object_offset(r, c, evil_r, evil_c, rows, cols)]))


@njit(cache=True, inline="always")
def _tabled_action(good, evil, keys, ties, best, state):
    """(state', action) of the window whose objects have these keys: one draw among its best cells."""
    pair = np.uintp(good * keys + evil)
    state, pick = advance_uniform_int(state, np.int64(ties[pair]))
    return state, np.int64(best[pair * np.uintp(9) + np.uintp(pick)])


@njit(cache=True, inline="always")
def tabled_local_best(r, c, good_r, good_c, evil_r, evil_c, rows, cols, reach, keys, ties, best, state):
    """`inline_local_best` for a range-1 window of a Λ* scene (not the reset field), from its `SearchTable`'s
    reach, keys, ties and best (arrays, not the tuple: its making would count a reference to each): (state',
    action), the same draw and the same action."""
    good, evil = object_keys(r, c, good_r, good_c, evil_r, evil_c, rows, cols, reach)
    return _tabled_action(good, evil, keys, ties, best, state)


@njit(cache=True, inline="always")
def searched_best(r, c, scene, view, state, reach, keys, ties, best, parts):
    """`local_best`, from a `SearchTable` (its arrays, as `tabled_local_best` takes them) when it tables the
    window (`tables_window`): the same draw, the same (state', row offset, column offset, reward)."""
    if tables_window(scene, view, keys):
        good, evil = object_keys(r, c, scene.good_r, scene.good_c, scene.evil_r, scene.evil_c, scene.rows,
                                 scene.cols, reach)
        state, action = _tabled_action(good, evil, keys, ties, best, state)
        reward = parts[np.uintp(good * 9 + action)] - parts[np.uintp(evil * 9 + action)]
        return state, action // 3 - 1, action % 3 - 1, reward
    return local_best(r, c, scene, view, state)


@njit(cache=True, inline="always")
def local_search_step(r, c, scene, view, state, reach, keys, ties, best, parts):
    """Move toward the best observed cell, one step per axis (spec §5: for view > 1 the cell may
    be further than one step): (state', row step, column step). The choice is `searched_best`'s (a
    `SearchTable`'s arrays; `untabled()`'s to compute every window)."""
    state, dr, dc, _ = searched_best(r, c, scene, view, state, reach, keys, ties, best, parts)
    return state, np.sign(dr), np.sign(dc)


@njit(cache=True)
def oracle_step(r, c, t, path_r, path_c, horizon, rows, cols, pointer, slot, direct_ties):
    """Paper 003 §5.2.1 expert agent: head for the earliest future ⊕ position it can reach in time.

    At iteration t (0-based) the agent's move lands at t+1; ⊕ at time τ is reachable when the
    Chebyshev distance is at most τ - t. Heading there reduces the distance by one per step, so
    the earliest reachable τ never moves back and `pointer[slot]` keeps it between iterations
    (the reference simulator rescans from t+1 every time). When ⊕ outruns it, the earliest
    interception lies the other way round the torus. With no reachable τ it heads for ⊕'s last cell.
    `direct_ties`: half-way ties as `axis_step_toward` breaks them.
    """
    tau = max(pointer[slot], t + 1)
    while tau <= horizon and chebyshev(r, c, path_r[tau], path_c[tau], rows, cols) > tau - t:
        tau += 1
    pointer[slot] = tau
    target = min(tau, horizon)
    return (axis_step_toward(r, path_r[target], rows, direct_ties),
            axis_step_toward(c, path_c[target], cols, direct_ties))


# Unsigned offsets 1..8 (an int64 literal added to a uint64 would make a float64)
_U1, _U2, _U3, _U4, _U5, _U6, _U7, _U8 = (np.uint64(k) for k in range(1, 9))


@njit(cache=True, inline="always")
def greedy_action(values, state):
    """argmax_a Q(s, a) over Q(s, ·) (values, nine of them), uniform tie-break (paper 003 Algorithm 1):
    (stream state', action)."""
    best = values[0]
    first = 0
    ties = 1
    for a in range(1, 9):
        value = values[a]
        if value > best:
            best, first, ties = value, a, 1
        elif value == best:
            ties += 1
    state, pick = advance_uniform_int(state, ties)
    action = first
    while pick > 0:  # the pick-th tie after the first
        action += 1
        if values[action] == best:
            pick -= 1
    return state, action


def _tie_positions() -> np.ndarray:
    """TIE_POSITIONS[mask * 9 + k]: the position of the k-th set bit, from the lowest, of a 9-bit mask."""
    table = np.zeros(512 * 9, np.int8)
    for mask in range(512):
        for k, position in enumerate(a for a in range(9) if mask >> a & 1):
            table[mask * 9 + k] = position
    return table


TIE_POSITIONS = _tie_positions()


@intrinsic
def row_ties(typingctx, table, base):
    """(mask, count) of the best actions of Q(s, ·) = table[base:base + 9]: bit a of the mask set when Q(s, a) =
    max_a' Q(s, a'), and how many are set. Eight values in one vector load, one maximum and one compare, the
    ninth beside them: a few instructions where nine scalar compares and the mask's shifts took about sixty
    (notes/learner-speed.md, "The learners' best actions in vector instructions"). Q-values hold no NaN; -0.0 ties with
    0.0 (==). No bounds check: the caller's base is a row of the table."""
    def codegen(context, builder, signature, args):
        f64, i64 = ir.DoubleType(), ir.IntType(64)
        eight = ir.VectorType(f64, 8)
        first = builder.gep(context.make_array(signature.args[0])(context, builder, args[0]).data, [args[1]])
        low = builder.load(builder.bitcast(first, eight.as_pointer()), align=8)
        ninth = builder.load(builder.gep(first, [i64(8)]), align=8)
        module = builder.module
        reduce_max = cgutils.get_or_insert_function(module, ir.FunctionType(f64, [eight]),
                                                    "llvm.vector.reduce.fmax.v8f64")
        maximum = cgutils.get_or_insert_function(module, ir.FunctionType(f64, [f64, f64]), "llvm.maxnum.f64")
        best = builder.call(maximum, [builder.call(reduce_max, [low], fastmath=("nnan",)), ninth],
                            fastmath=("nnan",))
        splat = builder.shuffle_vector(builder.insert_element(ir.Constant(eight, ir.Undefined), best, i64(0)),
                                       ir.Constant(eight, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), 8),
                                                                                     [0] * 8))
        low_mask = builder.zext(builder.bitcast(builder.fcmp_ordered("==", low, splat), ir.IntType(8)), i64)
        mask = builder.or_(low_mask, builder.shl(builder.zext(builder.fcmp_ordered("==", ninth, best), i64), i64(8)))
        popcount = cgutils.get_or_insert_function(module, ir.FunctionType(i64, [i64]), "llvm.ctpop.i64")
        return context.make_tuple(builder, signature.return_type, [mask, builder.call(popcount, [mask])])
    if table != types.Array(types.float64, 1, "C") or not isinstance(base, types.Integer):
        return None  # a typing error: the vector load needs a contiguous float64 table and a row's index
    return types.UniTuple(types.int64, 2)(table, base), codegen


@njit(cache=True, inline="always")
def greedy_action_masked(q_table, base, state):
    """`greedy_action` over Q(s, ·) = q_table[base:base + 9] without a branch: the best actions as a mask
    (`row_ties`), the same draw over their count, and the drawn tie's action read from a table, so the same
    (stream state', action) to the bit (tests/test_training_loops.py). Whether an action ties is a coin toss to
    the branch predictor: SARSA 1.6x, shared Q 1.3x faster than `greedy_action`. The local searcher
    keeps `greedy_action` (this made it ~30% slower)."""
    mask, ties = row_ties(q_table, base)
    state, pick = advance_uniform_int(state, ties)
    return state, np.int64(TIE_POSITIONS[mask * 9 + pick])


@njit(cache=True, inline="always")
def learner_action(q_table, base, epsilon, state):
    """ε-greedy over Q(s, ·) = q_table[base:base + 9]; with ε = 0 (both profiles) purely greedy as in
    Algorithm 1 (`greedy_action_masked`): (stream state', action)."""
    if epsilon > 0.0:
        state, u = advance_uniform_float(state)
        if u < epsilon:
            return advance_uniform_int(state, 9)
    return greedy_action_masked(q_table, base, state)


@njit(cache=True, inline="always")
def max_q(q_table, base):
    """max_a Q(s, a) as a pairwise tree, so the nine comparisons do not wait on one another."""
    q = q_table
    b = np.uint64(base)  # an unsigned index: no test for a negative one (numba wraps those around)
    return max(max(max(q[b], q[b + _U1]), max(q[b + _U2], q[b + _U3])),
               max(max(q[b + _U4], q[b + _U5]), max(max(q[b + _U6], q[b + _U7]), q[b + _U8])))
