"""The exact probability that a pattern generator produces a given ⊕ trajectory: the sampling
distribution that the importance-weighted Legg–Hutter Υ divides by (`collective.analysis.scores`).

The `cyclic` generator (paper 003 §4.2; `patterns._draw_cyclic`) draws a segment length s uniform in
1..M, a fair coin for an open or a closed loop, then the segment's s moves: open, each uniform over
the 9 king moves; closed, ⌊s/2⌋ moves uniform over the 9, each followed by its opposite, plus a stay
when s is odd, the whole shuffled uniformly (Fisher–Yates); and a start cell uniform over the N cells.
The trajectory repeats the segment for T moves. On a grid of at least 3x3 the T moves are read back
from the trajectory, and s reproduces them exactly when they are periodic with period s (s <= T), so

    p(trajectory) = (1/N) Σ_{s=1..M, moves periodic with s} (1/M) (½ 9^-s + ½ P_closed(segment | s)),

    P_closed(segment | s) = 9^-h · h!/Π_v p_v! · 2^(h - p_stay) · Π_m n_m! / s!,  h = ⌊s/2⌋,

where n_m counts move m in the segment, p_v the opposite pairs of type v (v and 8 - v; a pair of stays
for v = 4; p_stay = that count), and the segment must hold n_m = n_(8-m) and an even number of stays
besides the odd one. (A pair sequence a gives the multiset of the segment in h!/Π p_v! · 2^(h - p_stay)
ways, and each multiset is shuffled into this order by Π n_m! of the s! permutations.)

A K range is met by rejection (`patterns._generate`): accepted patterns follow p restricted to the
range, divided by the probability of the range, a constant per cell that cancels in self-normalised
weights; `pattern_log2_probability` therefore leaves it out. The random integers are Lemire's
multiply-shift without rejection, uniform up to n/2^32, which is neglected.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

MOVES = 9  # the king moves and stay (`torus`: action a moves by (a // 3 - 1, a % 3 - 1))
STAY = 4
LN2 = math.log(2.0)


def cyclic_max_segment(iterations: int, k_max: int | None) -> int:
    """M, the longest segment the cyclic generator draws: ⌊T/2⌋, at most k_max, at least 1 (mirrors
    `patterns._generate`; the tests compare with the generator's own frequencies)."""
    high = np.iinfo(np.int32).max if k_max is None else k_max
    return max(1, min(iterations // 2, high))


def trajectory_moves(positions: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(episodes, T) king moves 0..8 between consecutive cells of (episodes, T+1) trajectories, -1 where
    two cells are not neighbours. Needs rows, cols >= 3, where the move between neighbours is unique."""
    if rows < 3 or cols < 3:
        raise ValueError(f"moves are ambiguous on a {rows}x{cols} torus (a side below 3)")
    r, c = np.divmod(positions.astype(np.int64), cols)
    dr, dc = (np.diff(r, axis=1) + 1) % rows - 1, (np.diff(c, axis=1) + 1) % cols - 1  # -1, 0, 1 or beyond
    moves = (dr + 1) * 3 + (dc + 1)
    return np.where((np.abs(dr) <= 1) & (np.abs(dc) <= 1), moves, -1)


def _log_closed_loop(counts: np.ndarray, s: int) -> np.ndarray:
    """Natural log of P_closed(segment | s) from the segment's move counts (episodes, 9); -inf where
    the counts are not opposite pairs (plus one stay for odd s)."""
    pairs = counts[:, :STAY]  # p_v for v = 0..3: the count of v must equal the count of 8 - v
    stays = counts[:, STAY] - s % 2
    possible = (pairs == counts[:, STAY + 1:][:, ::-1]).all(axis=1)
    possible &= (stays >= 0) & (stays % 2 == 0)
    h = s // 2
    pair_counts = np.concatenate([pairs, np.maximum(stays, 0)[:, None] // 2], axis=1)  # (episodes, 5)
    log_p = (-h * math.log(MOVES) + gammaln(h + 1) - gammaln(pair_counts + 1).sum(axis=1)
             + (h - pair_counts[:, STAY]) * LN2 + gammaln(counts + 1).sum(axis=1) - gammaln(s + 1))
    return np.where(possible, log_p, -np.inf)


def cyclic_pattern_log2_probability(positions: np.ndarray, rows: int, cols: int,
                                    max_segment: int) -> np.ndarray:
    """(episodes,) log2 of the probability that the cyclic generator (segments of 1..max_segment
    moves) draws each of the (episodes, T+1) trajectories `positions`; -inf for one it cannot draw.
    See the module docstring for the formula."""
    positions = np.atleast_2d(positions)
    episodes, length = positions.shape
    iterations = length - 1
    moves = trajectory_moves(positions, rows, cols)  # (episodes, T)
    one_hot = (moves[:, :, None] == np.arange(MOVES)).astype(np.int64)  # (episodes, T, 9)
    counts = np.concatenate([np.zeros((episodes, 1, MOVES), np.int64), np.cumsum(one_hot, axis=1)], axis=1)
    valid = (moves >= 0).all(axis=1)
    terms = np.full((episodes, max_segment), -np.inf)  # natural-log term of each segment length
    for s in range(1, min(max_segment, iterations) + 1):
        periodic = valid & (moves[:, s:] == moves[:, :iterations - s]).all(axis=1)
        log_segment = np.logaddexp(-s * math.log(MOVES), _log_closed_loop(counts[:, s, :], s)) - LN2
        terms[:, s - 1] = np.where(periodic, log_segment, -np.inf)
    total = np.logaddexp.reduce(terms, axis=1) - math.log(max_segment) - math.log(rows * cols)
    return total / LN2


def pattern_probability_unavailable(config) -> str | None:
    """Why a configuration's (an `EvaluationConfig`) ⊕ pattern has no known probability, or None
    when it has one."""
    if config.env == "landscape" and config.landscape_motion == "static":
        return None
    if config.pattern_generator != "cyclic":
        return f"the probability of a {config.pattern_generator} pattern is not implemented (only cyclic)"
    if config.env != "landscape" and config.evil_pairing != "index_shift":
        return (f"with evil_pairing {config.evil_pairing!r} the collision rule moves ⊕ off its drawn pattern, whose "
                "probability the rows cannot recover (use index_shift)")
    if config.k_sampling != "generator":
        return (f"k_sampling {config.k_sampling!r} selects each K with a probability of its own, which is not "
                "implemented (use k_sampling generator)")
    return None


def pattern_log2_probabilities(config, environments) -> np.ndarray:
    """(episodes,) log2 probability of each episode's ⊕ pattern under the configuration's generator,
    without the K range's constant (see the module docstring); NaN when it is not known
    (`pattern_probability_unavailable`). A landscape's path is its pattern moved onto the optimum:
    the same moves, so the same value (the start cell's 1/N is the same for every start); a static
    landscape has one pattern, probability 1. `config` is an `EvaluationConfig`."""
    episodes = len(environments.good)
    if config.env == "landscape" and config.landscape_motion == "static":
        return np.zeros(episodes)
    if pattern_probability_unavailable(config):
        return np.full(episodes, np.nan)
    cap = config.k_max if config.segment_cap == "k_max" else None
    return cyclic_pattern_log2_probability(environments.good, config.rows, config.cols,
                                           cyclic_max_segment(config.iterations, cap))
