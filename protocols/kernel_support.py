"""Compiled helpers shared by the protocols' iteration rules.

Every rule has one signature, `rule(values, members, pos_r, pos_c, scene, view, streams, window,
field, state, choice, observed, targets, comm, log, search)`: it reads the searchers' positions (members:
indices of the participating agents, in agent order) in `scene` (see `collective.environments.scene`; each
member's own scene is `member_scene(scene, i)`, which differs between members only for a sham listener), writes
a target cell for each participant into `targets` (agents,), adds its messages and bits to comm
(COMM_SLOTS,) under both accountings (`count`, `count_all`; protocols/__init__.py states them), and
logs the symbol of every message of the `reads_and_writes` accounting in `log` (`log_open`, `log_to`,
`log_close`).
`field` (cells,) and `state` (2,) hold protocol state for the current pass; `choice` (agents, 3) is
scratch for each searcher's local choice (row offset, column offset, reward), `observed` (agents,
window cells) for its observation, `window` (max(window cells, N),) for a tie list. `streams` (agents,
1) holds each agent's stream state: a rule draws through `advance_uniform_int(streams[i, 0], n)` and
stores the state back, never through a row view (a view costs two atomic reference counts; issue 25).
`search` is the grid's `SearchTable` (`collective.behaviours.decisions`): a searcher's range-1 window of Λ* and
its choice there read from it (`observe_window`, `searched_best`), `untabled` to compute every window.
The kernel, and the stepping core's rule loops, lend the rules their arrays (`collective.simulation.lent_arrays`):
no call counts references. Under the sham control a rule runs on an `Overheard` scene: `member_observe` and
`member_best` then read the other members' shadow windows and choices, worked out once per episode by
`collective.simulation.compiled_plugins.builtin_overhear`, and `target_read` says whose target is kept.

A message's symbol is a 64-bit hash of its kind and content (cells as integers, rewards by their
IEEE-754 bits), so equal messages have equal symbols; `entropy_of_counts` estimates the entropy of an
episode's symbols (see its docstring). The fused kernel counts them in a table as they come (O(1) per
message); the stepping core lists them per episode and counts them at the end; both sum the entropy
over the sorted counts, so they agree to the bit.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from collective.behaviours.decisions import object_keys, searched_best, tables_window
from collective.environments.scene import (is_landscape, is_reset, member_scene, moore_rewards, scene_reward,
                                           shadow_bounds, shadow_choice, shadow_worked_out, window_reach,
                                           window_reward)
from collective.environments.torus import wrap
from collective.simulation.prefetch import prefetch

FLOAT_BITS = 64  # a reward travels as a double
# comm (COMM_SLOTS,): messages and bits under each accounting of COMMUNICATION_ACCOUNTINGS, in its order.
COMM_SLOTS = 4
WRITES, READS_AND_WRITES = 0, 2  # offsets of an accounting's (messages, bits) in comm
# Message kinds, the first word of a symbol: equal contents of different kinds are different messages.
# DELIVERY: what a plug-in protocol hands one member (its target and field), whose own messages are unseen.
OBSERVATION_REPORT, MAP_WRITE, MAP_READ, BID, ORDER, CHOICE_REPORT, DEPOSIT, FIELD_READ, DELIVERY = range(1, 10)
# A log of one pass's message symbols is one uint64 array (one argument for the rules), headed by
# [messages, distinct symbols, C, the pending symbol, its copies, 0] and laid out as either a *count table*
# (the fused kernel, C > 0 a power of two): C slots of two words (symbol, count; open addressing, count 0: an
# empty slot), then the slots in use in order; or a *list* (the stepping core, one per episode, C = 0): the
# symbols in order. A table counts each message when the next one comes (`log_to`), so the header holds
# the last one, pending, until `settle_log`; six words keep every slot within one cache line.
MESSAGES, DISTINCT, SLOTS, PENDING, PENDING_COPIES, HEADER = 0, 1, 2, 3, 4, 6


def log_capacity(iterations: int, members: int) -> int:
    """Symbols one pass can log: at most 2m + 1 per iteration (stigmergy's m deposits and m reads)."""
    return iterations * (2 * members + 1)


def table_log(iterations: int, members: int) -> np.ndarray:
    """An empty count table of C slots, C a power of two at least twice `log_capacity` (load <= 1/2)."""
    slots = 1 << (2 * log_capacity(iterations, members) - 1).bit_length()
    log = np.zeros(HEADER + 3 * slots, np.uint64)  # 2C words of slots, C of the slots in use
    log[SLOTS] = slots
    return log


def list_logs(episodes: int, capacity: int) -> np.ndarray:
    """(episodes, HEADER + capacity) empty lists, one per episode."""
    return np.zeros((episodes, HEADER + capacity), np.uint64)


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
    """Fold a uint64 word into a symbol: xor, multiply by an odd constant (2^64/φ) and fold the high half
    down, a bijection of the symbol for each word, one multiply per word (the symbols of a scored pass are
    only compared for equality, so no finaliser is needed)."""
    h = (symbol ^ word) * np.uint64(0x9E3779B97F4A7C15)
    return h ^ (h >> np.uint64(29))


@njit(cache=True, inline="always")
def entry_hash(cell, value):
    """A map entry's part of the map's hash (`toggle_entry`), mixed by two multiply-xorshift rounds since
    the parts are combined by xor."""
    h = (np.uint64(cell) * np.uint64(0x9E3779B97F4A7C15)) ^ float_bits(value + 0.0)
    h = (h ^ (h >> np.uint64(32))) * np.uint64(0xD6E8FEB86659FD93)
    h = (h ^ (h >> np.uint64(32))) * np.uint64(0xD6E8FEB86659FD93)
    return h ^ (h >> np.uint64(32))


@njit(cache=True, inline="always")
def toggle_entry(state, slot, cell, value):
    """Xor a non-zero map entry (cell, value) into the map hash kept in state[slot] (its float64 bits): the
    hash of a map is the xor of its non-zero entries' hashes over the slot's initial bits (Zobrist 1970),
    so equal maps have equal hashes and a write costs O(1) instead of a pass over the map."""
    if value != 0.0:
        state[slot] = bits_float(float_bits(state[slot]) ^ entry_hash(cell, value))


@njit(cache=True, inline="always")
def symbol_add_cell(symbol, cell):
    return symbol_add(symbol, np.uint64(cell))


@intrinsic
def float_bits(typingctx, value):
    """The IEEE-754 bits of a float64, as a uint64 (a bit cast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.uint64(types.float64), codegen


@intrinsic
def bits_float(typingctx, bits):
    """The float64 with the given IEEE-754 bits (a bit cast; the value is only stored and read back)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


@njit(cache=True, inline="always")
def symbol_add_value(symbol, value):
    """Fold a reward by its bits, -0.0 taken as 0.0: equal rewards, equal symbols."""
    return symbol_add(symbol, float_bits(value + 0.0))


@njit(cache=True, inline="always")
def log_message(log, symbol):
    """Log one message's symbol (`log_copies`)."""
    log_copies(log, symbol, 1)


@njit(cache=True, inline="always")
def log_copies(log, symbol, copies):
    """Log `copies` messages of one symbol (the same content read by several members), as one rule call
    logging one message (`log_open`, `log_to`, `log_close`)."""
    log_close(log, log_to(log, log_open(log), symbol, copies))


@njit(cache=True, inline="always")
def log_open(log):
    """A rule call's logging state, read from the log's header once: (messages, distinct symbols, the pending
    symbol, its copies, C). The rule threads it through `log_to` and hands it to `log_close`, so that its
    messages do not each load and store the header (the compiler cannot keep an array's words in registers
    across the rule's other stores; notes/communication-speed.md)."""
    return (np.int64(log[MESSAGES]), np.int64(log[DISTINCT]), log[PENDING], np.int64(log[PENDING_COPIES]),
            np.int64(log[SLOTS]))


@njit(cache=True, inline="always")
def log_to(log, state, symbol, copies):
    """Log `copies` messages of one symbol; returns the new state (`log_open`). A count table takes at most
    C/2 messages (`log_capacity` bounds a scored pass; a training pass under a coordination threshold may fill
    it, and `empty_log` clears it before the scored pass); a list takes as many symbols as it holds. A table
    counts the message before this one and keeps this one pending, after asking the cache for its slot
    (`prefetch`): counting at once waited on the symbol (a chain of multiplies) and then on its slot's line,
    and a probe that went on resolved late (notes/communication-speed.md)."""
    n, distinct, pending, pending_copies, slots = state
    if slots:
        if 2 * (n + copies) > slots:
            return state
        if pending_copies:
            distinct = count_symbol(log, slots, distinct, pending, pending_copies)
        prefetch(log, np.uintp(HEADER + 2 * home_slot(symbol, slots)))
        return n + copies, distinct, symbol, np.int64(copies), slots
    listed = min(copies, log.shape[0] - HEADER - n)
    for k in range(listed):
        log[np.uintp(HEADER + n + k)] = symbol
    return n + listed, distinct, pending, pending_copies, slots


@njit(cache=True, inline="always")
def log_close(log, state):
    """Store a rule call's logging state (`log_open`) back in the log's header."""
    n, distinct, pending, pending_copies, slots = state
    log[MESSAGES], log[DISTINCT], log[PENDING], log[PENDING_COPIES] = n, distinct, pending, pending_copies


@njit(cache=True, inline="always")
def home_slot(symbol, slots):
    """Where a symbol's probe starts in a count table of `slots` slots."""
    return np.int64((symbol ^ (symbol >> np.uint64(32))) & np.uint64(slots - 1))


@njit(cache=True, inline="always")
def count_symbol(log, slots, distinct, symbol, copies):
    """Add `copies` to a symbol's count in a count table of `slots` slots holding `distinct` symbols (linear
    probing from its `home_slot`; unsigned indices: no negative-index fix-up); returns the distinct symbols
    after."""
    slot = home_slot(symbol, slots)
    while log[np.uintp(HEADER + 2 * slot + 1)] and log[np.uintp(HEADER + 2 * slot)] != symbol:
        slot = (slot + 1) & (slots - 1)
    if not log[np.uintp(HEADER + 2 * slot + 1)]:
        log[np.uintp(HEADER + 2 * slot)] = symbol
        log[np.uintp(HEADER + 2 * slots + distinct)] = slot
        distinct += 1
    log[np.uintp(HEADER + 2 * slot + 1)] += np.uint64(copies)
    return distinct


@njit(cache=True)
def settle_log(log):
    """Count a count table's pending message: its counts are then every message's."""
    if log[PENDING_COPIES]:
        log[DISTINCT] = count_symbol(log, np.int64(log[SLOTS]), np.int64(log[DISTINCT]), log[PENDING],
                                     log[PENDING_COPIES])
        log[PENDING_COPIES] = 0


@njit(cache=True)
def empty_log(log):
    """Clear a count table: its slots in use emptied, no message (none pending)."""
    slots = np.int64(log[SLOTS])
    for k in range(np.int64(log[DISTINCT])):
        log[HEADER + 2 * np.int64(log[HEADER + 2 * slots + k]) + 1] = 0
    log[MESSAGES] = log[DISTINCT] = log[PENDING_COPIES] = 0


@njit(cache=True)
def entropy_of_counts(counts, n):
    """Empirical Shannon entropy of n messages whose K distinct symbols occur counts (K,) times, bits per
    message: the plug-in estimate Σ_k (c_k / n) log2(n / c_k), plus the Miller-Madow bias correction
    (K - 1) / (2 n ln 2) (Miller 1955; Paninski 2003, "Estimation of entropy and mutual information", §3).
    NaN when n = 0. Summed over the counts in ascending order, so equal multisets give equal bits
    whichever layout counted them."""
    if n == 0:
        return np.nan
    total = 0.0
    for c in np.sort(counts):
        total += c * np.log2(n / c)
    return total / n + (counts.shape[0] - 1) / (2.0 * n * np.log(2.0))


@njit(cache=True)
def table_entropy_bits(log):
    """`entropy_of_counts` of a count table (its pending message counted first)."""
    settle_log(log)
    slots, distinct = np.int64(log[SLOTS]), np.int64(log[DISTINCT])
    counts = np.empty(distinct, np.int64)
    for k in range(distinct):
        counts[k] = log[HEADER + 2 * np.int64(log[HEADER + 2 * slots + k]) + 1]
    return entropy_of_counts(counts, np.int64(log[MESSAGES]))


@njit(cache=True)
def message_entropy_bits(symbols, n):
    """`entropy_of_counts` of the first n symbols of a list (symbols, without the header)."""
    ordered = np.sort(symbols[:n])
    counts = np.empty(n, np.int64)
    distinct = 0
    run = 1
    for i in range(1, n + 1):
        if i < n and ordered[i] == ordered[i - 1]:
            run += 1
        else:
            counts[distinct] = run
            distinct += 1
            run = 1
    return entropy_of_counts(counts[:distinct], n)


@njit(cache=True)
def log_deliveries(targets, fields, logs):
    """Log one DELIVERY symbol per (episode, member) in each episode's list (logs (E, HEADER + capacity)):
    targets (E, M) int64 (empty (0, 0) for none), fields (E, M, side²) float64 (empty (0, 0, 0) for none)."""
    for e in range(logs.shape[0]):
        for k in range(max(targets.shape[1], fields.shape[1])):
            symbol = symbol_start(DELIVERY)
            if targets.shape[0]:
                symbol = symbol_add(symbol, np.uint64(targets[e, k] + 1))
            if fields.shape[0]:
                for value in fields[e, k]:
                    symbol = symbol_add_value(symbol, value)
            log_message(logs[e], symbol)


@njit(cache=True)
def episode_entropies(logs, out):
    """out[e] = the message entropy of episode e's list, logs (E, HEADER + capacity)."""
    for e in range(logs.shape[0]):
        out[e] = message_entropy_bits(logs[e, HEADER:], np.int64(logs[e, MESSAGES]))


@njit(cache=True)
def table_distinct(log):
    """The distinct symbols of a count table: the pass's distinct messages (NaN: no message)."""
    settle_log(log)
    return np.nan if log[MESSAGES] == 0 else float(log[DISTINCT])


@njit(cache=True)
def episode_distinct(logs, out):
    """out[e] = the distinct symbols of episode e's list (NaN: no message), logs (E, HEADER + capacity)."""
    for e in range(logs.shape[0]):
        n = np.int64(logs[e, MESSAGES])
        out[e] = np.nan if n == 0 else float(np.unique(logs[e, HEADER:HEADER + n]).shape[0])


@njit(cache=True, inline="always")
def cell_bits(rows, cols):
    """Bits that name one cell of the grid."""
    return math.ceil(math.log2(rows * cols))


@njit(cache=True, inline="always")
def offset_cell(r, c, dr, dc, rows, cols):
    """Cell index of (r + dr, c + dc) on the ring, for offsets of at most one lap."""
    return wrap(r + dr, rows) * cols + wrap(c + dc, cols)


@njit(cache=True, inline="always")
def chosen_cell(i, pos_r, pos_c, choice, rows, cols):
    """Cell index of searcher i's own choice."""
    return offset_cell(pos_r[i], pos_c[i], int(choice[i, 0]), int(choice[i, 1]), rows, cols)


@njit(cache=True, inline="always")
def best_cells(values, n, cells):
    """cells[:ties] = the indices of the largest of values[:n], ascending (what `flatnonzero(values[:n] ==
    values[:n].max())` gives where no value is NaN; a NaN is never among them); returns ties. Two passes: the
    largest, by four running maxima that do not wait on each other, then the indices equal to it. Which
    running maximum holds the largest does not matter: NaN never beats one, and the only two values it could
    pick between, -0.0 and 0.0, compare equal. Without branches (whether a value beats, ties or
    trails the best is a coin toss to the branch predictor): every index is stored at cells[ties], and kept
    only when it ties the best (cells at least n long)."""
    b0, b1, b2, b3 = -np.inf, -np.inf, -np.inf, -np.inf
    k = 0
    while k + 4 <= n:
        v0, v1, v2, v3 = values[np.uintp(k)], values[np.uintp(k + 1)], values[np.uintp(k + 2)], values[np.uintp(k + 3)]
        b0 = v0 if v0 > b0 else b0
        b1 = v1 if v1 > b1 else b1
        b2 = v2 if v2 > b2 else b2
        b3 = v3 if v3 > b3 else b3
        k += 4
    while k < n:
        v0 = values[np.uintp(k)]
        b0 = v0 if v0 > b0 else b0
        k += 1
    b0 = b1 if b1 > b0 else b0
    b2 = b3 if b3 > b2 else b2
    best = b2 if b2 > b0 else b0
    ties = 0
    for k in range(n):
        cells[np.uintp(ties)] = k
        ties += values[np.uintp(k)] == best
    return ties


@njit(cache=True, inline="always")
def window_fits(r, c, view, rows, cols):
    """Whether the range-`view` window around (r, c) lies inside the grid: its cells need no wrap."""
    return view <= r < rows - view and view <= c < cols - view


@njit(cache=True, inline="always")
def window_row(r, dr, rows, cols, fits):
    """Index of the first cell of row r + dr (on the ring), without a wrap when the window `fits`."""
    return (r + dr if fits else wrap(r + dr, rows)) * cols


@njit(cache=True, inline="always")
def window_column(c, dc, cols, fits):
    """Column c + dc (on the ring), without a wrap when the window `fits`."""
    return c + dc if fits else wrap(c + dc, cols)


@njit(cache=True, inline="always")
def observe_window(r, c, scene, view, observed, i, reach, keys, parts):
    """observed[i, k] = R of the k-th cell of the range-`view` window around (r, c), row by row;
    returns the smallest and the largest. The local searcher's fast window (from a `SearchTable`'s reach, keys and
    parts when it tables it, `moore_rewards` for another range-1 window of Λ*, else `window_reward`; objects beyond
    reach unread), to the bit what
    `observe_window_cells`, its slow twin, reads with `scene_reward` (tests/test_window_rewards.py).
    Inlined, and written through the 2-D array rather than a row view, whose reference count would
    cost more than the window's arithmetic."""
    if tables_window(scene, view, keys):
        good, evil = object_keys(r, c, scene.good_r, scene.good_c, scene.evil_r, scene.evil_c, scene.rows, scene.cols,
                                 reach)
        low, high = np.inf, -np.inf
        for k in range(9):  # `moore_rewards`' differences, of the same parts
            value = parts[np.uintp(good * 9 + k)] - parts[np.uintp(evil * 9 + k)]
            observed[np.uintp(i), np.uintp(k)] = value
            low, high = min(low, value), max(high, value)
        return low, high
    lambda_star = not (is_landscape(scene) or is_reset(scene))
    good_reaches, evil_reaches = True, True  # a landscape's or the reset field's cells are read whole
    if lambda_star:
        good_reaches, evil_reaches = window_reach(scene, r, c, view)
    low, high = np.inf, -np.inf
    if view == 1 and lambda_star:  # the usual window, from 12 proximities
        values = moore_rewards(scene, r, c, good_reaches, evil_reaches)
        for k in range(9):
            value = values[k]
            observed[np.uintp(i), np.uintp(k)] = value  # unsigned indices: no negative-index fix-up
            low, high = min(low, value), max(high, value)
        return low, high
    k = 0
    for dr in range(-view, view + 1):
        row = wrap(r + dr, scene.rows)
        for dc in range(-view, view + 1):
            value = window_reward(scene, row, wrap(c + dc, scene.cols), good_reaches, evil_reaches)
            observed[i, k] = value
            low, high = min(low, value), max(high, value)
            k += 1
    return low, high


@njit(cache=True, inline="always")
def member_observe(scene, i, r, c, view, observed, reach, keys, parts):
    """`observe_window` of member i, at (r, c), in its scene (`member_scene`). In an `Overheard`, another
    member than the listener observed its shadow window once for the episode (`shadow_worked_out`): its
    rewards are already in `observed` and its bounds in the scene (`compiled_plugins.builtin_overhear`). The
    tests on the scene's type are constants once compiled: for a `Scene` this is `observe_window`."""
    if shadow_worked_out(scene, i):
        return shadow_bounds(scene, i)
    return observe_window(r, c, member_scene(scene, i), view, observed, i, reach, keys, parts)


@njit(cache=True, inline="always")
def member_best(scene, i, r, c, view, state, reach, keys, ties, best, parts):
    """`searched_best` of member i, at (r, c) with stream state `state`, in its scene (`member_scene`). In an
    `Overheard`, another member than the listener chose once for the episode, in its shadow, from the shadow's
    stream (`shadow_worked_out`): its choice and the stream after it are read from the scene."""
    if shadow_worked_out(scene, i):
        return shadow_choice(scene, i)
    return searched_best(r, c, member_scene(scene, i), view, state, reach, keys, ties, best, parts)


@njit(cache=True)
def observe_window_cells(r, c, scene, view, observed, i):
    """`observe_window` cell by cell with `scene_reward`: its slow twin (tests/test_protocol_windows.py)."""
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
