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


class ScoreAccumulator:
    """Streaming Υ: merges batch moments (Chan, Golub & LeVeque 1983) so memory stays constant."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.k_sum = 0.0
        self.k_normalised_sum = 0.0
        self.k_reference: float | None = None  # weights are kept relative to 2^-k_reference
        self.weight_sum = 0.0
        self.weighted_reward_sum = 0.0

    def add(self, mean_rewards: np.ndarray, k_raw: np.ndarray, k_normalised: np.ndarray) -> None:
        """Fold in one batch: R̄ per episode (episodes,), and the episodes' K."""
        n = len(mean_rewards)
        if n == 0:
            return
        batch_mean = float(np.mean(mean_rewards))
        batch_m2 = float(np.sum((mean_rewards - batch_mean) ** 2))
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * n / total
        self.m2 += batch_m2 + delta * delta * self.count * n / total
        self.count = total
        self.k_sum += float(np.sum(k_raw))
        self.k_normalised_sum += float(np.sum(k_normalised))
        k_min = float(np.min(k_raw))
        if self.k_reference is None or k_min < self.k_reference:
            rescale = 2.0 ** (k_min - self.k_reference) if self.k_reference is not None else 1.0
            self.weight_sum *= rescale
            self.weighted_reward_sum *= rescale
            self.k_reference = k_min
        weights = np.exp2(self.k_reference - k_raw.astype(np.float64))  # 2^-K relative to 2^-k_ref
        self.weight_sum += float(np.sum(weights))
        self.weighted_reward_sum += float(np.sum(weights * mean_rewards))

    def estimate(self) -> UpsilonEstimate:
        if self.count == 0:
            raise ValueError("no episodes were scored")
        std = math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0
        half_width = (stats.t.ppf(0.975, self.count - 1) * std / math.sqrt(self.count)
                      if self.count > 1 else math.inf)
        return UpsilonEstimate(
            upsilon=self.mean, ci95_low=self.mean - half_width, ci95_high=self.mean + half_width,
            std=std, episodes=self.count,
            upsilon_legg_hutter=self.weighted_reward_sum / self.weight_sum,
            k_mean=self.k_sum / self.count, k_normalised_mean=self.k_normalised_sum / self.count)
