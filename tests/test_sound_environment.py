"""The `sound` profile's environment (issue 12 points 1-3): each confound shown present under `paper`
and gone under `sound`, on fixed seeds, with independent references (antropy's LZ76, exact
distance distributions, scipy's two-sample tests)."""
import math

import antropy
import numpy as np
import pytest
from scipy import stats

from collective.config import ConfigError, EvaluationConfig
from collective.environments.complexity import alphabet_normalised, lz76_phrase_count_at_most, lz76_rows
from collective.environments.lambda_star import LambdaStar
from collective.environments.patterns import CyclicPatternGenerator, StratifiedComplexity
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments

SOUND_K = range(2, 24)


def environments(profile, side, episodes, iterations=100, seed=11, **changes):
    config = EvaluationConfig.from_profile(profile, rows=side, cols=side, iterations=iterations, seed=seed, **changes)
    return config, generate_environments(config, np.arange(episodes))


def antropy_k(path) -> int:
    return int(antropy.lziv_complexity(np.asarray(path, np.int64), normalize=False))


def torus_offsets(batch, side):
    """(episodes, T+1) ⊖ - ⊕ displacement rows and columns on the torus, and Chebyshev distance."""
    good_r, good_c = np.divmod(batch.good.astype(np.int64), side)
    evil_r, evil_c = np.divmod(batch.evil.astype(np.int64), side)
    dr, dc = (evil_r - good_r) % side, (evil_c - good_c) % side
    return dr, dc, np.maximum(np.minimum(dr, side - dr), np.minimum(dc, side - dc))


def independent_distance_pmf(side):
    """Exact pmf of the toroidal Chebyshev distance between two distinct uniform cells."""
    axis = np.minimum(np.arange(side), side - np.arange(side))
    distance = np.maximum(axis[:, None], axis[None, :]).ravel()[1:]  # all offsets but (0, 0)
    return np.bincount(distance, minlength=side // 2 + 1) / distance.size


# ---- point 1: ⊖'s geometry ----

@pytest.mark.parametrize("side", [5, 10, 20, 40])
def test_evil_is_placed_independently_under_sound_and_by_the_grid_under_paper(side):
    # 4,000 episodes: the collision filter alone shifts the distances by a total variation of ~0.07 on 10x10
    # (measured on 8,000 pairs drawn alone), and 1,000 episodes' noise (sd ~0.012) left the 0.1 bound ~2 sd away
    _, paper = environments("paper", side, 4000)
    _, sound = environments("sound", side, 4000)
    dr, dc, distance = torus_offsets(paper, side)
    # index shift: at most two offsets (row-major wrap), so one distance per grid (issue: 4 on 10x10, 14 on 40x40)
    assert len(set(zip(dr.ravel(), dc.ravel()))) <= 2
    if side == 5:
        assert (distance <= 2).all()  # the reward zones always touch
    else:
        assert (distance > 2).all()  # and never meet
    dr, dc, distance = torus_offsets(sound, side)
    offsets = len(set(zip(dr[:, 0], dc[:, 0])))
    assert offsets >= min(0.8 * (side * side - 1), 0.4 * 1000)  # ⊖'s start relative to ⊕'s: spread over the torus
    observed = np.bincount(distance[:, 0], minlength=side // 2 + 1) / len(distance)
    # close to two independent uniform cells (the collision filter of point 2 keeps slightly more distant pairs)
    assert 0.5 * np.abs(observed - independent_distance_pmf(side)).sum() < 0.1
    if side in (10, 20):
        assert 0.05 < (distance <= 2).any(axis=1).mean() < 0.95  # zones meet in some episodes, not all


def test_evil_is_a_pattern_of_its_own_not_a_translation_of_good():
    """Paper 003 §4.2: 'different but equally complex'. Under index shift the offset ⊖ - ⊕ takes
    at most two values; an independent ⊖ keeps a constant offset only when both stay still (K = 2)."""
    for profile, rigid_at_least, rigid_at_most in (("paper", 1.0, 1.0), ("sound", 0.0, 0.1)):
        _, batch = environments(profile, 10, 600)
        dr, dc, _ = torus_offsets(batch, 10)
        offsets_per_episode = np.array([len(set(zip(r, c))) for r, c in zip(dr, dc)])
        rigid = (offsets_per_episode <= 2).mean()
        assert rigid_at_least <= rigid <= rigid_at_most


@pytest.mark.parametrize("pairing, rule, cells", [("index_shift", "paper", 2), ("independent", "paper", 2),
                                                   ("index_shift", "pairing", 1), ("independent", "pairing", 2)])
def test_entropy_follows_the_pairing_under_the_pairing_rule(pairing, rule, cells):
    """H = log2 |S|: |S| = N(N-1) for two independently placed objects (paper 003 §4.3), N when
    ⊖ is a function of ⊕."""
    n = 7 * 9
    expected = math.log2(n * (n - 1)) if cells == 2 else math.log2(n)
    environment = LambdaStar(7, 9, 50, CyclicPatternGenerator(), pairing, entropy_rule=rule)
    assert environment.entropy_bits == pytest.approx(expected, abs=1e-12)


def test_recorded_entropy_matches_the_pairing_per_profile():
    n = 36
    for profile, changes, expected in (("paper", {}, math.log2(n * (n - 1))), ("sound", {}, math.log2(n * (n - 1))),
                                       ("sound", {"evil_pairing": "index_shift"}, math.log2(n))):
        config = EvaluationConfig.from_profile(profile, rows=6, cols=6, iterations=40, episodes=20, **changes)
        assert evaluate(config).as_record()["entropy_bits"] == pytest.approx(expected, abs=1e-12)


# ---- point 2: K recorded = K played ----

@pytest.mark.parametrize("side, iterations", [(5, 50), (10, 100)])
def test_recorded_k_is_the_k_of_both_played_paths_under_sound(side, iterations):
    _, batch = environments("sound", side, 400, iterations)
    good = [antropy_k(row[:iterations]) for row in batch.good]
    evil = [antropy_k(row[:iterations]) for row in batch.evil]
    assert list(batch.k_raw) == good == evil == list(batch.k_evil)
    assert not (batch.good == batch.evil).any()  # the collision rule still holds (§4.1.1)


def test_recorded_k_differs_from_the_played_k_without_the_played_paths_rule():
    """The confound the rule removes: an independent ⊖ under paper's K bookkeeping (issue: 34% of
    5x5 episodes at T = 50)."""
    _, batch = environments("paper", 5, 400, 50, evil_pairing="independent")
    played_good = lz76_rows(batch.good, 50)
    changed = (played_good != batch.k_raw) | (batch.k_evil != batch.k_raw)
    assert 0.1 < changed.mean() < 0.9
    assert (batch.k_evil == np.array([antropy_k(row[:50]) for row in batch.evil])).all()


def test_k_evil_equals_k_raw_under_the_index_shift_pairing():
    """LZ76 does not see a relabelling of the cells, and index shift relabels ⊕'s path."""
    _, batch = environments("paper", 10, 200)
    assert (batch.k_evil == batch.k_raw).all()


# ---- point 3: one K distribution on every grid ----

def k_counts(profile, sides, episodes=3000):
    return np.array([np.bincount(environments(profile, side, episodes, seed=side)[1].k_raw, minlength=40)[:40]
                     for side in sides])


def test_k_distribution_is_the_same_on_every_grid_under_sound_and_differs_under_paper():
    sides = (5, 10, 20)
    sound = k_counts("sound", sides)
    assert set(np.flatnonzero(sound.sum(axis=0))) == set(SOUND_K)
    assert stats.chi2_contingency(sound[:, list(SOUND_K)]).pvalue > 0.01
    for row in sound:  # and uniform on 2..23
        assert stats.chisquare(row[list(SOUND_K)]).pvalue > 0.01
    paper = k_counts("paper", sides)
    used = paper.sum(axis=0) > 0
    assert stats.chi2_contingency(paper[:, used]).pvalue < 1e-6


def test_the_sound_k_range_is_reachable_from_5x5_to_40x40():
    for iterations in (100, 200):
        for side in (5, 8, 10, 15, 20, 30, 40):
            EvaluationConfig.from_profile("sound", rows=side, cols=side, iterations=iterations)  # no ConfigError


def test_k_of_one_is_refused_under_stratified_sampling():
    with pytest.raises(ConfigError, match="K = 1 needs a one-symbol sequence") as error:
        EvaluationConfig.from_profile("sound", k_min=1)
    assert error.value.field == "k_min"


def test_stratified_k_does_not_depend_on_the_batch():
    config = EvaluationConfig.from_profile("sound", rows=8, cols=8, iterations=60, seed=5)
    whole = generate_environments(config, np.arange(60))
    tail = generate_environments(config, np.arange(30, 60))
    assert np.array_equal(whole.k_raw[30:], tail.k_raw) and np.array_equal(whole.good[30:], tail.good)
    assert np.array_equal(whole.evil[30:], tail.evil)


def move_period(path, side):
    """The shortest p such that the move sequence of `path` repeats with period p."""
    r, c = np.divmod(path.astype(np.int64), side)
    moves = list(zip(np.diff(r) % side, np.diff(c) % side))
    return next(p for p in range(1, len(moves) + 1) if moves[p:] == moves[:-p])


def test_segments_run_to_half_of_t_under_sound_and_stop_at_k_max_under_paper():
    """Paper 003 §4.2: segments of 1..⌊T/2⌋ moves. Capped at k_max = 23 (paper's setting), a
    pattern's moves repeat within 23 steps; sound's longer segments also reach K <= 23."""
    for profile in ("paper", "sound"):
        _, batch = environments(profile, 20, 800)
        longest = max(move_period(row, 20) for row in batch.good)
        assert (longest > 23) == (profile == "sound") and longest <= 50


def test_sound_normalises_k_by_the_alphabet_of_cells():
    config, sound = environments("sound", 12, 50)
    T, n = config.iterations, 144
    assert sound.k_normalised == pytest.approx(sound.k_raw * math.log(T) / (T * math.log(n)), rel=1e-12)
    config, paper = environments("paper", 12, 50)
    assert paper.k_normalised == pytest.approx(paper.k_raw * math.log2(T) / T, rel=1e-12)


def test_alphabet_normalisation_puts_random_sequences_of_any_grid_on_one_scale():
    """Kaspar & Schuster 1987: c·log_N(L)/L of an i.i.d. uniform sequence over N symbols is near 1
    whatever N, where c·log2(L)/L grows like log2(N)."""
    rng = np.random.default_rng(3)
    length = 200
    log2_scale, alphabet_scale = [], []
    for n in (25, 400):
        counts = lz76_rows(rng.integers(0, n, (300, length)), length).astype(float)
        log2_scale.append(np.mean(counts * math.log2(length) / length))
        alphabet_scale.append(np.mean(alphabet_normalised(counts * math.log2(length) / length, n)))
    assert abs(alphabet_scale[0] - alphabet_scale[1]) < 0.15 < 2.0 < log2_scale[1] - log2_scale[0]


def test_capped_phrase_count_is_exact_up_to_its_limit():
    rng = np.random.default_rng(8)
    for _ in range(300):
        sequence = rng.integers(0, rng.integers(1, 6), rng.integers(2, 80)).astype(np.int64)
        limit = int(rng.integers(1, 40))
        assert lz76_phrase_count_at_most(sequence, limit) == min(antropy_k(sequence), limit + 1)


# ---- configuration ----

@pytest.mark.parametrize("field, value", [("entropy_rule", "bits"), ("k_sampling", "uniform"),
                                          ("k_normalisation", "log10"), ("segment_cap", "T"),
                                          ("k_on_played_paths", "yes")])
def test_invalid_settings_name_their_field(field, value):
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("sound", **{field: value})
    assert error.value.field == field


def test_unplayable_settings_are_refused():
    with pytest.raises(ConfigError, match="base walk") as error:
        EvaluationConfig.from_profile("sound", pattern_generator="ping_pong")
    assert error.value.field == "k_on_played_paths"
    with pytest.raises(ConfigError, match="closed range") as error:
        EvaluationConfig.from_profile("sound").with_changes(k_max=None)
    assert error.value.field == "k_sampling"
    with pytest.raises(ConfigError, match="collisions change the K") as error:  # 3x3: two objects, nine cells
        EvaluationConfig.from_profile("sound", rows=3, cols=3, iterations=100)
    assert error.value.field == "k_max"


def test_sound_and_paper_settings_are_recorded():
    sound = EvaluationConfig.from_profile("sound").as_record()
    paper = EvaluationConfig.from_profile("paper").as_record()
    assert {key: sound[key] for key in ("evil_pairing", "entropy_rule", "k_on_played_paths", "k_sampling", "k_min",
                                        "k_max", "k_normalisation", "segment_cap")} == dict(
        evil_pairing="independent", entropy_rule="pairing", k_on_played_paths=True, k_sampling="stratified",
        k_min=2, k_max=23, k_normalisation="log_alphabet", segment_cap="half_T")
    assert {key: paper[key] for key in ("evil_pairing", "entropy_rule", "k_on_played_paths", "k_sampling",
                                        "k_normalisation", "segment_cap")} == dict(
        evil_pairing="index_shift", entropy_rule="paper", k_on_played_paths=False, k_sampling="generator",
        k_normalisation="log2_length", segment_cap="k_max")
    assert isinstance(EvaluationConfig.from_profile("sound").patterns(), StratifiedComplexity)


def test_sweep_rows_carry_k_evil_the_ceiling_and_the_new_settings():
    import tomllib

    from collective.sweeps.plan import generate_block, plan, play_unit
    from collective.sweeps.spec import parse_spec

    spec = parse_spec(tomllib.loads("""
        seed = 3
        profile = "sound"
        episodes = 30
        iterations = 40
        [factors]
        grid = ["6x6"]
        group_size = [2]
        [groups]
        behaviours = ["oracle", "random"]
    """), "rows")
    block = plan(spec)[0]
    environments = generate_block(spec, block)
    table = play_unit(spec, block.units[0], environments).to_pandas()
    assert (table["k_evil"] == table["k_raw"]).all()  # K on played paths: ⊖'s equals ⊕'s
    assert (table["score"] <= table["upsilon_best"] + 1e-12).all()
    assert table["entropy_bits"].eq(math.log2(36 * 35)).all()
    assert set(table["k_sampling"]) == {"stratified"} and set(table["k_on_played_paths"]) == {True}
    assert set(table["segment_cap"]) == {"half_T"} and set(table["entropy_rule"]) == {"pairing"}


@pytest.mark.parametrize("env", ["lambda_star", "landscape"])
def test_group_sizes_are_paired_under_sound(env):
    """Issue 22 point 8 (paired_group_sizes): with one seed, agent i starts on the same cell in a group of any
    size, so isolated searchers 0-4 of a group of ten play exactly as a group of five, move for move; under
    `paper` the start cells are drawn for each size."""
    from collective.evaluation.play import play
    small, large = (EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=g, rows=9, cols=9,
                                                  iterations=30, episodes=20, env=env) for g in (5, 10))
    environments = [generate_environments(config, np.arange(20)) for config in (small, large)]
    assert np.array_equal(environments[1].starts[:, :5], environments[0].starts)
    five, ten = (play(config, batch, record=True) for config, batch in zip((small, large), environments))
    assert np.array_equal(ten.positions[:, :, :5], five.positions)
    paper = [generate_environments(config.with_changes(profile="paper", paired_group_sizes=False), np.arange(20))
             for config in (small, large)]
    assert not np.array_equal(paper[1].starts[:, :5], paper[0].starts)
