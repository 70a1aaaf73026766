"""The fused kernel's count table of message symbols (protocols/kernel_support.py, issue 25: logging < 5%).

Its insert (`count_symbol`) has no branch on whether a symbol is new, and the rules stage an iteration's
symbols and count them at the end of their call (`stage_message`, `count_staged`). Both must leave the table
as the plain insert does: each symbol's count, the number of distinct symbols, each slot's symbol and the
order of first use, which `table_entropy_bits` and `empty_log` read. The known answer here is a Counter of the
symbols and a slow twin of the branching insert, on streams with repeats and with symbols whose home slots
collide (linear probing across the table's end)."""
from collections import Counter

import numba
import numpy as np
import pytest

from collective.protocols.kernel_support import (DISTINCT, HEADER, MESSAGES, SLOTS, count_staged, empty_log,
                                                 log_capacity, log_copies, stage_message, staging_start,
                                                 table_entropy_bits, table_log)

ITERATIONS, MEMBERS = 1, 2  # a table of 16 slots (it takes 8 messages), room to stage 5


def twin_log(log: np.ndarray, symbol: int, copies: int = 1) -> None:
    """The branching insert, in Python: the symbol's slot or the first empty one after its home slot (wrapping)
    takes the copies, a new symbol's slot goes to the end of the order of first use; no message once the
    table would hold more than C/2."""
    slots, n = int(log[SLOTS]), int(log[MESSAGES])
    if 2 * (n + copies) > slots:
        return
    slot = (symbol ^ (symbol >> 32)) % slots
    while log[HEADER + slots + slot] and int(log[HEADER + slot]) != symbol:
        slot = (slot + 1) % slots
    if not log[HEADER + slots + slot]:
        log[HEADER + slot] = symbol
        log[HEADER + 2 * slots + int(log[DISTINCT])] = slot
        log[DISTINCT] += 1
    log[HEADER + slots + slot] += copies
    log[MESSAGES] = n + copies


def readable(log: np.ndarray) -> tuple:
    """What the table's readers see: header, each used slot's symbol and count, and the order of first use."""
    slots, distinct = int(log[SLOTS]), int(log[DISTINCT])
    used = np.flatnonzero(log[HEADER + slots:HEADER + 2 * slots])
    return (tuple(log[:HEADER]), tuple(used), tuple(log[HEADER + used]), tuple(log[HEADER + slots + used]),
            tuple(log[HEADER + 2 * slots:HEADER + 2 * slots + distinct]))


@numba.njit
def _log_each(log, symbols, copies):
    for k in range(symbols.shape[0]):
        log_copies(log, symbols[k], copies[k])


@numba.njit
def _stage_in_calls(log, symbols, per_call):
    """As a rule does: per call, stage up to `per_call` symbols, then count them."""
    for start in range(0, symbols.shape[0], per_call):
        staging, staged = staging_start(log), 0
        for k in range(start, min(start + per_call, symbols.shape[0])):
            staged = stage_message(log, staging, staged, symbols[k])
        count_staged(log, staging, staged)


def colliding_symbols(rng: np.random.Generator, count: int) -> np.ndarray:
    """Symbols drawn from a few values whose home slots (low bits of symbol ^ symbol >> 32) collide in a
    16-slot table, among them slot 15, so that probing wraps past the table's end."""
    pool = np.array([15, 31, 47, 2 ** 40 + 15, 3, 19, 2 ** 33, 1 << 63, 7], np.uint64)
    return pool[rng.integers(0, pool.shape[0], count)]


@pytest.mark.parametrize("seed", range(6))
def test_the_insert_counts_as_the_branching_one(seed):
    rng = np.random.default_rng(seed)
    symbols = colliding_symbols(rng, 12)  # more than the table takes: the last ones are dropped
    copies = rng.integers(1, 3, symbols.shape[0])
    fast, slow = table_log(ITERATIONS, MEMBERS), table_log(ITERATIONS, MEMBERS)
    assert fast[SLOTS] == 16
    _log_each(fast, symbols, copies)
    for symbol, n in zip(symbols, copies):
        twin_log(slow, int(symbol), int(n))
    assert readable(fast) == readable(slow)
    kept = Counter()
    for symbol, n in zip(symbols, copies):  # the known answer: counts until the table holds C/2 messages
        if 2 * (sum(kept.values()) + n) > 16:
            continue
        kept[int(symbol)] += int(n)
    slots = int(fast[SLOTS])
    assert {int(fast[HEADER + s]): int(fast[HEADER + slots + s]) for s in readable(fast)[1]} == dict(kept)
    assert fast[DISTINCT] == len(kept) and fast[MESSAGES] == sum(kept.values())


@pytest.mark.parametrize("per_call", [1, 3, log_capacity(1, MEMBERS)])
def test_staged_symbols_count_as_logged_ones(per_call):
    """Staged per call and counted at its end, the symbols fill the table as logging each at once does, the
    messages past C/2 dropped alike; the entropy is the same to the bit, and `empty_log` empties it."""
    symbols = colliding_symbols(np.random.default_rng(per_call), 11)
    staged, direct = table_log(ITERATIONS, MEMBERS), table_log(ITERATIONS, MEMBERS)
    _stage_in_calls(staged, symbols, per_call)
    _log_each(direct, symbols, np.ones(symbols.shape[0], np.int64))
    assert readable(staged) == readable(direct)
    assert table_entropy_bits(staged) == table_entropy_bits(direct)
    empty_log(staged)
    assert not staged[HEADER + 16:HEADER + 32].any() and staged[MESSAGES] == staged[DISTINCT] == 0


def test_a_list_takes_each_staged_symbol_at_once():
    """The stepping core's list (C = 0) is not staged: symbols are appended in order, as many as it holds."""
    symbols = np.arange(1, 8, dtype=np.uint64)
    log = np.zeros(HEADER + 5, np.uint64)
    _stage_in_calls(log, symbols, 3)
    assert log[MESSAGES] == 5 and list(log[HEADER:]) == [1, 2, 3, 4, 5]
