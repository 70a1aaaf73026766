"""Learning tables: how much skill learners gain on unseen test episodes per novel training episode, and
(for `learning_protocol` replay) how their score on the trained episode grows with replays of it.

Chollet (paper 002, §II.2.1, "Defining intelligence") defines intelligence as skill-acquisition efficiency:
skill x generalisation difficulty / (priors + experience), averaged over the curricula that reach a skill
level, with experience the *novel* relevant information a curriculum gives (in bits) and the generalisation
difficulty the algorithmic distance between the training and the evaluation solutions. The platform
measures none of priors, generalisation difficulty or information: what it can measure is the slope of
skill on unseen test episodes against the number of novel training episodes (held-out learning: each
scored episode comes with `training_episodes` fresh episodes of its environment class, which the
`q_training_passes` training passes cycle through, so replays beyond the first pass over them bring no
novel experience). The `learning` table reports that slope under its own name, a held-out learning slope,
not Chollet's efficiency. Replay learning trains on the test episode itself, so its curve measures skill
on a seen episode against repetitions of it (memorisation), and goes to its own table, `replay_learning`.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from scipy import stats

from collective.analysis.base import (Analysis, Table, environment_ids, is_reference, learns, per_distinct,
                                      random_references, reference_keys, reference_upsilon, table_ids,
                                      training_experience)
from collective.analysis.cluster_robust import clustered_slope
from collective.analysis.inference import CONFIDENCE, ceiling_accuracy, clustered_mean_ci, mean_ci

HELD_OUT = "held_out"
# A curve: one group type at one number of passes on one kind of task (grid, class, T when recorded)
CURVE_KEYS = ["group", "group_size", "q_training_passes", "iterations"]
TASK_KEYS = ["env", "grid"]
LEARNING_NOTE = (
    "Held-out learning slope: per learner group type, size and number of training passes, the OLS slope of "
    "the score R̄ of unseen test episodes on the number of novel training episodes (training_episodes; each "
    "is a fresh episode of the class, seen first on the first pass over them; later passes replay them and "
    "add no novel experience), per environment class, grid and T; on the test environments every level played "
    "when the levels share any (paired), else on all (sweeps differing in training_episodes play different "
    "cells, so independent samples of the class); CR2 errors clustered by environment, t on environments - 1 "
    "df; accuracy_per_novel_episode is the same slope on the accuracy "
    "(R̄ - Υ_random)/(Υ_oracle - Υ_random) of each episode's cell (paper 004, Step 1; NaN without references). "
    "Not Chollet's skill-acquisition efficiency (paper 002 §II.2.1): priors, generalisation difficulty and "
    "experience in bits are not measured; experience here is counted in novel episodes "
    "(novel_steps = training_episodes x T agent-steps per agent).")
REPLAY_NOTE = (
    "Replay learning trains on the test episode itself: accuracy on a seen episode against q_training_passes x "
    "T training steps spent replaying it (memorisation, not skill on unseen episodes, nor paper 002's "
    "skill-acquisition efficiency); gain_per_1000_replay_steps = accuracy gained over the least-trained "
    "level per 1000 extra replay steps.")


def _learning_protocol(rows: pd.DataFrame) -> pd.Series:
    """(rows,) each row's learning protocol; rows from before the field existed trained by replay."""
    return rows["learning_protocol"] if "learning_protocol" in rows else pd.Series("replay", index=rows.index)


def _learner_rows(rows: pd.DataFrame, protocol: str) -> pd.DataFrame:
    rows = rows.assign(training_steps=training_experience(rows))
    return rows[(rows["training_steps"] > 0) & (_learning_protocol(rows) == protocol).to_numpy()]


def episode_accuracy(rows: pd.DataFrame, part: pd.DataFrame) -> np.ndarray:
    """(part rows,) accuracy of each episode, (R̄ - Υ_random)/(Υ_oracle - Υ_random) with the references of
    its cell in `rows` (paper 004, Step 1); NaN where the cell lacks one or the oracle does not beat random."""
    references = reference_upsilon(rows)
    span = (references["oracle"] - references["random"]).where(lambda s: s > 0)
    return ((part["score"] - part["cell"].map(references["random"])) / part["cell"].map(span)).to_numpy(float)


def held_out_learning(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(slopes, points) of held-out learners whose curve (CURVE_KEYS and the TASK_KEYS recorded) has two or
    more levels of training_episodes: slopes, one row per curve (see LEARNING_NOTE); points, Υ with its 95%
    CI and the mean accuracy at each level, on the environments every level played when they share any."""
    learners = _learner_rows(rows, HELD_OUT)
    keys = CURVE_KEYS + [column for column in TASK_KEYS if column in rows]
    environments = pd.Series(environment_ids(rows), index=rows.index)
    slopes, points = [], []
    for key, curve in learners.groupby(keys, sort=True):
        if curve["training_episodes"].nunique() < 2:
            continue
        levels = sorted(curve["training_episodes"].unique())
        environment = environments.loc[curve.index]
        shared = environment.groupby(curve["training_episodes"]).unique()
        common = set.intersection(*(set(ids) for ids in shared))
        if common:  # paired levels: the environments all of them played
            curve = curve[environment.isin(common).to_numpy()]
        clusters = environment.loc[curve.index].to_numpy()
        novel = curve["training_episodes"].to_numpy(float)  # (rows,) novel episodes of each test episode
        accuracy = episode_accuracy(rows, curve)
        estimate, low, high, p = clustered_slope(curve["score"].to_numpy(float), novel, clusters, True, 2)
        if np.isfinite(accuracy).all():
            accuracy_slope, accuracy_low, accuracy_high, _ = clustered_slope(accuracy, novel, clusters, True, 2)
        else:
            accuracy_slope = accuracy_low = accuracy_high = math.nan
        labels = dict(zip(keys, key))
        iterations = int(curve["iterations"].iloc[0])
        slopes.append(dict(**labels, novel_episodes=",".join(str(int(n)) for n in levels), paired=bool(common),
                           environments=len(np.unique(clusters)), upsilon_per_novel_episode=estimate, ci95_low=low,
                           ci95_high=high, p=p, accuracy_per_novel_episode=accuracy_slope, accuracy_ci95_low=accuracy_low,
                           accuracy_ci95_high=accuracy_high))
        for level, at in curve.groupby("training_episodes", sort=True):
            n, mean, lo, hi = mean_ci(at["score"].to_numpy(float))
            points.append(dict(**labels, novel_episodes=int(level), novel_steps=int(level) * iterations, episodes=n,
                               upsilon=mean, ci95_low=lo, ci95_high=hi,
                               accuracy=float(np.mean(episode_accuracy(rows, at)))))
    slope_columns = [*keys, "novel_episodes", "paired", "environments", "upsilon_per_novel_episode", "ci95_low",
                     "ci95_high", "p", "accuracy_per_novel_episode", "accuracy_ci95_low", "accuracy_ci95_high"]
    point_columns = [*keys, "novel_episodes", "novel_steps", "episodes", "upsilon", "ci95_low", "ci95_high",
                     "accuracy"]
    return pd.DataFrame(slopes, columns=slope_columns), pd.DataFrame(points, columns=point_columns)


def replay_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """Υ and accuracy of replay learners against training steps (q_training_passes x T replays of the test
    episode), per group type, size and task (`curve_task`: grid, T, environment class) with more than one level
    (see REPLAY_NOTE)."""
    learners = _learner_rows(rows, "replay")
    task = curve_task(rows)
    records = []
    for key, part in learners.groupby(["group", "group_size", *task], sort=True):
        label, size, labels = key[0], key[1], dict(zip(task, key[2:]))
        if part["training_steps"].nunique() < 2:
            continue
        curve = []
        for steps, level in part.groupby("training_steps", sort=True):
            n, mean, low, high = mean_ci(level["score"].to_numpy())
            level_accuracy = float(np.mean(episode_accuracy(rows, level)))  # per level: sweeps may share cell ids
            curve.append(dict(group=label, group_size=size, **labels, training_steps=steps, episodes=n,
                              upsilon=mean, ci95_low=low, ci95_high=high, accuracy=level_accuracy))
        first = curve[0]
        for point in curve:
            extra = point["training_steps"] - first["training_steps"]
            point["gain_per_1000_replay_steps"] = \
                (point["accuracy"] - first["accuracy"]) / extra * 1000 if extra else math.nan
        records += curve
    return pd.DataFrame(records, columns=["group", "group_size", *task, "training_steps", "episodes", "upsilon",
                                          "ci95_low", "ci95_high", "accuracy", "gain_per_1000_replay_steps"])


# Learning curves of every held-out learner (issue 21 point 3), kept tables included: one curve per group type,
# size, task and table life, x = the novel training episodes the learners had (see CURVES_NOTE)
CURVE_TASK = ["grid", "iterations"]
TABLE_LIVES = ("pretrained", "online")  # learner_training values whose one table serves every test episode
EFFICIENCY_FRACTION = 0.8  # sample efficiency: episodes to reach this fraction of local search (issue 21's 0.8)
EFFICIENCY_REFERENCE = "local_search"


def curve_task(rows: pd.DataFrame) -> list[str]:
    """The task a curve is read on: grid and T, and every environment-class column that varies in `rows`
    (`reference_keys`): one H and one environment class per curve (paper 003 Definition 3), never pooled."""
    return [c for c in dict.fromkeys([*CURVE_TASK, *reference_keys(rows)]) if c in rows]


CURVES_NOTE = (
    "Learning curves: Υ on unseen test episodes and accuracy against the ceiling (the accuracy table's "
    "formula: (Υ - Υ_random)/(Υ_best - Υ_random), upsilon_best the per-episode ceiling, random the random group "
    "of the grid) against training_episodes, the novel held-out episodes the learners had: "
    "min(training_episodes, q_training_passes) per table (pretrained, online: one table per cell, trained once) "
    "or per test episode (per_episode). The q_training_passes passes replay them passes/novel times "
    "(replays_per_episode): curves of different replays are different curves, and the untrained level "
    "(q_training_passes 0, training_episodes 0) starts every curve of its group. 95% CI of Υ clustered at the "
    "level the data vary (ci_unit): the table (seed, cell, training run) when a kept-table level has two or more, "
    "else the "
    "environment (seed, cell, episode; then conditional on the one table); Student-t on clusters - 1 df "
    "(Cameron & Miller 2015). Accuracy CI: the accuracy table's delta method over episodes.")
EFFICIENCY_NOTE = (
    f"Sample efficiency: per learning curve, the training episodes at which Υ first reaches "
    f"fraction x Υ(local_search) of the same grid, T and group size (all its rows there), linearly interpolated "
    f"between the two levels around the crossing (0 when the untrained level reaches it); 'not reached' when no "
    f"level does, 'no local_search' when the dataset lacks that reference. reached_by_band_high and _low: the "
    f"same on the curve's pointwise 95% bands (ci95_high, ci95_low; the earliest and latest crossing they allow, not a "
    f"CI of the crossing, and without the local-search mean's own error). fraction = {EFFICIENCY_FRACTION} by "
    f"default (a learner at 0.8 of local search); an analysis parameter, not a measured one.")
SHARING_NOTE = (
    "Sharing: Υ of a group of G learners pooling one table (protocol shared_q) minus Υ of G "
    "independent learners of the same behaviour (protocol none), same grid, T and table life. same_per_agent: both "
    "at the same training_episodes n (each agent played n episodes; the shared table holds G x n agent-episodes). "
    "same_per_table: the shared table at n against independent tables at G x n, each table holding G x n "
    "agent-episodes (the group's total experience in one table against one agent's own); a shared table pooling "
    "perfectly scores the difference 0 there. Paired by environment (seed, cell, episode) when the two levels "
    "share environments (one sweep), the mean of the per-environment differences with a Student-t CI clustered by "
    "table (seed, cell, training run) when kept tables give two or more (ci_unit), else over environments; "
    "otherwise the "
    "difference of two independent means with a Welch CI, over the tables' means when each side has two or more "
    "tables, else over episodes (then conditional on the tables trained).")


def _curve_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Held-out learner rows with their novel training episodes (0 untrained) and replays per episode."""
    learner = pd.Series(per_distinct(learns, rows["behaviour"], rows["mix"]), index=rows.index, dtype=bool)
    learners = rows[learner.to_numpy() & (_learning_protocol(rows) == HELD_OUT).to_numpy()]
    if learners.empty:  # datasets from before held-out learning may lack its columns
        return learners.assign(learner_training="per_episode", novel=0, replays_per_episode=math.nan)
    passes = learners["q_training_passes"].to_numpy(int)
    novel = np.minimum(learners["training_episodes"].to_numpy(int), passes)
    life = learners["learner_training"] if "learner_training" in learners else "per_episode"
    return learners.assign(learner_training=life, novel=novel,
                           replays_per_episode=np.where(novel > 0, passes / np.maximum(novel, 1), np.nan))


def _level_point(ids: pd.DataFrame, level: pd.DataFrame, random: np.ndarray, kept: bool) -> dict:
    """Υ with its clustered CI and accuracy with its CI at one level of a curve (CURVES_NOTE); `ids`: every
    row's table (`base.table_ids`) and environment ids."""
    tables = ids["table"].loc[level.index].to_numpy() if kept else np.zeros(len(level), int)
    by_table = kept and len(np.unique(tables)) > 1
    clusters = tables if by_table else ids["environment"].loc[level.index].to_numpy()
    count, mean, low, high = clustered_mean_ci(level["score"].to_numpy(float), clusters)
    ceilings = level["upsilon_best"].to_numpy(float) if "upsilon_best" in level else np.full(len(level), np.nan)
    accuracy, accuracy_low, accuracy_high = ceiling_accuracy(level["score"].to_numpy(float), ceilings, random)
    return dict(episodes=len(level), tables=len(np.unique(tables)) if kept else math.nan,
                ci_unit="table" if by_table else "environment", clusters=count, upsilon=mean, ci95_low=low,
                ci95_high=high, accuracy=accuracy, accuracy_ci95_low=accuracy_low, accuracy_ci95_high=accuracy_high)


def learning_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (curve, training_episodes) of held-out learners with two or more levels (CURVES_NOTE)."""
    keys = ["group", "group_size", *curve_task(rows), "learner_training"]
    reference = reference_keys(rows)  # counts every column's levels: once, not per curve
    read = [*keys, *reference, "novel", "replays_per_episode", "score", "upsilon_best"]
    learners = _curve_rows(rows)
    learners = learners[[column for column in dict.fromkeys(read) if column in learners]]  # the columns read
    references = random_references(rows)
    if not learners.empty:
        ids = pd.DataFrame({"table": table_ids(rows), "environment": environment_ids(rows)}, index=rows.index)
    records = []
    for key, group in learners.groupby(keys, sort=True):
        untrained = group[group["novel"] == 0]
        for replays, trained in group[group["novel"] > 0].groupby("replays_per_episode", sort=True):
            curve = pd.concat([untrained, trained])
            if curve["novel"].nunique() < 2:
                continue
            labels = dict(zip(keys, key))
            random = references.get(tuple(curve[c].iloc[0] for c in reference), np.empty(0))
            for novel, level in curve.groupby("novel", sort=True):
                records.append(dict(labels, replays_per_episode=replays, training_episodes=int(novel),
                                    **_level_point(ids, level, random, labels["learner_training"] in TABLE_LIVES)))
    columns = [*keys, "replays_per_episode", "training_episodes", "episodes", "tables", "ci_unit", "clusters",
               "upsilon", "ci95_low", "ci95_high", "accuracy", "accuracy_ci95_low", "accuracy_ci95_high"]
    return pd.DataFrame(records, columns=columns)


def episodes_to_reach(levels: np.ndarray, upsilon: np.ndarray, target: float) -> float:
    """Training episodes at which the curve (levels ascending) first reaches `target`, linearly interpolated
    between the levels around the crossing; NaN when no level reaches it."""
    reached = np.flatnonzero(upsilon >= target)
    if not len(reached):
        return math.nan
    first = reached[0]
    if first == 0:
        return float(levels[0])
    x0, x1, y0, y1 = levels[first - 1], levels[first], upsilon[first - 1], upsilon[first]
    return float(x0 + (target - y0) / (y1 - y0) * (x1 - x0))


def sample_efficiency(rows: pd.DataFrame, curves: pd.DataFrame, fraction: float = EFFICIENCY_FRACTION) -> pd.DataFrame:
    """Per learning curve, training episodes to reach `fraction` of local search's Υ (EFFICIENCY_NOTE)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction: must be in (0, 1], got {fraction}")
    task = curve_task(rows)
    reference = rows[is_reference(rows, EFFICIENCY_REFERENCE)]
    local = reference.groupby(["group_size", *task])["score"].mean()
    keys = ["group", "group_size", *task, "learner_training", "replays_per_episode"]
    records = []
    for key, curve in curves.groupby(keys, sort=True):
        labels = dict(zip(keys, key))
        target_key = tuple(labels[c] for c in ["group_size", *task])
        base = local.get(target_key, math.nan)
        levels = curve["training_episodes"].to_numpy(float)
        reached, early, late = (episodes_to_reach(levels, curve[column].to_numpy(float), fraction * base)
                                if np.isfinite(base) else math.nan for column in ("upsilon", "ci95_high", "ci95_low"))
        status = ("no local_search" if not np.isfinite(base) else "not reached" if math.isnan(reached) else "reached")
        records.append(dict(labels, fraction=fraction, upsilon_local_search=base, target=fraction * base,
                            most_trained=int(curve["training_episodes"].max()),
                            upsilon_most_trained=float(curve["upsilon"].iloc[-1]),
                            training_episodes_to_reach=reached, reached_by_band_high=early, reached_by_band_low=late,
                            status=status))
    return pd.DataFrame(records, columns=[*keys, "fraction", "upsilon_local_search", "target", "most_trained",
                                          "upsilon_most_trained", "training_episodes_to_reach", "reached_by_band_high",
                                          "reached_by_band_low", "status"])


def _welch(first: np.ndarray, second: np.ndarray) -> tuple[float, float, float]:
    """Difference of two independent means with its Welch 95% interval (NaN bounds below 2 values a side)."""
    mean = float(first.mean() - second.mean())
    if min(len(first), len(second)) < 2:
        return mean, math.nan, math.nan
    va, vb = first.var(ddof=1) / len(first), second.var(ddof=1) / len(second)
    df = (va + vb) ** 2 / (va ** 2 / (len(first) - 1) + vb ** 2 / (len(second) - 1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * math.sqrt(va + vb)
    return mean, mean - half, mean + half


def _difference(environments: pd.Series, tables: pd.Series, shared: pd.DataFrame, independent: pd.DataFrame,
                kept: bool) -> dict:
    """Υ(shared) - Υ(independent) (SHARING_NOTE): paired by environment when they share any, clustered by table
    when kept tables give two or more; else independent means, of the tables' means when each side has two.
    `environments` and `tables`: every row's environment and table ids (`environment_ids`, `table_ids`)."""
    first = shared.groupby(environments.loc[shared.index])["score"].mean()
    second = independent.groupby(environments.loc[independent.index])["score"].mean()
    common = first.index.intersection(second.index)
    if len(common):
        table_of = pd.Series(tables.loc[shared.index].to_numpy(), index=environments.loc[shared.index].to_numpy())
        table_of = table_of[~table_of.index.duplicated()].loc[common].to_numpy()
        by_table = kept and len(np.unique(table_of)) > 1
        differences = (first.loc[common] - second.loc[common]).to_numpy(float)
        count, mean, low, high = clustered_mean_ci(differences, table_of if by_table else np.arange(len(common)))
        return dict(paired=True, ci_unit="table" if by_table else "environment", clusters=count, difference=mean,
                    ci95_low=low, ci95_high=high)
    sides = [part.groupby(tables.loc[part.index])["score"].mean() for part in (shared, independent)]
    by_table = kept and min(len(side) for side in sides) > 1
    if not by_table:
        sides = [first, second]
    mean, low, high = _welch(sides[0].to_numpy(float), sides[1].to_numpy(float))
    return dict(paired=False, ci_unit="table" if by_table else "environment", clusters=len(sides[0]) + len(sides[1]),
                difference=mean, ci95_low=low, ci95_high=high)


def sharing_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Shared against independent tables per group size at the same per-agent and per-table experience
    (SHARING_NOTE); empty without shared_q learners and their independent counterparts."""
    task = curve_task(rows)
    keys = ["behaviour", "group_size", *task, "learner_training"]
    learners = _curve_rows(rows)
    learners = learners.loc[learners["mix"] == "", [*keys, "protocol", "novel", "score"]]  # the columns read
    records = []
    shared_rows = learners[learners["protocol"] == "shared_q"]
    if not shared_rows.empty:
        environments = pd.Series(environment_ids(rows), index=rows.index)
        tables = pd.Series(table_ids(rows), index=rows.index)
    independent_rows = learners[learners["protocol"] == "none"]
    for key, shared in shared_rows.groupby(keys, sort=True):
        behaviour, size = key[0], key[1]
        labels = dict(zip(keys, key))
        others = independent_rows
        for column, value in labels.items():
            others = others[others[column] == value]
        for novel, at in shared.groupby("novel", sort=True):
            for comparison, level in (("same_per_agent", novel), ("same_per_table", novel * size)):
                independent = others[others["novel"] == level]
                if independent.empty or (comparison == "same_per_table" and level == novel):
                    continue  # no such level, or the same comparison as same_per_agent (n = 0, G = 1)
                records.append(dict(labels, comparison=comparison, shared_training_episodes=int(novel),
                                    independent_training_episodes=int(level),
                                    agent_episodes_per_table=int(novel * size),
                                    upsilon_shared=float(at["score"].mean()),
                                    upsilon_independent=float(independent["score"].mean()),
                                    **_difference(environments, tables, at, independent,
                                                  labels["learner_training"] in TABLE_LIVES)))
    return pd.DataFrame(records, columns=["behaviour", "group_size", *task, "learner_training", "comparison",
                                          "shared_training_episodes", "independent_training_episodes",
                                          "agent_episodes_per_table", "upsilon_shared", "upsilon_independent",
                                          "paired", "ci_unit", "clusters", "difference", "ci95_low", "ci95_high"])


def add_learning_tables(analysis: Analysis, rows: pd.DataFrame) -> None:
    """`learning` (held-out learners with varied novel experience at fixed passes), `learning_curves`,
    `sample_efficiency` and `sharing` (held-out learners, kept tables included, issue 21) and `replay_learning`
    (replay learners with varied passes), each when the data has it; a note in `analysis.skipped` when
    learners lack the held-out levels."""
    slopes, _ = held_out_learning(rows)
    curves = learning_curves(rows)
    if slopes.empty and curves.empty and (training_experience(rows) > 0).any():  # say why, when it has learners
        analysis.skipped["learning"] = ("needs learners with learning_protocol held_out at two or more levels of "
                                        "training_episodes (same group, size and q_training_passes)")
    elif not slopes.empty:
        analysis.add(Table("learning", "Held-out learning slope: skill on unseen episodes per novel training "
                           "episode (not paper 002's skill-acquisition efficiency)", LEARNING_NOTE, slopes))
    if not curves.empty:
        analysis.add(Table("learning_curves", "Learning curves: Υ and accuracy on unseen episodes against "
                           "training episodes", CURVES_NOTE, curves))
        analysis.add(Table("sample_efficiency", f"Sample efficiency: training episodes to reach "
                           f"{EFFICIENCY_FRACTION:g} of local search's Υ", EFFICIENCY_NOTE,
                           sample_efficiency(rows, curves)))
    sharing = sharing_table(rows)
    if not sharing.empty:
        analysis.add(Table("sharing", "Shared Q-table against independent learners", SHARING_NOTE, sharing))
    curves = replay_curves(rows)
    if not curves.empty:
        analysis.add(Table("replay_learning", "Replay learning: accuracy on the trained episode against replays",
                           REPLAY_NOTE, curves))
