"""Fitness landscapes (spec §7, paper 003 §6.2): the field's promised structure, its correlation
length against analytic answers and an independent random walk (Weinberger 1990), the optimum's
pay, H, the renamed setting, and seeded statistical facts about who does well on a landscape."""
import dataclasses
import math
import tomllib

import numpy as np
import pytest
from scipy import stats

from collective.adapters.scenes import environment_config
from collective.config import ConfigError, EvaluationConfig
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
from collective.environments.landscapes import (KING_MOVES, cone_mass_bound, correlation_length, count_local_optima,
                                                landscape_field, walk_autocorrelation)
from collective.simulation.reference import ReferenceWorld
from collective.sweeps.spec import SpecError, parse_spec
from sweep_support import TINY_SPEC


def field(seed, rows, cols, peaks, width, deception=0.5, noise=0.0, normalisation="centre"):
    return landscape_field(np.random.default_rng(seed), rows, cols, peaks, width, deception,
                           noise=noise, normalisation=normalisation)


def fields(seeds, rows, cols, peaks, width, **shape):
    """(len(seeds), cells) fields."""
    return np.array([field(s, rows, cols, peaks, width, **shape)[0] for s in seeds])


@pytest.mark.parametrize("rows, cols, peaks, width, deception", [
    (20, 20, 8, 1, 0.5), (15, 25, 12, 0, 0.9), (30, 30, 5, 4, 0.0), (10, 10, 1, 1, 0.5)])
@pytest.mark.parametrize("normalisation", ["centre", "optimum_one"])
def test_field_has_one_global_optimum_and_the_requested_local_optima(rows, cols, peaks, width, deception,
                                                                      normalisation):
    for seed in range(20):
        values, optimum = field(seed, rows, cols, peaks, width, deception, normalisation=normalisation)
        assert count_local_optima(values[None], rows, cols)[0] == peaks
        assert np.sum(values == values.max()) == 1 and values.argmax() == optimum
        assert abs(values.mean()) < 1e-12  # centred: a uniformly spread agent expects 0
        assert values.min() >= -1 and values.max() <= 1


def test_deception_raises_the_secondary_optima_and_keeps_their_number():
    def lead(deception):
        leads = []
        for seed in range(30):
            values, optimum = field(seed, 20, 20, 6, 1, deception)
            peaks = np.sort(values[values > np.max(np.stack([np.roll(values.reshape(20, 20), s, axis=a).ravel()
                                                              for s in (-1, 1) for a in (0, 1)]), axis=0)])
            assert len(peaks) == 6
            leads.append(peaks[-1] - peaks[-2])  # the global optimum's lead over the next peak
        return np.mean(leads)
    assert lead(0.9) < lead(0.0)


# --- correlation length: ρ(1) along a random walk of king moves (Weinberger 1990) ---------------------

def test_walk_autocorrelation_of_a_periodic_field_is_the_analytic_one():
    """f = cos(2πr/R) + cos(2πc/C): the two waves have variance 1/2 each and no cross-covariance over full
    periods, and a king move changes r by -1, 0, +1 in 3, 2, 3 of its 8 directions, so
    ρ(1) = [(2 + 6 cos(2π/R))/8 + (2 + 6 cos(2π/C))/8] / 2. Horizontal and vertical pairs alone
    (the measure this replaces) give (2 + cos(2π/R) + cos(2π/C))/4 instead."""
    for rows, cols in [(12, 20), (7, 7), (3, 30)]:
        r, c = np.divmod(np.arange(rows * cols), cols)
        values = np.cos(2 * np.pi * r / rows) + np.cos(2 * np.pi * c / cols)
        a, b = np.cos(2 * np.pi / rows), np.cos(2 * np.pi / cols)
        rho = ((2 + 6 * a) / 8 + (2 + 6 * b) / 8) / 2
        assert walk_autocorrelation(values[None], rows, cols)[0] == pytest.approx(rho, abs=1e-12)
        assert correlation_length(values[None], rows, cols)[0] == pytest.approx(-1 / math.log(rho), rel=1e-12)
        assert abs(rho - (2 + a + b) / 4) > 1e-3  # the two measures differ on these fields


def test_walk_autocorrelation_matches_a_direct_sum_over_every_cell_and_move():
    """f = r on a torus of 9 rows (a ramp with a seam): Cov(f(x), f(x + move)) / Var f summed cell by cell."""
    rows, cols = 9, 4
    values = np.repeat(np.arange(rows, dtype=float), cols)
    mean, variance = values.mean(), values.var()
    def neighbour(i, dr, dc):
        return ((i // cols + dr) % rows) * cols + (i % cols + dc) % cols
    covariance = np.mean([(values[i] - mean) * (values[neighbour(i, dr, dc)] - mean)
                          for i in range(rows * cols) for dr, dc in KING_MOVES])
    assert walk_autocorrelation(values[None], rows, cols)[0] == pytest.approx(covariance / variance, abs=1e-12)


def sampled_walk_rho(values, rows, cols, steps, rng):
    """Weinberger's estimator r(1) from one seeded walk of uniformly random king moves (no stays)."""
    moves = np.array(KING_MOVES)[rng.integers(8, size=steps)]
    start = int(rng.integers(rows * cols))
    r = (start // cols + np.concatenate([[0], np.cumsum(moves[:, 0])])) % rows
    c = (start % cols + np.concatenate([[0], np.cumsum(moves[:, 1])])) % cols
    series = values[r * cols + c] - values[r * cols + c].mean()
    return np.sum(series[:-1] * series[1:]) / np.sum(series ** 2)


@pytest.mark.parametrize("rows, cols, peaks, width, noise", [(20, 20, 8, 1, 0.0), (16, 24, 6, 2, 0.3)])
def test_walk_autocorrelation_is_what_a_long_random_walk_measures(rows, cols, peaks, width, noise):
    """The exact expectation equals the sampled walk's estimate (sd about 0.003 at 2e5 steps)."""
    for seed in range(3):
        values, _ = field(seed, rows, cols, peaks, width, noise=noise)
        walked = sampled_walk_rho(values, rows, cols, 200_000, np.random.default_rng(100 + seed))
        assert walk_autocorrelation(values[None], rows, cols)[0] == pytest.approx(walked, abs=0.015)


def test_uncorrelated_field_has_no_correlation():
    """i.i.d. fitness: E ρ(1) = -1/(N-1) (the deviations sum to 0), so ℓ is 0 or near it."""
    rng = np.random.default_rng(5)
    noise = rng.random((400, 15 * 15))
    rho = walk_autocorrelation(noise, 15, 15)
    assert abs(rho.mean() + 1 / 224) < 3 * rho.std(ddof=1) / math.sqrt(len(rho))
    assert np.median(correlation_length(noise, 15, 15)) < 0.3


def test_constant_field_has_infinite_correlation_length():
    assert correlation_length(np.full((1, 25), 0.3), 5, 5)[0] == math.inf


def test_correlation_length_grows_with_peak_width():
    def mean_length(width):
        return correlation_length(fields(range(10), 30, 30, 10, width), 30, 30).mean()
    assert mean_length(0) == 0  # one-cell spikes: neighbouring fitness is uncorrelated
    assert 0 < mean_length(1) < mean_length(2) < mean_length(4)


def test_noise_shortens_the_correlation_length_and_multiplies_local_optima():
    """Ruggedness proper: ℓ falls monotonically with the noise weight (by more than 5 standard errors a
    step), while deception leaves it near where it was; local optima go from `peaks` to the N/9 of
    a random field (each cell beats its 8 neighbours with probability 1/9)."""
    rows = cols = 20
    lengths, optima = [], []
    for noise in (0.0, 0.25, 0.5, 0.75, 1.0):
        sample = fields(range(40), rows, cols, 8, 2, noise=noise, normalisation="optimum_one")
        length = correlation_length(sample, rows, cols)
        lengths.append((length.mean(), length.std(ddof=1) / math.sqrt(len(length))))
        optima.append(count_local_optima(sample, rows, cols).mean())
    for (longer, se_a), (shorter, se_b) in zip(lengths, lengths[1:]):
        assert longer - shorter > 5 * math.hypot(se_a, se_b)
    assert lengths[0][0] > 2 and lengths[-1][0] < 0.3
    assert optima[0] == 8 and all(a < b for a, b in zip(optima[1:], optima[2:]))
    assert optima[-1] == pytest.approx(rows * cols / 9, rel=0.1)
    deceived = [correlation_length(fields(range(40), rows, cols, 8, 2, deception=d), rows, cols).mean()
                for d in (0.0, 1.0)]
    assert abs(deceived[0] - deceived[1]) < (lengths[0][0] - lengths[1][0]) / 2


# --- rewards: the optimum pays 1 under "optimum_one" -------------------------------------------------

@pytest.mark.parametrize("rows, cols, peaks, width", [(5, 5, 1, 1), (10, 10, 8, 1), (20, 20, 8, 2), (9, 31, 4, 3)])
@pytest.mark.parametrize("noise", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("deception", [0.0, 1.0])
def test_optimum_pays_one_after_centring(rows, cols, peaks, width, noise, deception):
    assert cone_mass_bound(rows, cols, peaks, width) <= 0.5  # within what the config accepts
    for seed in range(10):
        values, optimum = field(seed, rows, cols, peaks, width, deception, noise, "optimum_one")
        assert values[optimum] == pytest.approx(1.0, abs=1e-12) and np.sum(values >= values[optimum]) == 1
        assert abs(values.mean()) < 1e-12 and values.min() >= -1 - 1e-12
        if noise == 1.0:  # pure ranks: mean 1/2, lowest rank 0, so the lowest cell pays exactly -1
            assert values.min() == pytest.approx(-1.0, abs=1e-12)


def test_centred_optimum_pays_one_minus_the_cones_mean_within_the_bound():
    """'centre' pays 1 - mean at the optimum (0.63..0.99 over grids), the mean below `cone_mass_bound`."""
    for rows, peaks, width in [(10, 8, 1), (20, 8, 2), (30, 5, 4), (12, 9, 1)]:
        for seed in range(20):
            values, optimum = field(seed, rows, rows, peaks, width, deception=1.0)
            assert 1 - values[optimum] <= cone_mass_bound(rows, rows, peaks, width) + 1e-12


def test_the_sound_profile_pays_one_at_the_optimum_of_every_step():
    config = EvaluationConfig.from_profile("sound", behaviour="oracle", env="landscape", rows=12, cols=12,
                                           iterations=50, landscape_peaks=4, landscape_noise=0.3)
    env = generate_environments(config, np.arange(5))
    for e in range(5):
        world = ReferenceWorld(12, 12, 50, landscape=tuple(env.landscapes[e]))
        for t in range(51):
            pays = world.payoffs(list(env.good[e]), list(env.evil[e]), t)
            assert pays(int(env.good[e, t])) == pytest.approx(1.0, abs=1e-12)
            assert max(pays(c) for c in range(144)) == pytest.approx(1.0, abs=1e-12)


def test_optimum_one_refuses_peaks_that_could_pay_below_minus_one():
    """8 high cones of width 3 on 15x15 hold more than half the mass: scaled to pay 1 at the optimum,
    some field's lowest cells would pay below -1, so the configuration is refused."""
    assert all(field(s, 15, 15, 8, 3, 1.0, normalisation="optimum_one")[0].min() < -1 for s in range(5))
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("sound", env="landscape", rows=15, cols=15, landscape_peaks=8,
                                      landscape_peak_width=3)
    assert error.value.field == "landscape_normalisation" and "-1" in error.value.message
    EvaluationConfig.from_profile("paper", env="landscape", rows=15, cols=15, landscape_peaks=8,
                                  landscape_peak_width=3)  # centring alone never leaves [-1, 1]


# --- H: the global optimum's start cell is uniform over the N cells ------------------------------------

def test_landscape_entropy_is_the_optimum_cells_uncertainty():
    """H = log2 N: the optimum's start cell is uniform (chi-square over 6x6 cells), and the per-row
    column says so under 'optimum'; 'lambda_star' keeps Λ*'s log2 N(N-1)."""
    cells = [field(seed, 6, 6, 2, 1)[1] for seed in range(3600)]
    counts = np.bincount(cells, minlength=36)
    assert stats.chisquare(counts).pvalue > 1e-3
    frequencies = counts / counts.sum()
    assert -np.sum(frequencies * np.log2(frequencies)) == pytest.approx(math.log2(36), abs=0.02)
    sound = dict(behaviour="random", env="landscape", rows=6, cols=6, iterations=50, episodes=8, landscape_peaks=2)
    assert evaluate(EvaluationConfig.from_profile("sound", **sound)).as_record()["entropy_bits"] == math.log2(36)
    assert evaluate(EvaluationConfig.from_profile("paper", **sound)).as_record()["entropy_bits"] == \
        pytest.approx(math.log2(36 * 35))


# --- the renamed setting is refused wherever it can be given ------------------------------------------

def test_the_old_ruggedness_name_is_refused_naming_the_new_fields():
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("paper", env="landscape", landscape_ruggedness=0.8)
    assert error.value.field == "landscape_ruggedness"
    assert "landscape_deception" in error.value.message and "landscape_noise" in error.value.message
    with pytest.raises(ConfigError, match="landscape_deception"):
        environment_config("landscape", landscape_ruggedness=0.8)
    with pytest.raises(SpecError) as spec_error:
        source = tomllib.loads(TINY_SPEC)
        source["settings"]["landscape_ruggedness"] = 0.8
        parse_spec(source)
    assert spec_error.value.path == "settings.landscape_ruggedness"
    assert "landscape_deception" in spec_error.value.message


# --- play ------------------------------------------------------------------------------------------

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
    assert env.correlation_length == pytest.approx(correlation_length(env.landscapes, 12, 12))


def landscape(behaviour, **settings):
    base = dict(env="landscape", rows=20, cols=20, episodes=300, seed=3, landscape_peaks=10,
                landscape_deception=0.8)
    return evaluate(EvaluationConfig.from_profile("paper", behaviour=behaviour, **{**base, **settings})).estimate


def test_random_agent_scores_zero_on_landscapes():
    estimate = landscape("random", episodes=3000, iterations=100, group_size=2)
    assert abs(estimate.upsilon) < 0.01 and estimate.ci95_low < 0 < estimate.ci95_high


@pytest.mark.parametrize("profile", ["paper", "sound"])
def test_oracle_is_near_the_top(profile):
    config = EvaluationConfig.from_profile(profile, behaviour="oracle", env="landscape", rows=20, cols=20,
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
                                           landscape_deception=0.8)
    env = generate_environments(config, np.arange(400))
    gain = play(config.with_changes(protocol=protocol), env).mean_rewards - play(config, env).mean_rewards
    assert gain.mean() - 1.96 * gain.std(ddof=1) / math.sqrt(len(gain)) > 0


@pytest.mark.parametrize("settings, field_name", [
    (dict(landscape_peaks=0), "landscape_peaks"),
    (dict(landscape_peaks=200, rows=10, cols=10), "landscape_peaks"),
    (dict(landscape_peak_width=-1), "landscape_peak_width"),
    (dict(landscape_deception=1.5), "landscape_deception"),
    (dict(landscape_noise=-0.1), "landscape_noise"),
    (dict(landscape_normalisation="max"), "landscape_normalisation"),
    (dict(landscape_entropy="bits"), "landscape_entropy"),
    (dict(landscape_motion="spin"), "landscape_motion"),
    (dict(coordination_threshold=2, group_size=3), "coordination_threshold"),
    (dict(env="maze"), "env"),
])
def test_invalid_landscape_settings_are_refused(settings, field_name):
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("paper", behaviour="local_search", **{"env": "landscape", **settings})
    assert error.value.field == field_name


def test_a_scene_refuses_a_field_it_would_misread():
    """A scene reads its field by address, 8-byte values one after another from the first: a
    column-major or float32 field would be misread without an error, so compiling against one is
    refused, and `EnvironmentBatch.fields` hands the kernels C-contiguous float64."""
    from numba.core.errors import TypingError

    from collective.simulation.stepping import scene_at

    good = evil = np.zeros((2, 3), np.int64)
    field = np.arange(8.0).reshape(2, 4)
    assert scene_at(good, evil, field, 1, 0, 2, 2, 1).landscape.cells == 4
    for misread in (np.asfortranarray(field), field.astype(np.float32)):
        with pytest.raises(TypingError, match="field_ref"):
            scene_at(good, evil, misread, 1, 0, 2, 2, 1)
    env = generate_environments(EvaluationConfig(env="landscape", rows=4, cols=4, iterations=5, episodes=2,
                                                 landscape_peaks=1), np.arange(2))
    narrow = dataclasses.replace(env, landscapes=np.asfortranarray(env.landscapes.astype(np.float32)))
    fields = narrow.fields()
    assert fields.dtype == np.float64 and fields.flags.c_contiguous and np.array_equal(fields, env.landscapes)
