"""The regression of Υ on K, H, group size G and agent density D = G/N, modelled at the level each
regressor varies at, with a lack-of-fit test of linear H.

H (one value per grid), G and D take one value per cell; only K varies between a cell's episodes. Whatever
the model misses at the cell level (H's effect is not linear, a cell's own effect) is shared by all rows of
the cell, so rows are not independent: standard errors are cluster-robust by cell. Environments nest in cells
(`tables.environment_ids`), so clustering by cell also covers rows that share an environment. The sandwich is
CR2, the bias-reduced linearisation of Bell & McCaffrey (2002, "Bias reduction in standard errors for linear
regression with multi-stage samples", Survey Methodology 28(2)): CR1's residuals are shrunk by the leverage
of the cell-level regressors, so CR1 undercovers with tens of cells (0.79 for H at 95% on 20 cells in the
tests' design, CR2 0.94). Intervals and p values are Student-t on cells - 1 degrees of freedom (Cameron &
Miller 2015, "A practitioner's guide to cluster-robust inference", J. Human Resources 50(2), §VI; Imbens &
Kolesár 2016, REStat 98(4)).

Lack of fit (Draper & Smith 1998, "Applied Regression Analysis", 3rd ed., §2.1, lack of fit against pure
error) is tested where H varies, on the cells: each cell's mean score, with the fitted K terms removed, is
regressed on the model's cell-level terms (restricted) and on those plus the grid as a factor beside H
(full: the grid contrasts that H does not span, identifiable with three grids or more); F = ((RSS_R -
RSS_F)/q) / (RSS_F/(cells - cell-level parameters)). The pure error is the spread of cells of one grid
(other group sizes or factors) around the model, so a group type with one cell per grid has none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.tables import CONFIDENCE, Analysis, Table, cell_ids

TERMS = (("K",), ("H",), ("G",), ("D",), ("K", "H"), ("K", "G"), ("H", "G"))  # in order of precedence
EPISODE_LEVEL = "K"  # the one regressor that varies within a cell
ERRORS = "CR2 clustered by cell"
NOTE = (
    "OLS of the episode score per group type on K (LZ76 phrases), H (bits), G and agent density D = G/N, with "
    "the two-way interactions of K, H and G; regressors centred on their means, so a main effect is the slope "
    "at the average of the others. H, G and D take one value per cell and misspecification is shared by a "
    "cell's rows, so standard errors are cluster-robust by cell (CR2, Bell & McCaffrey 2002; environments nest "
    "in cells) with Student-t on cells - 1 df (Cameron & Miller 2015); a cell-level term needs more cells than "
    "cell-level parameters (cell_df > 0), else its error is not estimable (blank). Terms with one level or "
    "not identifiable from the earlier ones are left out (fit table: dropped).")
FIT_NOTE = (
    "R² of each group type's regression; cell_df = cells - cell-level parameters. Lack of fit of linear H "
    "(Draper & Smith 1998 §2.1): on the cells' mean scores (K terms removed), the model's cell-level terms "
    "against those plus the grid as a factor beside H (the grid contrasts H does not span; 3+ grids), "
    "F on (extra grid terms, cell_df of the larger model) df; a small p means Υ's dependence on the grid is not "
    "linear in H. Blank: not identifiable, or no pure error (one cell per grid).")


@dataclass(frozen=True)
class ClusteredFit:
    """OLS estimates with a CR2 cluster-robust covariance."""

    names: list[str]
    params: np.ndarray  # (terms,)
    covariance: np.ndarray  # (terms, terms)
    clusters: int
    r_squared: float
    adj_r_squared: float

    @property
    def std_errors(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))


def clustered_ols(y: np.ndarray, design: np.ndarray, clusters: np.ndarray, names: list[str]) -> ClusteredFit:
    """OLS of y (rows,) on design (rows, terms) with the CR2 covariance (Bell & McCaffrey 2002):
    V = B Σ_c X_c' A_c e_c e_c' A_c X_c B, B = (X'X)^-1, A_c = (I - H_cc)^(-1/2), H_cc = X_c B X_c'.
    H_cc has rank <= terms, so A_c is applied through the thin SVD of X_c B^(1/2)."""
    bread = np.linalg.inv(design.T @ design)
    params = bread @ (design.T @ y)
    residuals = y - design @ params
    root = np.linalg.cholesky(bread)  # bread = root root'
    meat = np.zeros_like(bread)
    codes = np.unique(clusters, return_inverse=True)[1]
    order = np.argsort(codes, kind="stable")
    for rows in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        x, e = design[rows], residuals[rows]
        u, singular, _ = np.linalg.svd(x @ root, full_matrices=False)
        leverage = singular ** 2  # eigenvalues of H_cc
        adjusted = e + u @ ((1 / np.sqrt(np.maximum(1 - leverage, 1e-12)) - 1) * (u.T @ e))
        score = x.T @ adjusted
        meat += np.outer(score, score)
    n, terms = design.shape
    total = float(np.sum((y - y.mean()) ** 2))
    r_squared = 1 - float(residuals @ residuals) / total if total > 0 else math.nan
    adj = 1 - (1 - r_squared) * (n - 1) / (n - terms) if n > terms else math.nan
    return ClusteredFit(names, params, bread @ meat @ bread, int(codes.max() + 1), r_squared, adj)


def _regressors(part: pd.DataFrame) -> dict[str, np.ndarray]:
    """Centred K, H, G and D = G/N of a group's rows; a regressor with one level is left out."""
    cells = part["grid"].str.split("x", expand=True).astype(int).prod(axis=1).to_numpy()
    raw = {"K": part["k_raw"].to_numpy(float), "H": part["entropy_bits"].to_numpy(float),
           "G": part["group_size"].to_numpy(float), "D": part["group_size"].to_numpy(float) / cells}
    return {name: values - values.mean() for name, values in raw.items() if np.ptp(values) > 1e-12}


def _identifiable(columns: dict[str, np.ndarray], candidates: dict[str, np.ndarray]) -> tuple[list[str], list[str]]:
    """Add the candidates in order to `columns` (in place) while each raises the rank; returns (kept, dropped)."""
    kept, dropped = [], []
    for name, values in candidates.items():
        trial = np.column_stack([*columns.values(), values])
        trial = trial / np.maximum(np.linalg.norm(trial, axis=0), 1e-300)
        if np.linalg.matrix_rank(trial, tol=1e-9 * math.sqrt(len(values))) > len(columns):
            columns[name] = values
            kept.append(name)
        else:
            dropped.append(name)
    return kept, dropped


def lack_of_fit(part: pd.DataFrame, y: np.ndarray, columns: dict[str, np.ndarray], fit: ClusteredFit,
                cell_terms: list[str]) -> dict:
    """The cell-level lack-of-fit F test of linear H against grid as a factor (module docstring)."""
    episode_terms = [name for name in columns if name not in cell_terms]
    adjusted = y - sum(fit.params[fit.names.index(name)] * columns[name] for name in episode_terms)
    frame = pd.DataFrame({name: columns[name] for name in cell_terms}).assign(
        _cell=cell_ids(part), _grid=part["grid"].to_numpy(), _y=adjusted)
    cells = frame.groupby("_cell").agg({**{name: "first" for name in cell_terms}, "_grid": "first", "_y": "mean"})
    restricted = {name: cells[name].to_numpy(float) for name in cell_terms}
    grids = pd.get_dummies(cells["_grid"], dtype=float)
    full = dict(restricted)
    extra, _ = _identifiable(full, {f"grid {name}": grids[name].to_numpy() for name in grids.columns})
    df2 = len(cells) - len(full)
    result = dict(lack_of_fit_f=math.nan, lack_of_fit_df1=len(extra), lack_of_fit_df2=df2, lack_of_fit_p=math.nan)
    if not extra or df2 < 1:
        return result

    def rss(design: dict[str, np.ndarray]) -> float:
        matrix = np.column_stack(list(design.values()))
        residuals = cells["_y"].to_numpy() - matrix @ np.linalg.lstsq(matrix, cells["_y"].to_numpy(), rcond=None)[0]
        return float(residuals @ residuals)

    pure_error = rss(full)
    if pure_error <= 0:
        return result
    f = (rss(restricted) - pure_error) / len(extra) / (pure_error / df2)
    return {**result, "lack_of_fit_f": f, "lack_of_fit_p": float(stats.f.sf(f, len(extra), df2))}


def regression(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per group type, the regression of NOTE with CR2 errors clustered by cell, and per group its fit with
    the lack-of-fit test of FIT_NOTE. Returns (coefficients, fits)."""
    coefficients, fits = [], []
    for label, part in rows.groupby("group", sort=True):
        variables = _regressors(part)
        candidates = {" x ".join(term): np.prod([variables[v] for v in term], axis=0)
                      for term in TERMS if all(v in variables for v in term)}
        if not candidates or len(part) <= 2 * len(candidates) + 1:
            continue
        columns = {"Intercept": np.ones(len(part))}
        kept, dropped = _identifiable(columns, candidates)
        clusters = cell_ids(part)
        y = part["score"].to_numpy(float)
        fit = clustered_ols(y, np.column_stack(list(columns.values())), clusters, list(columns))
        cell_terms = [name for name in columns if EPISODE_LEVEL not in name.split(" x ")]
        cell_df = fit.clusters - len(cell_terms)
        df = fit.clusters - 1
        quantile = stats.t.ppf(0.5 + CONFIDENCE / 2, df) if df > 0 else math.nan
        for name, estimate, error in zip(fit.names, fit.params, fit.std_errors):
            if (name in cell_terms and cell_df < 1) or df < 1:
                error = math.nan
            coefficients.append(dict(
                group=label, term=name, level="cell" if name in cell_terms else "episode", estimate=estimate,
                std_error=error, ci95_low=estimate - quantile * error, ci95_high=estimate + quantile * error,
                p_value=float(2 * stats.t.sf(abs(estimate / error), df)) if error > 0 else math.nan,
                errors=f"{ERRORS}, t({df})"))
        fits.append(dict(group=label, episodes=len(part), cells=fit.clusters, regressors=", ".join(kept),
                         dropped=", ".join(dropped), r_squared=fit.r_squared, adj_r_squared=fit.adj_r_squared,
                         errors=f"{ERRORS}, t({df})", cell_df=cell_df,
                         **lack_of_fit(part, y, columns, fit, cell_terms)))
    return (pd.DataFrame(coefficients, columns=["group", "term", "level", "estimate", "std_error", "ci95_low",
                                                "ci95_high", "p_value", "errors"]),
            pd.DataFrame(fits, columns=["group", "episodes", "cells", "regressors", "dropped", "r_squared",
                                        "adj_r_squared", "errors", "cell_df", "lack_of_fit_f", "lack_of_fit_df1",
                                        "lack_of_fit_df2", "lack_of_fit_p"]))


def add_regression_tables(analysis: Analysis, rows: pd.DataFrame) -> None:
    """The coefficients and the fits (with the lack-of-fit test) as two tables."""
    coefficients, fits = regression(rows)
    analysis.add(Table("regression", "Regression of Υ on K, H, group size G and agent density G/N, with two-way "
                       "interactions", NOTE, coefficients))
    analysis.add(Table("regression_fit", "Regression fits and the lack-of-fit test of linear H", FIT_NOTE, fits))
