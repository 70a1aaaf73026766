"""Per-episode descriptors of how a special object moves (issue 22 point 3): its period, its drift and its
mean displacement per iteration, and the motion kind they define, read off the played path (cells at
iterations 0..T, shape (episodes, T+1)) on the m×n torus with king moves (spec §1, paper 003 §4.1.1-4.2).

- period p: the smallest p >= 1 such that the move sequence repeats with period p over the T moves played
  (move t+p = move t for every t < T - p). A cyclic pattern (paper 003 §4.2) repeats its segment, so p is its
  segment length (or a divisor of it); a pattern seen less than twice (p > T/2) has the period the path allows.
- drift: the net displacement of one period on the torus, in king moves (the Chebyshev length of the
  minimum-image displacement): 0 when the object returns to its start cell after each period.
- displacement per iteration: the mean king distance moved per iteration (0 for a still object, at most 1).
- motion: "stationary" (never moves), "periodic" (moves and returns to its start every period) or "drifting"
  (moves on round the torus, period after period); the K bins of before read motion off K, which a grid's
  side confounds (a drift's K >= side + 1).

Vectorised over episodes: one comparison of the move arrays per candidate period, no per-episode loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MOTION_KINDS = ("stationary", "periodic", "drifting")


@dataclass(frozen=True)
class PatternMotion:
    """(episodes,) descriptors of one object's played paths."""

    period: np.ndarray  # int64 moves per period
    drift: np.ndarray  # int64 king moves between the start of one period and the next (0: returns)
    displacement_per_iteration: np.ndarray  # float64 mean king distance moved per iteration
    motion: np.ndarray  # object: one of MOTION_KINDS


def _signed_step(delta: np.ndarray, size: int) -> np.ndarray:
    """A coordinate difference on a ring of `size` as its minimum image in (-size/2, size/2]."""
    return (delta + (size - 1) // 2) % size - (size - 1) // 2


def pattern_motion(positions: np.ndarray, rows: int, cols: int) -> PatternMotion:
    """The descriptors (module docstring) of each row of `positions`, (episodes, T+1) cell indices."""
    positions = np.asarray(positions, np.int64)
    episodes, length = positions.shape
    moves = length - 1
    r, c = positions // cols, positions % cols
    dr, dc = _signed_step(np.diff(r, axis=1), rows), _signed_step(np.diff(c, axis=1), cols)
    code = (dr + 1) * 3 + (dc + 1)  # the king move of each iteration
    period = np.full(episodes, max(moves, 1), np.int64)
    pending = np.arange(episodes)
    for p in range(1, moves):
        if not len(pending):
            break
        found = (code[pending, p:] == code[pending, :-p]).all(axis=1)
        period[pending[found]] = p
        pending = pending[~found]
    first = np.arange(moves)[None, :] < period[:, None]  # the moves of the first period
    net_r = _signed_step(np.where(first, dr, 0).sum(axis=1), rows)
    net_c = _signed_step(np.where(first, dc, 0).sum(axis=1), cols)
    drift = np.maximum(np.abs(net_r), np.abs(net_c))
    step = np.maximum(np.abs(dr), np.abs(dc))
    per_iteration = step.mean(axis=1) if moves else np.zeros(episodes)
    motion = np.where(step.sum(axis=1) == 0, MOTION_KINDS[0], np.where(drift == 0, MOTION_KINDS[1], MOTION_KINDS[2]))
    return PatternMotion(period, drift, per_iteration, motion.astype(object))


def row_motion(good: PatternMotion, evil: PatternMotion) -> np.ndarray:
    """(episodes,) the episode's motion kind: the more mobile of ⊕'s and ⊖'s (drifting over periodic over
    stationary), so a row is "stationary" only when both objects stand still."""
    rank = {kind: i for i, kind in enumerate(MOTION_KINDS)}
    ranks = np.maximum(np.vectorize(rank.get, otypes=[np.int64])(good.motion),
                       np.vectorize(rank.get, otypes=[np.int64])(evil.motion))
    return np.array(MOTION_KINDS, dtype=object)[ranks]
