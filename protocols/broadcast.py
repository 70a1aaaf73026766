"""`broadcast` and `wisdom` (spec §6).

broadcast: every searcher sends its observation to every other member; each searcher then heads
for the best cell anyone reported (uniform tie-break). With memory=true (the name `wisdom`, the
reference's wisdom of the crowd) the group keeps one map A per episode, each non-zero observed
reward folded in as A(c) = (A(c) + R(c))/2 in agent order, and every searcher steps toward the
global argmax of A.

Learners (Q-learning, SARSA) are members as searchers are: they report their window (or write the map), and hear
the king move toward the cell a searcher in their place would head for (collective.simulation.kernel, learners
that hear; issue 45).
"""
from collective.protocols.base import BROADCAST, Parameter, Protocol, register

_PARAMETERS = (Parameter("memory", "false", "keep a shared map across iterations (wisdom of the crowd)",
                         choices=("false", "true")),)


@register
class Broadcast(Protocol):
    name = "broadcast"
    code = BROADCAST
    description = "every member hears every observation: searchers head for the best cell reported, learners hear the way"
    applies_to = frozenset({"local_search", "q_learning", "sarsa"})
    parameters = _PARAMETERS


@register
class WisdomOfTheCrowd(Protocol):
    name = "wisdom"
    code = BROADCAST
    description = "broadcast with memory: a shared map of rewards seen; searchers head for its best cell, learners hear the way"
    applies_to = frozenset({"local_search", "q_learning", "sarsa"})
    parameters = _PARAMETERS
    fixed = {"memory": "true"}


import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from collective.simulation.random_streams import advance_uniform_int  # noqa: E402
from collective.protocols.kernel_support import (FLOAT_BITS, MAP_READ, MAP_WRITE, OBSERVATION_REPORT,  # noqa: E402
                                      READS_AND_WRITES, best_cells, cell_bits, count, count_all, float_bits, log_close,
                                      log_open, log_to, member_observe, symbol_add, symbol_add_cell, symbol_add_value,
                                      symbol_start, toggle_entry, window_column, window_fits, window_row)

MAP_HASH = 1  # wisdom keeps its map's hash in state[1] (the kernel starts each pass with -1.0 there)


@njit(cache=True)
def broadcast_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                   targets, comm, log, search):
    """Traffic (protocols/__init__.py): broadcast, m(m-1) point-to-point reports of a cell and its
    window; wisdom, one write per searcher with non-zero rewards in sight (its cells and rewards), and
    under reads_and_writes also m reads of the whole map (N rewards).

    Broadcast keeps the reported rewards in `field` (the kernel's and the stepping core's field is the
    rule's own scratch, -inf: not reported), and both forms list the best cells in `window` (at least N
    long, `best_cells`): no array is allocated per iteration. Each searcher's window is read into
    `observed` (`member_observe`)."""
    reach, keys, parts = search.reach, search.keys, search.parts  # the table's, for `member_observe`
    memory = values[0] > 0.5
    rows, cols = scene.rows, scene.cols
    n_cells = rows * cols
    if window.shape[0] < n_cells:  # the best cells are listed there: a shorter scratch would be written past
        raise ValueError("broadcast_rule: the window scratch must hold at least one entry per cell")
    m = members.shape[0]
    bits = cell_bits(rows, cols)
    logged = log_open(log)
    if memory:  # fold every non-zero observation into the shared map, agent by agent
        for i in members:
            r, c = pos_r[i], pos_c[i]  # in locals: the compiler cannot prove the field's stores leave them unchanged
            member_observe(scene, i, r, c, view, observed, reach, keys, parts)
            wrote = 0
            symbol = symbol_start(MAP_WRITE)
            fits, k = window_fits(r, c, view, rows, cols), np.uintp(0)  # unsigned indices: no negative-index fix-up
            for dr in range(-view, view + 1):
                row = window_row(r, dr, rows, cols, fits)
                for dc in range(-view, view + 1):
                    reward = observed[np.uintp(i), k]
                    k += np.uintp(1)
                    if reward != 0.0:
                        cell = row + window_column(c, dc, cols, fits)
                        old = field[np.uintp(cell)]
                        new = (old + reward) / 2.0
                        if new != old:  # state[MAP_HASH]: the map's hash
                            toggle_entry(state, MAP_HASH, cell, old)
                            toggle_entry(state, MAP_HASH, cell, new)
                            field[np.uintp(cell)] = new
                        symbol = symbol_add_value(symbol_add_cell(symbol, cell), reward)
                        wrote += 1
            if wrote:
                count_all(comm, 1, wrote * (bits + FLOAT_BITS))
                logged = log_to(log, logged, symbol, 1)
        read = symbol_add(symbol_start(MAP_READ), float_bits(state[MAP_HASH]))
        logged = log_to(log, logged, read, m)  # every searcher reads the map to find its best cell
        count(comm, READS_AND_WRITES, m, m * n_cells * FLOAT_BITS)
    else:  # everyone hears everyone: the best reported cells, each listed once
        side = 2 * view + 1
        count_all(comm, m * (m - 1), m * (m - 1) * (side * side * FLOAT_BITS + bits))
        for cell in range(n_cells):
            field[cell] = -np.inf
        for i in members:  # one report per searcher, heard by the m - 1 others: logged once
            r, c = pos_r[i], pos_c[i]
            member_observe(scene, i, r, c, view, observed, reach, keys, parts)
            symbol = symbol_add_cell(symbol_start(OBSERVATION_REPORT), r * cols + c)
            fits, k = window_fits(r, c, view, rows, cols), np.uintp(0)
            for dr in range(-view, view + 1):
                row = window_row(r, dr, rows, cols, fits)
                for dc in range(-view, view + 1):
                    reward = observed[np.uintp(i), k]
                    k += np.uintp(1)
                    field[np.uintp(row + window_column(c, dc, cols, fits))] = reward
                    symbol = symbol_add_value(symbol, reward)
            logged = log_to(log, logged, symbol, 1)
    log_close(log, logged)
    ties = best_cells(field, n_cells, window)
    for i in members:
        streams[i, 0], pick = advance_uniform_int(streams[i, 0], ties)
        targets[i] = window[pick]
