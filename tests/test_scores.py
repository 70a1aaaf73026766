import math

import numpy as np
import pytest
from scipy import stats

from collective.analysis.scores import (ExactSum, ScoreAccumulator, legg_hutter_log2_weights, lz_code_length_bits,
                                         weighted_estimate)


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


def test_lz_code_length_is_phrases_times_pointer_and_symbol_bits():
    # c (log2 c + log2 α): 1 phrase over 16 symbols = 4 bits; 8 phrases over 2 symbols = 8 (3 + 1) bits
    np.testing.assert_allclose(lz_code_length_bits(np.array([1, 8]), 16), [4.0, 8 * (3 + 4)])
    assert lz_code_length_bits(np.array([8]), 2)[0] == 32.0


def _population(seed: int = 7):
    """60 distinct environments of 1-3 phrases over 2 symbols with values V and a sampling distribution q
    that favours high V and 3 phrases; the Legg-Hutter target Σ 2^-K V / Σ 2^-K, K in bits."""
    rng = np.random.default_rng(seed)
    phrases = np.repeat([1, 2, 3], [10, 20, 30])
    values = rng.uniform(-0.8, 0.8, len(phrases))
    sampling = np.exp(1.5 * values) * np.where(phrases == 3, 4.0, 1.0)
    sampling /= sampling.sum()
    prior = 2.0 ** -lz_code_length_bits(phrases, 2)
    return phrases, values, sampling, float(np.sum(prior * values) / prior.sum())


def test_importance_weighted_legg_hutter_is_unbiased_and_covers_while_phrase_weighting_is_biased():
    """400 seeded replications of 4000 episodes drawn from q with noisy scores: the importance estimate's
    mean is within 3 standard errors of the target and its 95% CI covers it at about the nominal rate;
    today's 2^-c weighting of the sampled episodes misses the target by far more than its error."""
    phrases, values, sampling, target = _population()
    rng = np.random.default_rng(11)
    importance, coverage, effective, today = [], 0, [], []
    for _ in range(400):
        drawn = rng.choice(len(phrases), 4000, p=sampling)
        scores = values[drawn] + rng.normal(0, 0.3, len(drawn))
        weights = legg_hutter_log2_weights("importance_bits", phrases[drawn], 2, np.log2(sampling[drawn]))
        estimate = weighted_estimate(scores, weights)
        importance.append(estimate.estimate)
        coverage += estimate.ci95_low <= target <= estimate.ci95_high
        effective.append(estimate.effective_episodes)
        today.append(weighted_estimate(scores, legg_hutter_log2_weights("sampled_phrases", phrases[drawn], 2)).estimate)
    standard_error = np.std(importance) / math.sqrt(len(importance))
    assert abs(np.mean(importance) - target) < 3 * standard_error
    assert 0.91 <= coverage / 400 <= 0.98
    assert 100 < np.mean(effective) < 4000
    assert abs(np.mean(today) - target) > 20 * np.std(today) / math.sqrt(len(today))


def test_importance_weights_need_every_pattern_probability():
    with pytest.raises(ValueError, match="pattern_log2_probability"):
        legg_hutter_log2_weights("importance_bits", np.array([2, 3]), 9, np.array([-3.0, np.nan]))
    with pytest.raises(ValueError, match="allowed"):
        legg_hutter_log2_weights("phrases", np.array([2]), 9)


@pytest.mark.parametrize("spread", [600, 6])
def test_streamed_legg_hutter_matches_the_direct_estimate_bitwise_whatever_the_batching(spread):
    """Fractional log2 weights (bits, probabilities) spanning 2^±600, or 2^±6: the streamed estimate
    equals the direct one, and its CI and ESS do not depend on the batching. Over 2^600 one episode
    carries the weight (ESS < 2): no interval, in both (MIN_EFFECTIVE_EPISODES)."""
    rng = np.random.default_rng(3)
    rewards = rng.uniform(-1, 1, 2000)
    k = rng.integers(1, 40, 2000)
    log2_weights = legg_hutter_log2_weights("importance_bits", k, 100, rng.uniform(-spread, -1, 2000))
    direct = weighted_estimate(rewards, log2_weights)
    results = []
    for cuts in ([1000], [1, 2, 1999], list(range(0, 2000, 13))):
        accumulator = ScoreAccumulator()
        for chunk in np.array_split(np.arange(2000), cuts):
            accumulator.add(rewards[chunk], k[chunk], k[chunk] / 7.0, log2_weights[chunk])
        results.append(accumulator.estimate())
    assert repr(results[0]) == repr(results[1]) == repr(results[2])  # NaN-aware equality
    assert results[0].upsilon_legg_hutter == pytest.approx(direct.estimate, rel=1e-12)
    assert results[0].legg_hutter_effective_episodes == pytest.approx(direct.effective_episodes, rel=1e-9)
    assert results[0].legg_hutter_ci95_low == pytest.approx(direct.ci95_low, rel=1e-9, nan_ok=True)
    assert math.isnan(direct.ci95_low) == (direct.effective_episodes < 2) == (spread == 600)


def test_exact_sum_is_the_correctly_rounded_sum_whatever_the_batches():
    """Known answer: math.fsum of all the terms, for terms that cancel across 30 orders of magnitude (a plain
    float sum of these gives 0 or garbage), in batches of any size and order, scaled by powers of two."""
    rng = np.random.default_rng(3)
    terms = np.concatenate([rng.normal(size=3000) * 10.0 ** rng.integers(-15, 16, 3000), [1e16, 1.0, -1e16]])
    assert math.fsum(terms) != float(np.sum(terms))  # the case a plain sum gets wrong
    for cuts in ([], [1], [7, 100, 2999], list(range(0, 3003, 250))):
        order = rng.permutation(len(terms))
        total = ExactSum()
        for part in np.split(terms[order], cuts):
            total.add(part)
        assert total.value == math.fsum(terms)
        total.scale(2.0 ** -10)
        assert total.value == math.fsum(terms * 2.0 ** -10)


def test_an_evaluation_weights_by_pattern_probability_only_under_importance_bits():
    """Known answer: under importance_bits `evaluate`'s Legg-Hutter Υ is the weighted mean of the episodes' R̄
    with w = 2^(-K bits - log2 q) computed here from the same episodes; under sampled_phrases, with w = 2^-K."""
    from collective.config import EvaluationConfig
    from collective.environments.pattern_probability import pattern_log2_probabilities
    from collective.evaluate import evaluate
    from collective.evaluation.environments import generate_environments
    from collective.evaluation.play import play
    from collective.analysis.scores import weighted_estimate
    for estimator in ("importance_bits", "sampled_phrases"):
        config = EvaluationConfig.from_profile("paper", rows=5, cols=5, iterations=20, episodes=300, group_size=2,
                                               legg_hutter_estimator=estimator)
        environments = generate_environments(config, np.arange(300))
        rewards = play(config, environments).mean_rewards
        weights = legg_hutter_log2_weights(estimator, environments.k_raw, 25,
                                           pattern_log2_probabilities(config, environments))
        direct = weighted_estimate(rewards, weights).estimate
        assert evaluate(config).estimate.upsilon_legg_hutter == pytest.approx(direct, rel=1e-12)
