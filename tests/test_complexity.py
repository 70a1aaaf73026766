"""LZ76 complexity K(mu) and search-space entropy H(mu) (spec §2-3, paper 003 §4.2-4.3)."""

import itertools
import math

import antropy
import numba
import numpy as np
import pytest

from collective.environments.complexity import (
    Lz76Complexity,
    lz76,
    lz76_normalised,
    lz76_phrase_count,
    search_space_entropy_bits,
)


def antropy_count(seq) -> int:
    """Independent LZ76 phrase count from antropy (it takes any integer array)."""
    return int(antropy.lziv_complexity(np.asarray(seq, dtype=np.int64), normalize=False))


@pytest.mark.parametrize(
    ("symbols", "raw", "normalised"),
    [
        ("111111111", 2, 0.7044),
        ("111121111", 3, 1.0566),
        ("123456789", 9, 3.1699),
        ("1212121212", 3, 0.9966),
        ("123123123123", 4, 1.1950),
        ("12312312312312", 4, 1.0878),
        ("123589431898354158313", 13, 2.7191),
    ],
)
def test_spec_vectors(symbols, raw, normalised):
    result = lz76(symbols)
    assert result.raw == raw
    assert round(result.normalised, 4) == normalised


def test_paper_worked_example_is_relabelling_invariant():
    paper = ([7, 3, 4, 9, 8] * 4)[:20]
    relabelled = ([1, 2, 3, 4, 5] * 4)[:20]
    assert lz76(paper).raw == lz76(relabelled).raw == lz76("73498" * 4).raw
    assert lz76(paper).raw == antropy_count(paper)
    assert lz76(paper).raw == 6  # 7|3|4|9|8|734987349873498


def test_edge_lengths():
    assert lz76_phrase_count(np.empty(0, dtype=np.int64)) == 0
    assert lz76_phrase_count(np.array([42], dtype=np.int64)) == 1
    assert lz76([]) == Lz76Complexity(raw=0, normalised=0.0)
    assert lz76("5") == Lz76Complexity(raw=1, normalised=0.0)
    assert lz76_normalised(3, 1) == 0.0
    assert lz76_normalised(2, 9) == pytest.approx(2 * math.log2(9) / 9)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_any_int_dtype(dtype):
    seq = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], dtype=dtype)
    assert lz76_phrase_count(seq) == 4


def test_input_forms_agree():
    values = [7, 3, 4, 9, 8, 8, 3, 7, 7, 4]
    expected = lz76(values)
    assert lz76(tuple(values)) == expected
    assert lz76(np.array(values, dtype=np.int32)) == expected
    assert lz76("".join(map(str, values))) == expected


def test_matches_antropy_on_random_sequences():
    rng = np.random.default_rng(20160829)
    for trial in range(400):
        length = int(rng.integers(1, 301))
        alphabet = int(rng.integers(2, 51))
        seq = rng.integers(0, alphabet, size=length)
        if trial % 4 == 0:  # cell indices on a large grid
            seq = rng.choice(10_000, size=alphabet, replace=False)[seq]
        assert lz76_phrase_count(seq) == antropy_count(seq), (trial, seq.tolist())


def test_matches_antropy_on_repetitive_sequences():
    # Random inputs rarely contain long copies; cyclic and ping-pong walks are what K(mu) sees.
    rng = np.random.default_rng(7)
    for _ in range(200):
        base = rng.integers(0, int(rng.integers(2, 10)), size=int(rng.integers(1, 20)))
        walk = np.concatenate([base, base[::-1]] * 10)[: int(rng.integers(1, 200))]
        assert lz76_phrase_count(walk) == antropy_count(walk), walk.tolist()


def naive_count(seq: str) -> int:
    """LZ76 from its definition: each phrase is the shortest next block that is not a
    substring of everything before its last symbol; an unfinished last phrase counts."""
    count, start = 0, 0
    while start < len(seq):
        end = start + 1
        while end <= len(seq) and seq[start:end] in seq[: end - 1]:
            end += 1
        count, start = count + 1, end
    return count


def test_matches_definition_exhaustively():
    for length in range(1, 11):
        for word in itertools.product("abc" if length <= 8 else "ab", repeat=length):
            seq = "".join(word)
            assert lz76(seq).raw == naive_count(seq), seq


def test_relabelling_invariance():
    rng = np.random.default_rng(1)
    for _ in range(100):
        seq = rng.integers(0, 12, size=int(rng.integers(1, 120)))
        relabel = rng.choice(10_000, size=12, replace=False)
        assert lz76_phrase_count(relabel[seq]) == lz76_phrase_count(seq)


def test_count_bounded_by_length_and_monotone_in_prefix():
    rng = np.random.default_rng(2)
    for _ in range(50):
        seq = rng.integers(0, int(rng.integers(2, 6)), size=80)
        counts = [lz76_phrase_count(seq[:n]) for n in range(len(seq) + 1)]
        assert all(c <= n for n, c in enumerate(counts))
        assert all(a <= b for a, b in zip(counts, counts[1:]))


def test_callable_from_njit():
    @numba.njit
    def wrapper(seq):
        return lz76_phrase_count(seq) + 0

    assert wrapper(np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], dtype=np.int64)) == 4


def test_search_space_entropy():
    assert search_space_entropy_bits(10, 10) == pytest.approx(math.log2(9900))
    assert search_space_entropy_bits(1, 2) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        search_space_entropy_bits(1, 1)
