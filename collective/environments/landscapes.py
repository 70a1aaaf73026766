"""Fitness landscapes: the second environment class (spec §7, paper 003 §6.2).

A landscape is a fitness field on the m×n torus with many local optima and exactly one global
optimum. Construction (our choices where the paper is silent, all parameters):
- `peaks` cone centres, drawn uniformly at least `peak_width` + 2 cells apart (Chebyshev), one of
  height 1 (the global optimum), the others uniform in [0.2 + 0.7·ruggedness, 0.9] — ruggedness
  raises the secondary optima toward the global one, making the field more deceptive;
- the field is the maximum of the cones h·max(0, 1 - d/(peak_width + 1)), so every centre, and no
  other cell, is a strict local maximum: exactly `peaks` local optima;
- the field's mean is subtracted, so a random agent — uniformly spread over the torus in the long
  run — scores 0 in expectation (paper 000 Definition 13 for Λ*), and values stay in [-1, 1].
Adaptive landscapes move: the whole field translates along a movement pattern from the core's
pattern generator (spec §2), so K (the pattern's LZ76 complexity) and H mean what they mean in Λ*.
⊕'s path is the global optimum's, which is what the oracle intercepts. Each episode records its
field's number of strict local optima and its autocorrelation length -1/ln ρ(1), ρ(1) the
correlation of neighbouring cells' fitness (Weinberger 1990, "Correlated and uncorrelated
fitness landscapes and how to tell the difference").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collective.environments.complexity import lz76_normalised, lz76_phrase_count, search_space_entropy_bits
from collective.environments.lambda_star import EnvironmentBatch, start_cell_table
from collective.environments.patterns import PatternGenerator
from collective.simulation.random_streams import AGENT_SEED, ENVIRONMENT_SEED

LANDSCAPE_MOTIONS = ("pattern", "static")
PLACEMENT_TRIES = 200  # fresh draws of the peak centres before the peaks count as not fitting


@dataclass(frozen=True)
class FitnessLandscape:
    rows: int
    cols: int
    iterations: int
    generator: PatternGenerator
    peaks: int = 8
    peak_width: int = 1
    ruggedness: float = 0.5
    motion: str = "pattern"
    k_min: int = 0
    k_max: int = np.iinfo(np.int32).max

    @property
    def entropy_bits(self) -> float:
        """H as for Λ* (paper 003 §4.3), so that landscape and Λ* results share an axis."""
        return search_space_entropy_bits(self.rows, self.cols)

    def generate(self, seed_table: np.ndarray, group_size: int) -> EnvironmentBatch:
        episodes = len(seed_table)
        n_cells = self.rows * self.cols
        fields = np.empty((episodes, n_cells))
        optimum = np.empty(episodes, np.int64)
        for e, seed in enumerate(seed_table[:, ENVIRONMENT_SEED]):
            fields[e], optimum[e] = landscape_field(np.random.default_rng([int(seed), 0x1A5D]), self.rows,
                                                    self.cols, self.peaks, self.peak_width, self.ruggedness)
        if self.motion == "pattern":
            pattern = self.generator.generate(seed_table[:, ENVIRONMENT_SEED], self.rows, self.cols,
                                              self.iterations, self.k_min, self.k_max)
            path = _translate(pattern.positions, optimum, self.rows, self.cols)
            k_raw, k_normalised = pattern.k_raw, pattern.k_normalised
        else:
            path = np.repeat(optimum[:, None], self.iterations + 1, axis=1).astype(np.int32)
            k_raw = np.array([lz76_phrase_count(row[:self.iterations].astype(np.int64)) for row in path], np.int32)
            k_normalised = np.array([lz76_normalised(int(k), self.iterations) for k in k_raw])
        starts = start_cell_table(seed_table, n_cells, group_size)
        return EnvironmentBatch(path, path.copy(), starts, seed_table[:, AGENT_SEED].copy(), k_raw, k_normalised,
                                landscapes=fields,
                                local_optima=np.array([count_local_optima(f, self.rows, self.cols) for f in fields]),
                                correlation_length=np.array([correlation_length(f, self.rows, self.cols)
                                                             for f in fields]))


def _translate(pattern: np.ndarray, optimum: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The optimum's path: its start cell moved by the pattern's displacement at every step."""
    pattern_r, pattern_c = np.divmod(pattern.astype(np.int64), cols)
    optimum_r, optimum_c = np.divmod(optimum, cols)
    r = (optimum_r[:, None] + pattern_r - pattern_r[:, :1]) % rows
    c = (optimum_c[:, None] + pattern_c - pattern_c[:, :1]) % cols
    return (r * cols + c).astype(np.int32)


def torus_chebyshev(cells_a: np.ndarray, cells_b: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Pairwise toroidal Chebyshev distances, shape (len(a), len(b)) (spec §1)."""
    ar, ac = np.divmod(cells_a[:, None], cols)
    br, bc = np.divmod(cells_b[None, :], cols)
    dr, dc = np.abs(ar - br), np.abs(ac - bc)
    return np.maximum(np.minimum(dr, rows - dr), np.minimum(dc, cols - dc))


def landscape_field(rng: np.random.Generator, rows: int, cols: int, peaks: int, peak_width: int,
                    ruggedness: float) -> tuple[np.ndarray, int]:
    """One centred field (cells,) and its global optimum's cell; ValueError when the peaks do not fit."""
    n_cells = rows * cols
    cells = np.arange(n_cells)
    for _ in range(PLACEMENT_TRIES):
        free = np.ones(n_cells, bool)
        centres = []
        for _ in range(peaks):
            candidates = np.flatnonzero(free)
            if len(candidates) == 0:
                break
            centre = int(rng.choice(candidates))
            centres.append(centre)
            free &= torus_chebyshev(cells, np.array([centre]), rows, cols)[:, 0] >= peak_width + 2
        if len(centres) == peaks:
            break
    else:
        raise ValueError(f"{peaks} peaks of width {peak_width} do not fit {PLACEMENT_TRIES} times on a "
                         f"{rows}x{cols} grid (centres must be {peak_width + 2} cells apart)")
    heights = np.concatenate([[1.0], rng.uniform(0.2 + 0.7 * ruggedness, 0.9, peaks - 1)])
    distance = torus_chebyshev(cells, np.array(centres), rows, cols)
    cones = heights[None, :] * np.maximum(0.0, 1.0 - distance / (peak_width + 1.0))
    field = cones.max(axis=1)
    return field - field.mean(), centres[0]


def _neighbour_values(field: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(8, cells): each cell's Moore neighbours' values on the torus."""
    grid = field.reshape(rows, cols)
    return np.stack([np.roll(grid, (dr, dc), axis=(0, 1)).ravel()
                     for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)])


def count_local_optima(field: np.ndarray, rows: int, cols: int) -> int:
    """Cells strictly fitter than all eight neighbours."""
    return int(np.sum(field > _neighbour_values(field, rows, cols).max(axis=0)))


def correlation_length(field: np.ndarray, rows: int, cols: int) -> float:
    """-1/ln ρ(1), ρ(1) the correlation between horizontally and vertically adjacent cells
    (Weinberger 1990); 0 for an uncorrelated field, inf for a constant one."""
    grid = field.reshape(rows, cols)
    pairs = [(grid, np.roll(grid, 1, axis=0)), (grid, np.roll(grid, 1, axis=1))]
    a = np.concatenate([p[0].ravel() for p in pairs])
    b = np.concatenate([p[1].ravel() for p in pairs])
    if a.std() == 0:
        return float("inf")
    rho = float(np.corrcoef(a, b)[0, 1])
    return -1.0 / np.log(rho) if 0 < rho < 1 else (0.0 if rho <= 0 else float("inf"))
