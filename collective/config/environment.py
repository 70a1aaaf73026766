"""The environment: Λ* or a fitness landscape (spec §7), its grid and T, what the agents see and are paid within,
the movement patterns and their K; the fields, the environment class they make, and their validation."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collective.config.checks import ConfigError, require_bool, require_choice, require_int, require_range
from collective.environments.complexity import K_NORMALISATIONS
from collective.environments.lambda_star import ENTROPY_RULES, EVIL_PAIRINGS, LambdaStar
from collective.environments.landscapes import (LANDSCAPE_ENTROPIES, LANDSCAPE_MOTIONS, LANDSCAPE_NORMALISATIONS,
                                                FitnessLandscape, cone_mass_bound, landscape_field)
from collective.environments.patterns import (K_SAMPLINGS, PATTERN_GENERATORS, SEGMENT_CAPS, CyclicPatternGenerator,
                                              PatternGenerator, StratifiedComplexity, reachable_k, unpairable_k)

ENVIRONMENT_CLASSES = ("lambda_star", "landscape")
REACHABLE_PROBES = 2000  # episodes `reachable_k` generates to probe a K range
POOL_FIELDS = ("k_sampling", "pattern_generator", "segment_cap")
MAX_PATTERN_POOL = 4096


@dataclass(frozen=True)
class EnvironmentSection:
    """What the group is tested in; every field but `env`'s choice reaches the environment class
    (`environment()`)."""
    rows: int = 10
    cols: int = 10
    iterations: int = 200
    env: str = "lambda_star"  # the environment class: Λ* or a fitness landscape (spec §7)
    observation_range: int = 1
    reward_radius: int = 1
    coordination_threshold: int = 1
    pattern_generator: str = "cyclic"
    segment_cap: str = "k_max"  # cyclic segments of 1..min(⌊T/2⌋, k_max) moves, or "half_T": 1..⌊T/2⌋ (§4.2)
    # True: closed segments of more than patterns.LAZY_SHUFFLE_ABOVE moves shuffled as the walk reaches each move
    # (same distribution, other patterns, only when T > 257; `CyclicPatternGenerator`); False: shuffled whole first
    lazy_segment_shuffle: bool = False
    # Stratified K: episodes per block whose pattern draws are pooled (each drawn pattern goes to an episode of the
    # block that wants its K; the same law given K, other patterns; `patterns.pooled_patterns`); 0: every episode
    # draws alone until its own K comes up. A profile's pool gives way to 0 where its draws cannot be pooled
    # (`from_profile`, e.g. sound with segment_cap k_max); set explicitly, such a pool is refused.
    pattern_pool: int = 0
    evil_pairing: str = "index_shift"
    entropy_rule: str = "paper"  # H = log2 N(N-1) (§4.3), or "pairing": log2 N under index_shift
    k_on_played_paths: bool = False  # True: K of ⊕ and ⊖ measured on the paths played, after collisions
    k_sampling: str = "generator"  # K as the generator draws it in [k_min, k_max], or "stratified": uniform
    k_min: int | None = 1
    k_max: int | None = 23
    k_normalisation: str = "log2_length"  # c·log2(L)/L, or "log_alphabet": c·log_N(L)/L, N cells
    landscape_peaks: int = 8  # local optima, one of them global
    landscape_peak_width: int = 1  # cells from a peak's centre to the edge of its slope
    landscape_deception: float = 0.5  # 0..1: how close the secondary optima stand to the global one
    landscape_noise: float = 0.0  # 0..1: weight of the uncorrelated component, the field's ruggedness
    landscape_normalisation: str = "centre"  # "centre": mean 0; "optimum_one": mean 0 and the optimum pays 1
    landscape_entropy: str = "lambda_star"  # H of a landscape row: "lambda_star" log2 N(N-1); "optimum" log2 N
    landscape_motion: str = "pattern"  # "pattern": the field moves along a movement pattern; "static"

    @property
    def grid(self) -> str:
        return f"{self.rows}x{self.cols}"

    def patterns(self) -> PatternGenerator:
        """The movement-pattern generator: `pattern_generator` with its segment cap and shuffle (cyclic),
        drawing K as `k_sampling` says."""
        generator = CyclicPatternGenerator(self.segment_cap, self.lazy_segment_shuffle) \
            if self.pattern_generator == "cyclic" else PATTERN_GENERATORS[self.pattern_generator]()
        return StratifiedComplexity(generator) if self.k_sampling == "stratified" else generator

    def environment(self) -> LambdaStar | FitnessLandscape:
        """The environment class that generates this configuration's episodes (start cells nested as the
        statistics' `paired_group_sizes` says)."""
        generator = self.patterns()
        k_min = self.k_min if self.k_min is not None else 0
        k_max = self.k_max if self.k_max is not None else np.iinfo(np.int32).max
        if self.env == "landscape":
            return FitnessLandscape(self.rows, self.cols, self.iterations, generator, peaks=self.landscape_peaks,
                                    peak_width=self.landscape_peak_width, deception=self.landscape_deception,
                                    noise=self.landscape_noise, normalisation=self.landscape_normalisation,
                                    entropy=self.landscape_entropy, motion=self.landscape_motion,
                                    k_min=k_min, k_max=k_max, nested_starts=self.paired_group_sizes,
                                    pattern_pool=self.pattern_pool)
        return LambdaStar(self.rows, self.cols, self.iterations, generator, self.evil_pairing, k_min, k_max,
                          self.entropy_rule, self.k_on_played_paths, self.paired_group_sizes, self.pattern_pool)


def draws_pool(k_sampling: str, pattern_generator: str, segment_cap: str) -> bool:
    """Whether pattern draws can be pooled (`pattern_pool`): stratified K from cyclic draws whose law does not
    depend on the K wanted (segment_cap half_T; under k_max the segment length is capped by each episode's K)."""
    return k_sampling == "stratified" and pattern_generator == "cyclic" and segment_cap == "half_T"


def validate_environment_fields(c: EnvironmentSection) -> None:
    """Each field known, typed and in range; the pool only where draws can be pooled; the grid holds the
    observation window."""
    require_choice(c, "env", ENVIRONMENT_CLASSES)
    require_choice(c, "pattern_generator", tuple(PATTERN_GENERATORS))
    require_choice(c, "segment_cap", SEGMENT_CAPS)
    require_choice(c, "evil_pairing", EVIL_PAIRINGS)
    require_choice(c, "entropy_rule", ENTROPY_RULES)
    require_choice(c, "k_sampling", K_SAMPLINGS)
    require_choice(c, "k_normalisation", K_NORMALISATIONS)
    require_bool(c, "k_on_played_paths")
    require_bool(c, "lazy_segment_shuffle")
    if c.k_on_played_paths and not PATTERN_GENERATORS[c.pattern_generator].k_on_positions:
        raise ConfigError("k_on_played_paths", f"the {c.pattern_generator} generator measures K on its base walk, "
                          "not on the positions it plays (paper 003 §4.2); use the cyclic generator or false")
    require_int(c, "pattern_pool", 0)
    if c.pattern_pool > MAX_PATTERN_POOL:  # every batch generates whole blocks: a block is not a run
        raise ConfigError("pattern_pool", f"must be at most {MAX_PATTERN_POOL} episodes (got {c.pattern_pool})")
    if c.pattern_pool and not draws_pool(*(getattr(c, name) for name in POOL_FIELDS)):
        raise ConfigError("pattern_pool", "pooled draws serve stratified K (k_sampling stratified) from the cyclic "
                          "generator with segment_cap half_T, whose draws do not depend on the K wanted; set 0 "
                          f"(got k_sampling {c.k_sampling}, pattern_generator {c.pattern_generator}, "
                          f"segment_cap {c.segment_cap})")
    require_int(c, "rows", 2, " (the grid is at least 2x2)")
    require_int(c, "cols", 2, " (the grid is at least 2x2)")
    require_int(c, "iterations", 1)
    require_int(c, "reward_radius", 0)
    view = require_int(c, "observation_range", 1)
    if 2 * view >= min(c.rows, c.cols) and view == 1:
        raise ConfigError("rows", f"a {c.grid} grid cannot hold the range-1 observation window; "
                          "the smallest grid for range k is (2k+1)x(2k+1), 3x3 for k = 1")
    if 2 * view >= min(c.rows, c.cols):
        raise ConfigError("observation_range", f"must be below half the grid's shorter side, "
                          f"at most {(min(c.rows, c.cols) - 1) // 2} on {c.grid} (got {view})")
    require_int(c, "coordination_threshold", 1)  # above the group size, Good never pays (§6.1)


def validate_landscape(c: EnvironmentSection) -> None:
    """Landscape parameters in range and the peaks placeable on the grid (spec §7)."""
    peaks = require_int(c, "landscape_peaks", 1)
    width = require_int(c, "landscape_peak_width", 0)
    require_range(c, "landscape_deception", 0.0, 1.0)
    require_range(c, "landscape_noise", 0.0, 1.0)
    require_choice(c, "landscape_normalisation", LANDSCAPE_NORMALISATIONS)
    require_choice(c, "landscape_entropy", LANDSCAPE_ENTROPIES)
    require_choice(c, "landscape_motion", LANDSCAPE_MOTIONS)
    if c.env != "landscape":
        return
    if c.coordination_threshold > 1:
        raise ConfigError("coordination_threshold", "applies to Λ*'s Good object only; use 1 with --env landscape")
    try:
        landscape_field(np.random.default_rng(0), c.rows, c.cols, peaks, width, c.landscape_deception,
                        noise=c.landscape_noise, normalisation=c.landscape_normalisation)
    except ValueError as error:
        raise ConfigError("landscape_peaks", f"{error}; use fewer or narrower peaks") from None
    bound = cone_mass_bound(c.rows, c.cols, peaks, width)
    if c.landscape_normalisation == "optimum_one" and bound > 0.5:
        raise ConfigError("landscape_normalisation", f"'optimum_one' needs peaks that hold at most half the "
                          f"field's mass, or the lowest cells could pay below -1; {peaks} peaks of width {width} "
                          f"on {c.grid} may hold {bound:.2f}: use fewer or narrower peaks (or 'centre', as in "
                          "the paper profile)")


def validate_k_range(c: EnvironmentSection) -> None:
    """K range checks: integers, ordered, and reachable by the generator on this grid and T (with
    stratified sampling, every K of the range; K = 1 never is, see `reachable_k`); with K on the
    played paths of an independent pair, pairs that keep their K must exist (`unpairable_k`)."""
    if c.k_sampling == "stratified" and (c.k_min is None or c.k_max is None):
        raise ConfigError("k_sampling", "stratified draws K uniformly from a closed range: set k_min and k_max")
    if c.k_min is None and c.k_max is None:
        return
    for name in ("k_min", "k_max"):
        if getattr(c, name) is not None:
            require_int(c, name, 1)
    low = c.k_min if c.k_min is not None else 1
    high = c.k_max if c.k_max is not None else np.iinfo(np.int32).max - 1
    if low > high:
        raise ConfigError("k_min", f"must not exceed k_max (got {low}:{high})")
    reachable = reachable_k(c.patterns(), c.rows, c.cols, c.iterations, REACHABLE_PROBES, k_max=high)
    in_range = reachable[(reachable >= low) & (reachable <= high)]
    if c.k_sampling == "stratified":
        missing = sorted(set(range(low, high + 1)) - set(in_range.tolist()))
        if missing:
            why = " (K = 1 needs a one-symbol sequence: any path of T >= 2 positions has K >= 2)" \
                if missing[0] == 1 and c.iterations >= 2 else ""
            runs = np.split(in_range, np.flatnonzero(np.diff(in_range) != 1) + 1) if len(in_range) else []
            widest = max(runs, key=len, default=None)  # the widest K range stratified sampling can fill
            fix = f"; the K range {widest[0]}:{widest[-1]} is reachable, or give more iterations" \
                if widest is not None else ""
            raise ConfigError("k_min" if missing[0] == low else "k_max",
                              f"stratified sampling needs every K in [{low}, {high}], but {c.pattern_generator} "
                              f"patterns on {c.grid} with {c.iterations} iterations reach {_spans(reachable)} "
                              f"(not {_spans(np.array(missing))}){why}{fix}")
    elif not len(in_range):
        raise ConfigError("k_min", f"no {c.pattern_generator} pattern on {c.grid} with {c.iterations} "
                          f"iterations has K in [{low}, {high}]; reachable K: {_spans(reachable)}")
    if c.k_on_played_paths and c.evil_pairing == "independent" and c.env == "lambda_star":
        unpairable = unpairable_k(c.patterns(), c.rows, c.cols, c.iterations, tuple(in_range.tolist()))
        if unpairable:
            raise ConfigError("k_max" if unpairable[-1] == in_range[-1] else "k_min",
                              f"on {c.grid} with {c.iterations} iterations, collisions change the K of almost every "
                              f"independent ⊕/⊖ pair with K in {_spans(np.array(unpairable))}, so no pair keeps its "
                              "K on the played paths; use a larger grid, another K range or k_on_played_paths = false")


def _spans(values: np.ndarray) -> str:
    """Sorted integers as runs, e.g. [2, 3, 4, 7] -> '2..4, 7'; 'none' when empty."""
    if len(values) == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(values) != 1)
    starts, ends = np.r_[values[0], values[breaks + 1]], np.r_[values[breaks], values[-1]]
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in zip(starts, ends))
