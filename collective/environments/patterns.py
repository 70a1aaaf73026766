"""Movement patterns of the special objects and their complexity K (spec §2, paper 003 §4.2).

A pattern generator turns per-episode seeds into ⊕ trajectories, shape (episodes, T+1): cell
indices at iterations 0..T (position 0 is the start, T+1 positions because each of the T
iterations moves the objects once). Generators are injectable objects, registered by name, so
landscapes and the anytime test can reuse them. A ⊖ pairing then derives Evil's trajectory.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
from numba import njit

from collective.environments.complexity import lz76_normalised, lz76_phrase_count
from collective.simulation.random_streams import uniform_int
from collective.environments.torus import wrap

MAX_TRIES = 200_000  # rejection-sampling budget per episode before a K range counts as unreachable


@dataclass(frozen=True)
class PatternBatch:
    """⊕ trajectories and their LZ76 complexity."""

    positions: np.ndarray  # (episodes, T+1) int32 cell indices
    k_raw: np.ndarray  # (episodes,) int32 phrase count c
    k_normalised: np.ndarray  # (episodes,) float64 c·log2(L)/L
    k_length: int  # L, the length of the sequence K was measured on


class PatternGenerator(Protocol):
    name: ClassVar[str]

    def generate(self, seeds: np.ndarray, rows: int, cols: int, iterations: int,
                 k_min: int, k_max: int) -> PatternBatch:
        """One pattern per seed with k_min <= K <= k_max, or ValueError when a K is unreachable."""
        ...


@njit(cache=True)
def _draw_cyclic(stream, rows, cols, iterations, max_segment, out):
    """Paper 003 §4.2: a recurrent segment of 1..⌊T/2⌋ moves repeated until T; returns K on out[:T].

    Half the segments are closed loops (each move paired with its opposite, shuffled), which
    repeat with period = segment length; the rest drift. Without the closed half, small K values
    are almost never drawn, since a random segment seldom returns to its start.
    """
    segment = 1 + uniform_int(stream, max_segment)
    moves = np.empty(segment, np.int64)
    if uniform_int(stream, 2) == 0:
        for i in range(segment):
            moves[i] = uniform_int(stream, 9)
    else:
        for i in range(0, segment - 1, 2):
            moves[i] = uniform_int(stream, 9)
            moves[i + 1] = 8 - moves[i]  # the opposite king move
        if segment % 2 == 1:
            moves[segment - 1] = 4  # stay
        for i in range(segment - 1, 0, -1):  # Fisher-Yates shuffle
            j = uniform_int(stream, i + 1)
            moves[i], moves[j] = moves[j], moves[i]
    cell = uniform_int(stream, rows * cols)
    r, c = cell // cols, cell % cols
    out[0] = cell
    for t in range(iterations):
        action = moves[t % segment]
        r = wrap(r + action // 3 - 1, rows)
        c = wrap(c + action % 3 - 1, cols)
        out[t + 1] = r * cols + c
    return lz76_phrase_count(out[:iterations])


@njit(cache=True)
def _draw_ping_pong(stream, rows, cols, walk):
    """Reference generator (spec §2): a random walk of n + U{0..n-1} cells into `walk`; returns
    its K (measured on the base walk) and its length. `_play_back_and_forth` extends it."""
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
    return lz76_phrase_count(walk[:length]), length


@njit(cache=True)
def _play_back_and_forth(walk, length, out):
    """The ping-pong trajectory: the walk forward, reversed, forward... to len(out) positions."""
    for t in range(out.shape[0]):
        phase = t % (2 * length)
        out[t] = walk[phase] if phase < length else walk[2 * length - 1 - phase]


@njit(cache=True)
def _generate(kind, seeds, rows, cols, iterations, k_min, k_max, max_tries, positions, k_raw, k_length):
    walk = np.empty(2 * max(rows, cols), np.int64)
    out = np.empty(iterations + 1, np.int64)
    stream = np.empty(1, np.uint64)
    # A segment of s moves gives K >= 2 only rarely below s, so longer segments are not drawn.
    max_segment = max(1, min(iterations // 2, k_max))
    for e in range(seeds.shape[0]):
        stream[0] = seeds[e]
        k_raw[e] = -1
        for _ in range(max_tries):
            if kind == 0:
                k = _draw_cyclic(stream, rows, cols, iterations, max_segment, out)
                length = iterations
            else:  # K is the base walk's: play it back only once it is accepted
                k, length = _draw_ping_pong(stream, rows, cols, walk)
                if k_min <= k <= k_max:
                    _play_back_and_forth(walk, length, out)
            if k_min <= k <= k_max:
                positions[e, :] = out
                k_raw[e] = k
                k_length[e] = length
                break


def _run(kind: int, seeds, rows, cols, iterations, k_min, k_max) -> PatternBatch:
    seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
    positions = np.empty((len(seeds), iterations + 1), np.int32)
    k_raw = np.empty(len(seeds), np.int32)
    k_length = np.empty(len(seeds), np.int32)
    _generate(kind, seeds, rows, cols, iterations, k_min, k_max, MAX_TRIES, positions, k_raw, k_length)
    if (k_raw < 0).any():
        raise ValueError(f"no pattern with K in [{k_min}, {k_max}] found in {MAX_TRIES} tries "
                         f"on a {rows}x{cols} grid with {iterations} iterations")
    normalised = np.array([lz76_normalised(int(c), int(n)) for c, n in zip(k_raw, k_length)])
    # The ping-pong base walk varies in length; report the largest for information only.
    return PatternBatch(positions, k_raw, normalised, int(k_length.max(initial=0)))


@dataclass(frozen=True)
class CyclicPatternGenerator:
    """The paper's generator (paper 003 §4.2): a segment of 1..⌊T/2⌋ moves repeated cyclically."""

    name: ClassVar[str] = "cyclic"

    def generate(self, seeds, rows, cols, iterations, k_min, k_max) -> PatternBatch:
        return _run(0, seeds, rows, cols, iterations, k_min, k_max)


@dataclass(frozen=True)
class PingPongPatternGenerator:
    """The reference implementation's random walk played back and forth (spec §2)."""

    name: ClassVar[str] = "ping_pong"

    def generate(self, seeds, rows, cols, iterations, k_min, k_max) -> PatternBatch:
        return _run(1, seeds, rows, cols, iterations, k_min, k_max)


PATTERN_GENERATORS: dict[str, type] = {g.name: g for g in (CyclicPatternGenerator, PingPongPatternGenerator)}


@functools.lru_cache(maxsize=256)
def reachable_k(generator: PatternGenerator, rows: int, cols: int, iterations: int,
                probes: int = 2000) -> np.ndarray:
    """Sorted distinct K values the generator produced in a fixed-seed probe: used to reject
    K ranges a grid and T cannot deliver before any work starts. Cached: configurations are
    validated often and the probe depends on nothing else."""
    seeds = np.random.SeedSequence(0xC011EC7).generate_state(probes, dtype=np.uint64)
    batch = generator.generate(seeds, rows, cols, iterations, 0, np.iinfo(np.int32).max)
    reachable = np.unique(batch.k_raw)
    reachable.flags.writeable = False  # shared by every caller through the cache
    return reachable


# ---- ⊖ pairings (spec §2 "Balance"; paper 000 Definition 13) ----

def index_shift_evil(good: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Reference pairing: ⊖ = ⊕ shifted by ⌊N/3⌋+1 cells in row-major order, at every step.

    Equal K by construction and antisymmetric rewards, so a random agent scores 0 in expectation.
    """
    n_cells = rows * cols
    return ((good.astype(np.int64) + n_cells // 3 + 1) % n_cells).astype(np.int32)


@njit(cache=True)
def _resolve_collisions(good, evil, rows, cols, streams):
    """Paper 003 §4.1.1: ⊕ and ⊖ never share a cell; if both would enter one, one of them,
    chosen at random, keeps its old cell (a still object keeps its cell and the mover waits).
    Planned trajectories are replayed as moves, so an object that waited continues its pattern
    from where it stands. Arrays (episodes, T+1) are rewritten in place."""
    episodes, length = good.shape
    for e in range(episodes):
        gr, gc = good[e, 0] // cols, good[e, 0] % cols
        er, ec = evil[e, 0] // cols, evil[e, 0] % cols
        plan_g, plan_e = good[e, 0], evil[e, 0]
        for t in range(1, length):
            dgr, dgc = _delta(plan_g, good[e, t], rows, cols)
            der, dec = _delta(plan_e, evil[e, t], rows, cols)
            plan_g, plan_e = good[e, t], evil[e, t]
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
def _delta(a, b, rows, cols):
    """The king move (dr, dc) in {-1,0,1}² that takes cell a to neighbouring cell b."""
    dr = (b // cols - a // cols) % rows
    dc = (b % cols - a % cols) % cols
    if dr == rows - 1:
        dr = -1
    if dc == cols - 1:
        dc = -1
    return dr, dc


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
