"""Tables on hand-built rows: pooled Υ clustered by shared environment, Holm-corrected Wilcoxon p values and
the Legg-Hutter table's weighting, units and refusals."""
import math

import numpy as np
import pandas as pd
import pytest

from collective.analysis.scores import lz_code_length_bits, weighted_estimate
from collective.analysis.base import DatasetError
from collective.analysis.inference import holm, mean_ci, paired_statistics
from collective.analysis.upsilon import legg_hutter_table, upsilon_table


def _rows(scores: np.ndarray, group: str, cells: np.ndarray, **columns) -> pd.DataFrame:
    return pd.DataFrame(dict(group=group, seed=3, cell=cells, episode=np.arange(len(scores)), score=scores, **columns))


def test_pooled_upsilon_counts_a_shared_environment_once():
    """Two groups with identical scores on the same environments carry no more information than one: the
    pooled CI equals the single group's, where a t interval over rows would be about 1/√2 as wide."""
    scores = np.random.default_rng(0).normal(0.3, 0.2, 40)
    one = _rows(scores, "a", np.zeros(40, int), grid="5x5")
    both = pd.concat([one, one.assign(group="b")], ignore_index=True)
    single = upsilon_table(one, ["grid"]).iloc[0]
    pooled = upsilon_table(both, ["grid"]).iloc[0]
    n, mean, low, high = mean_ci(scores)
    assert (single["ci95_low"], single["ci95_high"]) == pytest.approx((low, high))
    assert (pooled["ci95_low"], pooled["ci95_high"]) == pytest.approx((low, high))
    assert pooled["episodes"] == 80 and pooled["environments"] == 40
    naive = mean_ci(both["score"].to_numpy())
    assert naive[3] - naive[2] < 0.75 * (high - low)


def test_episodes_of_other_cells_or_seeds_are_other_environments():
    rows = pd.concat([_rows(np.arange(4.0), "a", np.zeros(4, int)), _rows(np.arange(4.0), "a", np.ones(4, int)),
                      _rows(np.arange(4.0), "a", np.zeros(4, int)).assign(seed=4)], ignore_index=True)
    assert upsilon_table(rows.assign(grid="5x5"), ["grid"]).iloc[0]["environments"] == 12


def test_wilcoxon_p_values_are_holm_corrected_like_the_t_tests():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.2])
    frame = holm(pd.DataFrame({"p_t": p[::-1], "p_wilcoxon": p}))
    valid = ~np.isnan(p)
    order = np.argsort(p[valid])
    m = valid.sum()
    expected = np.maximum.accumulate(np.minimum(1, p[valid][order] * (m - np.arange(m))))  # Holm 1979
    corrected = np.empty(m)
    corrected[order] = expected
    np.testing.assert_allclose(frame["p_wilcoxon_holm"].to_numpy()[valid], corrected)
    assert np.isnan(frame["p_wilcoxon_holm"].iloc[3])
    np.testing.assert_allclose(frame["p_holm"].to_numpy()[::-1][valid], corrected)


def _legg_hutter_rows(estimator: str = "importance_bits", **extra) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    k = rng.integers(2, 6, 300)
    return _rows(rng.uniform(-1, 1, 300), "a", np.zeros(300, int), grid="3x3", k_raw=k,
                 pattern_log2_probability=-2.0 * k - rng.uniform(0, 3, 300), legg_hutter_estimator=estimator, **extra)


def test_legg_hutter_table_weights_by_code_bits_over_the_pattern_probability():
    rows = _legg_hutter_rows()
    table = legg_hutter_table(rows, ["group"]).iloc[0]
    bits = rows["k_raw"] * (np.log2(rows["k_raw"]) + math.log2(9))  # c (log2 c + log2 N), N = 9 cells
    weights = 2.0 ** (-bits + 40 - rows["pattern_log2_probability"])
    assert table["upsilon_legg_hutter"] == pytest.approx(np.sum(weights * rows["score"]) / weights.sum())
    assert table["effective_episodes"] == pytest.approx(weights.sum() ** 2 / np.sum(weights ** 2))
    assert table["effective_fraction"] == pytest.approx(table["effective_episodes"] / 300)
    assert table["ci95_low"] < table["upsilon_legg_hutter"] < table["ci95_high"]
    assert table["method"] == "importance_bits" and table["upsilon"] == pytest.approx(rows["score"].mean())
    assert table["estimand"].startswith("paper 001's")
    np.testing.assert_allclose(lz_code_length_bits(rows["k_raw"], 9), bits)


def test_sampled_phrases_rows_keep_todays_weighting():
    rows = _legg_hutter_rows("sampled_phrases").drop(columns="pattern_log2_probability")
    table = legg_hutter_table(rows, ["group"]).iloc[0]
    weights = 2.0 ** -rows["k_raw"]
    assert table["upsilon_legg_hutter"] == pytest.approx(np.sum(weights * rows["score"]) / weights.sum())
    assert "weighted stratum mean, not paper 001" in table["estimand"]  # named for what it is (issue 22 point 7)


def test_stratified_k_sampling_uses_the_selection_term_and_is_refused_without_it():
    rows = _legg_hutter_rows(k_sampling="stratified")
    with pytest.raises(DatasetError, match="k_log2_selection"):
        legg_hutter_table(rows, ["group"])
    selection = -math.log2(4) - rows["k_raw"] * 0.5  # -log2 n_K - log2 P_gen(K), here P_gen(K) = 2^-K/2
    table = legg_hutter_table(rows.assign(k_log2_selection=selection), ["group"]).iloc[0]
    direct = weighted_estimate(rows["score"], -lz_code_length_bits(rows["k_raw"], 9)
                               - rows["pattern_log2_probability"] - selection)
    assert table["upsilon_legg_hutter"] == pytest.approx(direct.estimate)


def test_unknown_pattern_probability_is_refused_with_the_generator_named():
    rows = _legg_hutter_rows(pattern_generator="ping_pong", evil_pairing="index_shift")
    rows.loc[5, "pattern_log2_probability"] = np.nan
    with pytest.raises(DatasetError, match="ping_pong"):
        legg_hutter_table(rows, ["group"])
    with pytest.raises(DatasetError, match="no pattern_log2_probability column"):
        legg_hutter_table(rows.drop(columns="pattern_log2_probability"), ["group"])


def test_legg_hutter_never_pools_environment_classes():
    rows = pd.concat([_legg_hutter_rows(), _legg_hutter_rows().assign(grid="4x4", cell=1)], ignore_index=True)
    table = legg_hutter_table(rows, ["group"])
    assert list(table["grid"]) == ["3x3", "4x4"] and (table["episodes"] == 300).all()


def test_a_constant_shift_has_no_t_and_no_warning():
    """Differences equal up to rounding (each score minus 0.1, in floating point): their spread is rounding error,
    so the paired t and Cohen's d_z are undefined (NaN), not a p of ~0 from a division by ~1e-17 with scipy's
    precision-loss warning in the log (issue 46 point 2); Wilcoxon's ranks still give a p."""
    import warnings

    first = np.array([0.3, 0.5, 0.4, 0.6, 0.2, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired_statistics(first, first - 0.1)
    assert np.isnan(result["p_t"]) and np.isnan(result["cohen_dz"]) and result["p_wilcoxon"] < 0.05
    assert result["difference"] == pytest.approx(0.1)
