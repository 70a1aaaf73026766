"""Scores (spec §4): per-episode R̄, collective intelligence Υ with a 95% confidence interval,
and the Legg–Hutter 2^-K-weighted Υ, accumulated over streamed batches in constant memory."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class UpsilonEstimate:
    upsilon: float  # Υ = mean of R̄ over episodes (paper 003 Definition 3)
    ci95_low: float
    ci95_high: float
    std: float  # sample standard deviation of R̄
    episodes: int
    upsilon_legg_hutter: float  # Σ 2^-K R̄ / Σ 2^-K (Legg & Hutter, paper 001)
    k_mean: float
    k_normalised_mean: float


class ExactSum:
    """A float sum that does not depend on the order of its terms: Shewchuk's exact partials
    (Shewchuk 1997, "Adaptive precision floating-point arithmetic"; the method of math.fsum).
    Streamed batches of any size, in any order, give the same bits."""

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, values) -> None:
        partials = self.partials
        for x in map(float, values):
            i = 0
            for y in partials:
                if abs(x) < abs(y):
                    x, y = y, x
                high = x + y
                low = y - (high - x)
                if low:
                    partials[i] = low
                    i += 1
                x = high
            partials[i:] = [x]

    def scale(self, power_of_two: float) -> None:
        """Multiply by a power of two, exact unless it underflows."""
        self.partials = [p * power_of_two for p in self.partials]

    @property
    def value(self) -> float:
        return math.fsum(self.partials)


class ScoreAccumulator:
    """Streaming Υ in constant memory, identical whatever the batching (see `ExactSum`)."""

    def __init__(self) -> None:
        self.count = 0
        self.reward_sum = ExactSum()
        self.reward_square_sum = ExactSum()
        self.k_sum = 0
        self.k_normalised_sum = ExactSum()
        self.k_reference: int | None = None  # Legg-Hutter weights are kept relative to 2^-k_reference
        self.weight_sum = ExactSum()
        self.weighted_reward_sum = ExactSum()

    def add(self, mean_rewards: np.ndarray, k_raw: np.ndarray, k_normalised: np.ndarray) -> None:
        """Fold in one batch: R̄ per episode (episodes,), and the episodes' K."""
        if len(mean_rewards) == 0:
            return
        self.count += len(mean_rewards)
        self.reward_sum.add(mean_rewards)
        self.reward_square_sum.add(mean_rewards * mean_rewards)
        self.k_sum += int(np.sum(k_raw, dtype=np.int64))
        self.k_normalised_sum.add(k_normalised)
        k_min = int(np.min(k_raw))
        if self.k_reference is None or k_min < self.k_reference:
            if self.k_reference is not None:
                self.weight_sum.scale(2.0 ** (k_min - self.k_reference))
                self.weighted_reward_sum.scale(2.0 ** (k_min - self.k_reference))
            self.k_reference = k_min
        weights = np.exp2(self.k_reference - k_raw.astype(np.float64))  # 2^-K relative to 2^-k_ref
        self.weight_sum.add(weights)
        self.weighted_reward_sum.add(weights * mean_rewards)

    def estimate(self) -> UpsilonEstimate:
        if self.count == 0:
            raise ValueError("no episodes were scored")
        n = self.count
        mean = self.reward_sum.value / n
        variance = max(0.0, (self.reward_square_sum.value - self.reward_sum.value * mean) / (n - 1)) if n > 1 else 0.0
        std = math.sqrt(variance)
        half_width = stats.t.ppf(0.975, n - 1) * std / math.sqrt(n) if n > 1 else math.inf
        return UpsilonEstimate(
            upsilon=mean, ci95_low=mean - half_width, ci95_high=mean + half_width, std=std, episodes=n,
            upsilon_legg_hutter=self.weighted_reward_sum.value / self.weight_sum.value,
            k_mean=self.k_sum / n, k_normalised_mean=self.k_normalised_sum.value / n)
