import math

import numpy as np
import pytest
from scipy import stats

from collective.analysis.scores import ScoreAccumulator


def test_streamed_batches_match_direct_statistics():
    rng = np.random.default_rng(0)
    rewards = rng.uniform(-1, 1, 1000)
    k = rng.integers(2, 40, 1000)
    accumulator = ScoreAccumulator()
    for chunk in np.array_split(np.arange(1000), [7, 100, 101, 640]):
        accumulator.add(rewards[chunk], k[chunk], k[chunk] / 10)
    estimate = accumulator.estimate()
    assert estimate.upsilon == pytest.approx(rewards.mean())
    assert estimate.std == pytest.approx(rewards.std(ddof=1))
    half = stats.t.ppf(0.975, 999) * rewards.std(ddof=1) / math.sqrt(1000)
    assert estimate.ci95_high - estimate.ci95_low == pytest.approx(2 * half)
    weights = 2.0 ** -k.astype(float)  # Legg & Hutter: simple environments weigh more
    assert estimate.upsilon_legg_hutter == pytest.approx(np.sum(weights * rewards) / weights.sum())
    assert estimate.k_mean == pytest.approx(k.mean())


def test_legg_hutter_weighting_survives_extreme_complexities():
    accumulator = ScoreAccumulator()
    accumulator.add(np.array([0.5]), np.array([3000]), np.array([1.0]))
    accumulator.add(np.array([-0.5, 0.25]), np.array([3001, 3000]), np.array([1.0, 1.0]))
    # weights 2^-3000 : 2^-3001 : 2^-3000 = 2 : 1 : 2
    assert accumulator.estimate().upsilon_legg_hutter == pytest.approx((1.0 - 0.5 + 0.5) / 5)


def test_empty_accumulator_refuses_to_estimate():
    with pytest.raises(ValueError):
        ScoreAccumulator().estimate()


def test_estimate_is_bitwise_independent_of_batching():
    rng = np.random.default_rng(1)
    rewards = rng.uniform(-1, 1, 3000) * 10.0 ** rng.integers(-8, 1, 3000)  # mixed magnitudes
    k = rng.integers(2, 60, 3000)
    estimates = []
    for cuts in ([1500], [1, 2, 3, 2999], list(range(0, 3000, 7))):
        accumulator = ScoreAccumulator()
        for chunk in np.array_split(np.arange(3000), cuts):
            accumulator.add(rewards[chunk], k[chunk], k[chunk] / 7)
        estimates.append(accumulator.estimate())
    assert estimates[0] == estimates[1] == estimates[2]
