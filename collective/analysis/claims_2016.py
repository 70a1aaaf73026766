"""The 2016 study's claims decided on a sweep of experiments/lambdastar2016.toml (issue 45 item 5): one headline
row per claim with its test, estimate, 95% CI and verdict, then the rows it rests on (per grid, group type or
pair of structures, Holm-corrected within the claim).

The study is Chmait, Dowe, Li, Green and Insa-Cabrera (2016), "Factors of collective intelligence: how smart are
agent collectives?" (ECAI 2016; reference [9] of paper 003), run with the C++ program that `lambdastar2016`
replicates. Its text is not among the papers here, so the claims carry issue 45's words, and each cites what
paper 003 (Chmait, Li, Dowe, Green 2016, the framework's description) says of it:

- "the wisdom of the crowd rises with group size": paper 003 §6.3, "collective intelligence can emerge between
  artificial agents (due, for example, to the wisdom of the crowd [42], information sharing, reduction in
  entropy, etc.)". Test: Υ of WOC local search (local_search, wisdom) against the group size G.
- "Υ falls as the grid grows": paper 003 §4.3, "the number of states |N| increases with the increase in the space
  dimensions m and n", H(μ) = log2 |N| bits; §5.1, "the size of the environment (and thus the search space
  uncertainty H(μ))". Test: Υ against H (the rows' entropy_bits), every group type but random (Υ ≈ 0 on any grid).
- "the ranking of organisational structures": paper 003 §5.4, measure how "the communication protocol used
  between the agents" reflects "on the collective performance of the system". The ranking tested is the order of
  the author's committed Υ on his first configuration (nader-chmait/LambdaStar csvResults.csv: 5 agents, 10x10,
  T = 50; `replication.AUTHOR_RESULTS`): WOC > FR > bidding > binary tree > dictator. Test: every pair of the
  five structures (local searchers under stigmergy, wisdom, auction, hierarchy, dictatorship), paired by
  (cell, episode) over the cells of two agents or more.

Trends are estimated on cell means (G and the grid take one value per cell, so a row-level fit would weigh the
same information by episodes) with CR2 errors clustered by cell (`cluster_robust`; one mean per cell and group
type, and the group types of a cell share its environments) and Satterthwaite degrees of freedom. Verdict:
supported when the test's p (Holm-corrected for the rows under a headline) is below 0.05 with the estimate on the
claimed side, contradicted when below 0.05 on the other side, else undecided (too little data included).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.base import Table, per_distinct
from collective.analysis.cluster_robust import clustered_ols
from collective.analysis.inference import CONFIDENCE, holm, stratified_difference
from collective.analysis.replication import AUTHOR_RESULTS, CPP_GROUP_TYPES
from collective.config import CPP_SWITCHES

ALPHA = 0.05
WISDOM = "wisdom of the crowd rises with group size"
GRID = "Υ falls as the grid grows"
RANKING = "ranking of organisational structures"
STRUCTURES = {"WOC local search": "wisdom", "FR local search": "stigmergy", "Bidding LS": "auction",
              "LS binary tree": "hierarchy", "Dictator LS": "dictatorship"}
_FIRST = dict(zip(CPP_GROUP_TYPES, AUTHOR_RESULTS[(5, 10, 50, 20)]))  # the author's first configuration
CLAIMED_RANKING = tuple(STRUCTURES[label] for label in sorted(STRUCTURES, key=lambda label: -_FIRST[label]))
SOURCES = {WISDOM: "Chmait et al. 2016 [9]; paper 003 §6.3", GRID: "Chmait et al. 2016 [9]; paper 003 §4.3, §5.1",
           RANKING: "Chmait et al. 2016 [9]; paper 003 §5.4; csvResults.csv (5 agents, 10x10, T=50)"}
COLUMNS = ["claim", "scope", "test", "estimate", "ci95_low", "ci95_high", "p", "p_holm", "verdict", "source"]
NOTE = ("One headline row per claim of the 2016 study (Chmait et al., ECAI 2016), then the rows it rests on "
        "(p_holm: Holm within the claim). Trends on cell means, CR2 by cell, Satterthwaite df; the ranking by "
        "paired differences over (cell, episode), cells of 2+ agents. verdict: supported / contradicted at "
        "p < 0.05 on the claimed / other side, else undecided. Rows: lambdastar2016, every switch on.")


READ = ["seed", "cell", "episode", "score", "group_size", "entropy_bits", "grid"]  # what the claims read of a row


def replication_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the replication: `lambdastar2016` with every 2016 switch on, labelled with the C++ group type
    (`type`), of the columns READ alone (not a copy of every column, ~60)."""
    chosen = ((rows["profile"] == "lambdastar2016") & rows[list(CPP_SWITCHES)].astype(bool).all(axis=1)).to_numpy()
    labels = {types: label for label, types in CPP_GROUP_TYPES.items()}
    label = pd.Series(per_distinct(lambda behaviour, protocol: labels.get((behaviour, protocol)), rows["behaviour"],
                                   rows["protocol"]), index=rows.index, dtype=object)
    kept = chosen & label.notna().to_numpy() & (rows["mix"] == "").to_numpy()
    return rows.loc[kept, [column for column in READ if column in rows]].assign(type=label[kept])


def cell_means(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (group type, cell): Υ (the cell's mean score), G, H (entropy_bits) and the grid."""
    return rows.groupby(["type", "seed", "cell"], observed=True, sort=True).agg(
        upsilon=("score", "mean"), group_size=("group_size", "first"), bits=("entropy_bits", "mean"),
        grid=("grid", "first")).reset_index()


def _slope(means: pd.DataFrame, x: str, effects: list[str], cluster: str = "cell") -> tuple[float, float, float, float]:
    """(slope, low, high, p) of Υ on `x` with fixed effects for the levels of `effects`, CR2 clustered by the
    level `x` varies at (`cluster`: a cell for G, a grid for H, whose cells share the grid's departure from a line;
    Bell & McCaffrey 2002), Satterthwaite df; NaN where the design does not identify it."""
    if len(means) < 3 or np.ptp(means[x].to_numpy(float)) == 0:
        return math.nan, math.nan, math.nan, math.nan
    levels = means[effects].astype(str).agg("|".join, axis=1) if effects else pd.Series("", index=means.index)
    dummies = pd.get_dummies(levels).to_numpy(float)
    design = np.column_stack([dummies, means[x].to_numpy(float)])
    if np.linalg.matrix_rank(design) < design.shape[1] or len(means) <= design.shape[1]:
        return math.nan, math.nan, math.nan, math.nan
    clusters = (means["seed"].astype(str) + "|" + means[cluster].astype(str)).to_numpy()
    fit = clustered_ols(means["upsilon"].to_numpy(float), design, clusters, [*range(dummies.shape[1]), x], degrees=True)
    estimate, error, df = float(fit.params[-1]), float(fit.std_errors[-1]), float(fit.df[-1])
    if not (error > 0 and df > 0):
        return estimate, math.nan, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * error
    return estimate, estimate - half, estimate + half, float(2 * stats.t.sf(abs(estimate / error), df))


def verdict(estimate: float, p: float, sign: int) -> str:
    """supported / contradicted when p < ALPHA with the estimate on the claimed side (`sign`) / the other; else
    undecided."""
    if not (p < ALPHA) or not np.isfinite(estimate) or estimate == 0:
        return "undecided"
    return "supported" if np.sign(estimate) == sign else "contradicted"


def _trend_rows(claim: str, means: pd.DataFrame, x: str, scope_column: str, effects: list[str],
                tests: tuple[str, str], sign: int, cluster: str = "cell") -> list[dict]:
    """The claim's headline (every scope, `scope_column` among the fixed effects) and one row per scope; `tests`
    describes each; errors clustered by `cluster` (`_slope`)."""
    headline = dict(zip(("estimate", "ci95_low", "ci95_high", "p"),
                        _slope(means, x, [scope_column, *effects], cluster)))
    scopes = pd.DataFrame([dict(scope=str(scope), **dict(zip(("estimate", "ci95_low", "ci95_high", "p_t"),
                                                             _slope(part, x, effects, cluster))))
                           for scope, part in means.groupby(scope_column, sort=True)])
    scopes = holm(scopes).rename(columns={"p_t": "p"}) if not scopes.empty else scopes
    records = [dict(claim=claim, scope="all", test=tests[0], **headline, p_holm=math.nan,
                    verdict=verdict(headline["estimate"], headline["p"], sign))]
    for _, row in scopes.iterrows():
        records.append(dict(claim=claim, scope=row["scope"], test=tests[1], estimate=row["estimate"],
                            ci95_low=row["ci95_low"], ci95_high=row["ci95_high"], p=row["p"], p_holm=row["p_holm"],
                            verdict=verdict(row["estimate"], row["p_holm"], sign)))
    return records


def _ranking_rows(rows: pd.DataFrame) -> list[dict]:
    """Every pair of structures in the claimed order, (higher − lower) paired by (cell, episode) and stratified by
    cell (`inference.stratified_difference`), Holm over the pairs; the headline is the weakest pair."""
    structures = {protocol: label for label, protocol in STRUCTURES.items()}
    organised = rows[rows["group_size"] >= 2]
    cells = organised.groupby(["seed", "cell"], observed=True, sort=False).ngroup().to_numpy()
    span = int(organised["episode"].max()) + 1 if len(organised) else 1
    keys = cells * span + organised["episode"].to_numpy(np.int64)  # (cell, episode) as one integer
    scores = {protocol: pd.Series(organised["score"].to_numpy(float)[mask], index=keys[mask])
              for protocol, mask in ((protocol, (organised["type"] == label).to_numpy())
                                     for protocol, label in structures.items())}
    test = "paired difference, stratified by cell"
    pairs = []
    for i, higher in enumerate(CLAIMED_RANKING):
        for lower in CLAIMED_RANKING[i + 1:]:
            both = pd.concat([scores[higher].rename("a"), scores[lower].rename("b")], axis=1, join="inner")
            statistics = dict(difference=math.nan, ci95_low=math.nan, ci95_high=math.nan, p_t=math.nan)
            if len(both) > 2:
                statistics = stratified_difference(both.index.to_numpy() // span,
                                                   both["a"].to_numpy(float), both["b"].to_numpy(float))
            pairs.append(dict(scope=f"{higher} > {lower}", estimate=statistics["difference"],
                              ci95_low=statistics["ci95_low"], ci95_high=statistics["ci95_high"],
                              p_t=statistics["p_t"]))
    frame = holm(pd.DataFrame(pairs)).rename(columns={"p_t": "p"})
    frame["verdict"] = [verdict(e, p, 1) for e, p in zip(frame["estimate"], frame["p_holm"])]
    verdicts = set(frame["verdict"])
    overall = ("contradicted" if "contradicted" in verdicts else
               "supported" if verdicts == {"supported"} else "undecided")
    weakest = frame.loc[frame["estimate"].idxmin()] if frame["estimate"].notna().any() else frame.iloc[0]
    records = [dict(claim=RANKING, scope=" > ".join(CLAIMED_RANKING),
                    test=f"all 10 pairs below in the claimed order; estimate: the weakest, {weakest['scope']}",
                    estimate=weakest["estimate"], ci95_low=weakest["ci95_low"], ci95_high=weakest["ci95_high"],
                    p=weakest["p"], p_holm=weakest["p_holm"], verdict=overall)]
    return records + [dict(claim=RANKING, test=test, **row) for row in frame.to_dict("records")]


def claims_2016(rows: pd.DataFrame) -> pd.DataFrame:
    """The claims table (COLUMNS) for the rows of a lambdastar2016 sweep (`replication_rows` chooses them)."""
    chosen = replication_rows(rows)
    means = cell_means(chosen)
    records = _trend_rows(WISDOM, means[means["type"] == "WOC local search"], "group_size", "grid", [],
                          ("slope of Υ on G within grids", "slope of Υ on G in this grid"), 1)
    records += _trend_rows(GRID, means[means["type"] != "Random"], "bits", "type", ["group_size"],
                           ("slope of Υ on H (bits) within type and G", "slope of Υ on H within G, this type"), -1,
                           cluster="grid")
    records += _ranking_rows(chosen)
    frame = pd.DataFrame(records)
    frame["source"] = np.where(frame["scope"].isin(["all", " > ".join(CLAIMED_RANKING)]),
                               frame["claim"].map(SOURCES), "")
    return frame[COLUMNS]


def add_claims_2016_table(analysis, rows: pd.DataFrame) -> None:
    """Add the claims table when the dataset holds `lambdastar2016` rows; say why when they predate a switch."""
    if "profile" not in rows or not (rows["profile"] == "lambdastar2016").any():
        return
    missing = [name for name in CPP_SWITCHES if name not in rows]
    if missing:
        analysis.skipped["claims_2016"] = (f"the dataset's lambdastar2016 rows have no {missing[0]} column (swept "
                                           "before that switch existed); re-run the sweep to get it.")
        return
    analysis.add(Table("claims_2016", "The 2016 study's claims, decided", NOTE, claims_2016(rows)))
