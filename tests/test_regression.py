"""The regression of Υ on K, still episodes and G per grid, at the right level: each grid's G and K recovered where
they differ between grids, K's slope apart from still episodes (issue 45 item 2), no group-size effect where there
is none under a non-linear grid effect (issue 22 point 1), CR2 errors clustered by cell against a known cell-level
random effect (seeded synthetic sweeps), Satterthwaite df against a known answer and its dense definition, the
CR2 sandwich against HC2 and a dense reference, memory that grows with the clusters (not their square), and the
lack-of-fit test of linear H."""
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import linalg

from collective.analysis.cluster_robust import clustered_ols, satterthwaite_df
from collective.analysis.regression import regression

GRIDS = (5, 8, 10, 15, 20)
SIZES = (1, 2, 4, 8)
SLOPE_H = 0.03  # true coefficient of H (bits)
SLOPE_G = 0.01  # true coefficient of group size


def synthetic_rows(rng: np.random.Generator, grid_effects=None, cell_sd: float = 0.1, episodes: int = 100) -> pd.DataFrame:
    """One group type over 5 grids x 4 group sizes: score = 0.01 K + SLOPE_H·H (or a given effect per grid)
    + 0.01 G + u_cell + ε, u_cell ~ N(0, cell_sd²) shared by the cell's episodes, ε ~ N(0, 0.2²)."""
    frames = []
    for index, side in enumerate(GRIDS):
        bits = math.log2(side * side * (side * side - 1))
        effect = SLOPE_H * bits if grid_effects is None else grid_effects[index]
        for size in SIZES:
            k = rng.integers(2, 24, episodes)
            score = 0.01 * k + effect + SLOPE_G * size + rng.normal(0, cell_sd) + rng.normal(0, 0.2, episodes)
            frames.append(pd.DataFrame(dict(group="searchers", seed=1, cell=100 * index + size,
                                            episode=np.arange(episodes), grid=f"{side}x{side}", k_raw=k,
                                            entropy_bits=bits, group_size=size, score=score)))
    return pd.concat(frames, ignore_index=True)


def hc3_fit(rows: pd.DataFrame, grid: str):
    """The model of one grid, fitted on that grid's rows alone, with HC3 errors (rows taken as independent),
    through statsmodels' formulas: the per-grid terms of the regression are those of a fit per grid (Chow 1960)."""
    part = rows[rows["grid"] == grid]
    data = pd.DataFrame({"K": part["k_raw"], "G": part["group_size"]}).astype(float)
    data = (data - data.mean()).assign(score=part["score"])
    return smf.ols("score ~ K + G + K:G", data=data).fit(cov_type="HC3")


def by_grid(coefficients: pd.DataFrame) -> pd.DataFrame:
    return coefficients.set_index(["grid", "term"])


def test_clustered_error_of_g_is_several_times_hc3_and_the_estimate_is_a_fit_per_grid():
    """With 200 episodes per cell and an intra-cell correlation of 0.01/0.05 = 0.2, a cell-level slope's
    variance is inflated by the design effect 1 + 199 x 0.2 ≈ 41 (Kish 1965), its error by ≈ 6.4 (a grid's 4
    cells estimate it on 2 df: the median over the grids)."""
    rows = synthetic_rows(np.random.default_rng(2024), episodes=200)
    coefficients, fits = regression(rows)
    terms, ratios = by_grid(coefficients), []
    for side in GRIDS:
        grid = f"{side}x{side}"
        g, hc3 = terms.loc[(grid, "G")], hc3_fit(rows, grid)
        assert g["estimate"] == pytest.approx(hc3.params["G"], rel=1e-9)
        assert terms.loc[(grid, "K"), "estimate"] == pytest.approx(hc3.params["K"], rel=1e-9)
        assert g["level"] == "cell" and g["df"] < 4 - 2 + 1  # Satterthwaite: at most about cells - cell terms
        ratios.append(g["std_error"] / hc3.bse["G"])
    assert 3 < np.median(ratios) < 12
    fit = fits.iloc[0]
    assert fit["cells"] == 20 and fit["cell_df"] == 20 - 10 and fit["dropped"] == ""
    assert fit["still"] == "not recorded" and np.isnan(fit["still_episodes"])


def test_clustered_interval_covers_at_the_nominal_rate_and_hc3_undercovers():
    """200 seeded fixtures with a cell random effect: CR2's 95% CI of G covers the true slope about 95% of
    the time, HC3's (rows taken as independent) far less often."""
    rng = np.random.default_rng(7)
    covered = covered_hc3 = 0
    for _ in range(200):
        rows = synthetic_rows(rng, episodes=40)
        g = by_grid(regression(rows)[0]).loc[("10x10", "G")]
        covered += g["ci95_low"] <= SLOPE_G <= g["ci95_high"]
        low, high = hc3_fit(rows, "10x10").conf_int().loc["G"]
        covered_hc3 += low <= SLOPE_G <= high
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
    assert fit["lack_of_fit_df1"] == 3 and fit["lack_of_fit_df2"] == 20 - 10  # an intercept and a G per grid


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


# Υ per grid of local search on the factor study's grids, not linear in H (issue 22 point 1), and sizes that
# cross G with N: 1/25 = 4/100, 1/64 = 4/256, 2/100 = 8/400 ..., so density is separable from G.
BENT_GRIDS = (5, 8, 10, 16, 20)
BENT_EFFECTS = (0.42, 0.55, 0.50, 0.30, 0.21)


def bent_rows(rng: np.random.Generator, slope_g: float, sizes=(1, 2, 4, 8), grids=BENT_GRIDS,
              effects=BENT_EFFECTS, episodes: int = 30) -> pd.DataFrame:
    """score = effect of the grid (not linear in H) - 0.004 K + slope_g G + u_cell + ε, u_cell ~ N(0, 0.02²),
    ε ~ N(0, 0.2²)."""
    frames = []
    for index, side in enumerate(grids):
        for size in sizes:
            k = rng.integers(2, 24, episodes)
            score = effects[index] - 0.004 * k + slope_g * size + rng.normal(0, 0.02) + rng.normal(0, 0.2, episodes)
            frames.append(pd.DataFrame(dict(group="isolated", seed=1, cell=100 * index + size,
                                            episode=np.arange(episodes), grid=f"{side}x{side}", k_raw=k,
                                            entropy_bits=math.log2(side * side * (side * side - 1)),
                                            group_size=size, score=score)))
    return pd.concat(frames, ignore_index=True)


def g_rows(slope_g: float, replications: int, seed: int) -> pd.DataFrame:
    """Every grid's G of `replications` datasets."""
    rng = np.random.default_rng(seed)
    return pd.concat([regression(bent_rows(rng, slope_g))[0].query("term == 'G'") for _ in range(replications)])


def test_no_group_size_effect_is_found_where_there_is_none_under_a_non_linear_grid_effect():
    """Zero G effect, a grid effect not linear in H: each grid's G = 0 is rejected at about the nominal 5% and its
    95% CI covers 0 about 95% of the time (the linear-H model rejected it in 100% of replications, covering 0%)."""
    g = g_rows(0.0, 60, seed=22)
    assert g["p_value"].lt(0.05).mean() <= 0.10
    assert 0.90 <= g["ci95_low"].le(0).mul(g["ci95_high"].ge(0)).mean() <= 0.99
    assert abs(g["estimate"].mean()) < 0.002


def test_a_set_group_size_effect_is_recovered():
    g = g_rows(0.01, 40, seed=23)
    assert g["estimate"].mean() == pytest.approx(0.01, abs=0.0015)
    assert 0.90 <= g["ci95_low"].le(0.01).mul(g["ci95_high"].ge(0.01)).mean() <= 0.99


def two_slopes(rng: np.random.Generator, episodes: int = 40) -> pd.DataFrame:
    """Known answer (issue 45 item 2): score = effect of the grid - 0.004 K + 0.05 G on 20x20 and 0 G on 5x5 (a
    protocol that helps only where there is room), + u_cell ~ N(0, 0.02²) + ε ~ N(0, 0.2²), sizes 1, 2, 5, 10."""
    frames = []
    for index, (side, effect, slope) in enumerate(((5, 0.5, 0.0), (20, 0.2, 0.05))):
        for size in (1, 2, 5, 10):
            k = rng.integers(2, 24, episodes)
            score = effect - 0.004 * k + slope * size + rng.normal(0, 0.02) + rng.normal(0, 0.2, episodes)
            frames.append(pd.DataFrame(dict(group="wisdom", seed=1, cell=100 * index + size,
                                            episode=np.arange(episodes),
                                            grid=f"{side}x{side}", k_raw=k, group_size=size, score=score,
                                            entropy_bits=math.log2(side ** 2 * (side ** 2 - 1)))))
    return pd.concat(frames, ignore_index=True)


def test_group_size_effects_differ_between_grids_and_each_is_recovered():
    """+0.05 per agent on 20x20 and none on 5x5: each grid's G is recovered (its 95% CI covers its own slope about
    95% of the time and 5x5's rejects 0 about 5%), where one G over both grids (the regression before issue 45)
    gave about +0.025 on each, covering neither."""
    rng = np.random.default_rng(45)
    fits = [by_grid(regression(two_slopes(rng))[0]) for _ in range(100)]
    for grid, slope in (("5x5", 0.0), ("20x20", 0.05)):
        g = pd.DataFrame([fit.loc[(grid, "G")] for fit in fits])
        assert g["estimate"].mean() == pytest.approx(slope, abs=0.002)
        assert 0.90 <= g["ci95_low"].le(slope).mul(g["ci95_high"].ge(slope)).mean() <= 0.99
    assert np.mean([fit.loc[("5x5", "G"), "p_value"] < 0.05 for fit in fits]) <= 0.10
    assert np.mean([fit.loc[("20x20", "G"), "p_value"] < 0.05 for fit in fits]) >= 0.8


def still_rows(rng: np.random.Generator, episodes: int = 300, still_share: float = 0.05,
               still_g: float = 0.0) -> pd.DataFrame:
    """Known answer (issue 45 item 2): K has no effect on a moving ⊕'s episodes; a still ⊕ (its displacement 0,
    K 2, its minimum) is found once and kept: +0.3 (+ still_g G: a G slope of their own). Moving episodes have K
    uniform on 2..23. 3 grids x 3 sizes under `paired_group_sizes` (a grid's sizes share its environments: seed
    word, K, still, u_environment ~ N(0, 0.05²)), no G effect on moving episodes, ε ~ N(0, 0.15²)."""
    frames = []
    for index, side in enumerate((5, 10, 20)):
        still = rng.random(episodes) < still_share
        k = np.where(still, 2, rng.integers(2, 24, episodes))
        shared = rng.normal(0, 0.05, episodes)
        for size in (1, 4, 8):
            score = 0.2 + (0.3 + still_g * size) * still + shared + rng.normal(0, 0.15, episodes)
            frames.append(pd.DataFrame(dict(group="searchers", seed=1, cell=100 * index + size, seed_word=index,
                                            episode=np.arange(episodes), grid=f"{side}x{side}", k_raw=k,
                                            good_displacement_per_iteration=np.where(still, 0.0, 0.8),
                                            entropy_bits=math.log2(side ** 2 * (side ** 2 - 1)), group_size=size,
                                            score=score)))
    return pd.concat(frames, ignore_index=True)


def test_k_has_no_effect_apart_from_still_episodes_and_the_still_term_holds_theirs():
    """K's slope with the still indicator (the default) covers 0 about 95% of the time and still takes +0.3; left
    out ("excluded", their count in the fit), K's slope covers 0 alike; fitted through them ("kept", the
    regression before issue 45), K reads the still episodes' lead as a K effect and rejects 0 far more often."""
    rng = np.random.default_rng(48)
    covers, rejects_kept, still = [], [], []
    for _ in range(100):
        rows = still_rows(rng)
        coefficients, fits = regression(rows)
        k, s = by_grid(coefficients).loc[("10x10", "K")], by_grid(coefficients).loc[("10x10", "still")]
        covers.append(k["ci95_low"] <= 0 <= k["ci95_high"])
        still.append(s["estimate"])
        kept = by_grid(regression(rows, still="kept")[0]).loc[("10x10", "K")]
        rejects_kept.append(kept["p_value"] < 0.05)
    assert 0.90 <= np.mean(covers) <= 0.99 and np.mean(still) == pytest.approx(0.3, abs=0.01)
    assert np.mean(rejects_kept) >= 0.5
    fit = fits.iloc[0]
    assert fit["still"] == "indicator" and fit["still_episodes"] == (rows["good_displacement_per_iteration"] == 0).sum()
    assert "still" in fit["regressors"].split(", ")
    coefficients, fits = regression(rows, still="excluded")
    assert "still" not in set(coefficients["term"]) and fits.iloc[0]["still"] == "excluded"
    moving = (rows["good_displacement_per_iteration"] > 0).sum()
    assert fits.iloc[0]["episodes"] == moving and fits.iloc[0]["still_episodes"] == len(rows) - moving
    k = by_grid(coefficients).loc[("10x10", "K")]
    assert k["ci95_low"] < 0 < k["ci95_high"]


def test_a_g_slope_of_still_episodes_is_theirs_not_k_x_g():
    """Known answer (review finding 3): K has no effect on moving episodes, at any G; still episodes (15%, K 2) gain
    +0.03 per agent. With K over every row, their G slope loaded on K x G through their low K (rejected 0 in every
    world); read from moving episodes, each grid's K x G and K cover 0 about 95% of the time, still x G takes
    +0.03 and G the slopes' average at the still share, 0.15 x 0.03."""
    rng = np.random.default_rng(3)
    fits = [regression(still_rows(rng, still_share=0.15, still_g=0.03))[0] for _ in range(60)]
    terms = pd.concat(fits).set_index("term")
    covers = lambda term, true: terms.loc[term, "ci95_low"].le(true).mul(  # noqa: E731
        terms.loc[term, "ci95_high"].ge(true)).mean()
    assert 0.90 <= covers("K x G", 0.0) <= 0.99 and 0.90 <= covers("K", 0.0) <= 0.99
    assert terms.loc["K x G", "p_value"].lt(0.05).mean() <= 0.10
    assert terms.loc["still x G", "estimate"].mean() == pytest.approx(0.03, abs=0.002)
    assert 0.90 <= covers("still x G", 0.03) <= 0.99
    assert terms.loc["G", "estimate"].mean() == pytest.approx(0.15 * 0.03, abs=0.001)
    assert set(terms.loc["still x G", "level"]) == {"episode"}


def test_satterthwaite_df_of_a_balanced_mean_is_clusters_minus_one():
    """Bell & McCaffrey (2002): for the mean of balanced clusters, the CR2 variance is the usual one on
    C - 1 df."""
    clusters = np.repeat(np.arange(9), 5)
    assert satterthwaite_df(np.ones((45, 1)), clusters)[0] == pytest.approx(8)


def test_satterthwaite_df_of_a_difference_of_means_is_welchs_worked_by_hand():
    """A difference of two means (n1 = 3, n0 = 7 rows, one row per cluster): CR2 is HC2, which here is Welch's
    variance s1²/n1 + s0²/n0, and under the working model of equal variances its Satterthwaite df is
    (1/n1 + 1/n0)² / ((1/n1)²/(n1 - 1) + (1/n0)²/(n0 - 1)) = (10/21)² / (1/18 + 1/294) = 50/13 (Bell & McCaffrey
    2002 §4; Welch 1947), worked by hand; the intercept (group 0's mean) has n0 - 1 = 6."""
    x = np.column_stack([np.ones(10), np.r_[np.ones(3), np.zeros(7)]])
    df = satterthwaite_df(x, np.arange(10))
    assert df[1] == pytest.approx(50 / 13, rel=1e-10) and df[0] == pytest.approx(6, rel=1e-10)


def test_satterthwaite_df_is_undefined_not_infinite_where_no_cluster_is_left_to_vary():
    """One cluster (a tiny sweep's single cell), or a cluster dummy per cluster: tr(G'G) = tr((G'G)²) = 0, so the
    df are undefined; they are NaN (the term's interval blank), not inf (a normal interval on nothing) with a
    divide-by-zero warning in the log (issue 46 point 4)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(satterthwaite_df(np.ones((5, 1)), np.zeros(5))).all()
        assert np.isnan(satterthwaite_df(np.column_stack([np.ones(4), [0, 0, 1, 1]]), np.array([0, 0, 1, 1]))).all()


def dense_satterthwaite_df(x: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """The definition, densely: G's column for cluster c is (I - H) S_c' A_c X_c B e_j, A_c by a dense matrix square
    root, and df = tr(G'G)² / tr((G'G)²)."""
    bread = np.linalg.inv(x.T @ x)
    residual_maker = np.eye(len(x)) - x @ bread @ x.T
    df = []
    for j in range(x.shape[1]):
        columns = []
        for c in np.unique(clusters):
            rows = clusters == c
            adjust = linalg.inv(linalg.sqrtm(np.eye(rows.sum()) - x[rows] @ bread @ x[rows].T)).real
            embedded = np.zeros(len(x))
            embedded[rows] = adjust @ x[rows] @ bread[:, j]
            columns.append(residual_maker @ embedded)
        gram = np.column_stack(columns).T @ np.column_stack(columns)
        df.append(np.trace(gram) ** 2 / np.trace(gram @ gram))
    return np.array(df)


def test_satterthwaite_df_matches_its_definition_on_unequal_clusters():
    """Clusters of 1 to 6 rows (some fewer rows than terms), in shuffled order, against the dense definition."""
    rng = np.random.default_rng(8)
    clusters = rng.permutation(np.repeat(np.arange(12), [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]))
    x = np.column_stack([np.ones(len(clusters)), rng.normal(size=len(clusters)), rng.integers(1, 9, len(clusters))])
    np.testing.assert_allclose(satterthwaite_df(x, clusters), dense_satterthwaite_df(x, clusters), rtol=1e-9)


def test_cr2_of_many_clusters_needs_no_clusters_by_clusters_matrix():
    """5,000 environments as clusters (a large sweep's paired design): the df's G'G is never formed (it
    alone would take 200 MB; 45 GB at 75,000), and the fit and the df agree with a few clusters' worth of memory."""
    import tracemalloc

    rng = np.random.default_rng(9)
    clusters = np.repeat(np.arange(5000), 3)
    x = np.column_stack([np.ones(len(clusters)), rng.normal(size=len(clusters)), rng.integers(1, 20, len(clusters))])
    y = x @ [1.0, 0.5, 0.1] + rng.normal(size=len(clusters))
    tracemalloc.start()
    clustered_ols(y, x, clusters, ["a", "b", "c"]), satterthwaite_df(x, clusters)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20e6


def paired_rows(rng: np.random.Generator, episodes: int = 40, environment_sd: float = 0.3) -> pd.DataFrame:
    """`paired_group_sizes`: in each of 3 grids the cells of group sizes 1, 4, 8 (and a second density-matched
    set) play the same environments, which move every group's score alike (u_environment ~ N(0, 0.3²), shared
    across the grid's cells, as ⊕'s pattern does); zero G effect, a non-linear grid effect, ε ~ N(0, 0.1²)."""
    frames = []
    for index, (side, effect) in enumerate(zip((4, 8, 16), (0.5, 0.6, 0.2))):
        k = rng.integers(2, 24, episodes)
        shared = rng.normal(0, environment_sd, episodes)
        for size in (1, 4, 8):
            score = effect - 0.004 * k + shared + rng.normal(0, 0.1, episodes)
            frames.append(pd.DataFrame(dict(group="searchers", seed=1, cell=100 * index + size, seed_word=index,
                                            episode=np.arange(episodes), grid=f"{side}x{side}", k_raw=k,
                                            entropy_bits=math.log2(side ** 2 * (side ** 2 - 1)), group_size=size,
                                            score=score)))
    return pd.concat(frames, ignore_index=True)


def test_paired_group_sizes_cover_at_the_nominal_rate_clustered_by_environment():
    """Known answer: zero G effect, K slope -0.004, paired cells sharing an environment effect. Clustered by
    environment, the 95% CIs of G and K cover the truth about 95% of the time and G = 0 is rejected about 5%;
    clustered by cell (the rows' environments taken as nested in cells, as without the seed word), K's interval
    covers far less (~67%: the cells' rows of one environment counted as independent) and G's rests on ~2 df."""
    rng = np.random.default_rng(31)
    paired, by_cell = [], []
    for _ in range(150):
        rows = paired_rows(rng)
        paired.append(regression(rows)[0].query("grid == '8x8'").set_index("term"))
        by_cell.append(regression(rows.drop(columns="seed_word"))[0].query("grid == '8x8'").set_index("term"))
    covers = lambda fits, term, true: np.mean([f.loc[term, "ci95_low"] <= true <= f.loc[term, "ci95_high"]  # noqa: E731
                                               for f in fits])
    assert 0.90 <= covers(paired, "G", 0.0) <= 0.99 and 0.90 <= covers(paired, "K", -0.004) <= 0.99
    assert np.mean([f.loc["G", "p_value"] < 0.05 for f in paired]) <= 0.10
    assert paired[0].loc["G", "errors"].startswith("CR2 clustered by environment") and paired[0].loc["G", "df"] > 30
    assert covers(by_cell, "K", -0.004) < 0.85 and by_cell[0].loc["G", "df"] < 5


def test_kept_learner_tables_are_clustered_by_cell_where_cells_share_environments():
    """Known answer: learners whose tables are trained once per cell (learner_training pretrained) carry the
    tables' luck, one draw per cell (N(0, 0.05²) here), on top of environments shared across paired cells; zero G
    effect. Clustered by environment, as for agents without tables, the cells' table draws read as a group-size
    effect and G = 0 is rejected far above 5%; clustered by cell (the unit the tables vary at) about 5%."""
    rng = np.random.default_rng(47)
    as_learners, as_searchers = [], []
    for _ in range(150):
        rows = paired_rows(rng)
        rows["score"] += rows["cell"].map({cell: rng.normal(0, 0.05) for cell in rows["cell"].unique()})
        learners = rows.assign(behaviour="q_learning", mix="", learner_training="pretrained")
        as_learners.append(regression(learners)[0].query("grid == '8x8'").set_index("term"))
        as_searchers.append(regression(learners.assign(behaviour="local_search"))[0].query("grid == '8x8'").set_index("term"))
    rejects = lambda fits: np.mean([f.loc["G", "p_value"] < 0.05 for f in fits])  # noqa: E731
    assert rejects(as_learners) <= 0.10 and as_learners[0].loc["G", "errors"].startswith("CR2 clustered by cell")
    assert rejects(as_searchers) >= 0.3


def test_a_term_without_an_error_shows_no_df():
    """Two group sizes a grid, clustered by cell, leave every term no df (each cell's rows fit exactly by the
    grid's intercept and G): their error, interval and p were blank but their df read 0 or 2.2e-16, a ratio of two
    roundings of 0 that a reader takes for a result; now blank (undefined) with the rest."""
    rows = synthetic_rows(np.random.default_rng(1), episodes=10)
    coefficients = regression(rows[rows["group_size"].isin([1, 2])])[0]
    assert coefficients["std_error"].isna().any()
    assert coefficients["df"].isna().equals(coefficients["std_error"].isna())


def test_each_estimate_is_read_beside_its_interval_on_an_80_column_terminal():
    """`collective analyze --tables regression` on 80 columns comes in panels of columns; each panel repeats group,
    grid and term, and the first holds each estimate with its 95% CI (the estimate stood alone, its interval a
    panel of every row further down, with a group name as long as local_search+stigmergy)."""
    from collective.analysis.base import Analysis
    from collective.analysis.regression import add_regression_tables
    from collective.analysis.report import format_analysis

    analysis = Analysis()
    add_regression_tables(analysis, synthetic_rows(np.random.default_rng(2)).assign(group="local_search+stigmergy"))
    text = format_analysis(analysis, "table", 80).split("Regression fits")[0]
    headers = [line.split() for line in text.splitlines() if line.split()[:3] == ["group", "grid", "term"]]
    assert len(headers) > 1 and all(len(line) <= 80 for line in text.splitlines()[2:])
    assert headers[0][3:6] == ["estimate", "ci95_low", "ci95_high"]
