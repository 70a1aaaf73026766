"""Movement patterns of the special objects and their complexity K (spec §2, paper 003 §4.2).

A pattern generator turns per-episode seeds into ⊕ trajectories, shape (episodes, T+1): cell
indices at iterations 0..T (position 0 is the start, T+1 positions because each of the T
iterations moves the objects once). Generators are injectable objects, registered by name, so
landscapes and the anytime test can reuse them; `StratifiedComplexity` wraps one to draw each
episode's K uniformly from the range first. A ⊖ pairing then derives Evil's trajectory.
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict, namedtuple
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
from numba import njit

from collective.environments.complexity import lz76_periodic_at_most, lz76_phrase_count_at_most, lz76_rows
from collective.simulation.array_copies import copy_into
from collective.simulation.random_streams import advance_uniform_int, derive_stream_seed, skipped, uniform_int
from collective.environments.torus import king_moves, wrap

MAX_TRIES = 200_000  # rejection-sampling budget per episode before a K range counts as unreachable
# With `lazy_shuffle`, closed segments longer than this are shuffled move by move as the walk reaches them
# (`_closed_move`); shorter ones whole, which costs less there (every segment lazily: 1.7x the CPU at 10x10, T = 200).
LAZY_SHUFFLE_ABOVE = 128


class UnreachableK(ValueError):
    """No pattern of the asked K was found within MAX_TRIES draws (the K range is unreachable in practice)."""


def unreachable_k_error(k_low, k_high, rows: int, cols: int, iterations: int) -> UnreachableK:
    """The error of an episode whose draws missed a K in [k_low, k_high] MAX_TRIES times."""
    return UnreachableK(f"no pattern with K in [{k_low}, {k_high}] found in {MAX_TRIES} tries on a {rows}x{cols} "
                        f"grid with {iterations} iterations")


def no_pair_error(k, rows: int, cols: int, iterations: int) -> ValueError:
    """The error of an episode whose ⊕/⊖ pairs never kept K = k on both played paths in MAX_PAIR_ROUNDS rounds."""
    return ValueError(f"no ⊕/⊖ pair whose played paths both keep K = {int(k)} found in {MAX_PAIR_ROUNDS} draws on a "
                      f"{rows}x{cols} grid with {iterations} iterations: collisions nearly always change K there; "
                      "use a larger grid, a lower k_max or k_on_played_paths = false")
MAX_PAIR_ROUNDS = 10_000  # redraws of an independent ⊕/⊖ pair before its K counts as unplayable
PAIR_PROBES, PAIR_PROBE_ROUNDS = 2, 400  # `unpairable_k`: probe episodes per K and their budget of rounds
# Where a cyclic segment's length is capped: "half_T", 1..⌊T/2⌋ moves as paper 003 §4.2 says;
# "k_max", 1..min(⌊T/2⌋, k_max), the code's earlier shortcut (a segment of s moves seldom has K
# below s), which drops the longer segments that do reach K <= k_max and so changes which
# patterns of a given K are drawn (K = 21..23 become ~1000x rarer on 30x30 and 40x40 at T = 100).
SEGMENT_CAPS = ("k_max", "half_T")
# How an episode's K is chosen: "generator", whatever K the generator's draw has inside
# [k_min, k_max]; "stratified", a K uniform on [k_min, k_max] first, then the generator's draws
# rejected until one has exactly that K (issue 12 point 3).
K_SAMPLINGS = ("generator", "stratified")
_TARGET_STREAM, _EVIL_STREAM, _GOOD_STREAM, _COLLISION_STREAM, _POOL_STREAM = 1, 2, 3, 4, 5  # derived-stream ids
# A pool (`pooled_patterns`) keeps at most this many drawn patterns of one K waiting for the episodes that want it.
POOL_QUEUE = 32


@dataclass(frozen=True)
class PatternBatch:
    """⊕ trajectories and their LZ76 complexity."""

    positions: np.ndarray  # (episodes, T+1) int32 cell indices
    k_raw: np.ndarray  # (episodes,) int32 phrase count c
    k_normalised: np.ndarray  # (episodes,) float64 c·log2(L)/L
    k_length: int  # L, the length of the sequence K was measured on


class PatternGenerator(Protocol):
    name: ClassVar[str]
    k_on_positions: ClassVar[bool]  # K is the LZ76 count of the T positions it plays (else of a base walk)

    def generate(self, seeds: np.ndarray, rows: int, cols: int, iterations: int,
                 k_min: int | np.ndarray, k_max: int | np.ndarray) -> PatternBatch:
        """One pattern per seed with k_min <= K <= k_max (ints, or (episodes,) arrays: a range per
        episode), or ValueError when a K is unreachable."""
        ...

    def sample_k(self, seeds: np.ndarray, rows: int, cols: int, iterations: int, k_max: int) -> np.ndarray:
        """(episodes,) K of one unconditioned draw per seed, as `generate` draws under this k_max;
        values above k_max are reported as k_max + 1. For probing which K a grid can reach."""
        ...


@njit(cache=True)
def _draw_cyclic(stream, rows, cols, iterations, max_segment, limit, lazy, out, work):
    """Paper 003 §4.2: a recurrent segment of 1..max_segment moves repeated until T; returns K on
    out[:T] (limit + 1 for any K above `limit`, see `lz76_phrase_count_at_most`); out holds the
    whole trajectory when K <= limit.

    Half the segments are closed loops (each move paired with its opposite, shuffled), which
    repeat with period = segment length; the rest drift. Without the closed half, small K values
    are almost never drawn, since a random segment seldom returns to its start.

    A draw is rejected as soon as its walk has visited more than `limit` distinct cells: each first
    visit of a cell ends an LZ76 phrase of its own, so K >= the distinct cells of the path. A drifting
    segment's moves are drawn as the walk reaches them (its start cell, drawn after them, is read by
    skipping ahead), so a rejected draw leaves the stream exactly where a complete one would; with
    `lazy` (`CyclicPatternGenerator.lazy_shuffle`) so are those of a closed segment of more than
    LAZY_SHUFFLE_ABOVE moves (`_closed_move`). The
    stream's state is held in local variables while drawing (`advance_uniform_int`). `work`: the
    caller's `DrawWorkspace`, reused from draw to draw.
    """
    moves, seen, neighbour, order, placed, draws = (work.moves, work.seen, work.neighbour, work.order, work.placed,
                                                    work.draws)
    n_cells = rows * cols
    stamp = seen[n_cells] + 1  # this draw's mark in `seen` and `placed`; no reset between draws
    seen[n_cells] = stamp
    state, segment = advance_uniform_int(stream[0], max_segment)
    segment += 1
    state, coin = advance_uniform_int(state, 2)
    drifts = coin == 0
    move_state = state  # a drifting segment's moves: the stream's next `segment` draws
    lazy = lazy and not drifts and segment > LAZY_SHUFFLE_ABOVE
    if drifts:
        state = skipped(state, segment)
    elif lazy:  # the closed segment's draws: ⌊s/2⌋ moves, then s - 1 for the shuffle (`_closed_move`)
        state = skipped(state, segment // 2 + segment - 1)
    else:  # ⌊s/2⌋ moves each followed by its opposite, then a Fisher-Yates shuffle from the end
        pairs = segment // 2
        for p in range(pairs):  # each draw from its own counter, independent of the others (vectorised)
            _, draws[p] = advance_uniform_int(skipped(state, p), 9)
        for p in range(pairs):
            moves[2 * p] = draws[p]
            moves[2 * p + 1] = 8 - draws[p]  # the opposite king move
        if segment % 2 == 1:
            moves[segment - 1] = 4  # stay
        state = skipped(state, pairs)
        for p in range(segment - 1):  # draw p picks the entry that goes to position segment - 1 - p
            _, draws[p] = advance_uniform_int(skipped(state, p), segment - p)
        state = skipped(state, segment - 1)
        for p in range(segment - 1):
            i, j = segment - 1 - p, draws[p]
            moves[i], moves[j] = moves[j], moves[i]
    state, cell = advance_uniform_int(state, n_cells)
    stream[0] = state
    seen[cell] = stamp
    distinct = 1
    out[0] = cell
    step = 0  # t % segment, without a division per iteration
    for t in range(iterations):
        if t == segment and out[t] == out[0]:  # back at the start: the rest repeats the first period
            head = min(iterations, 2 * segment - 1)  # as much of it as K needs (`lz76_periodic_at_most`)
            for u in range(t, head):
                out[u + 1] = out[u + 1 - segment]
            k = lz76_periodic_at_most(out, segment, iterations, limit)
            if k <= limit:  # a draw the caller may keep: the whole trajectory
                for u in range(head, iterations):
                    out[u + 1] = out[u + 1 - segment]
            return k
        if drifts and t < segment:
            move_state, moves[t] = advance_uniform_int(move_state, 9)
        elif lazy and t < segment:
            moves[t] = _closed_move(move_state, segment, t, order, placed, stamp)
        cell = neighbour[np.uint64(cell), np.uint64(moves[step])]  # unsigned: no negative-index test in the chain
        step = step + 1 if step + 1 < segment else 0
        out[t + 1] = cell
        distinct += seen[np.uint64(cell)] != stamp  # without a branch: whether a cell is new is hard to predict
        seen[np.uint64(cell)] = stamp
        if distinct > limit and t + 1 < iterations:  # K is measured on out[:T]
            return limit + 1
    return lz76_phrase_count_at_most(out[:iterations], limit)


@njit(cache=True, inline="always")
def _closed_move(first, segment, t, order, placed, stamp):
    """Move t of a closed segment shuffled from its start (Fisher-Yates forward: position t takes a
    uniform one of the entries still at t..s-1), fixed only when the walk reaches it. The unshuffled
    segment is m_0, 8-m_0, m_1, 8-m_1, ... (and a stay when s is odd); the draws after the stream
    state `first` are the ⌊s/2⌋ moves m_p, then the shuffle's draw for each position t < s - 1, each
    read where it lies. order[i] is the entry at position i once `placed[i]` is this draw's stamp,
    else entry i itself (no reset between draws)."""
    pairs = segment // 2
    entry = order[t] if placed[t] == stamp else t
    if t < segment - 1:
        _, j = advance_uniform_int(skipped(first, pairs + t), segment - t)
        j += t
        swapped = order[j] if placed[j] == stamp else j
        order[j] = entry
        placed[j] = stamp
        entry = swapped
    if entry == 2 * pairs:  # the odd segment's stay
        return 4
    _, move = advance_uniform_int(skipped(first, entry // 2), 9)
    return move if entry % 2 == 0 else 8 - move


DrawWorkspace = namedtuple("DrawWorkspace", ("moves", "seen", "neighbour", "order", "placed", "path", "draws"))


@njit(cache=True)
def draw_workspace(rows, cols, iterations):
    """`_draw_cyclic`'s buffers: a segment's moves (room for ⌊T/2⌋), a mark per cell plus the latest
    draw's mark (zeros at first), the torus as a table (neighbour[cell, a] is the cell king move a
    leads to, `torus`: a load per step instead of wrap-around branches), a lazily shuffled
    segment's entries with their marks (`_closed_move`), a played path's T cells (`_played_keeps_k`), and a
    closed segment's draws (room for ⌊T/2⌋)."""
    segment = max(1, iterations // 2)
    return DrawWorkspace(np.empty(segment, np.int64), np.zeros(rows * cols + 1, np.int64), king_moves(rows, cols),
                         np.empty(segment, np.int64), np.zeros(segment, np.int64), np.empty(iterations, np.int64),
                         np.empty(segment, np.int64))


@njit(cache=True)
def _draw_ping_pong(stream, rows, cols, limit, walk):
    """Reference generator (spec §2): a random walk of n + U{0..n-1} cells into `walk`; returns
    its K (measured on the base walk; limit + 1 above `limit`) and its length.
    `_play_back_and_forth` extends it."""
    side = max(rows, cols)
    length = side + uniform_int(stream, side)
    cell = uniform_int(stream, rows * cols)
    r, c = cell // cols, cell % cols
    walk[0] = cell
    for i in range(1, length):
        action = uniform_int(stream, 9)
        r = wrap(r + action // 3 - 1, rows)
        c = wrap(c + action % 3 - 1, cols)
        walk[i] = r * cols + c
    return lz76_phrase_count_at_most(walk[:length], limit), length


@njit(cache=True)
def _play_back_and_forth(walk, length, out):
    """The ping-pong trajectory: the walk forward, reversed, forward... to len(out) positions."""
    for t in range(out.shape[0]):
        phase = t % (2 * length)
        out[t] = walk[phase] if phase < length else walk[2 * length - 1 - phase]


@njit(cache=True, inline="always")
def _max_segment(iterations, k_max, cap_to_k):
    """The longest cyclic segment: ⌊T/2⌋ (paper 003 §4.2), or min(⌊T/2⌋, k_max) (`SEGMENT_CAPS`)."""
    return max(1, min(iterations // 2, k_max)) if cap_to_k else max(1, iterations // 2)


@njit(cache=True, nogil=True)
def _generate(kind, seeds, rows, cols, iterations, k_low, k_high, cap_to_k, lazy, max_tries, positions, k_raw,
              k_length):
    """Episode e: draws from the stream seeded by seeds[e] until K lies in [k_low[e], k_high[e]]."""
    walk = np.empty(2 * max(rows, cols), np.int64)
    out = np.empty(iterations + 1, np.int64)
    work = draw_workspace(rows, cols, iterations)
    stream = np.empty(1, np.uint64)
    for e in range(seeds.shape[0]):
        stream[0] = seeds[e]
        k_raw[e] = -1
        max_segment = _max_segment(iterations, k_high[e], cap_to_k)
        for _ in range(max_tries):
            if kind == 0:
                k = _draw_cyclic(stream, rows, cols, iterations, max_segment, k_high[e], lazy, out, work)
                length = iterations
            else:  # K is the base walk's: play it back only once it is accepted
                k, length = _draw_ping_pong(stream, rows, cols, k_high[e], walk)
                if k_low[e] <= k <= k_high[e]:
                    _play_back_and_forth(walk, length, out)
            if k_low[e] <= k <= k_high[e]:
                copy_into(positions[e], out)
                k_raw[e] = k
                k_length[e] = length
                break


@njit(cache=True)
def _sample_k(kind, seeds, rows, cols, iterations, k_max, cap_to_k, lazy, k_out):
    """K of one draw per seed, unconditioned (limit k_max), for `sample_k`."""
    walk = np.empty(2 * max(rows, cols), np.int64)
    out = np.empty(iterations + 1, np.int64)
    work = draw_workspace(rows, cols, iterations)
    stream = np.empty(1, np.uint64)
    max_segment = _max_segment(iterations, k_max, cap_to_k)
    for e in range(seeds.shape[0]):
        stream[0] = seeds[e]
        if kind == 0:
            k_out[e] = _draw_cyclic(stream, rows, cols, iterations, max_segment, k_max, lazy, out, work)
        else:
            k_out[e], _ = _draw_ping_pong(stream, rows, cols, k_max, walk)


def _per_episode(bound, episodes: int) -> np.ndarray:
    """A K bound as an (episodes,) int64 array, clipped to int32 (an open bound is int32's max)."""
    return np.broadcast_to(np.minimum(np.asarray(bound, np.int64), np.iinfo(np.int32).max), (episodes,)).copy()


def _run(kind: int, seeds, rows, cols, iterations, k_min, k_max, cap_to_k: bool = True,
         lazy: bool = False) -> PatternBatch:
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    k_low, k_high = _per_episode(k_min, len(seeds)), _per_episode(k_max, len(seeds))
    positions = np.empty((len(seeds), iterations + 1), np.int32)
    k_raw = np.empty(len(seeds), np.int32)
    k_length = np.empty(len(seeds), np.int32)
    _generate(kind, seeds, rows, cols, iterations, k_low, k_high, cap_to_k, lazy, MAX_TRIES, positions, k_raw,
              k_length)
    if (k_raw < 0).any():
        e = int(np.argmax(k_raw < 0))
        raise unreachable_k_error(k_low[e], k_high[e], rows, cols, iterations)
    # The ping-pong base walk varies in length; report the largest for information only.
    return PatternBatch(positions, k_raw, _k_normalised(k_raw, k_length), int(k_length.max(initial=0)))


def _k_normalised(k_raw: np.ndarray, k_length: np.ndarray) -> np.ndarray:
    """c·log2(L)/L (Chmait et al. 2016, §4.2; Kaspar & Schuster 1987), 0 for L <= 1."""
    safe = np.maximum(k_length, 2)
    return np.where(k_length > 1, k_raw * np.log2(safe) / safe, 0.0)


def _sampled_k(kind: int, seeds, rows, cols, iterations, k_max, cap_to_k: bool, lazy: bool = False) -> np.ndarray:
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    k_out = np.empty(len(seeds), np.int64)
    _sample_k(kind, seeds, rows, cols, iterations, min(int(k_max), np.iinfo(np.int32).max - 1), cap_to_k, lazy,
              k_out)
    return k_out


@dataclass(frozen=True)
class CyclicPatternGenerator:
    """The paper's generator (paper 003 §4.2): a segment of moves repeated cyclically, its length
    uniform on 1..⌊T/2⌋, or on 1..min(⌊T/2⌋, k_max) with segment_cap "k_max" (`SEGMENT_CAPS`).

    A closed segment is shuffled uniformly (Fisher-Yates) either way: by default the whole segment,
    from its end, before the walk starts; with `lazy_shuffle` a segment of more than
    LAZY_SHUFFLE_ABOVE moves from its start, each move fixed as the walk reaches it, so a draw
    rejected after a few moves costs those moves, not the whole segment (up to ⌊T/2⌋ moves: the
    anytime test's long episodes). Every order is equally likely both ways, so the patterns have the
    same distribution (`pattern_probability`'s formula); with T <= 2·LAZY_SHUFFLE_ABOVE + 1 nothing
    changes, above it a seed's pattern differs."""

    name: ClassVar[str] = "cyclic"
    k_on_positions: ClassVar[bool] = True
    segment_cap: str = "k_max"
    lazy_shuffle: bool = False

    def generate(self, seeds, rows, cols, iterations, k_min, k_max) -> PatternBatch:
        return _run(0, seeds, rows, cols, iterations, k_min, k_max, self.segment_cap == "k_max", self.lazy_shuffle)

    def sample_k(self, seeds, rows, cols, iterations, k_max) -> np.ndarray:
        return _sampled_k(0, seeds, rows, cols, iterations, k_max, self.segment_cap == "k_max", self.lazy_shuffle)


@dataclass(frozen=True)
class PingPongPatternGenerator:
    """The reference implementation's random walk played back and forth (spec §2)."""

    name: ClassVar[str] = "ping_pong"
    k_on_positions: ClassVar[bool] = False  # K is the base walk's (spec §2)

    def generate(self, seeds, rows, cols, iterations, k_min, k_max) -> PatternBatch:
        return _run(1, seeds, rows, cols, iterations, k_min, k_max)

    def sample_k(self, seeds, rows, cols, iterations, k_max) -> np.ndarray:
        return _sampled_k(1, seeds, rows, cols, iterations, k_max, True)


PATTERN_GENERATORS: dict[str, type] = {g.name: g for g in (CyclicPatternGenerator, PingPongPatternGenerator)}


@njit(cache=True, nogil=True)
def derived_seeds(seeds, stream_id, index):
    """(episodes,) uint64: a splitmix64-derived seed per episode seed, one per (stream_id, index),
    so that each use of an episode's environment seed draws from its own stream."""
    out = np.empty(seeds.shape[0], np.uint64)
    for e in range(seeds.shape[0]):
        out[e] = derive_stream_seed(seeds[e], stream_id, index)
    return out


@njit(cache=True, nogil=True)
def _uniform_targets(streams, k_low, k_high, out):
    for e in range(streams.shape[0]):
        out[e] = k_low[e] + uniform_int(streams[e:e + 1], k_high[e] - k_low[e] + 1)


def stratified_targets(seeds: np.ndarray, k_min, k_max) -> np.ndarray:
    """(episodes,) int64: each episode's K, uniform on [k_min, k_max], from a stream derived from
    its environment seed (so it does not disturb the pattern's own draws)."""
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    k_low, k_high = _per_episode(k_min, len(seeds)), _per_episode(k_max, len(seeds))
    if (k_high >= np.iinfo(np.int32).max).any() or (k_low > k_high).any():
        raise ValueError(f"stratified K needs a closed range k_min <= k_max (got {k_min}:{k_max})")
    targets = np.empty(len(seeds), np.int64)
    _uniform_targets(derived_seeds(seeds, _TARGET_STREAM, 0), k_low, k_high, targets)
    return targets


@dataclass(frozen=True)
class StratifiedComplexity:
    """Stratified K (issue 12 point 3): each episode first draws its K uniformly from [k_min, k_max],
    then `inner` draws until its pattern has exactly that K. Every grid and T then gets the same K
    distribution (K and H are no longer collinear); given K, a pattern is distributed as `inner`'s
    draws of that K."""

    inner: PatternGenerator

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def k_on_positions(self) -> bool:
        return self.inner.k_on_positions

    def generate(self, seeds, rows, cols, iterations, k_min, k_max) -> PatternBatch:
        targets = stratified_targets(seeds, k_min, k_max)
        return self.inner.generate(seeds, rows, cols, iterations, targets, targets)

    def sample_k(self, seeds, rows, cols, iterations, k_max) -> np.ndarray:
        return self.inner.sample_k(seeds, rows, cols, iterations, k_max)


@functools.lru_cache(maxsize=256)
def reachable_k(generator: PatternGenerator, rows: int, cols: int, iterations: int,
                probes: int = 2000, k_max: int = np.iinfo(np.int32).max - 1) -> np.ndarray:
    """Sorted distinct K <= k_max among `probes` fixed-seed draws of the generator as it draws
    under this k_max (its segment cap may depend on it): used to reject K ranges a grid and T
    cannot deliver before any work starts. A K seen less than about once in `probes` draws is
    missed: rejection sampling at that K would cost thousands of draws an episode. Cached:
    configurations are validated often and the probe depends on nothing else."""
    seeds = np.random.SeedSequence(0xC011EC7).generate_state(probes, dtype=np.uint64)
    reachable = np.unique(generator.sample_k(seeds, rows, cols, iterations, k_max))
    reachable = reachable[reachable <= k_max]
    reachable.flags.writeable = False  # shared by every caller through the cache
    return reachable


# ---- ⊖ pairings (spec §2 "Balance"; paper 000 Definition 13) ----

def index_shift_evil(good: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Reference pairing: ⊖ = ⊕ shifted by ⌊N/3⌋+1 cells in row-major order, at every step.

    Equal K by construction and antisymmetric rewards, so a random agent scores 0 in expectation.
    """
    n_cells = rows * cols
    return ((good.astype(np.int64) + n_cells // 3 + 1) % n_cells).astype(np.int32)


@njit(cache=True, nogil=True)
def _resolve_collisions(good, evil, rows, cols, streams):
    """Paper 003 §4.1.1: ⊕ and ⊖ never share a cell; if both would enter one, one of them,
    chosen at random, keeps its old cell (a still object keeps its cell and the mover waits).
    Planned trajectories are replayed as moves, so an object that waited continues its pattern
    from where it stands. Arrays (episodes, T+1) are rewritten in place.

    Until the plans first put both objects on one cell nothing waits and the paths are the plans, so the
    replay starts at that step (`_first_meeting`); each planned cell's row and column are divided out once."""
    episodes, length = good.shape
    for e in range(episodes):
        first = _first_meeting(good[e], evil[e])
        if first == length:  # the plans never meet: nothing changes
            continue
        plan_gr, plan_gc = good[e, first - 1] // cols, good[e, first - 1] % cols
        plan_er, plan_ec = evil[e, first - 1] // cols, evil[e, first - 1] % cols
        gr, gc, er, ec = plan_gr, plan_gc, plan_er, plan_ec
        for t in range(first, length):
            next_gr, next_gc = good[e, t] // cols, good[e, t] % cols
            next_er, next_ec = evil[e, t] // cols, evil[e, t] % cols
            dgr, dgc = _axis_delta(plan_gr, next_gr, rows), _axis_delta(plan_gc, next_gc, cols)
            der, dec = _axis_delta(plan_er, next_er, rows), _axis_delta(plan_ec, next_ec, cols)
            plan_gr, plan_gc, plan_er, plan_ec = next_gr, next_gc, next_er, next_ec
            ngr, ngc = wrap(gr + dgr, rows), wrap(gc + dgc, cols)
            ner, nec = wrap(er + der, rows), wrap(ec + dec, cols)
            if ngr == ner and ngc == nec:
                if dgr == 0 and dgc == 0:
                    ner, nec = er, ec
                elif der == 0 and dec == 0:
                    ngr, ngc = gr, gc
                elif uniform_int(streams[e:e + 1], 2) == 0:
                    ngr, ngc = gr, gc
                else:
                    ner, nec = er, ec
            gr, gc, er, ec = ngr, ngc, ner, nec
            good[e, t] = gr * cols + gc
            evil[e, t] = er * cols + ec


@njit(cache=True, inline="always")
def _first_meeting(good, evil):
    """The first step t >= 1 at which the planned cells coincide, len(good) if none."""
    for t in range(1, good.shape[0]):
        if good[t] == evil[t]:
            return t
    return good.shape[0]


@njit(cache=True, inline="always")
def _axis_delta(a, b, size):
    """The king move's component (-1, 0 or 1) from row (or column) a to the neighbouring b on a ring of `size`:
    (b - a) mod size, size - 1 read as -1, without a division (b - a lies in (-size, size))."""
    d = b - a
    if d < 0:
        d += size
    return -1 if d == size - 1 else d


def independent_evil(generator: PatternGenerator, good: PatternBatch, seeds: np.ndarray,
                     rows: int, cols: int, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """Second mode (paper 003 §4.2): ⊖ gets its own pattern of exactly ⊕'s K, then both play out
    under the collision rule. Returns (good, evil) trajectories, shape (episodes, T+1)."""
    evil = np.empty_like(good.positions)
    stream_seeds = np.array(seeds, dtype=np.uint64)
    for e, k in enumerate(good.k_raw):
        attempt_seed = stream_seeds[e:e + 1]
        while True:  # a different start cell is required; the seed walks on deterministically
            candidate = generator.generate(attempt_seed, rows, cols, iterations, int(k), int(k))
            if candidate.positions[0, 0] != good.positions[e, 0]:
                break
            attempt_seed = attempt_seed + np.uint64(1)
        evil[e] = candidate.positions[0]
    resolved_good = good.positions.copy()
    collision_streams = stream_seeds ^ np.uint64(0x5DEECE66D)
    _resolve_collisions(resolved_good, evil, rows, cols, collision_streams)
    return resolved_good, evil


def independent_pair_on_played_paths(generator: PatternGenerator, good: PatternBatch, seeds: np.ndarray,
                                     rows: int, cols: int, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """An independent ⊖ (paper 003 §4.2, second mode) with K measured on the paths played (issue
    12 point 2): the target K of episode e is good.k_raw[e]; ⊖ is drawn at exactly that K from
    another start cell, both play out under the collision rule (§4.1.1), and the pair is kept only
    when the LZ76 count of each played path (its T positions) is still the target. Otherwise both
    are redrawn at the target from streams derived from seeds[e] (round by round), so the K
    recorded is the K played, ⊕ and ⊖ stay equally complex (and exchangeable), and the K
    distribution is the one `good` was drawn from. Needs a generator whose K is measured on its
    positions. Returns (good, evil) trajectories, shape (episodes, T+1); ValueError after
    MAX_PAIR_ROUNDS rounds."""
    good_out, evil_out, pending = _pair_rounds(generator, good.positions, good.k_raw.astype(np.int64), seeds,
                                               rows, cols, iterations, MAX_PAIR_ROUNDS)
    if len(pending):
        raise no_pair_error(good.k_raw[pending[0]], rows, cols, iterations)
    return good_out, evil_out


def _pair_rounds(generator: PatternGenerator, first_good: np.ndarray, target: np.ndarray, seeds: np.ndarray,
                 rows: int, cols: int, iterations: int, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rounds of `independent_pair_on_played_paths`: (good, evil, episodes still without a pair)."""
    if not generator.k_on_positions:
        raise ValueError(f"the {generator.name} generator measures K off its played positions; "
                         "K on played paths needs a generator that measures it on them (cyclic)")
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    good_out, evil_out = np.empty_like(first_good), np.empty_like(first_good)
    cyclic = generator.inner if isinstance(generator, StratifiedComplexity) else generator
    if isinstance(cyclic, CyclicPatternGenerator):  # the same rounds, compiled
        unpaired = np.empty(len(target), np.int8)
        _cyclic_pair_rounds(seeds, np.ascontiguousarray(first_good), np.ascontiguousarray(target, np.int64), rows,
                            cols, iterations, cyclic.segment_cap == "k_max", cyclic.lazy_shuffle, MAX_TRIES, rounds,
                            good_out, evil_out, unpaired)
        if (unpaired == _MISSED_K).any():
            e = int(np.argmax(unpaired == _MISSED_K))
            raise unreachable_k_error(target[e], target[e], rows, cols, iterations)
        return good_out, evil_out, np.flatnonzero(unpaired)
    pending = np.arange(len(target))
    for attempt in range(rounds):
        if len(pending) == 0:
            break
        wanted = target[pending]
        candidate_good = first_good[pending].copy() if attempt == 0 else generator.generate(
            derived_seeds(seeds[pending], _GOOD_STREAM, attempt), rows, cols, iterations, wanted, wanted).positions
        candidate_evil = generator.generate(derived_seeds(seeds[pending], _EVIL_STREAM, attempt), rows, cols,
                                            iterations, wanted, wanted).positions
        apart = candidate_good[:, 0] != candidate_evil[:, 0]  # the objects never share a cell (§4.1.1)
        _resolve_collisions(candidate_good, candidate_evil, rows, cols,
                            derived_seeds(seeds[pending], _COLLISION_STREAM, attempt))
        kept = apart & (lz76_rows(candidate_good, iterations) == wanted) & \
            (lz76_rows(candidate_evil, iterations) == wanted)
        good_out[pending[kept]], evil_out[pending[kept]] = candidate_good[kept], candidate_evil[kept]
        pending = pending[~kept]
    return good_out, evil_out, pending


_PAIRED, _NO_PAIR, _MISSED_K = 0, 1, 2  # how `_cyclic_pair_rounds` leaves an episode


@njit(cache=True)
def _cyclic_at_k(stream_seed, rows, cols, iterations, max_segment, k, lazy, max_tries, out, work, stream):
    """Cyclic draws from the stream seeded by stream_seed until one has K = k, into out (as `_generate`
    draws it); False when max_tries draws miss."""
    stream[0] = stream_seed
    for _ in range(max_tries):
        if _draw_cyclic(stream, rows, cols, iterations, max_segment, k, lazy, out, work) == k:
            return True
    return False


@njit(cache=True, nogil=True)
def _cyclic_pair_rounds(seeds, first_good, target, rows, cols, iterations, cap_to_k, lazy, max_tries, rounds,
                        good_out, evil_out, unpaired):
    """`_pair_rounds` for the cyclic generator, episode by episode: each (episode, round) draws from the
    very streams the batched rounds use, so the pairs are the same, without a pass over the batch per
    round. unpaired[e]: _PAIRED, _NO_PAIR after `rounds` rounds, or _MISSED_K (a draw missed its K)."""
    good = np.empty((1, iterations + 1), first_good.dtype)
    evil = np.empty((1, iterations + 1), first_good.dtype)
    drawn = np.empty((2, iterations + 1), first_good.dtype)
    out = np.empty(iterations + 1, np.int64)
    work = draw_workspace(rows, cols, iterations)
    stream = np.empty(1, np.uint64)
    collision = np.empty(1, np.uint64)
    for e in range(seeds.shape[0]):
        k = target[e]
        max_segment = _max_segment(iterations, k, cap_to_k)
        unpaired[e] = _NO_PAIR
        for attempt in range(rounds):
            if attempt == 0:
                copy_into(good[0], first_good[e])
            elif _cyclic_at_k(derive_stream_seed(seeds[e], _GOOD_STREAM, attempt), rows, cols, iterations,
                              max_segment, k, lazy, max_tries, out, work, stream):
                copy_into(good[0], out)
            else:
                unpaired[e] = _MISSED_K
                break
            if not _cyclic_at_k(derive_stream_seed(seeds[e], _EVIL_STREAM, attempt), rows, cols, iterations,
                                max_segment, k, lazy, max_tries, out, work, stream):
                unpaired[e] = _MISSED_K
                break
            copy_into(evil[0], out)
            if _pair_kept(good, evil, k, seeds[e], attempt, rows, cols, iterations, collision, drawn, work,
                          good_out[e], evil_out[e]):
                unpaired[e] = _PAIRED
                break


@njit(cache=True, inline="always")
def _pair_kept(good, evil, k, pair_seed, attempt, rows, cols, iterations, collision, drawn, work, good_out, evil_out):
    """One ⊕/⊖ round of `independent_pair_on_played_paths`, for a pair (good, evil: (1, T+1) each) both drawn at
    exactly K = k: False when they start on one cell, else both play out under the collision rule (collisions
    from the stream derived from `pair_seed` for this round) and, when both played paths keep K = k, True with
    the pair copied to good_out and evil_out. drawn: (2, T+1) room for the pair as drawn."""
    if good[0, 0] == evil[0, 0]:  # the objects never share a cell (§4.1.1)
        return False
    collision[0] = derive_stream_seed(pair_seed, _COLLISION_STREAM, attempt)
    copy_into(drawn[0], good[0])
    copy_into(drawn[1], evil[0])
    _resolve_collisions(good, evil, rows, cols, collision)
    if not (_played_keeps_k(good[0], drawn[0], k, iterations, work)
            and _played_keeps_k(evil[0], drawn[1], k, iterations, work)):
        return False
    copy_into(good_out, good[0])
    copy_into(evil_out, evil[0])
    return True


# ---- Pooled draws (issue 25): the draws of a block of episodes shared among its K targets ----
#
# Stratified K (`StratifiedComplexity`) waits, per episode, for a draw of exactly its target K: at 10x10, T = 200
# each K has probability ~0.8% per draw, so ~125 draws per pattern, and every draw of another K is thrown away.
# A pool draws for a block of episodes from one stream and hands each drawn pattern to an episode of the block
# that wants its K. Given its K a pattern is still a draw of the generator conditioned on that K: the patterns
# of one K form an i.i.d. sequence of such draws (whether a draw is kept depends only on the draws before it
# and on its K, never on its moves), and each episode takes from that sequence in order, a stopping time's
# worth at a time (the ⊕/⊖ rounds), so what it gets is distributed as if it had drawn alone. Only which
# stream a pattern came from changes. Needs a base draw whose law does not depend on the target (segment_cap
# "half_T": under "k_max" the segment length is capped by each episode's own K).


@njit(cache=True, inline="always")
def _pool_take(slot, k, targets_in_pool, want, queue, queued, head, stream, rows, cols, iterations, max_segment,
               lazy, max_tries, out, work, into):
    """The next pattern of K = k (pool slot `slot`) into `into` (T+1,): the oldest waiting one, else draws from
    the pool's stream until one has K = k, keeping each draw of another wanted K (`want` > 0) while its queue
    has room. False when max_tries draws miss."""
    if queued[slot] > 0:
        copy_into(into, queue[slot, head[slot]])
        head[slot] = head[slot] + 1 if head[slot] + 1 < queue.shape[1] else 0
        queued[slot] -= 1
        return True
    limit = k  # no K above the largest one still wanted and with room is kept: K is measured up to it
    for other in range(targets_in_pool.shape[0]):
        if want[other] > 0 and queued[other] < queue.shape[1]:
            limit = max(limit, targets_in_pool[other])
    for _ in range(max_tries):
        drawn = _draw_cyclic(stream, rows, cols, iterations, max_segment, limit, lazy, out, work)
        if drawn == k:
            copy_into(into, out)
            return True
        other = np.searchsorted(targets_in_pool, drawn)
        if other < targets_in_pool.shape[0] and targets_in_pool[other] == drawn and want[other] > 0 \
                and queued[other] < queue.shape[1]:
            tail = head[other] + queued[other]
            copy_into(queue[other, tail - queue.shape[1] if tail >= queue.shape[1] else tail], out)
            queued[other] += 1
    return False


@njit(cache=True, inline="always")
def _played_keeps_k(played, drawn, k, iterations, work):
    """Whether a played path (T+1,) still has K = k on its T positions: at once when collisions left it as
    drawn (drawn at exactly K = k), else by LZ76 of a copy in work.path, counted up to k + 1."""
    for t in range(iterations):
        if played[t] != drawn[t]:
            copy_into(work.path, played[:iterations])
            return lz76_phrase_count_at_most(work.path, k) == k
    return True


@njit(cache=True, nogil=True)
def _pooled_blocks(pool_seeds, pair_seeds, targets, block, rows, cols, iterations, lazy, pairs, max_tries, rounds,
                   good_out, evil_out, status):
    """Blocks of `block` consecutive episodes, block b drawing from the stream seeded by pool_seeds[b]; its
    episodes in order take their patterns at their targets (`_pool_take`): ⊕ alone, or with `pairs` the rounds of
    `_cyclic_pair_rounds` (⊕ and ⊖ taken in turn, collisions from the stream of pair_seeds[e] per round, kept
    when both played paths keep K). status[e]: _PAIRED, _NO_PAIR after `rounds` rounds, or _MISSED_K."""
    max_segment = _max_segment(iterations, 0, False)
    out = np.empty(iterations + 1, np.int64)
    good = np.empty((1, iterations + 1), good_out.dtype)
    evil = np.empty((1, iterations + 1), good_out.dtype)
    drawn = np.empty((2, iterations + 1), good_out.dtype)
    work = draw_workspace(rows, cols, iterations)
    stream = np.empty(1, np.uint64)
    collision = np.empty(1, np.uint64)
    for b in range(pool_seeds.shape[0]):
        first, stop = b * block, min((b + 1) * block, targets.shape[0])
        targets_in_pool = np.unique(targets[first:stop])
        want = np.zeros(targets_in_pool.shape[0], np.int64)  # episodes still to serve, per K
        for e in range(first, stop):
            want[np.searchsorted(targets_in_pool, targets[e])] += 1
        queue = np.empty((targets_in_pool.shape[0], POOL_QUEUE, iterations + 1), good_out.dtype)
        queued = np.zeros(targets_in_pool.shape[0], np.int64)
        head = np.zeros(targets_in_pool.shape[0], np.int64)
        stream[0] = pool_seeds[b]
        for e in range(first, stop):
            k = targets[e]
            slot = np.searchsorted(targets_in_pool, k)
            status[e] = _NO_PAIR
            for attempt in range(rounds if pairs else 1):
                if not _pool_take(slot, k, targets_in_pool, want, queue, queued, head, stream, rows, cols, iterations,
                                  max_segment, lazy, max_tries, out, work, good[0]):
                    status[e] = _MISSED_K
                    break
                if not pairs:
                    copy_into(good_out[e], good[0])
                    status[e] = _PAIRED
                    break
                if not _pool_take(slot, k, targets_in_pool, want, queue, queued, head, stream, rows, cols, iterations,
                                  max_segment, lazy, max_tries, out, work, evil[0]):
                    status[e] = _MISSED_K
                    break
                if _pair_kept(good, evil, k, pair_seeds[e], attempt, rows, cols, iterations, collision, drawn, work,
                              good_out[e], evil_out[e]):
                    status[e] = _PAIRED
                    break
            want[slot] -= 1
            if want[slot] == 0:  # patterns left waiting for this K serve nobody: drop them
                queued[slot] = 0


RECENT_BLOCKS = 8  # pooled blocks kept (`pooled_patterns`): a caller asking for one episode at a time pays once


def pooled_patterns(generator: "StratifiedComplexity", seeds: np.ndarray, block: int, rows: int, cols: int,
                    iterations: int, k_min, k_max, pair_seeds: np.ndarray | None = None,
                    keep: np.ndarray | None = None) -> tuple[PatternBatch, np.ndarray | None]:
    """Stratified patterns of whole blocks of `block` episodes (seeds: (episodes,) environment seeds, episodes a
    multiple of `block`, block-aligned), each block's draws pooled (see above): each episode's K target as
    `stratified_targets` draws it, then ⊕ at that K, or with `pair_seeds` an independent ⊕/⊖ pair whose played
    paths both keep it (`independent_pair_on_played_paths`'s rounds). Returns (⊕ batch, ⊖ positions or None),
    of the episodes' rows `keep` (default: all).
    The last RECENT_BLOCKS blocks are kept, so that a caller generating one episode at a time (an adapter's
    reset) draws each block once."""
    cyclic = generator.inner if isinstance(generator, StratifiedComplexity) else None
    if not (isinstance(cyclic, CyclicPatternGenerator) and cyclic.segment_cap == "half_T"):
        raise ValueError("pooled draws serve stratified K from the cyclic generator with segment_cap half_T (a base "
                         f"draw whose law does not depend on the target K), not {generator}")
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    if len(seeds) % block:
        raise ValueError(f"pooled draws take whole blocks of {block} episodes (got {len(seeds)})")
    pairs = pair_seeds is not None
    pair_seeds = np.ascontiguousarray(pair_seeds if pairs else seeds, dtype=np.uint64)
    setting = (generator, block, rows, cols, iterations, int(k_min), int(k_max), pairs)
    keys = [(setting, seeds[first:first + block].tobytes(), pair_seeds[first:first + block].tobytes())
            for first in range(0, len(seeds), block)]
    with _RECENT_LOCK:
        known = {key: _RECENT[key] for key in keys if key in _RECENT}
    missing = np.array([b for b, key in enumerate(keys) if key not in known], np.int64)
    if len(missing):
        rows_missing = (missing[:, None] * block + np.arange(block)).ravel()
        drawn = _pooled_block_patterns(cyclic, seeds[rows_missing], pair_seeds[rows_missing], block, rows, cols,
                                       iterations, k_min, k_max, pairs)
        with _RECENT_LOCK:
            for position, b in enumerate(missing):
                part = slice(position * block, (position + 1) * block)
                known[keys[b]] = _RECENT[keys[b]] = tuple(array[part] for array in drawn)
                _RECENT.move_to_end(keys[b])
            while len(_RECENT) > RECENT_BLOCKS:
                _RECENT.popitem(last=False)
    good, evil, k_raw = (np.concatenate([known[key][i] for key in keys]) for i in range(3))
    if keep is not None:
        good, evil, k_raw = good[keep], evil[keep], k_raw[keep]
    normalised = _k_normalised(k_raw, np.full(len(k_raw), iterations, np.int32))
    return PatternBatch(good, k_raw, normalised, iterations), (evil if pairs else None)


_RECENT: OrderedDict = OrderedDict()  # (setting, block seeds) -> (good, evil, k_raw)
_RECENT_LOCK = threading.Lock()


def forget_recent_blocks() -> None:
    """Empty the blocks `pooled_patterns` keeps, so that a timing of generation draws every block (a
    benchmark that generates the batches an evaluation just drew would otherwise time a lookup)."""
    with _RECENT_LOCK:
        _RECENT.clear()


def _pooled_block_patterns(cyclic: CyclicPatternGenerator, seeds: np.ndarray, pair_seeds: np.ndarray, block: int,
                           rows: int, cols: int, iterations: int, k_min, k_max, pairs: bool
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`pooled_patterns`' draws for whole blocks: (⊕ (episodes, T+1), ⊖ (episodes, T+1) or (episodes, 0) without
    pairs, K (episodes,) int32)."""
    targets = stratified_targets(seeds, k_min, k_max)
    pool_seeds = derived_seeds(np.ascontiguousarray(seeds[::block]), _POOL_STREAM, 0)
    good = np.empty((len(seeds), iterations + 1), np.int32)
    evil = np.empty((len(seeds), iterations + 1 if pairs else 0), np.int32)
    status = np.empty(len(seeds), np.int8)
    _pooled_blocks(pool_seeds, pair_seeds, targets, block, rows, cols, iterations, cyclic.lazy_shuffle, pairs,
                   MAX_TRIES, MAX_PAIR_ROUNDS, good, evil, status)
    if (status == _MISSED_K).any():
        e = int(np.argmax(status == _MISSED_K))
        raise unreachable_k_error(targets[e], targets[e], rows, cols, iterations)
    if (status == _NO_PAIR).any():
        raise no_pair_error(targets[int(np.argmax(status == _NO_PAIR))], rows, cols, iterations)
    return good, evil, targets.astype(np.int32)


@functools.lru_cache(maxsize=256)
def unpairable_k(generator: PatternGenerator, rows: int, cols: int, iterations: int,
                 k_values: tuple[int, ...]) -> tuple[int, ...]:
    """The K values for which `independent_pair_on_played_paths` found no pair in PAIR_PROBE_ROUNDS
    rounds for one of PAIR_PROBES fixed-seed probe episodes: on small grids collisions change
    the K of nearly every high-K pair (3x3, T = 100: K >= 18). A K whose pairs survive with
    probability p is refused with probability ~2(1-p)^400: 4% at p = 1%, 6e-4 at 2%; a K that
    passes fails MAX_PAIR_ROUNDS with probability (1-p)^10000 per episode. Cached, as `reachable_k`."""
    target = np.repeat(np.array(k_values, np.int64), PAIR_PROBES)
    seeds = np.random.SeedSequence(0x9A1E5).generate_state(len(target), dtype=np.uint64)
    first = generator.generate(seeds, rows, cols, iterations, target, target).positions
    _, _, pending = _pair_rounds(generator, first, target, seeds, rows, cols, iterations, PAIR_PROBE_ROUNDS)
    return tuple(sorted({int(k) for k in target[pending]}))
