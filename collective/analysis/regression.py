"""The regression of Υ on K and group size G per grid, modelled at the level each regressor varies at, with a
still-episode term and a lack-of-fit test of a linear H.

Every term is estimated per grid (issue 45 item 2): a grid has its own intercept and its own K, still, G and K x G
slopes, the model fully interacted with the grid factor, whose estimates are those of a fit per grid (Chow 1960,
"Tests of equality between sets of coefficients in two linear regressions", Econometrica 28(3)) with one
sandwich for all. Υ is defined for one H at a time (paper 003 Definition 3) and is not linear in H; one G slope
over the grids averages effects that differ between them (a protocol's +0.05 per agent on 20x20 and none on
small grids read as one mild slope) and a linear H leaves its misfit to terms that vary with the grid (issue 22
point 1). Density D = G/N is within a grid G times 1/N, so the grid's G slope holds it: a density effect shows
as G slopes that fall as 1/N across grids.

A still episode is one whose ⊕ does not move (`good_displacement_per_iteration` 0: `environments.motion`), so its K
is at its minimum (spec §2: `111111111` -> 2) and it is a different task (the agents find ⊕ once and stay), not the
low end of a K trend: K's slope fitted through them measures still against moving episodes. Who decides:
`STILL_TREATMENTS`; the default gives still episodes their own intercept and G slope per grid (an indicator and
still x G: Draper & Smith 1998, ch. 14, indicator variables) and builds K from moving episodes (centred among them,
0 on still ones), so K and K x G are read from moving episodes only: with K over every row, a G slope of still
episodes that differs loads on K x G through their low K (test_regression's known answer). `still` is then the still
episodes' difference at the grid's mean G, still x G that of their G slope, and G the two slopes' average at the
grid's share of still episodes. "excluded" leaves them out (their count in the fit table); "kept" fits K through
them (the regression before issue 45). The treatment and the count are in the fit table. Rows without the column
(swept before it was recorded) have no still term ("not recorded").

G takes one value per cell and the grid one per grid; only K, still and still x G vary between a cell's episodes.
Whatever the model misses at the cell level is shared by all rows of the cell, so rows are not independent: standard
errors are cluster-robust by cell. Without pairing, environments nest in cells (`base.environment_ids`), so
clustering by cell also covers rows that share an environment. With `paired_group_sizes` the cells of a grid that
differ only in group size share their seed word: every random draw of a row (⊕'s and ⊖'s paths, the start cells, the
agents' streams) comes from (seed word, episode), so the rows of one environment are correlated across cells and
rows of different environments are independent. The errors are then clustered by environment, the unit the design
samples (the cells are fixed design points, each holding every environment of its grid once). Clustering by cell
there takes the cells' rows of one environment as independent: K, which varies between environments only, gets half
its error and a 95% interval that covers ~67% (test_regression's paired known answer), and G gets ~2 df instead of
~80. A cell-level misfit of a term (a G effect that is not linear) is then part of what the term's slope summarises
over the design's fixed sizes, not error. The sandwich is CR2, the bias-reduced linearisation of Bell & McCaffrey
(2002, "Bias reduction in standard errors for linear regression with multi-stage samples", Survey Methodology
28(2)). Each coefficient's t has the Satterthwaite degrees of freedom of its CR2 variance under a working model of
independent homoskedastic errors (Bell & McCaffrey 2002 §4; Pustejovsky & Tipton 2018, "Small- sample methods for
cluster-robust variance estimation and hypothesis testing in fixed effects models", JBES 36(4), eq. 11): about cells
- cell-level parameters for a cell-level term, where cells - 1 is anti-conservative. A grid's cell-level terms (its
intercept and G) rest on that grid's cells: blank where they leave none.

Lack of fit (Draper & Smith 1998, "Applied Regression Analysis", 3rd ed., §2.1, lack of fit against pure
error) is tested on the cells: each cell's mean score, with the fitted episode-level terms removed, is regressed
on the model's cell-level terms (each grid's G) with an intercept and a linear H in place of the grids' intercepts
(restricted) and with them (full; a difference with three grids or more); F = ((RSS_R - RSS_F)/q) / (RSS_F/(cells
- cell-level parameters)). The pure error is the spread of cells of one grid (other group sizes) around the
model, so a group type with one or two cells per grid has none.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.base import Analysis, Table, cell_ids, environment_ids, grid_area, learns, levels
from collective.analysis.cluster_robust import ClusteredFit, clustered_ols
from collective.analysis.inference import CONFIDENCE

EPISODE_TERMS = ("K", "still", "K x G", "still x G")  # vary within a cell; the intercepts and G are cell-level
STILL_COLUMN = "good_displacement_per_iteration"  # ⊕'s mean king distance moved per iteration: 0 when still
# How still episodes enter the fit (module docstring): an indicator per grid, left out, or fitted through by K.
STILL_TREATMENTS = ("indicator", "excluded", "kept")
STILL = "indicator"
# Whether K, still and G take a slope per grid (the report: module docstring) or one over the grids with the grid's
# intercept (the validity suite's negative control, whose null, no G effect, holds in every grid).
SLOPES = ("per_grid", "pooled")
NOT_RECORDED = "not recorded"
# The factors, then each estimate beside its interval (one panel of a terminal's table), then the rest.
COEFFICIENT_COLUMNS = ["group", "grid", "term", "estimate", "ci95_low", "ci95_high", "p_value", "df", "std_error",
                       "level", "errors"]
SEPARATOR = " @ "  # a term's name in the design: "TERM @ GRID"
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
    "OLS of the episode score per group type on K (LZ76 phrases), still (⊕ does not move: an indicator), group size "
    "G, K x G and still x G, each per grid (grid column): the model fully interacted with the grid, one fit per grid "
    "in effect (Chow 1960; Υ is defined per H, paper 003 Def. 3, and a G effect of one grid is not another's). K, "
    "still and G centred within the grid, so a grid's Intercept is its mean score and a main effect the slope at the "
    "grid's average of the other. K and K x G are read from moving episodes only (K centred among them, 0 on still "
    "ones); still and still x G are the still episodes' differences in intercept and G slope, G the slopes' average "
    "at the grid's share of still episodes (fit table: still). Density G/N is G x 1/N within a grid: a density effect"
    " shows as G slopes falling as 1/N. Standard errors cluster-robust by cell (CR2, Bell & McCaffrey 2002), by "
    "environment where cells share environments (paired_group_sizes: the environment is the unit the design samples),"
    " Student-t on each term's Satterthwaite df (Bell & McCaffrey 2002 §4, Pustejovsky & Tipton 2018; blank where "
    "undefined); a term's error, interval and p blank under 1 df, as a grid's Intercept and G where its cells leave "
    "none (cells - its cell-level parameters < 1). Terms with one level in a grid or not identifiable from the "
    "earlier ones are left out (fit table: dropped).")
FIT_NOTE = (
    "R² of each group type's regression (every grid's terms); still: how still episodes (⊕ does not move, K at its "
    "minimum) enter, indicator (their own intercept and G slope per grid, K from moving episodes), excluded (left "
    "out; still_episodes counts them) or kept (K fitted through them), and still_episodes how many rows are still; "
    "cell_df = cells - cell-level parameters. Lack of fit of linear H (Draper & Smith 1998 §2.1): on the cells' mean "
    "scores (episode-level terms removed), each grid's G with an intercept and a linear H against them with the "
    "grids' intercepts (3+ grids), F on (extra grid terms, cell_df) df; a small p means Υ's dependence on the grid is"
    " not linear in H. Blank: not identifiable, or no pure error (at most one cell per grid-level parameter).")


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


def still_rows(part: pd.DataFrame) -> np.ndarray | None:
    """(rows,) whether each row's ⊕ stands still over the episode; None when the rows do not record it."""
    if STILL_COLUMN not in part or part[STILL_COLUMN].isna().any():
        return None
    return part[STILL_COLUMN].to_numpy(float) == 0


def _grid_order(grids) -> list[str]:
    return sorted(set(map(str, grids)), key=lambda name: (math.prod(map(int, name.split("x"))), name))


def density_separated(part: pd.DataFrame) -> bool:
    """Whether the design separates density from group size: cells of two different grids share a density
    G/N, and cells of two different grids share a group size."""
    cells = part.drop_duplicates(["grid", "group_size"])
    density = (cells["group_size"] / grid_area(cells["grid"])).round(12)
    shared = lambda values: (cells.groupby(values)["grid"].nunique() > 1).any()  # noqa: E731
    return bool(shared(density) and shared(cells["group_size"]))


def _candidates(part: pd.DataFrame, still: np.ndarray | None,
                slopes: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(the grids' intercepts, the other terms in order of precedence: K, still, G, (D), K x G, still x G).
    per_grid: each term per grid, "TERM @ GRID", zero outside its grid and centred within it, a candidate where
    its values vary in the grid. pooled: one column per term over every grid, centred over them, with density
    D = G/N where the design separates it (`density_separated`). `still`: the still rows where they get an
    indicator, else None."""
    grid = part["grid"].astype(str).to_numpy()
    k = part["k_raw"].to_numpy(float)
    g = part["group_size"].to_numpy(float)
    grids = _grid_order(grid)
    intercepts = {f"Intercept{SEPARATOR}{name}": (grid == name).astype(float) for name in grids}
    if slopes == "pooled":
        inside = np.ones(len(part), bool)
        terms = _terms(k, g, still, inside, "")
        if "G" in terms and density_separated(part):
            density = g / grid_area(part["grid"])
            items, after = list(terms.items()), list(terms).index("G") + 1
            terms = dict([*items[:after], ("D", density - density.mean()), *items[after:]])
        return intercepts, terms
    terms = {}
    for name in grids:
        terms.update(_terms(k, g, still, grid == name, f"{SEPARATOR}{name}"))
    return intercepts, terms


def _terms(k: np.ndarray, g: np.ndarray, still: np.ndarray | None, inside: np.ndarray,
           suffix: str) -> dict[str, np.ndarray]:
    """K, still, G, K x G and still x G over the rows `inside` (zero elsewhere), centred there; a term whose values
    do not vary there is left out. With still rows (`still`: the indicator), K is centred among the moving rows
    and zero on the still ones, and still x G gives the still rows their own G slope, so K and K x G are read from
    moving episodes only: still rows are a second line (intercept and G slope) beside the moving rows' plane."""
    moving = inside if still is None else inside & ~still

    def centred(values: np.ndarray, rows: np.ndarray = inside) -> np.ndarray:
        return np.where(rows, values - values[rows].mean(), 0.0)

    terms = {}
    if moving.any() and np.ptp(k[moving]) > 0:
        terms[f"K{suffix}"] = centred(k, moving)
    if still is not None and 0 < still[inside].sum() < inside.sum():
        terms[f"still{suffix}"] = centred(still.astype(float))
    if np.ptp(g[inside]) > 0:
        terms[f"G{suffix}"] = centred(g)
        for name in ("K", "still"):
            if f"{name}{suffix}" in terms:
                terms[f"{name} x G{suffix}"] = terms[f"{name}{suffix}"] * terms[f"G{suffix}"]
    return terms


def _term(name: str) -> tuple[str, str]:
    """"TERM @ GRID" as (term, grid); a pooled term's grid is ""."""
    term, found, grid = name.rpartition(SEPARATOR)
    return (term, grid) if found else (name, "")


def lack_of_fit(part: pd.DataFrame, y: np.ndarray, columns: dict[str, np.ndarray], fit: ClusteredFit,
                cell_terms: list[str]) -> dict:
    """The cell-level lack-of-fit F test of linear H against the grids' intercepts (module docstring)."""
    episode_terms = [name for name in columns if name not in cell_terms]
    adjusted = y - sum(fit.params[fit.names.index(name)] * columns[name] for name in episode_terms)
    frame = pd.DataFrame({name: columns[name] for name in cell_terms}).assign(
        _cell=cell_ids(part), _h=part["entropy_bits"].to_numpy(float), _y=adjusted)
    cells = frame.groupby("_cell").agg({**{name: "first" for name in cell_terms}, "_h": "first", "_y": "mean"})
    full = {name: cells[name].to_numpy(float) for name in cell_terms}
    restricted = {"Intercept": np.ones(len(cells)), **{name: values for name, values in full.items()
                                                        if not name.startswith(f"Intercept{SEPARATOR}")}}
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


def regression(rows: pd.DataFrame, where: np.ndarray | None = None, still: str = STILL,
               slopes: str = "per_grid") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per group type, the regression of NOTE with CR2 errors clustered by cell (or environment) and Satterthwaite
    df, and per group its fit with the lack-of-fit test of FIT_NOTE, on the rows `where` marks (None: all); still
    episodes treated as `still` says (STILL_TREATMENTS), the slopes per grid or pooled (SLOPES). Returns
    (coefficients, fits); a pooled term's grid is blank."""
    if still not in STILL_TREATMENTS or slopes not in SLOPES:
        raise ValueError(f"still {still!r}, slopes {slopes!r}: allowed {STILL_TREATMENTS}, {SLOPES}")
    coefficients, fits = [], []
    for label, part in levels(rows, "group", where, sort=True):
        still_mask = still_rows(part)
        still_count = math.nan if still_mask is None else int(still_mask.sum())
        if still == "excluded" and still_mask is not None:
            part, still_mask = part[~still_mask], None
        columns, candidates = _candidates(part, still_mask if still == "indicator" else None, slopes)
        if not candidates or len(part) < 2 * (len(columns) + len(candidates)):
            continue
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
        cell_terms = [name for name in columns if _term(name)[0] not in EPISODE_TERMS]
        grid_cells = part.assign(_cell=clusters).groupby(part["grid"].astype(str).to_numpy())["_cell"].nunique()
        grid_df = {grid: grid_cells[grid] - sum(_term(name)[1] == grid for name in cell_terms)
                   for grid in grid_cells.index}  # a grid's cells - its cell-level parameters
        order = {grid: index for index, grid in enumerate(["", *_grid_order(part["grid"])])}
        for name, estimate, error, df in sorted(zip(fit.names, fit.params, fit.std_errors, fit.df),
                                                key=lambda term: order[_term(term[0])[1]]):  # a grid's terms together
            term, grid = _term(name)
            estimable = df >= 1 and error > 0 and (name not in cell_terms or
                                                   (grid_df[grid] if grid else cells - len(cell_terms)) >= 1)
            error = error if estimable else math.nan
            quantile = stats.t.ppf(0.5 + CONFIDENCE / 2, df) if estimable else math.nan
            coefficients.append(dict(
                group=label, grid=grid, term=term, level="cell" if name in cell_terms else "episode",
                estimate=estimate, std_error=error, ci95_low=estimate - quantile * error,
                ci95_high=estimate + quantile * error, df=df,
                p_value=float(2 * stats.t.sf(abs(estimate / error), df)) if estimable else math.nan, errors=errors))
        fits.append(dict(group=label, episodes=len(part), cells=cells, slopes=slopes,
                         still=NOT_RECORDED if math.isnan(still_count) else still, still_episodes=still_count,
                         regressors=", ".join(dict.fromkeys(_term(name)[0] for name in kept)),
                         dropped=", ".join(dropped), r_squared=fit.r_squared, adj_r_squared=fit.adj_r_squared,
                         errors=errors, cell_df=cells - len(cell_terms),
                         **lack_of_fit(part, y, columns, fit, cell_terms)))
    return (pd.DataFrame(coefficients, columns=COEFFICIENT_COLUMNS),
            pd.DataFrame(fits, columns=["group", "episodes", "cells", "slopes", "still", "still_episodes", "regressors",
                                        "dropped", "r_squared", "adj_r_squared", "errors", "cell_df", "lack_of_fit_f",
                                        "lack_of_fit_df1", "lack_of_fit_df2", "lack_of_fit_p"]))


def add_regression_tables(analysis: Analysis, rows: pd.DataFrame, still: str = STILL) -> None:
    """The coefficients and the fits (with the lack-of-fit test) as two tables; still episodes treated as `still`
    says."""
    coefficients, fits = regression(rows, still=still)
    analysis.add(Table("regression", "Regression of Υ on K, still episodes and group size G, per grid", NOTE,
                       coefficients))
    analysis.add(Table("regression_fit", "Regression fits and the lack-of-fit test of linear H", FIT_NOTE, fits))
