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

from collective.analysis.tables import (Analysis, Table, environment_ids, mean_ci, reference_upsilon,
                                        training_experience)

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
    from collective.analysis.communication import _slope  # communication.py imports tables, as this module

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
        estimate, low, high, p = _slope(curve["score"].to_numpy(float), novel, clusters, True, 2)
        if np.isfinite(accuracy).all():
            accuracy_slope, accuracy_low, accuracy_high, _ = _slope(accuracy, novel, clusters, True, 2)
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
    episode), per group type and size with more than one level (see REPLAY_NOTE)."""
    learners = _learner_rows(rows, "replay")
    records = []
    for (label, size), part in learners.groupby(["group", "group_size"], sort=True):
        if part["training_steps"].nunique() < 2:
            continue
        curve = []
        for steps, level in part.groupby("training_steps", sort=True):
            n, mean, low, high = mean_ci(level["score"].to_numpy())
            level_accuracy = float(np.mean(episode_accuracy(rows, level)))  # per level: sweeps may share cell ids
            curve.append(dict(group=label, group_size=size, training_steps=steps, episodes=n, upsilon=mean,
                              ci95_low=low, ci95_high=high, accuracy=level_accuracy))
        first = curve[0]
        for point in curve:
            extra = point["training_steps"] - first["training_steps"]
            point["gain_per_1000_replay_steps"] = \
                (point["accuracy"] - first["accuracy"]) / extra * 1000 if extra else math.nan
        records += curve
    return pd.DataFrame(records, columns=["group", "group_size", "training_steps", "episodes", "upsilon", "ci95_low",
                                          "ci95_high", "accuracy", "gain_per_1000_replay_steps"])


def add_learning_tables(analysis: Analysis, rows: pd.DataFrame) -> None:
    """`learning` (held-out learners with varied novel experience) and `replay_learning` (replay learners
    with varied passes), each when the data has it; a note in `analysis.skipped` when learners lack the
    held-out levels."""
    slopes, _ = held_out_learning(rows)
    if slopes.empty and (training_experience(rows) > 0).any():  # say why, when the data has learners
        analysis.skipped["learning"] = ("needs learners with learning_protocol held_out at two or more levels of "
                                        "training_episodes (same group, size and q_training_passes)")
    elif not slopes.empty:
        analysis.add(Table("learning", "Held-out learning slope: skill on unseen episodes per novel training "
                           "episode (not paper 002's skill-acquisition efficiency)", LEARNING_NOTE, slopes))
    curves = replay_curves(rows)
    if not curves.empty:
        analysis.add(Table("replay_learning", "Replay learning: accuracy on the trained episode against replays",
                           REPLAY_NOTE, curves))
