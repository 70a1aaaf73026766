"""The regression of Υ on K, H, G and G/N at the right level: CR2 errors clustered by cell against a known
cell-level random effect (seeded synthetic sweeps), the CR2 sandwich against HC2 and a dense reference, and
the lack-of-fit test of linear H."""
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import linalg

from collective.analysis.regression import clustered_ols, regression

GRIDS = (5, 8, 10, 15, 20)
SIZES = (1, 2, 4, 8)
SLOPE_H = 0.03  # true coefficient of H (bits)


def synthetic_rows(rng: np.random.Generator, grid_effects=None, cell_sd: float = 0.1, episodes: int = 100) -> pd.DataFrame:
    """One group type over 5 grids x 4 group sizes: score = 0.01 K + SLOPE_H·H (or a given effect per grid)
    + 0.01 G + u_cell + ε, u_cell ~ N(0, cell_sd²) shared by the cell's episodes, ε ~ N(0, 0.2²)."""
    frames = []
    for index, side in enumerate(GRIDS):
        bits = math.log2(side * side * (side * side - 1))
        effect = SLOPE_H * bits if grid_effects is None else grid_effects[index]
        for size in SIZES:
            k = rng.integers(2, 24, episodes)
            score = 0.01 * k + effect + 0.01 * size + rng.normal(0, cell_sd) + rng.normal(0, 0.2, episodes)
            frames.append(pd.DataFrame(dict(group="searchers", seed=1, cell=100 * index + size,
                                            episode=np.arange(episodes), grid=f"{side}x{side}", k_raw=k,
                                            entropy_bits=bits, group_size=size, score=score)))
    return pd.concat(frames, ignore_index=True)


def hc3_fit(rows: pd.DataFrame):
    """Today's model: the same OLS with HC3 errors, through statsmodels' formulas."""
    data = pd.DataFrame({"K": rows["k_raw"], "H": rows["entropy_bits"], "G": rows["group_size"],
                         "D": rows["group_size"] / rows["grid"].str.split("x", expand=True).astype(int).prod(axis=1)})
    data = (data - data.mean()).assign(score=rows["score"])
    return smf.ols("score ~ K + H + G + D + K:H + K:G + H:G", data=data).fit(cov_type="HC3")


def test_clustered_error_of_h_is_several_times_hc3_and_the_estimate_is_ols():
    """With 200 episodes per cell and an intra-cell correlation of 0.01/0.05 = 0.2, a cell-level slope's
    variance is inflated by the design effect 1 + 199 x 0.2 ≈ 41 (Kish 1965), its error by ≈ 6.4."""
    rows = synthetic_rows(np.random.default_rng(2024), episodes=200)
    coefficients, fits = regression(rows)
    h = coefficients.set_index("term").loc["H"]
    hc3 = hc3_fit(rows)
    assert h["estimate"] == pytest.approx(hc3.params["H"], rel=1e-9)
    assert 3 * hc3.bse["H"] < h["std_error"] < 12 * hc3.bse["H"]
    assert h["level"] == "cell" and h["errors"] == "CR2 clustered by cell, t(19)"
    fit = fits.iloc[0]
    assert fit["cells"] == 20 and fit["cell_df"] == 15 and fit["dropped"] == ""


def test_clustered_interval_covers_at_the_nominal_rate_and_hc3_undercovers():
    """200 seeded fixtures with a cell random effect: CR2's 95% CI of H covers the true slope about 95% of
    the time, HC3's (rows taken as independent) far less often."""
    rng = np.random.default_rng(7)
    covered = covered_hc3 = 0
    for _ in range(200):
        rows = synthetic_rows(rng, episodes=40)
        h = regression(rows)[0].set_index("term").loc["H"]
        covered += h["ci95_low"] <= SLOPE_H <= h["ci95_high"]
        low, high = hc3_fit(rows).conf_int().loc["H"]
        covered_hc3 += low <= SLOPE_H <= high
    assert 0.90 <= covered / 200 <= 0.99
    assert covered_hc3 / 200 < 0.75


def test_lack_of_fit_rejects_a_non_monotone_grid_effect_and_not_a_linear_one():
    rng = np.random.default_rng(11)
    zigzag = (0.40, 0.60, 0.45, 0.70, 0.50)
    linear = [regression(synthetic_rows(rng))[1].iloc[0]["lack_of_fit_p"] for _ in range(20)]
    bent = [regression(synthetic_rows(rng, grid_effects=zigzag))[1].iloc[0]["lack_of_fit_p"] for _ in range(20)]
    assert np.mean(np.array(linear) < 0.05) <= 0.15
    assert np.mean(np.array(bent) < 0.05) >= 0.8
    fit = regression(synthetic_rows(rng))[1].iloc[0]
    assert fit["lack_of_fit_df1"] == 3 and fit["lack_of_fit_df2"] == 20 - 8  # 5 cell terms + 3 grid contrasts


def test_two_grids_leave_lack_of_fit_untested():
    rows = synthetic_rows(np.random.default_rng(1))
    fit = regression(rows[rows["grid"].isin(["5x5", "10x10"])])[1].iloc[0]
    assert fit["lack_of_fit_df1"] == 0 and np.isnan(fit["lack_of_fit_p"])


def test_cr2_with_one_row_per_cluster_is_hc2():
    """Bell & McCaffrey's CR2 reduces to MacKinnon & White's HC2 when every cluster is one row."""
    rng = np.random.default_rng(5)
    x = sm.add_constant(rng.normal(size=(60, 2)))
    y = x @ [1.0, 0.5, -0.3] + rng.normal(size=60) * (1 + np.abs(x[:, 1]))
    fit = clustered_ols(y, x, np.arange(60), ["a", "b", "c"])
    np.testing.assert_allclose(fit.covariance, sm.OLS(y, x).fit(cov_type="HC2").cov_params(), rtol=1e-10)


def test_cr2_matches_a_dense_reference():
    """A_c = (I - H_cc)^(-1/2) by a dense matrix square root, cluster by cluster."""
    rng = np.random.default_rng(6)
    x = sm.add_constant(rng.normal(size=(45, 2)))
    clusters = np.repeat(np.arange(9), 5)
    y = x @ [0.2, 1.0, 0.0] + np.repeat(rng.normal(size=9), 5) + rng.normal(size=45)
    bread = np.linalg.inv(x.T @ x)
    residuals = y - x @ bread @ x.T @ y
    meat = np.zeros((3, 3))
    for c in range(9):
        rows = clusters == c
        adjust = linalg.inv(linalg.sqrtm(np.eye(5) - x[rows] @ bread @ x[rows].T)).real
        score = x[rows].T @ adjust @ residuals[rows]
        meat += np.outer(score, score)
    fit = clustered_ols(y, x, clusters, ["a", "b", "c"])
    np.testing.assert_allclose(fit.covariance, bread @ meat @ bread, rtol=1e-8)
