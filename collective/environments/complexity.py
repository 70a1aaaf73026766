"""Environment complexity measures for Lambda Star: LZ76 complexity K(mu) of a movement
pattern and search-space entropy H(mu) (Chmait et al. 2016, §4.2-4.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np


@numba.njit(cache=True)
def lz76_phrase_count(sequence):
    """Raw Lempel-Ziv (1976) phrase count c of a 1-D integer array.

    Kaspar & Schuster 1987 (Phys. Rev. A 36, 842) algorithm; used for K(mu) in
    Chmait et al. 2016, §4.2. A phrase may be copied from any earlier start, overlapping itself;
    an unfinished last phrase counts as one.
    """
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
                start += longest
                if start + 1 > n:
                    return c
                i = 0
                longest = 1
            k = 1


def lz76_normalised(phrase_count: int, length: int) -> float:
    """Normalised LZ76 complexity c·log2(L)/L, 0.0 for L <= 1 (Chmait et al. 2016, §4.2;
    Kaspar & Schuster 1987)."""
    if length <= 1:
        return 0.0
    return phrase_count * math.log2(length) / length


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


def search_space_entropy_bits(rows: int, cols: int) -> float:
    """Search-space complexity H(mu) = log2(N·(N-1)) bits, N = rows·cols: the possible
    positions of the Good and Evil objects (Chmait et al. 2016, §4.3)."""
    if rows < 1 or cols < 1 or rows * cols < 2:
        raise ValueError(f"a {rows}x{cols} grid does not hold two distinct cells")
    n = rows * cols
    return math.log2(n * (n - 1))
