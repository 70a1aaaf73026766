"""Fitness landscapes: the second environment class (spec §7, paper 003 §6.2).

A landscape is a fitness field on the m×n torus with many local optima and exactly one global
optimum. Construction (our choices where the paper is silent, all config fields):
- `peaks` cone centres, drawn uniformly at least `peak_width` + 2 cells apart (Chebyshev), one of
  height 1 (the global optimum), the others uniform in [0.2 + 0.7·deception, 0.9]: deception
  raises the secondary optima toward the global one (a local searcher stuck on one is paid more
  like the optimum); it keeps the `peaks` local optima and moves the correlation length only
  through the heights' spread, far less than `noise` does (tests/test_landscapes.py);
- the cone field is the maximum of h·max(0, 1 - d/(peak_width + 1)), so every centre, and no
  other cell, is a strict local maximum: exactly `peaks` local optima;
- ruggedness proper is `noise`, the weight w of an uncorrelated component mixed in:
  (1 - w)·cones + w·ranks, ranks a random permutation of N evenly spaced values in [0, 1] with the
  top one at the global optimum (so it stays the unique maximum). Weinberger's (1990) uncorrelated
  landscape is w = 1; as w grows the correlation length falls and local optima multiply (toward
  N/9, the expectation for a random field on the 8-neighbour torus);
- normalisation "centre" subtracts the mean, so a random agent, uniformly spread over the torus in
  the long run, scores 0 in expectation (paper 000 Definition 13; spec §7) and the optimum pays
  1 - mean; "optimum_one" also divides by (max - mean), so the optimum pays exactly 1 on every
  grid and values stay in [-1, 1] (guaranteed when the cones hold at most half the field's mass,
  `cone_mass_bound` <= 0.5, checked by the config).
Adaptive landscapes move: the whole field translates along a movement pattern from the core's
pattern generator (spec §2), so K (the pattern's LZ76 complexity) means what it means in Λ*.
⊕'s path is the global optimum's, which is what the oracle intercepts.

H, the search-space entropy of paper 003 §4.3, is log2 of the number of equally likely states of
the special objects' positions. A landscape has one special object, the global optimum, whose
start cell is uniform over the N cells (the first centre is drawn uniformly; the torus makes the
placement translation-invariant): H = log2 N bits (entropy "optimum"). Entropy "lambda_star"
records Λ*'s log2 N(N-1) for the same grid instead: a grid label on Λ*'s axis, not the
landscape's own uncertainty (the `paper` profile's).

Each episode records its field's strict local optima and its correlation length ℓ = -1/ln ρ(1)
(Weinberger 1990, "Correlated and uncorrelated fitness landscapes and how to tell the
difference", Biol. Cybern. 63: 325-336): ρ(1) is the autocorrelation of fitness one step apart
along a random walk of the agents' own moves, king moves on the torus (a walk's step goes to a
neighbour, so the agents' 'stay' is not one). The walk's stationary
distribution on the regular torus graph is uniform, so ρ(1) is computed exactly as the
expectation over every cell and its 8 king moves (Stadler 1996, "Landscapes and their
correlation functions", J. Math. Chem. 20: 1-45: on a regular graph the walk's r(1) is the mean
over neighbouring pairs), which a sampled walk only estimates.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from collective.environments.complexity import lz76_normalised, lz76_phrase_count, search_space_entropy_bits
from collective.environments.lambda_star import EnvironmentBatch, start_cell_table
from collective.environments.patterns import PatternGenerator, pooled_patterns
from collective.environments.torus import chebyshev
from collective.simulation.numpy_stream_twins import (TWIN_MAX_CELLS, append_words, integer_at_most, next_double,
                                                      pairwise_sum, seed_pcg, shuffle_index)
from collective.simulation.random_streams import AGENT_SEED, ENVIRONMENT_SEED

LANDSCAPE_MOTIONS = ("pattern", "static")
LANDSCAPE_NORMALISATIONS = ("centre", "optimum_one")
LANDSCAPE_ENTROPIES = ("lambda_star", "optimum")
PLACEMENT_TRIES = 200  # fresh draws of the peak centres before the peaks count as not fitting
FIELD_STREAM = 0x1A5D  # a field's generator: default_rng([environment seed, FIELD_STREAM])
SECONDARY_HEIGHT_MAX = 0.9  # the secondary optima's highest height; the global optimum's is 1
KING_MOVES = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))


@dataclass(frozen=True)
class FitnessLandscape:
    rows: int
    cols: int
    iterations: int
    generator: PatternGenerator
    peaks: int
    peak_width: int
    deception: float
    noise: float
    normalisation: str
    entropy: str
    motion: str
    k_min: int = 0
    k_max: int = np.iinfo(np.int32).max
    nested_starts: bool = False  # see `lambda_star.start_cells`
    pattern_pool: int = 0  # episodes per block whose pattern draws are pooled (`LambdaStar.generate`)

    @property
    def entropy_bits(self) -> float:
        """H (paper 003 §4.3): log2 N for the global optimum's uniform start cell ("optimum"), or
        Λ*'s log2 N(N-1) for the same grid ("lambda_star"); see the module docstring."""
        if self.entropy == "optimum":
            return math.log2(self.rows * self.cols)
        return search_space_entropy_bits(self.rows, self.cols)

    def generate(self, seed_table: np.ndarray, group_size: int, keep: np.ndarray | None = None) -> EnvironmentBatch:
        """Episodes for the rows of `seed_table`; with `keep`, whole blocks whose pattern draws are pooled and
        the batch of rows `keep`, as `LambdaStar.generate`."""
        pattern = None
        if keep is not None and self.pattern_pool > 0 and self.motion == "pattern":
            pattern, _ = pooled_patterns(self.generator, seed_table[:, ENVIRONMENT_SEED], self.pattern_pool,
                                         self.rows, self.cols, self.iterations, self.k_min, self.k_max, keep=keep)
        if keep is not None:
            seed_table = seed_table[keep]
        episodes = len(seed_table)
        n_cells = self.rows * self.cols
        fields, optimum = landscape_fields(seed_table[:, ENVIRONMENT_SEED], self.rows, self.cols, self.peaks,
                                           self.peak_width, self.deception, self.noise, self.normalisation)
        if self.motion == "pattern":
            if pattern is None:
                pattern = self.generator.generate(seed_table[:, ENVIRONMENT_SEED], self.rows, self.cols,
                                                  self.iterations, self.k_min, self.k_max)
            path = _translate(pattern.positions, optimum, self.rows, self.cols)
            k_raw, k_normalised = pattern.k_raw, pattern.k_normalised
        else:
            path = np.repeat(optimum[:, None], self.iterations + 1, axis=1).astype(np.int32)
            k_raw = np.array([lz76_phrase_count(row[:self.iterations].astype(np.int64)) for row in path], np.int32)
            k_normalised = np.array([lz76_normalised(int(k), self.iterations) for k in k_raw])
        starts = start_cell_table(seed_table, n_cells, group_size, self.nested_starts)
        return EnvironmentBatch(path, path.copy(), starts, seed_table[:, AGENT_SEED].copy(), k_raw, k_normalised,
                                landscapes=fields, local_optima=count_local_optima(fields, self.rows, self.cols),
                                correlation_length=correlation_length(fields, self.rows, self.cols))


@njit(cache=True, nogil=True)
def _translate(pattern, optimum, rows, cols):
    """(episodes, T+1) int32: the optimum's path, its start cell moved by the pattern's displacement at every step."""
    path = np.empty(pattern.shape, np.int32)
    for e in range(pattern.shape[0]):
        first_r, first_c = pattern[e, 0] // cols, pattern[e, 0] % cols
        optimum_r, optimum_c = optimum[e] // cols, optimum[e] % cols
        for t in range(pattern.shape[1]):
            r = (optimum_r + pattern[e, t] // cols - first_r) % rows
            c = (optimum_c + pattern[e, t] % cols - first_c) % cols
            path[e, t] = r * cols + c
    return path


def torus_chebyshev(cells_a: np.ndarray, cells_b: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Pairwise toroidal Chebyshev distances, shape (len(a), len(b)) (spec §1)."""
    ar, ac = np.divmod(cells_a[:, None], cols)
    br, bc = np.divmod(cells_b[None, :], cols)
    dr, dc = np.abs(ar - br), np.abs(ac - bc)
    return np.maximum(np.minimum(dr, rows - dr), np.minimum(dc, cols - dc))


def _cone(distance: np.ndarray, peak_width: int) -> np.ndarray:
    """A unit cone's height at Chebyshev `distance` from its centre: 0 from peak_width + 1 on."""
    return np.maximum(0.0, 1.0 - distance / (peak_width + 1.0))


def landscape_fields(seeds: np.ndarray, rows: int, cols: int, peaks: int, peak_width: int, deception: float,
                     noise: float, normalisation: str) -> tuple[np.ndarray, np.ndarray]:
    """(episodes, cells) fields and (episodes,) global optima: row e is `landscape_field` of
    default_rng([seeds[e], FIELD_STREAM]), by its compiled twin in one call (`field_rows`, the same numbers)
    up to TWIN_MAX_CELLS and wherever the twin agrees with this NumPy, else by NumPy per episode."""
    settings = (rows, cols, peaks, peak_width, deception, noise, normalisation)
    if rows * cols <= TWIN_MAX_CELLS and seeds.dtype == np.uint64 and field_twin_agrees():
        fields, optimum, unfit = _twin_fields(seeds, *settings)
        if unfit >= 0:
            raise peaks_do_not_fit_error(peaks, peak_width, rows, cols)
        return fields, optimum
    return _numpy_fields(seeds, *settings)


def _twin_fields(seeds, rows, cols, peaks, peak_width, deception, noise, normalisation):
    """`field_rows` as every caller calls it (contiguous seeds, typed scalars: one compiled variant, loaded
    before anything is timed): the fields, the optima, and the first row whose peaks do not fit, or -1."""
    fields, optimum = np.empty((len(seeds), rows * cols)), np.empty(len(seeds), np.int64)
    unfit = field_rows(np.ascontiguousarray(seeds), int(rows), int(cols), int(peaks), int(peak_width),
                       float(deception), float(noise), normalisation == "optimum_one", fields, optimum)
    return fields, optimum, unfit


def _numpy_fields(seeds, rows, cols, peaks, peak_width, deception, noise, normalisation):
    """The fields and optima by `landscape_field` with NumPy's own generator, episode by episode."""
    fields, optimum = np.empty((len(seeds), rows * cols)), np.empty(len(seeds), np.int64)
    for e, seed in enumerate(seeds):
        fields[e], optimum[e] = landscape_field(np.random.default_rng([int(seed), FIELD_STREAM]), rows, cols, peaks,
                                                peak_width, deception, noise=noise, normalisation=normalisation)
    return fields, optimum


@functools.cache
def field_twin_agrees() -> bool:
    """Whether the compiled twin gives this NumPy's fields, checked once per process (with and without noise,
    both normalisations, one peak and many, one-word and two-word seeds): NumPy does not promise its
    Generator's streams across versions (NEP 19); where the twin would differ, NumPy draws the fields."""
    seeds = np.array([0, 1, 2**32 + 7, 2**63 + 5, 2**64 - 1], np.uint64)
    for settings in ((10, 10, 8, 1, 0.5, 0.0, "optimum_one"), (7, 13, 3, 2, 0.0, 0.3, "centre"),
                     (5, 5, 1, 1, 1.0, 1.0, "optimum_one"), (40, 40, 30, 2, 0.2, 0.05, "centre")):
        fields, optimum, _ = _twin_fields(seeds, *settings)
        numpy_fields, numpy_optimum = _numpy_fields(seeds, *settings)
        if not (np.array_equal(optimum, numpy_optimum) and np.array_equal(fields, numpy_fields)):
            return False
    return True


@njit(cache=True, nogil=True, error_model="numpy")  # a zero scale gives NaN as NumPy's division does
def field_rows(seeds, rows, cols, peaks, peak_width, deception, noise, optimum_one, fields, optimum):
    """fields[e], optimum[e] ← `landscape_field` of default_rng([seeds[e], FIELD_STREAM]), step for step with
    NumPy's draws (`numpy_stream_twins`): choice among the free cells, uniform heights, a permutation of the
    other cells' ranks, and NumPy's pairwise sum for the mean. Returns the first row whose peaks do not fit
    (the caller raises `peaks_do_not_fit_error`), or -1."""
    n_cells = rows * cols
    pool, pcg, entropy = np.empty(4, np.uint64), np.empty(6, np.uint64), np.empty(3, np.uint32)
    free, candidates = np.empty(n_cells, np.bool_), np.empty(n_cells, np.int64)
    centres, heights = np.empty(peaks, np.int64), np.empty(peaks)
    others, ranks = np.empty(max(n_cells - 1, 0), np.int64), np.empty(n_cells)
    low = 0.2 + 0.7 * deception
    spread = SECONDARY_HEIGHT_MAX - low
    for e in range(len(seeds)):
        end = append_words(entropy, 0, seeds[e])
        end = append_words(entropy, end, FIELD_STREAM)
        seed_pcg(entropy, end, pool, pcg)
        placed = 0
        for _ in range(PLACEMENT_TRIES):
            free[:] = True
            placed = 0
            for _ in range(peaks):
                count = 0
                for cell in range(n_cells):
                    if free[cell]:
                        candidates[count] = cell
                        count += 1
                if count == 0:
                    break
                centre = candidates[integer_at_most(pcg, count - 1)]
                centres[placed] = centre
                placed += 1
                for cell in range(n_cells):
                    if chebyshev(cell // cols, cell % cols, centre // cols, centre % cols, rows, cols) < peak_width + 2:
                        free[cell] = False
            if placed == peaks:
                break
        if placed < peaks:
            return e
        best = centres[0]
        heights[0] = 1.0
        for p in range(1, peaks):
            heights[p] = low + spread * next_double(pcg)
        field = fields[e]
        for cell in range(n_cells):
            top = 0.0
            for p in range(peaks):
                distance = chebyshev(cell // cols, cell % cols, centres[p] // cols, centres[p] % cols, rows, cols)
                height = heights[p] * max(0.0, 1.0 - distance / (peak_width + 1.0))
                if p == 0 or height > top:
                    top = height
            field[cell] = top
        if noise > 0:
            for i in range(n_cells - 1):
                others[i] = i if i < best else i + 1
            for top in range(n_cells - 2, 0, -1):
                other = shuffle_index(pcg, top)
                others[top], others[other] = others[other], others[top]
            ranks[best] = 1.0
            for i in range(n_cells - 1):
                ranks[others[i]] = i / (n_cells - 1)
            for cell in range(n_cells):
                field[cell] = (1.0 - noise) * field[cell] + noise * ranks[cell]
        mean = pairwise_sum(field, n_cells) / n_cells
        for cell in range(n_cells):
            field[cell] -= mean
        if optimum_one:
            scale = field[best]
            for cell in range(n_cells):
                field[cell] /= scale
        optimum[e] = best
    return -1


def peaks_do_not_fit_error(peaks: int, peak_width: int, rows: int, cols: int) -> ValueError:
    return ValueError(f"{peaks} peaks of width {peak_width} do not fit {PLACEMENT_TRIES} times on a "
                      f"{rows}x{cols} grid (centres must be {peak_width + 2} cells apart)")


def landscape_field(rng: np.random.Generator, rows: int, cols: int, peaks: int, peak_width: int, deception: float,
                    *, noise: float, normalisation: str) -> tuple[np.ndarray, int]:
    """One normalised field (cells,) and its global optimum's cell (module docstring); ValueError
    when the peaks do not fit. With noise 0 the random draws are the cones' alone."""
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
        raise peaks_do_not_fit_error(peaks, peak_width, rows, cols)
    optimum = centres[0]
    heights = np.concatenate([[1.0], rng.uniform(0.2 + 0.7 * deception, SECONDARY_HEIGHT_MAX, peaks - 1)])
    distance = torus_chebyshev(cells, np.array(centres), rows, cols)  # (cells, peaks)
    field = (heights[None, :] * _cone(distance, peak_width)).max(axis=1)  # (cells,) in [0, 1], max 1 at optimum
    if noise > 0:
        ranks = np.empty(n_cells)
        ranks[optimum] = 1.0
        ranks[rng.permutation(np.delete(cells, optimum))] = np.arange(n_cells - 1) / (n_cells - 1)
        field = (1.0 - noise) * field + noise * ranks  # still 1 at the optimum only, mean of ranks 1/2
    centred = field - field.mean()
    if normalisation == "optimum_one":
        return centred / centred[optimum], optimum
    return centred, optimum


def cone_mass_bound(rows: int, cols: int, peaks: int, peak_width: int) -> float:
    """An upper bound on the cone field's mean: every cone at its highest, none overlapping. At
    most 1/2 guarantees that "optimum_one" keeps the field at or above -1 for every noise (the
    mean of the unscaled field then lies at or below its midrange)."""
    cells = np.arange(rows * cols)
    one_cone = _cone(torus_chebyshev(cells, np.array([0]), rows, cols)[:, 0], peak_width).sum()
    return float((1.0 + SECONDARY_HEIGHT_MAX * (peaks - 1)) * one_cone / (rows * cols))


def _king_neighbours(fields: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(8, episodes, cells): each cell's king-move neighbours' values on the torus."""
    grids = fields.reshape(-1, rows, cols)
    return np.stack([np.roll(grids, (-dr, -dc), axis=(1, 2)).reshape(len(grids), -1) for dr, dc in KING_MOVES])


def count_local_optima(fields: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(episodes,) cells strictly fitter than all eight neighbours, of fields (episodes, cells)."""
    return np.sum(fields > _king_neighbours(fields, rows, cols).max(axis=0), axis=1)


def walk_autocorrelation(fields: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(episodes,) ρ(1) of a stationary random walk of king moves on each field (episodes, cells):
    Cov(f(x), f(x + move)) / Var f, x uniform over the cells, the move uniform over the 8 king moves
    (Weinberger 1990's definition, evaluated exactly; module docstring). NaN for a constant field."""
    deviations = fields - fields.mean(axis=1, keepdims=True)  # (episodes, cells)
    variance = np.mean(deviations ** 2, axis=1)
    covariance = np.mean(deviations[None] * _king_neighbours(deviations, rows, cols), axis=(0, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(variance > 0, covariance / np.where(variance > 0, variance, 1.0), np.nan)


def correlation_length(fields: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(episodes,) ℓ = -1/ln ρ(1) in king moves (Weinberger 1990), ρ(1) = `walk_autocorrelation`:
    0 when ρ(1) <= 0 (uncorrelated or anticorrelated), inf for a constant field or ρ(1) = 1."""
    rho = walk_autocorrelation(fields, rows, cols)
    length = np.full(len(rho), np.inf)
    inside = (rho > 0) & (rho < 1)
    length[inside] = -1.0 / np.log(rho[inside])
    length[rho <= 0] = 0.0
    return length
