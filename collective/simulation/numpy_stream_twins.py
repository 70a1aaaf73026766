"""Compiled twins of the NumPy draws that key every episode, bit for bit NumPy's numbers, one call per batch.

`numpy.random.SeedSequence(entropy, spawn_key).generate_state(n, uint64)` and `numpy.random.default_rng(seed)`
(PCG64 seeded from `SeedSequence(seed).generate_state(4, uint64)`) with its `permutation(n)`, `choice(n, size,
replace=False)` and `integers(0, n, size)`, written from the algorithms of NumPy's `bit_generator.pyx` (the
SeedSequence pool: O'Neill's 2015 hash mixing, pool of 4 words), `pcg64.h` (PCG64 XSL-RR, O'Neill 2014),
`distributions.c` (Lemire 2019's bounded integers; masked rejection for shuffles; uniform doubles) and
`_generator.pyx` (Floyd's sampling then a shuffle for `choice`), and of `np.add.reduce`'s pairwise sum of
float64 (`loops_utils.h`), so that a batch needs no Python object per episode. They cover
what the project asks of them (`TWIN_MAX_CELLS`); callers fall back to NumPy outside it, never to a different
number. tests/test_numpy_stream_twins.py holds them to NumPy's own output.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_XSHIFT = np.uint64(16)  # half a 32-bit word
_POOL = 4  # SeedSequence's default pool size
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)  # the entropy hash
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)  # the output hash
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_PCG_MULT_HIGH, _PCG_MULT_LOW = np.uint64(0x2360ED051FC65DA4), np.uint64(0x4385DF649FCCF645)
_ONE, _ZERO = np.uint64(1), np.uint64(0)

# Up to this many cells `Generator.choice(n, size, replace=False)` runs Floyd's algorithm whatever the size
# (beyond it NumPy may shuffle a tail instead), and every bounded draw fits NumPy's 32-bit path.
TWIN_MAX_CELLS = 10_000


def uint32_words(value: int) -> list[int]:
    """A non-negative integer as SeedSequence reads it: 32-bit words, lowest first; 0 is one word."""
    value = int(value)
    words = [value & 0xFFFFFFFF]
    value >>= 32
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return words


def is_word_source(value) -> bool:
    """Whether SeedSequence reads `value` as the twins do: a non-negative integer (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and int(value) >= 0


def spawn_words(entropy: list[int], key_head: tuple[int, ...]) -> np.ndarray:
    """uint32 assembled entropy of SeedSequence(entropy, spawn_key=(*key_head, ...)) up to the per-row key words:
    the run entropy padded to the pool (a spawn key does that, NumPy >= 1.19), then the head's words."""
    run = [word for value in entropy for word in uint32_words(value)]
    run += [0] * max(0, _POOL - len(run))
    return np.array(run + [word for value in key_head for word in uint32_words(value)], np.uint32)


def key_words(key_rest: tuple[int, ...]) -> np.ndarray:
    """uint32 words of the spawn-key words after the per-row one."""
    return np.array([word for value in key_rest for word in uint32_words(value)], np.uint32)


@njit(cache=True, nogil=True, inline="always")
def _hashmix(value, hash_const):
    """(hashed word, next hash constant): the pool's entropy hash, in uint64 holding 32-bit words."""
    value = value ^ hash_const
    hash_const = (hash_const * _MULT_A) & _MASK32
    value = (value * hash_const) & _MASK32
    return value ^ (value >> _XSHIFT), hash_const


@njit(cache=True, nogil=True, inline="always")
def _mix(x, y):
    result = (_MIX_L * x - _MIX_R * y) & _MASK32
    return result ^ (result >> _XSHIFT)


@njit(cache=True, nogil=True)
def _pool(words, length, pool):
    """Fill `pool` (4 uint64 holding 32-bit words) from the first `length` entropy `words`."""
    hash_const = _INIT_A
    for i in range(_POOL):
        hashed, hash_const = _hashmix(np.uint64(words[i]) if i < length else _ZERO, hash_const)
        pool[i] = hashed
    for source in range(_POOL):
        for target in range(_POOL):
            if source != target:
                hashed, hash_const = _hashmix(pool[source], hash_const)
                pool[target] = _mix(pool[target], hashed)
    for source in range(_POOL, length):
        for target in range(_POOL):
            hashed, hash_const = _hashmix(np.uint64(words[source]), hash_const)
            pool[target] = _mix(pool[target], hashed)


@njit(cache=True, nogil=True)
def _generate(pool, out):
    """`generate_state(len(out), uint64)` of the pool into `out`: 32-bit words in pairs, low word first."""
    hash_const = _INIT_B
    for index in range(2 * len(out)):
        value = pool[index % _POOL] ^ hash_const
        hash_const = (hash_const * _MULT_B) & _MASK32
        value = (value * hash_const) & _MASK32
        value ^= value >> _XSHIFT
        if index % 2 == 0:
            out[index // 2] = value
        else:
            out[index // 2] |= value << _SHIFT32


@njit(cache=True, nogil=True, inline="always")
def append_words(entropy, start, tail):
    """Write `tail` (a non-negative int64 or uint64) as SeedSequence's words at entropy[start:]; returns the end."""
    value = np.uint64(tail)
    entropy[start] = np.uint32(value & _MASK32)
    if value >> _SHIFT32:
        entropy[start + 1] = np.uint32(value >> _SHIFT32)
        return start + 2
    return start + 1


@njit(cache=True, nogil=True)
def seed_sequence_states(head, tails, rest, n_words):
    """(len(tails), n_words) uint64: row r is generate_state(n_words, uint64) of the SeedSequence whose assembled
    entropy is head, the words of tails[r] (non-negative int64), rest (see `spawn_words`, `key_words`)."""
    out = np.empty((len(tails), n_words), np.uint64)
    pool = np.empty(_POOL, np.uint64)
    entropy = np.empty(len(head) + 2 + len(rest), np.uint32)
    entropy[:len(head)] = head
    for row in range(len(tails)):
        end = append_words(entropy, len(head), tails[row])
        entropy[end:end + len(rest)] = rest
        _pool(entropy, end + len(rest), pool)
        _generate(pool, out[row])
    return out


@njit(cache=True, nogil=True, inline="always")
def _mulhi(a, b):
    """The high 64 bits of the 128-bit product a·b."""
    a0, a1, b0, b1 = a & _MASK32, a >> _SHIFT32, b & _MASK32, b >> _SHIFT32
    low = a0 * b0
    cross_1, cross_2 = a0 * b1, a1 * b0
    middle = (low >> _SHIFT32) + (cross_1 & _MASK32) + (cross_2 & _MASK32)
    return a1 * b1 + (cross_1 >> _SHIFT32) + (cross_2 >> _SHIFT32) + (middle >> _SHIFT32)


@njit(cache=True, nogil=True, inline="always")
def _step(pcg):
    """PCG64's LCG step on pcg = [state high, state low, increment high, increment low, has word, word]."""
    high, low = pcg[0], pcg[1]
    product_low = low * _PCG_MULT_LOW
    product_high = _mulhi(low, _PCG_MULT_LOW) + low * _PCG_MULT_HIGH + high * _PCG_MULT_LOW
    new_low = product_low + pcg[3]
    pcg[1] = new_low
    pcg[0] = product_high + pcg[2] + (_ONE if new_low < product_low else _ZERO)


@njit(cache=True, nogil=True)
def _seed_pcg(pool, pcg):
    """PCG64 seeded as `default_rng` seeds it: words (state high, state low, increment high, low) of the
    pool's generate_state(4, uint64); state 0, increment 2·inc+1, step, add the state, step."""
    seed = np.empty(4, np.uint64)
    _generate(pool, seed)
    pcg[0], pcg[1] = _ZERO, _ZERO
    pcg[2] = (seed[2] << _ONE) | (seed[3] >> np.uint64(63))
    pcg[3] = (seed[3] << _ONE) | _ONE
    pcg[4], pcg[5] = _ZERO, _ZERO
    _step(pcg)
    low = pcg[1] + seed[1]
    pcg[0] = pcg[0] + seed[0] + (_ONE if low < pcg[1] else _ZERO)
    pcg[1] = low
    _step(pcg)


@njit(cache=True, nogil=True, inline="always")
def _next64(pcg):
    """XSL-RR output of the stepped state: (high ^ low) rotated right by the top 6 bits."""
    _step(pcg)
    value, rotation = pcg[0] ^ pcg[1], pcg[0] >> np.uint64(58)
    return (value >> rotation) | (value << ((np.uint64(64) - rotation) & np.uint64(63)))


@njit(cache=True, nogil=True, inline="always")
def _next32(pcg):
    """NumPy's PCG64 32-bit draw: the low half of a 64-bit output, its high half kept for the next call."""
    if pcg[4]:
        pcg[4] = _ZERO
        return pcg[5]
    value = _next64(pcg)
    pcg[4], pcg[5] = _ONE, value >> _SHIFT32
    return value & _MASK32


@njit(cache=True, nogil=True)
def _bounded(pcg, bound):
    """Uniform in [0, bound] for 0 < bound < 2**32 - 1 by Lemire's multiply and reject (NumPy's 32-bit path)."""
    exclusive = bound + _ONE
    product = _next32(pcg) * exclusive
    leftover = product & _MASK32
    if leftover < exclusive:
        threshold = (_MASK32 - bound) % exclusive
        while leftover < threshold:
            product = _next32(pcg) * exclusive
            leftover = product & _MASK32
    return np.int64(product >> _SHIFT32)


@njit(cache=True, nogil=True, inline="always")
def integer_at_most(pcg, bound):
    """`Generator.integers(0, bound + 1)`'s draw, 0 <= bound < 2**32 - 1 (Lemire; no draw when bound is 0)."""
    return _bounded(pcg, np.uint64(bound)) if bound > 0 else np.int64(0)


@njit(cache=True, nogil=True)
def shuffle_index(pcg, bound):
    """The index `Generator.shuffle` swaps with position `bound`: uniform in [0, bound] for bound < 2**32 by
    masked rejection (NumPy's `random_interval`)."""
    if bound == 0:
        return np.int64(0)
    mask = np.uint64(bound)
    for shift in (1, 2, 4, 8, 16):
        mask |= mask >> np.uint64(shift)
    value = _next32(pcg) & mask
    while value > np.uint64(bound):
        value = _next32(pcg) & mask
    return np.int64(value)


@njit(cache=True, nogil=True)
def start_cell_rows(seeds, n_cells, group_size, nested):
    """(len(seeds), group_size) int32: row r is `lambda_star.start_cells` of default_rng(seeds[r]) (uint64):
    permutation(n_cells)[:group_size] when `nested` and the group
    fits, else choice(n_cells, group_size, replace=False) when it fits, else integers(0, n_cells, group_size).
    1 <= n_cells <= TWIN_MAX_CELLS."""
    out = np.empty((len(seeds), group_size), np.int32)
    pool = np.empty(_POOL, np.uint64)
    entropy = np.empty(2, np.uint32)
    pcg = np.empty(6, np.uint64)
    cells = np.empty(n_cells, np.int64)
    taken = np.zeros(n_cells, np.bool_)
    chosen = np.empty(group_size, np.int64)
    for row in range(len(seeds)):
        _pool(entropy, append_words(entropy, 0, seeds[row]), pool)  # SeedSequence(seed): no spawn key, no padding
        _seed_pcg(pool, pcg)
        if nested and group_size <= n_cells:  # Fisher-Yates from the top, masked rejection
            for cell in range(n_cells):
                cells[cell] = cell
            for top in range(n_cells - 1, 0, -1):
                other = shuffle_index(pcg, top)
                cells[top], cells[other] = cells[other], cells[top]
            for agent in range(group_size):
                out[row, agent] = cells[agent]
        elif group_size <= n_cells:  # Floyd's sample (a drawn value already taken gives way to j), then shuffled
            for j in range(n_cells - group_size, n_cells):
                value = integer_at_most(pcg, j)
                if taken[value]:
                    value = j
                taken[value] = True
                chosen[j - n_cells + group_size] = value
            for top in range(group_size - 1, 0, -1):
                other = integer_at_most(pcg, top)
                chosen[top], chosen[other] = chosen[other], chosen[top]
            for agent in range(group_size):
                taken[chosen[agent]] = False
                out[row, agent] = chosen[agent]
        else:
            for agent in range(group_size):
                out[row, agent] = integer_at_most(pcg, n_cells - 1)
    return out


@njit(cache=True, nogil=True)
def seed_pcg(entropy, length, pool, pcg):
    """pcg ← the PCG64 of `default_rng(SeedSequence(entropy))` whose assembled entropy is entropy[:length]
    (uint32 words, no spawn key); pool is scratch of SeedSequence's pool size."""
    _pool(entropy, length, pool)
    _seed_pcg(pool, pcg)


@njit(cache=True, nogil=True, inline="always")
def next_double(pcg):
    """PCG64's double in [0, 1): the top 53 bits of a 64-bit output times 2**-53 (its 32-bit buffer untouched)."""
    return np.float64(_next64(pcg) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def pairwise_sum(values, count):
    """NumPy's sum of the float64 values[:count] as `np.add.reduce` computes it on a contiguous array: 0.0 plus
    the pairwise sum (a run of at most 128 summed by `_block_sum`; a longer one split in halves cut at a
    multiple of 8, each half summed so, left + right), to the bit. The split tree is walked with a stack of
    its own, not by recursion (numba's cache loads a self-recursive function badly)."""
    starts, counts = np.empty(_SPLIT_DEPTH, np.int64), np.empty(_SPLIT_DEPTH, np.int64)
    lefts, left_done = np.empty(_SPLIT_DEPTH), np.zeros(_SPLIT_DEPTH, np.bool_)
    depth, starts[0], counts[0] = 0, 0, count
    while True:
        n = counts[depth]
        if n > 128:  # a fresh run too long for a block: its left half first
            starts[depth + 1], counts[depth + 1], left_done[depth + 1] = starts[depth], _left_half(n), False
            depth += 1
            continue
        value = _block_sum(values, starts[depth], n)
        depth -= 1
        while depth >= 0 and left_done[depth]:  # a right half: its run is done
            value = lefts[depth] + value
            depth -= 1
        if depth < 0:
            return 0.0 + value
        lefts[depth], left_done[depth] = value, True  # a left half: now the right one
        half = _left_half(counts[depth])
        starts[depth + 1], counts[depth + 1], left_done[depth + 1] = starts[depth] + half, counts[depth] - half, False
        depth += 1


_SPLIT_DEPTH = 64  # the split tree's depth is at most log2 of the count


@njit(cache=True, nogil=True, inline="always")
def _left_half(count):
    half = count // 2
    return half - half % 8


@njit(cache=True, nogil=True)
def _block_sum(values, first, count):
    """NumPy's sum of a run of at most 128: sequential below 8 terms, else 8 running sums, combined
    ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the terms past the last multiple of 8."""
    if count < 8:
        total = 0.0
        for i in range(first, first + count):
            total += values[i]
        return total
    r0, r1, r2, r3 = values[first], values[first + 1], values[first + 2], values[first + 3]
    r4, r5, r6, r7 = values[first + 4], values[first + 5], values[first + 6], values[first + 7]
    i = 8
    while i < count - count % 8:
        at = first + i
        r0 += values[at]
        r1 += values[at + 1]
        r2 += values[at + 2]
        r3 += values[at + 3]
        r4 += values[at + 4]
        r5 += values[at + 5]
        r6 += values[at + 6]
        r7 += values[at + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for j in range(first + i, first + count):
        total += values[j]
    return total
