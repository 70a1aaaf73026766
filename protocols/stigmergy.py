"""`stigmergy`: indirect communication through fake rewards (paper 003 §5.2.2, Algorithm 2).

Paper form (default): each iteration the fake field starts at 0; every local searcher j adds
r̂_j = γ·max R(N_j) + (1-γ)·min R(N_j) to the cells it observes (deposits add up where windows
overlap), and every searcher moves toward the cell of its window with the highest R(c) + F(c).
Reference form (`lambdastar2016`, spec §6): one field F per episode, initially 0; each searcher
in turn computes fr = w·(max + min) and, when fr ≠ 0, sets F(c) = (F(c) + R(c) + fr)/d on every
observed cell; searchers then move toward the argmax of F over their window. Fake rewards never
enter the score.

Learners (Q-learning, SARSA) are members as searchers are: they deposit from their window and read the field,
and hear the king move toward the cell a searcher in their place would head for (collective.simulation.kernel,
learners that hear; issue 45).
"""
from collective.protocols.base import STIGMERGY, Parameter, Protocol, register


@register
class Stigmergy(Protocol):
    name = "stigmergy"
    code = STIGMERGY
    description = "members leave fake rewards that neighbours perceive (Algorithm 2); learners hear the way to the best"
    applies_to = frozenset({"local_search", "q_learning", "sarsa"})
    parameters = (
        Parameter("form", "paper", "paper: per-iteration field; reference: the 2016 code's persistent field",
                  choices=("paper", "reference")),
        Parameter("gamma", 0.5, "paper form: weight of the best observed reward (paper: 0 < γ < 1)",
                  low=0.0, high=1.0),
        Parameter("weight", 0.4, "reference form: fr = weight·(max + min)", low=0.0, high=10.0),
        Parameter("divisor", 3.0, "reference form: F(c) = (F(c) + R(c) + fr)/divisor", low=1.0, high=100.0),
    )


import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from collective.simulation.random_streams import advance_uniform_int  # noqa: E402
from collective.environments.scene import member_scene, scene_blind, target_read  # noqa: E402
from collective.protocols.kernel_support import (DEPOSIT, FIELD_READ, FLOAT_BITS, READS_AND_WRITES, WRITES,  # noqa: E402
                                      count, log_close, log_open, log_to, member_observe, symbol_add_value,
                                      symbol_start, window_column, window_fits, window_row)

PAPER, REFERENCE = 0, 1


@njit(cache=True)
def stigmergy_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                   targets, comm, log, search):
    """choice[i, 0] marks searchers that observe a non-zero reward somewhere (see
    `collective.environments.scene.scene_blind`): a blind searcher deposits nothing and its own window adds
    nothing to the fake field. Positions are read into locals before each window loop: the
    compiler cannot prove the field's stores leave them unchanged.

    Traffic (protocols/__init__.py): a deposit writes its window's (2k+1)² values (the paper form's r̂
    on each cell, the reference form's new F); reads_and_writes counts the deposits of something and
    every searcher's read of its window of the field; writes counts, as before, every searcher's
    deposit in the paper form (a blind one's r̂ = 0 included) and the deposits with fr ≠ 0 in the
    reference form, and no reads."""
    reach, keys, parts = search.reach, search.keys, search.parts  # the table's, for `member_observe`
    form, gamma, weight, divisor = int(values[0]), values[1], values[2], values[3]
    side = 2 * view + 1
    window_bits = side * side * FLOAT_BITS
    rows, cols = scene.rows, scene.cols
    deposited = False
    logged = log_open(log)
    for i in members:  # deposits, all before any agent chooses
        r, c = pos_r[i], pos_c[i]
        sees = not scene_blind(member_scene(scene, i), r, c, view)
        choice[i, 0] = sees
        low, high = 0.0, 0.0
        if sees:
            low, high = member_observe(scene, i, r, c, view, observed, reach, keys, parts)
        fake = gamma * high + (1.0 - gamma) * low if form == PAPER else weight * (high + low)
        if form == PAPER or fake != 0.0:
            count(comm, WRITES, 1, window_bits)
        if fake == 0.0:
            continue  # a deposit of nothing changes no cell
        count(comm, READS_AND_WRITES, 1, window_bits)
        deposited = True
        symbol = symbol_start(DEPOSIT)
        if form == PAPER:  # r̂ on each of the window's side² cells (side fixed for the run): r̂ names it
            symbol = symbol_add_value(symbol, fake)
        fits, k = window_fits(r, c, view, rows, cols), np.uintp(0)
        for dr in range(-view, view + 1):
            row = window_row(r, dr, rows, cols, fits)
            for dc in range(-view, view + 1):
                cell = np.uintp(row + window_column(c, dc, cols, fits))
                if form == PAPER:
                    field[cell] += fake
                else:
                    field[cell] = (field[cell] + observed[np.uintp(i), k] + fake) / divisor
                    symbol = symbol_add_value(symbol, field[cell])
                k += np.uintp(1)
        logged = log_to(log, logged, symbol, 1)
    last_r, last_c, ties, read = -1, -1, 0, symbol_start(FIELD_READ)
    for i in members:  # each searcher reads its window of the field and heads for the best fake reward
        if not target_read(scene, i):
            continue  # a sham's other members: nothing of their reads is kept
        r, c, sees = pos_r[i], pos_c[i], form == PAPER and choice[i, 0] > 0.0
        if not sees and r == last_r and c == last_c:  # the last reader's cell, a field and tie list
            logged = log_to(log, logged, read, 1)  # unchanged since: its read and its ties
            streams[i, 0], pick = advance_uniform_int(streams[i, 0], ties)
            targets[i] = window[pick]
            continue
        last_r, last_c = (-1, -1) if sees else (r, c)
        best = -np.inf
        ties = 0
        read = symbol_start(FIELD_READ)
        fits, k = window_fits(r, c, view, rows, cols), np.uintp(0)
        for dr in range(-view, view + 1):
            row = window_row(r, dr, rows, cols, fits)
            for dc in range(-view, view + 1):
                cell = row + window_column(c, dc, cols, fits)
                value = field[np.uintp(cell)]
                read = symbol_add_value(read, value)
                if sees:
                    value += observed[np.uintp(i), k]
                k += np.uintp(1)
                # without branches, as `best_cells`: each cell is stored, kept only when it ties the best
                above = value > best
                ties = 0 if above else ties
                best = value if above else best
                window[np.uintp(ties)] = cell
                ties += value == best
        logged = log_to(log, logged, read, 1)
        streams[i, 0], pick = advance_uniform_int(streams[i, 0], ties)
        targets[i] = window[pick]
    log_close(log, logged)
    m = members.shape[0]
    count(comm, READS_AND_WRITES, m, m * window_bits)
    if form == PAPER and deposited:  # the paper's field lives one iteration (Algorithm 2, line 2): zero
        for cell in range(rows * cols):  # again, whole (a plain loop the compiler vectorises)
            field[cell] = 0.0
