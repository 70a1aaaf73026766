"""The regression of Υ on K, the grid and group size G (and agent density D = G/N where the design separates
it), modelled at the level each regressor varies at, with a lack-of-fit test of a linear H.

The grid is a factor (one intercept per grid): Υ is defined for one H at a time (paper 003 Definition 3) and
is not linear in H, and a linear H leaves the misfit to terms that vary with the grid, such as G/N and H x G,
which then show group-size effects for agents that cannot interact (issue 22 point 1). G is estimated within
grids. D = G/N is a second slope on G that differs between grids; it is estimated only when the design
separates it, i.e. cells of different grids share a density (and a group size), else it is reported as not
identified (fit table).

G and D take one value per cell and the grid one per grid; only K varies between a cell's episodes. Whatever
the model misses at the cell level is shared by all rows of the cell, so rows are not independent: standard
errors are cluster-robust by cell. Without pairing, environments nest in cells (`base.environment_ids`), so
clustering by cell also covers rows that share an environment. With `paired_group_sizes` the cells of a grid
that differ only in group size share their seed word: every random draw of a row (⊕'s and ⊖'s paths, the start
cells, the agents' streams) comes from (seed word, episode), so the rows of one environment are correlated across
cells and rows of different environments are independent. The errors are then clustered by environment, the
unit the design samples (the cells are fixed design points, each holding every environment of its grid once).
Clustering by cell there takes the cells' rows of one environment as independent: K, which varies between
environments only, gets half its error and a 95% interval that covers ~67% (test_regression's paired known
answer), and G gets ~2 df instead of ~80. A cell-level misfit of a term (a G effect that is not linear) is then
part of what the term's slope summarises over the design's fixed sizes, not error. The sandwich is CR2, the bias-reduced linearisation of Bell &
McCaffrey (2002, "Bias reduction in standard errors for linear regression with multi-stage samples", Survey
Methodology 28(2)). Each coefficient's t has the Satterthwaite degrees of freedom of its CR2 variance under a
working model of independent homoskedastic errors (Bell & McCaffrey 2002 §4; Pustejovsky & Tipton 2018, "Small-
sample methods for cluster-robust variance estimation and hypothesis testing in fixed effects models", JBES
36(4), eq. 11): about cells - cell-level parameters for a cell-level term, where cells - 1 is anti-conservative.

Lack of fit (Draper & Smith 1998, "Applied Regression Analysis", 3rd ed., §2.1, lack of fit against pure
error) is tested on the cells: each cell's mean score, with the fitted K terms removed, is regressed on the
model's cell-level terms with a linear H in place of the grid factor (restricted) and with the grid factor
(full; a difference with three grids or more); F = ((RSS_R - RSS_F)/q) / (RSS_F/(cells - cell-level
parameters)). The pure error is the spread of cells of one grid (other group sizes) around the model, so a
group type with one cell per grid has none.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.base import Analysis, Table, cell_ids, environment_ids, grid_area, learns, levels
from collective.analysis.cluster_robust import ClusteredFit, clustered_ols
from collective.analysis.inference import CONFIDENCE

EPISODE_TERMS = ("K", "K x G")  # vary within a cell; every other term is cell-level
ERRORS = "CR2 clustered by cell, Satterthwaite t"
PAIRED_ERRORS = "CR2 clustered by environment (shared by paired cells), Satterthwaite t"
# Learners that keep a table (learner_training pretrained or online) play every episode of a cell with the tables
# trained once for that cell: the tables' luck (large: the spread of Υ between training seeds exceeds the test
# episodes' CI many times) varies by cell, not by environment, so their errors stay clustered by cell even where
# cells share environments (clustered by environment, the tables of one sweep read as a group-size effect).
TABLE_ERRORS = "CR2 clustered by cell (kept learner tables are drawn once per cell), Satterthwaite t"
KEPT_TABLES = ("pretrained", "online")


def _keeps_tables(part: pd.DataFrame) -> bool:
    """Whether a group's rows are played by learners with tables kept across episodes (drawn once per cell)."""
    return "learner_training" in part and bool(part["learner_training"].isin(KEPT_TABLES).any()) and \
        learns(str(part["behaviour"].iloc[0]), str(part["mix"].iloc[0]) if "mix" in part else "")
NOTE = (
    "OLS of the episode score per group type on K (LZ76 phrases), the grid as a factor (one intercept per grid; "
    "Υ is not linear in H, paper 003 Def. 3 fixes one H per Υ), group size G within grids, agent density "
    "D = G/N where cells of different grids share a density (else not identified: fit table), and K x G; K and "
    "G centred, so a main effect is the slope at the average of the other. Grid terms are contrasts with the "
    "first grid. Standard errors cluster-robust by cell (CR2, Bell & McCaffrey 2002), by environment "
    "where cells share environments (paired_group_sizes: the environment is the unit the design samples), Student-t on each term's Satterthwaite df (Bell & McCaffrey 2002 §4, Pustejovsky & Tipton 2018: "
    "about cells - cell-level parameters for a cell-level term); blank where df < 1. Terms with one level or not "
    "identifiable from the earlier ones are left out (fit table: dropped).")
FIT_NOTE = (
    "R² of each group type's regression; cell_df = cells - cell-level parameters; not_identified: density D "
    "when no two grids share a density G/N (then a G effect may be a density effect; cross G with N to "
    "separate them). Lack of fit of linear H (Draper & Smith 1998 §2.1): on the cells' mean scores (K terms "
    "removed), the cell-level terms with a linear H in place of the grid factor against those with the grid "
    "factor (3+ grids), F on (extra grid terms, cell_df) df; a small p means Υ's dependence on the grid is not "
    "linear in H. Blank: not identifiable, or no pure error (one cell per grid).")


def _identifiable(columns: dict[str, np.ndarray], candidates: dict[str, np.ndarray]) -> tuple[list[str], list[str]]:
    """Add the candidates in order to `columns` (in place) while each raises the rank; returns (kept, dropped).
    The rank of a set S of the (unit-scaled) columns is that of R[:, S], R of one QR of them all: X = QR with Q
    orthonormal gives X[:, S] = Q R[:, S], the same singular values from a (columns x |S|) matrix, not an SVD
    of every row per candidate."""
    names = [*columns, *candidates]
    matrix = np.column_stack([*columns.values(), *candidates.values()])
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=0), 1e-300)
    r = np.linalg.qr(matrix, mode="r")
    tolerance = 1e-9 * math.sqrt(len(matrix))
    chosen = list(range(len(columns)))
    kept, dropped = [], []
    for index in range(len(columns), len(names)):
        name = names[index]
        if np.linalg.matrix_rank(r[:, chosen + [index]], tol=tolerance) > len(chosen):
            columns[name] = candidates[name]
            chosen.append(index)
            kept.append(name)
        else:
            dropped.append(name)
    return kept, dropped


def density_separated(part: pd.DataFrame) -> bool:
    """Whether the design separates density from group size: cells of two different grids share a density
    G/N, and cells of two different grids share a group size."""
    cells = part.drop_duplicates(["grid", "group_size"])
    density = (cells["group_size"] / grid_area(cells["grid"])).round(12)
    shared = lambda values: (cells.groupby(values)["grid"].nunique() > 1).any()  # noqa: E731
    return bool(shared(density) and shared(cells["group_size"]))


def _candidates(part: pd.DataFrame) -> tuple[dict[str, np.ndarray], list[str]]:
    """The model's terms in order of precedence (K, grid contrasts, G, D, K x G), centred where continuous,
    and the terms not identified by the design."""
    area = grid_area(part["grid"])
    k = part["k_raw"].to_numpy(float)
    g = part["group_size"].to_numpy(float)
    grids = sorted(part["grid"].unique(), key=lambda name: (math.prod(map(int, name.split("x"))), name))
    terms = {"K": k - k.mean()} if np.ptp(k) > 0 else {}
    terms.update({f"grid {name}": (part["grid"] == name).to_numpy(float) for name in grids[1:]})
    missing = []
    if np.ptp(g) > 0:
        terms["G"] = g - g.mean()
        if density_separated(part):
            density = g / area
            terms["D"] = density - density.mean()
        else:
            missing.append("D")
        if "K" in terms:
            terms["K x G"] = terms["K"] * terms["G"]
    return terms, missing


def lack_of_fit(part: pd.DataFrame, y: np.ndarray, columns: dict[str, np.ndarray], fit: ClusteredFit,
                cell_terms: list[str]) -> dict:
    """The cell-level lack-of-fit F test of linear H against the grid factor (module docstring)."""
    episode_terms = [name for name in columns if name not in cell_terms]
    adjusted = y - sum(fit.params[fit.names.index(name)] * columns[name] for name in episode_terms)
    frame = pd.DataFrame({name: columns[name] for name in cell_terms}).assign(
        _cell=cell_ids(part), _h=part["entropy_bits"].to_numpy(float), _y=adjusted)
    cells = frame.groupby("_cell").agg({**{name: "first" for name in cell_terms}, "_h": "first", "_y": "mean"})
    grid_terms = [name for name in cell_terms if name.startswith("grid ")]
    full = {name: cells[name].to_numpy(float) for name in cell_terms}
    restricted = {name: values for name, values in full.items() if name not in grid_terms}
    _identifiable(restricted, {"H": cells["_h"].to_numpy(float)})
    q = len(full) - len(restricted)
    df2 = len(cells) - len(full)
    result = dict(lack_of_fit_f=math.nan, lack_of_fit_df1=max(q, 0), lack_of_fit_df2=df2, lack_of_fit_p=math.nan)
    if q < 1 or df2 < 1:
        return result

    def rss(design: dict[str, np.ndarray]) -> float:
        matrix = np.column_stack(list(design.values()))
        residuals = cells["_y"].to_numpy() - matrix @ np.linalg.lstsq(matrix, cells["_y"].to_numpy(), rcond=None)[0]
        return float(residuals @ residuals)

    pure_error = rss(full)
    if pure_error <= 0:
        return result
    f = (rss(restricted) - pure_error) / q / (pure_error / df2)
    return {**result, "lack_of_fit_f": f, "lack_of_fit_p": float(stats.f.sf(f, q, df2))}


def regression(rows: pd.DataFrame, where: np.ndarray | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per group type, the regression of NOTE with CR2 errors clustered by cell and Satterthwaite df, and per
    group its fit with the lack-of-fit test of FIT_NOTE, on the rows `where` marks (None: all). Returns
    (coefficients, fits)."""
    coefficients, fits = [], []
    for label, part in levels(rows, "group", where, sort=True):
        candidates, missing = _candidates(part)
        if not candidates or len(part) <= 2 * len(candidates) + 1:
            continue
        columns = {"Intercept": np.ones(len(part))}
        kept, dropped = _identifiable(columns, candidates)
        clusters, environments = cell_ids(part), environment_ids(part)  # dense ids from 0
        y = part["score"].to_numpy(float)
        design = np.column_stack(list(columns.values()))
        cells, environment_count = clusters.max() + 1, environments.max() + 1
        shared = environment_count < len(pd.unique(clusters * environment_count + environments))  # (cell, env) pairs
        tables = _keeps_tables(part)
        units = environments if shared and not tables else clusters  # paired_group_sizes: environments span cells
        fit = clustered_ols(y, design, units, list(columns), degrees=True)
        errors = TABLE_ERRORS if tables else PAIRED_ERRORS if shared else ERRORS
        cell_terms = [name for name in columns if name not in EPISODE_TERMS]
        cell_df = cells - len(cell_terms)
        for name, estimate, error, df in zip(fit.names, fit.params, fit.std_errors, fit.df):
            estimable = df >= 1 and error > 0 and (name not in cell_terms or cell_df >= 1)
            error = error if estimable else math.nan
            quantile = stats.t.ppf(0.5 + CONFIDENCE / 2, df) if estimable else math.nan
            coefficients.append(dict(
                group=label, term=name, level="cell" if name in cell_terms else "episode", estimate=estimate,
                std_error=error, ci95_low=estimate - quantile * error, ci95_high=estimate + quantile * error,
                df=df, p_value=float(2 * stats.t.sf(abs(estimate / error), df)) if estimable else math.nan,
                errors=errors))
        fits.append(dict(group=label, episodes=len(part), cells=cells, regressors=", ".join(kept),
                         dropped=", ".join(dropped), not_identified=", ".join(missing), r_squared=fit.r_squared,
                         adj_r_squared=fit.adj_r_squared, errors=errors, cell_df=cell_df,
                         **lack_of_fit(part, y, columns, fit, cell_terms)))
    return (pd.DataFrame(coefficients, columns=["group", "term", "level", "estimate", "std_error", "ci95_low",
                                                "ci95_high", "df", "p_value", "errors"]),
            pd.DataFrame(fits, columns=["group", "episodes", "cells", "regressors", "dropped", "not_identified",
                                        "r_squared", "adj_r_squared", "errors", "cell_df", "lack_of_fit_f",
                                        "lack_of_fit_df1", "lack_of_fit_df2", "lack_of_fit_p"]))


def add_regression_tables(analysis: Analysis, rows: pd.DataFrame) -> None:
    """The coefficients and the fits (with the lack-of-fit test) as two tables."""
    coefficients, fits = regression(rows)
    analysis.add(Table("regression", "Regression of Υ on K, the grid (a factor), group size G within grids and "
                       "density G/N where separated", NOTE, coefficients))
    analysis.add(Table("regression_fit", "Regression fits and the lack-of-fit test of linear H", FIT_NOTE, fits))
