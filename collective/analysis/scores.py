"""Scores (spec §4): per-episode R̄, collective intelligence Υ with a 95% confidence interval,
and the Legg–Hutter 2^-K-weighted Υ, accumulated over streamed batches in constant memory.

Legg–Hutter Υ (paper 001: Υ(π) = Σ_μ 2^-K(μ) V(π, μ), K a program length in bits, summed over distinct
environments) is estimated in one of two ways, the `legg_hutter_estimator` of `EvaluationConfig`:

- "sampled_phrases" (spec §4 read literally): Σ 2^-c R̄ / Σ 2^-c over the sampled episodes, c the LZ76
  phrase count. The episodes already follow the generator's distribution, so a pattern is weighted by
  2^-c times its sampling probability; c is not a length in bits. This estimates neither quantity.
- "importance_bits": K in bits, K = c (log2 c + log2 α), the Lempel–Ziv code length of c phrases over an
  alphabet of α = N cells (each phrase names an earlier phrase, log2 c bits, and its new symbol, log2 α
  bits: Ziv & Lempel 1978; Cover & Thomas 2006, "Elements of Information Theory", §13.4.2 and §13.5.2),
  and each episode weighted by w = 2^-K / q(μ), q the probability that the episode sampler draws its
  pattern (`collective.environments.pattern_probability`). The self-normalised estimate Σ w R̄ / Σ w then
  targets Σ_μ 2^-K(μ) V(μ) / Σ_μ 2^-K(μ) over the distinct patterns the sampler can draw (Owen 2013,
  "Monte Carlo theory, methods and examples", §9.2); constant factors of q (a K range's rejection
  probability) cancel. Whatever else an episode draws (start cells, a landscape's field) is averaged
  into V(μ).

For either, the Kish effective sample size (Σw)²/Σw² (Owen 2013 §9.3) and a delta-method 95% interval,
Ŷ ± t·sqrt(Σ w² (R̄ - Ŷ)²)/Σw with t on ESS - 1 degrees of freedom (Owen 2013 §9.2), are reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy import stats

LEGG_HUTTER_ESTIMATORS = ("sampled_phrases", "importance_bits")
# An interval needs one degree of freedom of Student's t at least: n >= 2 episodes for Υ (n - 1), a
# Kish effective sample size >= 2 for Legg-Hutter Υ (ESS - 1). Below, the t quantile grows without
# bound as the degrees of freedom go to 0 (ESS 1.0005: ±4.9e147), so no interval is reported.
MIN_EFFECTIVE_EPISODES = 2.0


@dataclass(frozen=True)
class UpsilonEstimate:
    upsilon: float  # Υ = mean of R̄ over episodes (paper 003 Definition 3)
    ci95_low: float
    ci95_high: float
    std: float  # sample standard deviation of R̄
    episodes: int
    upsilon_legg_hutter: float  # Σ w R̄ / Σ w (Legg & Hutter, paper 001; w per `legg_hutter_estimator`)
    k_mean: float
    k_normalised_mean: float
    legg_hutter_ci95_low: float = math.nan  # delta-method interval of upsilon_legg_hutter (NaN: see interval_notes)
    legg_hutter_ci95_high: float = math.nan
    legg_hutter_effective_episodes: float = math.nan  # Kish (Σw)²/Σw²


    def interval_notes(self) -> dict[str, str | None]:
        """Why an interval is blank (None where it was estimated): `MIN_EFFECTIVE_EPISODES`."""
        return {
            "ci95_note": None if math.isfinite(self.ci95_low) else
            f"no interval: needs {MIN_EFFECTIVE_EPISODES:.0f} episodes or more (got {self.episodes})",
            "legg_hutter_ci95_note": None if math.isfinite(self.legg_hutter_ci95_low) else
            f"no interval: needs an effective sample size of {MIN_EFFECTIVE_EPISODES:.0f} or more "
            f"(Kish ESS {self.legg_hutter_effective_episodes:.4g})",
        }


def lz_code_length_bits(phrases: np.ndarray, alphabet: int) -> np.ndarray:
    """K in bits of a sequence parsed into c phrases over α symbols: c (log2 c + log2 α) (Ziv & Lempel 1978;
    Cover & Thomas 2006 §13.4.2, §13.5.2)."""
    phrases = np.asarray(phrases, dtype=np.float64)
    return phrases * (np.log2(phrases) + math.log2(alphabet))


def legg_hutter_log2_weights(estimator: str, k_raw: np.ndarray, alphabet: int,
                             sampling_log2_probability: np.ndarray | None = None) -> np.ndarray:
    """log2 of each episode's Legg–Hutter weight (see the module docstring): -c for "sampled_phrases";
    -K_bits - log2 q for "importance_bits", where `sampling_log2_probability` is log2 q of each episode's
    pattern up to a constant (`pattern_log2_probability`, plus any per-K selection term of the sampler)."""
    if estimator == "sampled_phrases":
        return -np.asarray(k_raw, dtype=np.float64)
    if estimator != "importance_bits":
        raise ValueError(f"unknown Legg-Hutter estimator {estimator!r}; allowed: {', '.join(LEGG_HUTTER_ESTIMATORS)}")
    if sampling_log2_probability is None or not np.isfinite(sampling_log2_probability).all():
        raise ValueError("importance_bits needs every episode's pattern probability (pattern_log2_probability); "
                         "it is unknown or zero for some episodes")
    return -lz_code_length_bits(k_raw, alphabet) - np.asarray(sampling_log2_probability, dtype=np.float64)


@dataclass(frozen=True)
class WeightedEstimate:
    """A self-normalised weighted mean with its delta-method 95% CI and Kish effective sample size."""

    estimate: float
    ci95_low: float
    ci95_high: float
    effective_episodes: float
    episodes: int


def _weighted_interval(estimate: float, weight: float, spread: float, effective: float) -> tuple[float, float]:
    """Ŷ ± t(ESS - 1) · sqrt(spread) / Σw, spread = Σ w² (R̄ - Ŷ)²."""
    if not MIN_EFFECTIVE_EPISODES <= effective < math.inf:
        return math.nan, math.nan
    half = stats.t.ppf(0.975, effective - 1) * math.sqrt(max(spread, 0.0)) / weight
    return estimate - half, estimate + half


def weighted_estimate(values: np.ndarray, log2_weights: np.ndarray) -> WeightedEstimate:
    """Σ w V / Σ w with w = 2^log2_weights (scaled by the largest), its CI and ESS (module docstring)."""
    values, log2_weights = np.asarray(values, np.float64), np.asarray(log2_weights, np.float64)
    if len(values) == 0:
        return WeightedEstimate(math.nan, math.nan, math.nan, 0.0, 0)
    weights = np.exp2(log2_weights - log2_weights.max())
    total = weights.sum()
    estimate = float(np.sum(weights * values) / total)
    effective = float(total ** 2 / np.sum(weights ** 2))
    low, high = _weighted_interval(estimate, total, float(np.sum(weights ** 2 * (values - estimate) ** 2)), effective)
    return WeightedEstimate(estimate, low, high, effective, len(values))


@njit(cache=True, nogil=True)
def _grow_partials(partials, count, values):
    """Shewchuk's grow-expansion: each of `values` added exactly into the non-overlapping partials[:count]
    (the method of math.fsum); returns their new count. `partials` has room for count + len(values)."""
    for value in values:
        x = value
        i = 0
        for j in range(count):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            high = x + y
            low = y - (high - x)
            if low != 0.0:
                partials[i] = low
                i += 1
            x = high
        partials[i] = x
        count = i + 1
    return count


class ExactSum:
    """A float sum that does not depend on the order of its terms: Shewchuk's exact partials
    (Shewchuk 1997, "Adaptive precision floating-point arithmetic"; the method of math.fsum).
    Streamed batches of any size, in any order, give the same bits. Compiled (`_grow_partials`): in
    Python it cost ~26 µs per episode on the evaluation's own thread (issue 25)."""

    def __init__(self) -> None:
        self._partials = np.zeros(16)
        self._count = 0

    def add(self, values) -> None:
        values = np.ascontiguousarray(values, np.float64).ravel()
        if self._count + len(values) >= len(self._partials):  # room for one more partial per term
            grown = np.zeros(max(2 * len(self._partials), self._count + len(values) + 1))
            grown[:self._count] = self._partials[:self._count]
            self._partials = grown
        self._count = _grow_partials(self._partials, self._count, values)

    def scale(self, power_of_two: float) -> None:
        """Multiply by a power of two, exact unless it underflows."""
        self._partials[:self._count] *= power_of_two

    @property
    def value(self) -> float:
        return math.fsum(self._partials[:self._count])


class ScoreAccumulator:
    """Streaming Υ in constant memory, identical whatever the batching (see `ExactSum`)."""

    def __init__(self) -> None:
        self.count = 0
        self.reward_sum = ExactSum()
        self.reward_square_sum = ExactSum()
        self.k_sum = 0
        self.k_normalised_sum = ExactSum()
        # Legg-Hutter weights w are kept relative to 2^reference, an integer, so that rescaling is exact
        self.reference: int | None = None
        self.weight_sum = ExactSum()  # Σ w
        self.weighted_reward_sum = ExactSum()  # Σ w R̄
        self.square_weight_sums = (ExactSum(), ExactSum(), ExactSum())  # Σ w², Σ w² R̄, Σ w² R̄²

    def add(self, mean_rewards: np.ndarray, k_raw: np.ndarray, k_normalised: np.ndarray,
            legg_hutter_log2_weights: np.ndarray | None = None) -> None:
        """Fold in one batch: R̄ per episode (episodes,), the episodes' K, and log2 of their Legg–Hutter
        weights (`legg_hutter_log2_weights`; default -K, the "sampled_phrases" estimator)."""
        if len(mean_rewards) == 0:
            return
        self.count += len(mean_rewards)
        self.reward_sum.add(mean_rewards)
        self.reward_square_sum.add(mean_rewards * mean_rewards)
        self.k_sum += int(np.sum(k_raw, dtype=np.int64))
        self.k_normalised_sum.add(k_normalised)
        log2_weights = -k_raw.astype(np.float64) if legg_hutter_log2_weights is None else legg_hutter_log2_weights
        # w = 2^f · 2^(e - reference), f in [0, 1): the mantissa 2^f does not depend on the reference, and
        # the power of two is exact, so any batching gives the same terms.
        exponents = np.floor(log2_weights)
        mantissas = np.exp2(log2_weights - exponents)
        top = int(exponents.max())
        if self.reference is None or top > self.reference:
            if self.reference is not None:
                self.weight_sum.scale(2.0 ** (self.reference - top))
                self.weighted_reward_sum.scale(2.0 ** (self.reference - top))
                for square_sum in self.square_weight_sums:
                    square_sum.scale(4.0 ** (self.reference - top))
            self.reference = top
        shift = (exponents - self.reference).astype(np.int64)
        weights = np.ldexp(mantissas, shift)
        squares = np.ldexp(mantissas * mantissas, 2 * shift)
        self.weight_sum.add(weights)
        self.weighted_reward_sum.add(weights * mean_rewards)
        for square_sum, power in zip(self.square_weight_sums, range(3)):
            square_sum.add(squares * mean_rewards ** power)

    def estimate(self) -> UpsilonEstimate:
        if self.count == 0:
            raise ValueError("no episodes were scored")
        n = self.count
        mean = self.reward_sum.value / n
        variance = max(0.0, (self.reward_square_sum.value - self.reward_sum.value * mean) / (n - 1)) if n > 1 else 0.0
        std = math.sqrt(variance)
        half_width = stats.t.ppf(0.975, n - 1) * std / math.sqrt(n) if n >= MIN_EFFECTIVE_EPISODES else math.nan
        weight = self.weight_sum.value
        legg_hutter = self.weighted_reward_sum.value / weight
        squares, square_rewards, square_rewards_squared = (total.value for total in self.square_weight_sums)
        effective = weight * weight / squares
        spread = square_rewards_squared - 2 * legg_hutter * square_rewards + legg_hutter ** 2 * squares
        low, high = _weighted_interval(legg_hutter, weight, spread, effective)
        return UpsilonEstimate(
            upsilon=mean, ci95_low=mean - half_width, ci95_high=mean + half_width, std=std, episodes=n,
            upsilon_legg_hutter=legg_hutter, k_mean=self.k_sum / n, k_normalised_mean=self.k_normalised_sum.value / n,
            legg_hutter_ci95_low=low, legg_hutter_ci95_high=high, legg_hutter_effective_episodes=effective)
