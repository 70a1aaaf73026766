"""Environment complexity measures for Lambda Star: LZ76 complexity K(mu) of a movement
pattern and search-space entropy H(mu) (Chmait et al. 2016, §4.2-4.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from collective.simulation.array_copies import copy_into


@numba.njit(cache=True)
def lz76_phrase_count(sequence):
    """Raw Lempel-Ziv (1976) phrase count c of a 1-D integer array.

    Kaspar & Schuster 1987 (Phys. Rev. A 36, 842) algorithm; used for K(mu) in
    Chmait et al. 2016, §4.2. A phrase may be copied from any earlier start, overlapping itself;
    an unfinished last phrase counts as one.
    """
    return lz76_phrase_count_at_most(sequence, sequence.shape[0])


@numba.njit(cache=True)
def lz76_phrase_count_at_most(sequence, limit):
    """`lz76_phrase_count`, but stops and returns limit + 1 as soon as the count exceeds `limit`:
    the count only grows along the scan, so a draw rejected for K > limit costs ~limit phrases,
    not the whole sequence (the rejection sampling of `patterns` relies on it)."""
    n = sequence.shape[0]
    if n <= 1:
        return n
    c = 1  # the first symbol is always a phrase of its own
    start = 1  # first index of the phrase being built
    i = 0  # candidate start in the history
    k = 1  # length of the current match from i
    longest = 1  # longest match found for this phrase so far
    while True:
        if sequence[i + k - 1] == sequence[start + k - 1]:
            k += 1
            if start + k > n:  # the match runs to the end: last (unfinished) phrase
                return c + 1
        else:
            longest = max(longest, k)
            i += 1
            if i == start:  # no earlier start extends further: close the phrase
                c += 1
                if c > limit:
                    return limit + 1
                start += longest
                if start + 1 > n:
                    return c
                i = 0
                longest = 1
            k = 1


@numba.njit(cache=True)
def lz76_periodic_at_most(sequence, period, n, limit):
    """`lz76_phrase_count_at_most` of the length-n sequence that repeats sequence[:period] (0 < period
    < n), reading only sequence[:min(n, 2·period)]. A match of a full period continues to the end, and
    so does a phrase that starts after the first period (copied from one period back): either way the
    rest is the last phrase, found without scanning it."""
    if n <= 1:
        return n
    c = 1
    start = 1
    i = 0
    k = 1
    longest = 1
    while True:
        if sequence[i + k - 1] == sequence[start + k - 1]:
            k += 1
            if start + k > n or k > period:  # runs to the end
                return c + 1
        else:
            longest = max(longest, k)
            i += 1
            if i == start:
                c += 1
                if c > limit:
                    return limit + 1
                start += longest
                if start + 1 > n:
                    return c
                if start >= period:  # copied from start - period to the end
                    return c + 1
                i = 0
                longest = 1
            k = 1


def lz76_normalised(phrase_count: int, length: int) -> float:
    """Normalised LZ76 complexity c·log2(L)/L, 0.0 for L <= 1 (Chmait et al. 2016, §4.2;
    Kaspar & Schuster 1987)."""
    if length <= 1:
        return 0.0
    return phrase_count * math.log2(length) / length


K_NORMALISATIONS = ("log2_length", "log_alphabet")


def alphabet_normalised(log2_normalised, alphabet: int):
    """c·log_N(L)/L from c·log2(L)/L: Kaspar & Schuster's (1987) normalisation c/b(L), b(L) =
    L/log_N(L) the count of a random sequence over an alphabet of N symbols, here the N cells a
    position can take. A random sequence over N symbols
    then tends to 1 whatever N, so normalised K compares across grids (issue 12 point 3); log2
    (the spec's binary alphabet) makes the same randomness count log2(N) times more on an N-cell
    grid. Scalars or arrays; the length L needs no knowing, since the two differ by log2(N)."""
    return log2_normalised / math.log2(alphabet)


@numba.njit(cache=True, nogil=True)
def lz76_rows(positions, length):
    """(rows,) int32 LZ76 phrase counts of positions[:, :length] (rows, >= length) int array."""
    counts = np.empty(positions.shape[0], np.int32)
    row = np.empty(length, np.int64)
    for e in range(positions.shape[0]):
        copy_into(row, positions[e, :length])
        counts[e] = lz76_phrase_count(row)
    return counts


@dataclass(frozen=True)
class Lz76Complexity:
    """LZ76 complexity of a sequence: raw phrase count and its normalised value (§4.2)."""

    raw: int
    normalised: float


def lz76(symbols) -> Lz76Complexity:
    """LZ76 complexity of a str (one symbol per character), int sequence or NumPy array
    (Chmait et al. 2016, §4.2; Kaspar & Schuster 1987)."""
    if isinstance(symbols, str):
        symbols = list(symbols)
    _, codes = np.unique(np.asarray(symbols), return_inverse=True)
    codes = np.ascontiguousarray(codes.ravel(), dtype=np.int64)
    raw = int(lz76_phrase_count(codes))
    return Lz76Complexity(raw=raw, normalised=lz76_normalised(raw, codes.shape[0]))


def search_space_entropy_bits(rows: int, cols: int, evil_determined: bool = False) -> float:
    """Search-space complexity H(mu) = log2 |S| bits, S the possible states of {⊕, ⊖} on N =
    rows·cols cells (Chmait et al. 2016, §4.3): |S| = N·(N-1) when the two objects are placed
    independently, the paper's formula; |S| = N when ⊖ is a function of ⊕ (the index-shift
    pairing), since knowing ⊕ leaves no uncertainty about ⊖ (issue 12 point 1)."""
    if rows < 1 or cols < 1 or rows * cols < 2:
        raise ValueError(f"a {rows}x{cols} grid does not hold two distinct cells")
    n = rows * cols
    return math.log2(n) if evil_determined else math.log2(n * (n - 1))
