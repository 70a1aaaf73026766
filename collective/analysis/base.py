"""The base of the analysis: the table type, and the identifiers every table reads a dataset's rows by (cells,
environments, the reference groups and whether a group learns). It imports nothing of the analysis: the table
modules build on it, and `report` assembles them.

A dataset holds one row per (cell, episode, group) with the episode's score R̄ (paper 003 Definition 2);
Υ of a group is the mean of R̄ over its episodes (Definition 3), with a Student-t 95% interval over
episodes as in `collective.analysis.scores`. All groups of one cell play the same environments (seeded by
SeedSequence(seed, spawn_key=(cell, episode))), so two groups are compared on the differences of their
scores paired by (cell, episode), and a table that pools groups counts an environment once: its rows form
one cluster. Without `paired_group_sizes` no two cells that differ in more than a 2016 switch share an
environment; with it, the cells of a grid that differ only in group size share theirs (`environment_ids`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

REFERENCE_BEHAVIOURS = ("random", "oracle")  # accuracy 0 and 1 (paper 004, Step 1)
# Config columns that fix the distribution an episode's environment is drawn from (and the Legg-Hutter
# estimator): the Legg-Hutter table never pools rows that differ in one of them.
ENVIRONMENT_CLASS_COLUMNS = ("env", "grid", "iterations", "pattern_generator", "evil_pairing", "k_min", "k_max",
                             "k_sampling", "landscape_peaks", "landscape_peak_width", "landscape_ruggedness",
                             "landscape_motion", "legg_hutter_estimator")


# The columns of the analysis tables that hold a group identifier (each names one group of the rows).
GROUP_COLUMNS = ("group", "collective", "real", "first", "second", "sham", "content_free", "isolated", "focal",
                 "background")


class DatasetError(ValueError):
    """Input that cannot be analysed: not a dataset, or an unknown factor. The message is one line."""


def grid_area(grids: pd.Series) -> np.ndarray:
    """(rows,) cells N of each row's grid ("RxC")."""
    return grids.map({name: math.prod(map(int, name.split("x"))) for name in grids.unique()}).to_numpy(float)


def labelled(value: str, labels: dict[str, str]) -> str:
    """A group identifier as its display label; in a validity subject ("GROUP @ GRID", "GROUP: G"), its group."""
    if value in labels:
        return labels[value]
    for separator in (" @ ", ": "):
        group, found, rest = value.partition(separator)
        if found and group in labels:
            return f"{labels[group]}{separator}{rest}"
    return value


@dataclass
class Table:
    """A titled result table; `note` says what was computed and cites the source, `footnote` (one line, shown
    under the rows) what the rows leave out and why."""

    name: str
    title: str
    note: str
    frame: pd.DataFrame
    footnote: str = ""


@dataclass
class Analysis:
    """Every table of `analyze`, in display order, why an expected table was skipped (name -> reason), and the
    groups' display labels (the tables keep identifiers; text output shows the labels: `report.format_analysis`)."""

    tables: dict[str, Table] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # group identifier -> its display label (the spec's)

    def add(self, table: Table) -> None:
        self.tables[table.name] = table


def levels(rows: pd.DataFrame, keys, where: np.ndarray | None = None, columns: list[str] | None = None, **grouping):
    """(key, part) for each level of `rows[where].groupby(keys, **grouping)` (`where`: a (rows,) mask, None for
    all), in the same order and with the same keys and parts as iterating that grouping, but each part taken
    when it is reached: iterating a grouping first copies every row sorted by level (and `rows[where]` copies
    the rows kept), twice the dataset's memory at once; this holds one level's rows at a time, and of them only
    `columns` where given (the ones the caller reads: taking every column costs seconds at 10^7 rows)."""
    grouped = (rows if where is None else rows[list(keys) if isinstance(keys, list) else [keys]][where]) \
        .groupby(keys, **grouping)
    codes = np.full(len(rows), -1.0)
    codes[slice(None) if where is None else where] = grouped.ngroup().to_numpy()  # the level's number; NaN dropped
    kept = np.flatnonzero(codes >= 0)
    order = kept[np.argsort(codes[kept], kind="stable")]
    bounds = np.searchsorted(codes[order], np.arange(grouped.ngroups + 1))
    names = grouped.size().index  # the levels' keys, as the grouping's iteration gives them
    one = not isinstance(keys, str) and names.nlevels == 1  # a list of one key: 1-tuples
    source = rows if columns is None else rows[[column for column in dict.fromkeys(columns) if column in rows]]
    for level, key in enumerate(names):
        yield ((key,) if one else key), source.take(order[bounds[level]:bounds[level + 1]])


def environment_ids(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) integer id of each row's environment, (seed, seed word, episode) where the rows carry the seed
    word of their environments (`seed_word`, from a sweep row's spawn key), else (seed, cell, episode): rows
    of different groups of a cell share it, and so do rows of cells that share their seed word (cells that
    differ only in group size under `paired_group_sizes`, or only in a 2016 switch)."""
    cell = "seed_word" if "seed_word" in rows else "cell"
    return rows.groupby([c for c in ("seed", cell, "episode") if c in rows], sort=False).ngroup().to_numpy()


def run_ids(rows: pd.DataFrame) -> np.ndarray | None:
    """(rows,) integer id of the training run behind each row's learner tables (`training_run`, issue 45 item 3),
    or None where no row has one (datasets before it, groups without kept tables). A run's tables are trained on
    held-out episodes drawn from (seed, seed word, run) alone, shared by the groups of a cell as its test
    environments are, so its id is (seed, seed word or cell, training_run), as `environment_ids`'s; a row
    without one (training_run -1 or missing: a per-episode learner trains a table of its own for every episode;
    a group without learners has none) is a run of its own."""
    if "training_run" not in rows:
        return None
    kept = (rows["training_run"] >= 0).to_numpy()
    if not kept.any():
        return None
    cell = "seed_word" if "seed_word" in rows else "cell"
    keys = [c for c in ("seed", cell) if c in rows]
    ids = np.empty(len(rows), np.int64)
    ids[kept] = rows.loc[kept, [*keys, "training_run"]].groupby([*keys, "training_run"], sort=False,
                                                                 observed=True).ngroup().to_numpy()
    ids[~kept] = ids[kept].max() + 1 + np.arange(int((~kept).sum()))
    return ids


def table_ids(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) integer id of the learner tables behind each row where kept tables are drawn once per cell and
    training run: (seed, cell, training_run) (issue 45 item 3), (seed, cell) for rows without a run (-1 or
    missing; datasets before it: one table set per cell)."""
    if "training_run" not in rows:
        return cell_ids(rows)
    keys = [c for c in ("seed", "cell") if c in rows]
    runs = rows["training_run"].fillna(-1)
    return rows[keys].assign(_run=runs).groupby([*keys, "_run"], sort=False, observed=True).ngroup().to_numpy()


def cell_ids(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) integer id of each row's cell, (seed, cell): its environments are the cell's alone."""
    return rows.groupby([c for c in ("seed", "cell") if c in rows], sort=False).ngroup().to_numpy()


def is_reference(rows: pd.DataFrame, behaviour: str) -> pd.Series:
    """(rows,) whether each row is of the reference group of `behaviour` (random, oracle, local search): its
    agents alone, with protocol none and no mix."""
    return (rows["behaviour"] == behaviour) & (rows["protocol"] == "none") & (rows["mix"] == "")


def reference_upsilon(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell, Υ of the random and the oracle groups (NaN where the cell lacks one)."""
    columns = {behaviour: rows[is_reference(rows, behaviour)].groupby("cell")["score"].mean()
               for behaviour in REFERENCE_BEHAVIOURS}
    return pd.DataFrame(columns).reindex(rows["cell"].unique())


def reference_keys(rows: pd.DataFrame) -> list[str]:
    """The grid and the environment-class columns that vary: the levels a random reference is matched on."""
    return ["grid"] + [c for c in ENVIRONMENT_CLASS_COLUMNS
                       if c != "grid" and c in rows and rows[c].nunique(dropna=False) > 1]


def random_references(rows: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """The random group's scores per reference level (`reference_keys`: the grid and the varying class columns)."""
    return {key if isinstance(key, tuple) else (key,): part["score"].to_numpy(float)
            for key, part in rows[is_reference(rows, "random")].groupby(reference_keys(rows), dropna=False)}


def per_distinct(function, *columns: pd.Series) -> np.ndarray:
    """(rows,) function(*values) of each row's values in `columns`, called once per distinct combination of
    values, with the values of its first row (a sweep's rows repeat a few behaviours, mixes and protocols; a call
    per row costs seconds at a million rows). Missing values (None, NaN) are one value of their own."""
    codes = [pd.factorize(column, use_na_sentinel=False)[0] for column in columns]
    if not len(codes[0]):
        return np.array([])
    shape = [codes_of.max() + 1 for codes_of in codes]
    _, first, inverse = np.unique(np.ravel_multi_index(codes, shape), return_index=True, return_inverse=True)
    results = [function(*(column.iloc[row] for column in columns)) for row in first]
    return np.asarray(results)[inverse.ravel()]


def learns(behaviour: str, mix: str) -> bool:
    """True when any member of the group learns (trains before the scored pass)."""
    from collective.behaviours import learns as behaviour_learns
    from collective.config import parse_mix

    return any(behaviour_learns(name) for name in (parse_mix(mix) if mix else [behaviour]))


def training_experience(rows: pd.DataFrame) -> pd.Series:
    """Training agent-steps per agent per episode: q_training_passes x iterations for learners, else 0."""
    flags = per_distinct(learns, rows["behaviour"], rows["mix"]).astype(bool)
    return pd.Series(np.where(flags, rows["q_training_passes"] * rows["iterations"], 0), index=rows.index)
