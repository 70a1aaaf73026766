"""Focal and background scores of mixed groups: does my agent raise the group, and does the group raise
my agent?

Melting Pot scores an agent population by the per-capita return of its focal agents among background
agents (Leibo et al. 2021, "Scalable evaluation of multi-agent reinforcement learning with Melting Pot",
ICML); heterogeneous groups, whose members follow different behaviours, are compared with homogeneous ones
as in Dai et al. 2019. Here, for every mixed group M (protocol P) and every behaviour B in it:

- focal: B's per-capita score in M (the row's `score_by_behaviour`) against the homogeneous group of B
  under P and against isolated B (protocol none);
- background (M of exactly two behaviours): the other behaviour C's per-capita score in M against the
  homogeneous group of C under P; it is the same comparison as C's focal one, and counts once in the
  Holm correction;
- group (two behaviours): M's group score against the homogeneous group of C under P (does adding B
  raise the group?).

Only the dataset's columns are read, so the groups' plug-ins need not be importable.

Statistics follow the design: every group of a cell plays the same environments, so scores are paired
by (cell, episode), and cells differ systematically, so cells are strata. Per cell, the mean paired
difference and its standard error over episodes; the estimate is their unweighted mean over cells, with
SE = sqrt(Σ SE_cell²) / n_cells and a Student-t 95% CI and two-sided p on (pairs − n_cells) degrees of
freedom (a cell needs two pairs for its SE). Cohen's d_z is over all pairs pooled. p values are
Holm-corrected over the table, as in the `gains` table.
"""
from __future__ import annotations

import json
from collections import Counter

import pandas as pd

from collective.analysis.base import Analysis, Table
from collective.analysis.inference import holm, stratified_difference
from collective.config import parse_mix

COLUMN = "score_by_behaviour"
KEY = ["cell", "episode"]
WHOLE = ""  # the column of a mixed group's own score among its behaviours' (no behaviour is named "")
COLUMNS = ["group", "focal", "measure", "baseline", "cells", "pairs", "score", "baseline_score", "difference",
           "std_error", "ci95_low", "ci95_high", "cohen_dz", "p_t", "p_holm"]
NOTE = ("Mixed groups, per behaviour B (Melting Pot per-capita focal/background scores, Leibo et al. 2021; "
        "heterogeneous groups, Dai et al. 2019): focal = B's per-capita score in the mix vs B's homogeneous "
        "group under the same protocol and vs isolated B; background = the other behaviour's per-capita "
        "score in the mix vs its homogeneous group (two-behaviour mixes); group = the mix's score vs the "
        "other behaviour's homogeneous group. Paired by (cell, episode); stratified by cell: mean of "
        "per-cell mean differences, SE = sqrt(Σ SE_cell²)/cells, Student-t CI on pairs - cells df; "
        "Cohen's d_z over all pairs; Holm-corrected over the table.")


def _per_behaviour(part: pd.DataFrame, behaviours: list[str]) -> pd.DataFrame:
    """A mixed group's per-capita scores of `behaviours` and its own score (column WHOLE), indexed by
    (cell, episode); rows without per-behaviour scores are left out."""
    part = part[part[COLUMN].notna()]
    scores = pd.DataFrame([json.loads(text) for text in part[COLUMN]], index=pd.MultiIndex.from_frame(part[KEY]))
    return scores.reindex(columns=behaviours).assign(**{WHOLE: part["score"].to_numpy()})


def focal_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """The focal table: one row per (mixed group, focal behaviour, measure, baseline group)."""
    params = rows["protocol_params"] if "protocol_params" in rows else pd.Series("", index=rows.index)
    types = rows.assign(protocol_params=params.astype(str)).drop_duplicates("group").set_index("group")
    homogeneous = types[types["mix"] == ""]

    def same(behaviour: str, group: pd.Series) -> list[str]:
        match = (homogeneous["behaviour"] == behaviour) & (homogeneous["protocol"] == group["protocol"])
        return list(homogeneous.index[match & (homogeneous["protocol_params"] == group["protocol_params"])])

    def isolated(behaviour: str) -> list[str]:
        return list(homogeneous.index[(homogeneous["behaviour"] == behaviour) & (homogeneous["protocol"] == "none")])

    by_group = {label: part for label, part in rows.groupby("group", sort=False)}
    listed, statistics, position = [], [], {}  # position: (group, subject, baseline) -> index in statistics
    for label, group in types[types["mix"] != ""].sort_index().iterrows():
        behaviours = list(Counter(parse_mix(group["mix"])))
        scores = _per_behaviour(by_group[label], behaviours)
        for focal in behaviours:
            plan = [("focal", focal, baseline) for baseline in dict.fromkeys(same(focal, group) + isolated(focal))]
            if len(behaviours) == 2:
                other = behaviours[1 - behaviours.index(focal)]
                plan += [(measure, subject, baseline) for measure, subject in (("background", other), ("group", WHOLE))
                         for baseline in same(other, group)]
            for measure, subject, baseline in plan:
                key = (label, subject, baseline)
                if key not in position:
                    base = by_group[baseline].set_index(KEY)["score"].rename("baseline")
                    paired = scores[[subject]].join(base, how="inner").dropna().reset_index()
                    if paired.empty:
                        continue
                    position[key] = len(statistics)
                    statistics.append(stratified_difference(paired["cell"].to_numpy(), paired[subject].to_numpy(),
                                                            paired["baseline"].to_numpy()))
                listed.append((label, focal, measure, baseline, position[key]))
    corrected = holm(pd.DataFrame(statistics, columns=COLUMNS[4:-1])).to_dict("records")
    return pd.DataFrame([dict(group=label, focal=focal, measure=measure, baseline=baseline, **corrected[index])
                         for label, focal, measure, baseline, index in listed], columns=COLUMNS)


def add_focal_table(analysis: Analysis, rows: pd.DataFrame) -> None:
    """Add the focal table when the dataset has mixed groups with per-behaviour scores; when the mixes
    lack them (datasets swept before they were recorded), note why the table is skipped."""
    mixed = rows["mix"] != ""
    if not mixed.any():
        return
    if COLUMN not in rows or rows.loc[mixed, COLUMN].isna().all():
        analysis.skipped["focal"] = (f"the dataset has mixed groups but no {COLUMN} column (swept before "
                                     "per-behaviour scores were recorded); re-run the sweep to get them.")
        return
    analysis.add(Table("focal", "Focal and background scores of mixed groups", NOTE, focal_scores(rows)))
