"""Compiled helpers shared by the protocols' iteration rules.

Every rule has one signature, `rule(values, members, pos_r, pos_c, scene, view, streams, window,
field, state, choice, observed, targets, comm, log)`: it reads the searchers' positions (members:
indices of the participating agents, in agent order) in `scene` (see `collective.environments.scene`), writes
a target cell for each participant into `targets` (agents,), adds its messages and bits to comm
(COMM_SLOTS,) under both accountings (`count`, `count_all`; protocols/__init__.py states them), and
appends the symbol of every message of the `reads_and_writes` accounting to `log` (a `MessageLog`;
`log_message`). `field` (cells,) and `state` (2,) hold protocol state for the current pass;
`choice` (agents, 3) is scratch for each searcher's local choice (row offset, column offset,
reward), `observed` (agents, window cells) for its observation.

A message's symbol is a 64-bit hash of its kind and content (cells as integers, rewards by their
IEEE-754 bits), so equal messages have equal symbols; `message_entropy_bits` estimates the entropy of an
episode's symbols (see its docstring).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from collective.behaviours.decisions import local_best
from collective.environments.scene import scene_reward
from collective.environments.torus import wrap

FLOAT_BITS = 64  # a reward travels as a double
# comm (COMM_SLOTS,): messages and bits under each accounting of COMMUNICATION_ACCOUNTINGS, in its order.
COMM_SLOTS = 4
WRITES, READS_AND_WRITES = 0, 2  # offsets of an accounting's (messages, bits) in comm
# Message kinds, the first word of a symbol: equal contents of different kinds are different messages.
# DELIVERY: what a plug-in protocol hands one member (its target and field), whose own messages are unseen.
OBSERVATION_REPORT, MAP_WRITE, MAP_READ, BID, ORDER, CHOICE_REPORT, DEPOSIT, FIELD_READ, DELIVERY = range(1, 10)
# One scored pass's message symbols: symbols (capacity,) uint64, size (1,) int64 the symbols logged so
# far, entropy (episodes,) float64 each episode's estimate (NaN for none).
MessageLog = namedtuple("MessageLog", "symbols size entropy")


def log_capacity(iterations: int, members: int) -> int:
    """Symbols one pass can log: at most 2m + 1 per iteration (stigmergy's m deposits and m reads)."""
    return iterations * (2 * members + 1)


@njit(cache=True, inline="always")
def count(comm, accounting, messages, bits):
    """Add traffic under one accounting (WRITES or READS_AND_WRITES)."""
    comm[accounting] += messages
    comm[accounting + 1] += bits


@njit(cache=True, inline="always")
def count_all(comm, messages, bits):
    """Add traffic that both accountings count alike (direct messages, writes)."""
    count(comm, WRITES, messages, bits)
    count(comm, READS_AND_WRITES, messages, bits)


@njit(cache=True, inline="always")
def symbol_start(kind):
    """The hash of an empty message of `kind`."""
    return symbol_add(np.uint64(0x243F6A8885A308D3), np.uint64(kind))


@njit(cache=True, inline="always")
def symbol_add(symbol, word):
    """Fold a uint64 word into a symbol: xor, then MurmurHash3's 64-bit finaliser (Appleby 2011), a
    bijective mix, so symbols of different contents collide with probability ~2^-64."""
    h = symbol ^ word
    h = (h ^ (h >> np.uint64(33))) * np.uint64(0xFF51AFD7ED558CCD)
    h = (h ^ (h >> np.uint64(33))) * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


@njit(cache=True, inline="always")
def symbol_add_cell(symbol, cell):
    return symbol_add(symbol, np.uint64(cell))


@intrinsic
def _float_bits(typingctx, value):
    """The IEEE-754 bits of a float64, as a uint64 (a bit cast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.uint64(types.float64), codegen


@njit(cache=True, inline="always")
def symbol_add_value(symbol, value):
    """Fold a reward by its bits, -0.0 taken as 0.0: equal rewards, equal symbols."""
    return symbol_add(symbol, _float_bits(value + 0.0))


@njit(cache=True, inline="always")
def log_message(log, symbol):
    """Append one message's symbol (`log_capacity` bounds a scored pass; a training pass under a
    coordination threshold may fill the log, which is emptied before the scored pass)."""
    n = log.size[0]
    if n < log.symbols.shape[0]:
        log.symbols[n] = symbol
        log.size[0] = n + 1


@njit(cache=True)
def message_entropy_bits(symbols, n):
    """Empirical Shannon entropy of the first n symbols, bits per message: the plug-in estimate
    Σ_k (c_k / n) log2(n / c_k) over the counts c_k of the K distinct symbols, plus the Miller-Madow
    bias correction (K - 1) / (2 n ln 2) (Miller 1955; Paninski 2003, "Estimation of entropy and mutual
    information", §3). NaN when n = 0. Counts are taken in symbol order, so equal multisets give equal
    bits whatever order they were logged in."""
    if n == 0:
        return np.nan
    ordered = np.sort(symbols[:n])
    total = 0.0
    distinct = 0
    run = 1
    for i in range(1, n + 1):
        if i < n and ordered[i] == ordered[i - 1]:
            run += 1
        else:
            total += run * np.log2(n / run)
            distinct += 1
            run = 1
    return total / n + (distinct - 1) / (2.0 * n * np.log(2.0))


@njit(cache=True)
def log_deliveries(targets, fields, symbols, sizes):
    """Log one DELIVERY symbol per (episode, member): targets (E, M) int64 (empty (0, 0) for none),
    fields (E, M, side²) float64 (empty (0, 0, 0) for none); symbols (E, capacity), sizes (E,)."""
    no_entropy = np.empty(0)
    for e in range(symbols.shape[0]):
        log = MessageLog(symbols[e], sizes[e:e + 1], no_entropy)
        for k in range(max(targets.shape[1], fields.shape[1])):
            symbol = symbol_start(DELIVERY)
            if targets.shape[0]:
                symbol = symbol_add(symbol, np.uint64(targets[e, k] + 1))
            if fields.shape[0]:
                for value in fields[e, k]:
                    symbol = symbol_add_value(symbol, value)
            log_message(log, symbol)


@njit(cache=True)
def episode_entropies(symbols, sizes, out):
    """out[e] = message_entropy_bits(symbols[e], sizes[e]) for (E, capacity) logs."""
    for e in range(sizes.shape[0]):
        out[e] = message_entropy_bits(symbols[e], sizes[e])


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
