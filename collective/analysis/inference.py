"""Confidence intervals and tests the tables share: Student-t intervals of a mean, plain and cluster-robust;
paired differences, plain and stratified by cell; an accuracy against a ceiling (delta method); and Holm's
correction over a table. It imports nothing of the analysis.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95


def clustered_mean_ci(values: np.ndarray, clusters: np.ndarray,
                      runs: np.ndarray | None = None) -> tuple[int, float, float, float]:
    """(clusters, mean, low, high): the mean of `values` with a cluster-robust 95% interval, SE² =
    C/(C-1) Σ_c (Σ_(i in c) (y_i - ȳ))² / n² and Student-t on C - 1 degrees of freedom (Cameron & Miller
    2015, "A practitioner's guide to cluster-robust inference", §II-III); one value per cluster gives
    `mean_ci`'s interval. With `runs` (the learners' training runs, `base.run_ids`), clustered two ways, by
    cluster and by run (`two_way_variance`). NaN bounds with fewer than two clusters."""
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    codes, inverse = np.unique(clusters, return_inverse=True)
    count = len(codes)
    if count < 2:
        return count, mean, math.nan, math.nan
    if runs is None:
        sums = np.bincount(inverse, weights=values - mean)
        df, se = count - 1, math.sqrt(count / (count - 1) * float(np.sum(sums ** 2))) / n
    else:
        df, variance = two_way_variance(values - mean, clusters, runs)
        se = math.sqrt(variance)
    if df < 1:
        return count, mean, math.nan, math.nan
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, df) * se
    return count, mean, mean - half, mean + half


def cluster_variance(residuals: np.ndarray, clusters: np.ndarray) -> tuple[int, float]:
    """(C, V): C clusters and the cluster-robust variance of the mean of the rows whose `residuals` (from that
    mean) are given, V = C/(C-1) Σ_c (Σ_(i in c) e_i)² / n² (Cameron & Miller 2015 §II-III)."""
    codes, inverse = np.unique(clusters, return_inverse=True)
    count, n = len(codes), len(residuals)
    if count < 2:
        return count, math.nan
    sums = np.bincount(inverse, weights=residuals)
    return count, count / (count - 1) * float(np.sum(sums ** 2)) / n ** 2


def two_way_variance(residuals: np.ndarray, environments: np.ndarray, runs: np.ndarray | None) -> tuple[int, float]:
    """(df, V): the variance of a mean clustered by environment and, given `runs`, by training run too (issue
    45 item 3: a learner's rows share its table's luck as a group's rows share an environment). Two-way
    (Cameron, Gelbach & Miller 2011, "Robust inference with multiway clustering", §2.3): V = V_environment +
    V_run - V_(environment x run), each one-way with its own C/(C-1); where that is not positive, the larger
    one-way variance; Student-t on min(C_environment, C_run) - 1 df (their §2.3, small C). A row whose run is a
    run of its own (no kept table) adds nothing beyond the environments: without kept tables V and df are
    `cluster_variance`'s by environment; so are they with one run, which holds nothing to measure a table's luck
    by (the interval is then conditional on that run's tables, as before runs were counted)."""
    count, by_environment = cluster_variance(residuals, environments)
    if runs is None:
        return count - 1, by_environment
    run_count, by_run = cluster_variance(residuals, runs)
    if run_count < 2:
        return count - 1, by_environment
    _, by_both = cluster_variance(residuals, np.unique(np.stack([environments, runs]), axis=1,
                                                       return_inverse=True)[1].ravel())
    variance = by_environment + by_run - by_both
    if not variance > 0:
        variance = max(by_environment, by_run)
    return min(count, run_count) - 1, variance


def mean_ci(values: np.ndarray) -> tuple[int, float, float, float]:
    """(n, mean, low, high): Student-t 95% interval of the mean; NaN bounds when n < 2."""
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return n, mean, math.nan, math.nan
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return n, mean, mean - half, mean + half


def paired_statistics(first: np.ndarray, second: np.ndarray, environments: np.ndarray | None = None,
                      runs: np.ndarray | None = None) -> dict:
    """Mean difference with its paired-t 95% CI, Cohen's d_z, paired t and Wilcoxon signed-rank p. Differences
    that do not vary beyond rounding (a constant shift, computed in floating point) have no t and no d_z: their
    spread is rounding error, not a standard deviation to divide by. With `runs` (each pair's training runs, as
    one id, `base.run_ids`) and the pairs' `environments`, the CI and t's p are clustered by both
    (`two_way_variance`; issue 45 item 3): a learner's pairs share its table's luck. Wilcoxon's p counts pairs."""
    differences = first - second
    n, mean, low, high = mean_ci(differences)
    sd = float(np.std(differences, ddof=1)) if n > 1 else math.nan
    rounding = 16 * np.finfo(float).eps * float(max(np.abs(first).max(), np.abs(second).max())) if n else 0.0
    sd = 0.0 if sd <= rounding else sd
    p_t = float(stats.ttest_rel(first, second).pvalue) if n > 1 and sd > 0 else math.nan
    if runs is not None and n > 1:
        df, variance = two_way_variance(differences - mean, environments, runs)
        se = math.sqrt(variance) if df >= 1 and sd > 0 else math.nan
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se if df >= 1 else math.nan
        low, high = mean - half, mean + half
        p_t = float(2 * stats.t.sf(abs(mean) / se, df)) if se > 0 else math.nan
    p_wilcoxon = float(stats.wilcoxon(differences).pvalue) if n > 1 and np.any(differences) else math.nan
    return dict(pairs=n, difference=mean, ci95_low=low, ci95_high=high,
                cohen_dz=mean / sd if sd > 0 else math.nan, p_t=p_t, p_wilcoxon=p_wilcoxon)


def stratified_difference(cells: np.ndarray, subject: np.ndarray, baseline: np.ndarray) -> dict:
    """Paired difference subject - baseline, stratified by cell: every group of a cell plays the same
    environments, and cells differ systematically. Per cell, the mean paired difference and its standard error
    over episodes; the estimate is their unweighted mean over cells, with SE = sqrt(Σ SE_cell²) / cells and a
    Student-t 95% CI and two-sided p on pairs - cells df (a cell needs two pairs for its SE); Cohen's d_z over
    all pairs pooled."""
    frame = pd.DataFrame({"cell": cells, "subject": subject, "baseline": baseline,
                          "difference": subject - baseline})
    per_cell = frame.groupby("cell").agg(n=("difference", "size"), subject=("subject", "mean"),
                                         baseline=("baseline", "mean"), mean=("difference", "mean"),
                                         var=("difference", "var"))
    n_cells, pairs = len(per_cell), int(per_cell["n"].sum())
    mean = float(per_cell["mean"].mean())
    se = math.sqrt((per_cell["var"] / per_cell["n"]).sum(skipna=False)) / n_cells
    df = pairs - n_cells
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se if df > 0 else math.nan
    p = float(2 * stats.t.sf(abs(mean / se), df)) if df > 0 and se > 0 else math.nan
    sd = float(np.std(frame["difference"], ddof=1)) if pairs > 1 else math.nan
    return dict(cells=n_cells, pairs=pairs, score=float(per_cell["subject"].mean()),
                baseline_score=float(per_cell["baseline"].mean()), difference=mean, std_error=se,
                ci95_low=mean - half, ci95_high=mean + half,
                cohen_dz=float(frame["difference"].mean()) / sd if sd > 0 else math.nan, p_t=p)


def ceiling_accuracy(scores: np.ndarray, ceilings: np.ndarray, random: np.ndarray, environments: np.ndarray | None = None,
                     runs: np.ndarray | None = None) -> tuple[float, float, float]:
    """(accuracy, low, high) of `upsilon.ACCURACY_NOTE` from a level's scores and ceilings (paired by episode) and the
    random group's scores on the same grid; NaN where not defined. With `runs` (the learners' training runs,
    `base.run_ids`) and the rows' `environments`, the level's term is clustered by both (`two_way_variance`)."""
    n = len(scores)
    if n == 0 or len(random) == 0 or not np.isfinite(ceilings).all():
        return math.nan, math.nan, math.nan
    base = float(np.mean(random))
    span = float(np.mean(ceilings)) - base
    if not span > 0:
        return math.nan, math.nan, math.nan
    accuracy = (float(np.mean(scores)) - base) / span
    if n < 2:
        return accuracy, math.nan, math.nan
    df = n - 1
    if runs is None:
        variance = float(np.var(scores - accuracy * ceilings, ddof=1)) / n
    else:
        residuals = scores - accuracy * ceilings
        df, variance = two_way_variance(residuals - residuals.mean(), environments, runs)
        if df < 1:
            return accuracy, math.nan, math.nan
    if len(random) > 1:
        variance += (accuracy - 1) ** 2 * float(np.var(random, ddof=1)) / len(random)
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, df) * math.sqrt(variance) / span
    return accuracy, accuracy - half, accuracy + half


HOLM_COLUMNS = {"p_t": "p_holm", "p_wilcoxon": "p_wilcoxon_holm"}  # raw p -> Holm-corrected p


def holm(frame: pd.DataFrame) -> pd.DataFrame:
    """Add p_holm (paired t) and p_wilcoxon_holm (when the table has Wilcoxon p values): each test's p values
    corrected for the whole table (Holm 1979) with statsmodels, one family per test."""
    from statsmodels.stats.multitest import multipletests

    frame = frame.copy()
    for raw, corrected in HOLM_COLUMNS.items():
        if raw not in frame:
            continue
        frame[corrected] = math.nan
        valid = frame[raw].notna()
        if valid.any():
            frame.loc[valid, corrected] = multipletests(frame.loc[valid, raw], method="holm")[1]
    return frame
