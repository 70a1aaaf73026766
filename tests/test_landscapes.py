"""Fitness landscapes (spec §7, paper 003 §6.2): the field's promised structure, and seeded
statistical facts about who does well on it."""
import math

import numpy as np
import pytest

from collective.config import ConfigError, EvaluationConfig
from collective.evaluate import evaluate, generate_environments, play
from collective.environments.landscapes import correlation_length, count_local_optima, landscape_field
from collective.simulation.reference import ReferenceWorld


@pytest.mark.parametrize("rows, cols, peaks, width, ruggedness", [
    (20, 20, 8, 1, 0.5), (15, 25, 12, 0, 0.9), (30, 30, 5, 4, 0.0), (10, 10, 1, 1, 0.5)])
def test_field_has_one_global_optimum_and_the_requested_local_optima(rows, cols, peaks, width, ruggedness):
    for seed in range(20):
        field, optimum = landscape_field(np.random.default_rng(seed), rows, cols, peaks, width, ruggedness)
        assert count_local_optima(field, rows, cols) == peaks
        assert np.sum(field == field.max()) == 1 and field.argmax() == optimum
        assert abs(field.mean()) < 1e-12  # centred: a uniformly spread agent expects 0
        assert field.min() >= -1 and field.max() <= 1


def test_ruggedness_raises_the_secondary_optima():
    def second_best(ruggedness):
        values = []
        for seed in range(30):
            field, _ = landscape_field(np.random.default_rng(seed), 20, 20, 6, 1, ruggedness)
            peaks = np.sort(field[field > np.max(np.stack([np.roll(field.reshape(20, 20), s, axis=a).ravel()
                                                              for s in (-1, 1) for a in (0, 1)]), axis=0)])
            values.append(peaks[-1] - peaks[-2])  # the global optimum's lead over the next peak
        return np.mean(values)
    assert second_best(0.9) < second_best(0.0)


def test_correlation_length_grows_with_peak_width():
    def mean_length(width):
        return np.mean([correlation_length(landscape_field(np.random.default_rng(s), 30, 30, 10, width, 0.5)[0],
                                           30, 30) for s in range(10)])
    assert mean_length(0) == 0  # one-cell spikes: neighbouring fitness is uncorrelated
    assert 0 < mean_length(1) < mean_length(2) < mean_length(4)


def test_the_field_moves_with_its_global_optimum():
    config = EvaluationConfig.from_profile("paper", behaviour="random", env="landscape", rows=12, cols=12,
                                           iterations=30, landscape_peaks=4)
    env = generate_environments(config, np.arange(3))
    world = ReferenceWorld(12, 12, 30)
    for e in range(3):
        world_e = ReferenceWorld(12, 12, 30, landscape=tuple(env.landscapes[e]))
        for t in range(31):
            pays = world_e.payoffs(list(env.good[e]), list(env.evil[e]), t)
            values = [pays(c) for c in range(144)]
            assert int(np.argmax(values)) == env.good[e, t]  # ⊕'s path is the optimum's
            assert world.distance(int(env.good[e, t]), int(env.good[e, max(t - 1, 0)])) <= 1
    assert (env.local_optima == 4).all()


def landscape(behaviour, **settings):
    base = dict(env="landscape", rows=20, cols=20, episodes=300, seed=3, landscape_peaks=10,
                landscape_ruggedness=0.8)
    return evaluate(EvaluationConfig.from_profile("paper", behaviour=behaviour, **{**base, **settings})).estimate


def test_random_agent_scores_zero_on_landscapes():
    estimate = landscape("random", episodes=3000, iterations=100, group_size=2)
    assert abs(estimate.upsilon) < 0.01 and estimate.ci95_low < 0 < estimate.ci95_high


def test_oracle_is_near_the_top():
    config = EvaluationConfig.from_profile("paper", behaviour="oracle", env="landscape", rows=20, cols=20,
                                           episodes=200, seed=3)
    env = generate_environments(config, np.arange(200))
    best_possible = env.landscapes.max(axis=1).mean()  # standing on the global optimum throughout
    assert play(config, env).mean_rewards.mean() > 0.9 * best_possible


def test_local_search_gets_stuck_below_the_oracle():
    alone = landscape("local_search", group_size=8)
    oracle = landscape("oracle", group_size=8)
    assert alone.ci95_high < oracle.ci95_low - 0.2  # stuck on local optima of a rugged field


@pytest.mark.parametrize("protocol", ["broadcast", "wisdom"])
def test_collectives_help_local_search_on_rugged_fields(protocol):
    """Paired on the same 400 fields: hearing the group's best find beats searching alone."""
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=8, env="landscape",
                                           rows=20, cols=20, episodes=400, seed=3, landscape_peaks=10,
                                           landscape_ruggedness=0.8)
    env = generate_environments(config, np.arange(400))
    gain = play(config.with_changes(protocol=protocol), env).mean_rewards - play(config, env).mean_rewards
    assert gain.mean() - 1.96 * gain.std(ddof=1) / math.sqrt(len(gain)) > 0


@pytest.mark.parametrize("settings, field", [
    (dict(landscape_peaks=0), "landscape_peaks"),
    (dict(landscape_peaks=200, rows=10, cols=10), "landscape_peaks"),
    (dict(landscape_peak_width=-1), "landscape_peak_width"),
    (dict(landscape_ruggedness=1.5), "landscape_ruggedness"),
    (dict(landscape_motion="spin"), "landscape_motion"),
    (dict(coordination_threshold=2, group_size=3), "coordination_threshold"),
    (dict(env="maze"), "env"),
])
def test_invalid_landscape_settings_are_refused(settings, field):
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("paper", behaviour="local_search", **{"env": "landscape", **settings})
    assert error.value.field == field
