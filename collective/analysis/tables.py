"""Analyses of sweep datasets: Υ tables with confidence intervals, the gain of collectives over isolated
agents, protocol comparisons, a regression of Υ on K, H and group size, the PGI index and learning slopes.

A dataset holds one row per (cell, episode, group) with the episode's score R̄ (paper 003 Definition 2);
Υ of a group is the mean of R̄ over its episodes (Definition 3), with a Student-t 95% interval over
episodes as in `collective.analysis.scores`. All groups of one cell play the same environments (seeded by
SeedSequence(seed, spawn_key=(cell, episode))), so two groups are compared on the differences of their
scores paired by (cell, episode), and a table that pools groups counts an environment once: its rows form
one cluster. Without `paired_group_sizes` no two cells that differ in more than a 2016 switch share an
environment; with it, the cells of a grid that differ only in group size share theirs (`environment_ids`).
"""
from __future__ import annotations

import json
import math
import platform
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from scipy import stats

from collective.sweeps.store import DATASET_DIR, SPEC_FILE, parse_sweep_file

REQUIRED_COLUMNS = ("cell", "episode", "group", "score", "k_raw", "entropy_bits", "group_size", "behaviour",
                    "mix", "protocol", "env", "grid", "iterations", "q_training_passes", "kernel_seconds")
GROUP_COLUMNS = ("group", "group_key", "behaviour", "mix", "protocol", "protocol_params")  # name a group type
K_BIN = "k_bin"  # derived column: K (raw LZ76 phrases) in bins of `k_bin_width`
K_MID = "k_mid"  # the bin's midpoint, for plotting
FACTOR_ALIASES = {"k": K_BIN, "K": K_BIN, "h": "entropy_bits", "H": "entropy_bits", "G": "group_size"}
DEFAULT_BY = ("group", "grid", "group_size")
ROW_KEY = ("sweep_id", "cell", "group_key", "episode")  # one row per key: more are duplicates
MEASURED_COLUMNS = ("score",)  # what the tables measure, never a factor
CONFIDENCE = 0.95
REFERENCE_BEHAVIOURS = ("random", "oracle")  # accuracy 0 and 1 (paper 004, Step 1)
# PGI resource scales (paper 004, "PGI Index", Step 2). Computation: the paper's "computations performed"
# scale (0 = ZettaFLOPS, 10 = FLOPS), log-linear, counted in agent-steps (one decision of one agent a unit):
# machine-independent, unlike kernel seconds, but blind to the work inside a decision.
COMPUTATION_SCALE_STEPS = (1e21, 1.0)
# Demonstrations, the paper's related-data scale: (fewer than this many, score); none = 10, else 0 (10B+).
# "<100s" is read as fewer than 1000. Training episodes of the test's own class are related data.
DEMONSTRATION_SCORES = ((1, 10), (10, 9), (1_000, 7), (10_000, 5), (1_000_000, 3), (100_000_000, 1))


class DatasetError(ValueError):
    """Input that cannot be analysed: not a dataset, or an unknown factor. The message is one line."""


@dataclass
class SweepSource:
    """One sweep directory's provenance: its sweep.json (None when only a dataset folder was given)."""

    dataset: Path
    description: dict | None
    files: int
    bytes: int


@dataclass
class Dataset:
    """The rows of one or more sweeps (concatenated), with their sources."""

    rows: pd.DataFrame
    sources: list[SweepSource]
    notices: list[str] = field(default_factory=list)  # what loading found that changes what is counted


@dataclass
class Table:
    """A titled result table; `note` says what was computed and cites the source."""

    name: str
    title: str
    note: str
    frame: pd.DataFrame


@dataclass
class Analysis:
    """Every table of `analyze`, in display order, and why an expected table was skipped (name -> reason)."""

    tables: dict[str, Table] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def add(self, table: Table) -> None:
        self.tables[table.name] = table


# Config columns a sweep's factors and groups vary by design (sweeps.spec FACTOR_KEYS, [groups]); any other
# config column (the profile, T, learning and environment settings) that differs between datasets makes
# them different experiments, which `load_dataset` pools only when told (issue 22 point 5).
DESIGN_COLUMNS = ("behaviour", "group_size", "mix", "rows", "cols", "episodes", "seed", "protocol", "protocol_params",
                  "behaviour_params", "communication_control", "k_min", "k_max", "observation_range", "env")


def _check_poolable(frames: list[pd.DataFrame], paths: list[Path]) -> None:
    """Raise DatasetError naming the first setting whose values differ between two datasets."""
    from dataclasses import fields

    from collective.config import EvaluationConfig

    settings = [f.name for f in fields(EvaluationConfig) if f.name not in DESIGN_COLUMNS
                and not f.name.startswith("cpp_")]
    first = frames[0]
    for frame, path in zip(frames[1:], paths[1:]):
        for name in settings:
            if name not in first or name not in frame:
                continue
            a, b = sorted(map(str, first[name].unique())), sorted(map(str, frame[name].unique()))
            if a != b:
                raise DatasetError(f"{paths[0]} and {path} differ in {name} ({', '.join(a)} vs {', '.join(b)}): "
                                   "they are different experiments; pass --pool to analyse them together")


def load_dataset(paths: list[str | Path], pool: bool = False) -> Dataset:
    """Read sweep directories (or their dataset/ folders); raises DatasetError naming a bad path or a
    damaged sweep.json, a dataset given twice, or two datasets whose profile or settings differ unless
    `pool`. Notices say what is not as planned: a sweep that did not finish, rows without a score (left
    out) and duplicate rows (counted once)."""
    frames, sources, notices, seen = [], [], [], {}
    for path in map(Path, paths):
        try:
            if not path.is_dir():
                raise DatasetError(f"{path}: no such directory")
            data_dir = path / DATASET_DIR if (path / DATASET_DIR).is_dir() else path
            resolved = data_dir.resolve()
        except OSError as error:  # a symlink loop
            raise DatasetError(f"{path}: {error.strerror}") from None
        if resolved in seen:
            raise DatasetError(f"{path}: the same dataset as {seen[resolved]}, given twice (its rows would count twice)")
        seen[resolved] = path
        parts = sorted(data_dir.glob("part-*.parquet"))
        if not parts:
            raise DatasetError(f"{path} is not a sweep dataset: no {DATASET_DIR}/part-*.parquet files "
                               f"(run `collective sweep SPEC.toml --out DIR` first)")
        try:
            table = pq.read_table(parts)
        except Exception as error:  # pyarrow raises several types for unreadable files
            raise DatasetError(f"{data_dir}: unreadable Parquet data ({type(error).__name__}: "
                               f"{str(error).splitlines()[0]})") from None
        missing = [name for name in REQUIRED_COLUMNS if name not in table.column_names]
        if missing:
            raise DatasetError(f"{data_dir} is not a sweep dataset: missing columns {', '.join(missing)}")
        frame = table.drop_columns([c for c in ("spawn_key",) if c in table.column_names]).to_pandas()
        if "spawn_key" in table.column_names:  # the environment's seed word (`Cell.seed_key`), shared by paired cells
            frame["seed_word"] = [key[0] for key in table.column("spawn_key").to_pylist()]
        frames.append(frame)
        description = _sweep_description(data_dir.parent / SPEC_FILE)
        if description:
            notices += _incomplete(data_dir, description, len(parts), table.num_rows)
        sources.append(SweepSource(dataset=data_dir.resolve(), description=description, files=len(parts),
                                   bytes=sum(part.stat().st_size for part in parts)))
    if not pool:
        _check_poolable(frames, list(map(Path, paths)))
    rows = pd.concat(frames, ignore_index=True)
    unscored = rows["score"].isna()
    if unscored.any():
        notices.append(f"{int(unscored.sum())} of {len(rows)} rows have no score (NaN; groups "
                       f"{', '.join(sorted(map(str, rows.loc[unscored, 'group'].unique())))}): left out")
        rows = rows[~unscored].reset_index(drop=True)
    key = [column for column in ROW_KEY if column in rows]
    repeated = rows.duplicated(key)
    if repeated.any():
        notices.append(f"{int(repeated.sum())} duplicate rows (same {', '.join(key)}): counted once")
        rows = rows[~repeated].reset_index(drop=True)
    if rows.empty:
        raise DatasetError(f"{', '.join(map(str, paths))}: the dataset has no rows")
    return Dataset(rows=rows, sources=sources, notices=notices)


def _sweep_description(spec_file: Path) -> dict | None:
    """A sweep directory's sweep.json (None where there is none); DatasetError when it is damaged."""
    if not spec_file.is_file():
        return None
    try:
        description = parse_sweep_file(spec_file)
    except OSError:
        description = None
    if description is None or not isinstance(description.get("plan", {}), dict):
        raise DatasetError(f"{spec_file}: damaged (not the JSON object `collective sweep` writes); rerun the sweep "
                           f"command to rewrite it, or analyse {spec_file.parent / DATASET_DIR} alone")
    return description


def _incomplete(data_dir: Path, description: dict, chunks: int, rows: int) -> list[str]:
    """A notice when the dataset holds fewer rows than its sweep planned."""
    plan = description.get("plan", {})
    planned_rows, planned_units = plan.get("rows"), plan.get("units")
    if not isinstance(planned_rows, int) or rows >= planned_rows:
        return []
    return [f"{data_dir.parent} is an unfinished sweep: {rows:,} of {planned_rows:,} planned rows in {chunks} of "
            f"{planned_units} chunks; its tables cover the finished part only (rerun the sweep to complete it)"]


def add_k_bins(rows: pd.DataFrame, width: int) -> pd.DataFrame:
    """Copy of `rows` with K binned: bins [1, w], [w+1, 2w], ... labelled "1-4" (or "7" when w = 1)."""
    if width < 1:
        raise DatasetError(f"argument --k-bin-width: must be >= 1 (got {width})")
    index = (rows["k_raw"].to_numpy() - 1) // width
    low, high = 1 + index * width, (index + 1) * width
    labels = [str(a) if width == 1 else f"{a}-{b}" for a, b in zip(low, high)]
    order = [str(a) if width == 1 else f"{a}-{a + width - 1}" for a in sorted(set(low))]
    rows = rows.copy()
    rows[K_BIN] = pd.Categorical(labels, categories=order, ordered=True)
    rows[K_MID] = (low + high) / 2
    return rows


def resolve_factors(rows: pd.DataFrame, names: list[str]) -> list[str]:
    """Column names for factor names or aliases (k -> binned K, H -> entropy_bits, G -> group_size)."""
    columns = []
    for name in names:
        column = FACTOR_ALIASES.get(name, name)
        if column in MEASURED_COLUMNS:
            raise DatasetError(f"argument --by: {name!r} is what the tables measure, not a factor")
        if column not in rows.columns:
            allowed = ", ".join(list(FACTOR_ALIASES) + [c for c in rows.columns if c not in (K_MID,)])
            raise DatasetError(f"argument --by: {name!r} is not a column of the dataset; allowed: {allowed}")
        if column not in columns:
            columns.append(column)
    return columns


def environment_ids(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) integer id of each row's environment, (seed, seed word, episode) where the rows carry the seed
    word of their environments (`seed_word`, from a sweep row's spawn key), else (seed, cell, episode): rows
    of different groups of a cell share it, and so do rows of cells that share their seed word (cells that
    differ only in group size under `paired_group_sizes`, or only in a 2016 switch)."""
    cell = "seed_word" if "seed_word" in rows else "cell"
    return rows.groupby([c for c in ("seed", cell, "episode") if c in rows], sort=False).ngroup().to_numpy()


def cell_ids(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) integer id of each row's cell, (seed, cell): its environments are the cell's alone."""
    return rows.groupby([c for c in ("seed", "cell") if c in rows], sort=False).ngroup().to_numpy()


def clustered_mean_ci(values: np.ndarray, clusters: np.ndarray) -> tuple[int, float, float, float]:
    """(clusters, mean, low, high): the mean of `values` with a cluster-robust 95% interval, SE² =
    C/(C-1) Σ_c (Σ_(i in c) (y_i - ȳ))² / n² and Student-t on C - 1 degrees of freedom (Cameron & Miller
    2015, "A practitioner's guide to cluster-robust inference", §II-III); one value per cluster gives
    `mean_ci`'s interval. NaN bounds with fewer than two clusters."""
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    codes, inverse = np.unique(clusters, return_inverse=True)
    count = len(codes)
    if count < 2:
        return count, mean, math.nan, math.nan
    sums = np.bincount(inverse, weights=values - mean)
    se = math.sqrt(count / (count - 1) * float(np.sum(sums ** 2))) / n
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, count - 1) * se
    return count, mean, mean - half, mean + half


def mean_ci(values: np.ndarray) -> tuple[int, float, float, float]:
    """(n, mean, low, high): Student-t 95% interval of the mean; NaN bounds when n < 2."""
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return n, mean, math.nan, math.nan
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return n, mean, mean - half, mean + half


def upsilon_table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Υ (mean R̄ over episodes, paper 003 Definition 3) with a 95% CI for every level of `by`; the CI is
    clustered by environment, so groups pooled in one level count a shared environment once."""
    rows = rows.assign(_environment=environment_ids(rows))
    labelled = "centralised" in rows.columns  # datasets before issue 24 lack it
    records = []
    for key, part in rows.groupby(by, observed=True, sort=True, dropna=False):
        environments, mean, low, high = clustered_mean_ci(part["score"].to_numpy(), part["_environment"].to_numpy())
        records.append(dict(zip(by, key), episodes=len(part), environments=environments, upsilon=mean,
                            ci95_low=low, ci95_high=high))
        if labelled:  # a behaviour that declared its agents act on each other's observations (issue 24 point 4)
            records[-1]["centralised"] = bool(part["centralised"].fillna(False).any())
    return pd.DataFrame(records, columns=[*by, "episodes", "environments", "upsilon", "ci95_low", "ci95_high",
                                          *(["centralised"] if labelled else [])])


# Config columns that fix the distribution an episode's environment is drawn from (and the Legg-Hutter
# estimator): the Legg-Hutter table never pools rows that differ in one of them.
ENVIRONMENT_CLASS_COLUMNS = ("env", "grid", "iterations", "pattern_generator", "evil_pairing", "k_min", "k_max",
                             "k_sampling", "landscape_peaks", "landscape_peak_width", "landscape_ruggedness",
                             "landscape_motion", "legg_hutter_estimator")
PATTERN_PROBABILITY = "pattern_log2_probability"  # per row: log2 p_gen of ⊕'s pattern (pattern_probability.py)
# Per row, log2 of a K-dependent selection factor of the episode sampler, when it is not plain rejection into
# the K range: under k_sampling = "stratified" (target K uniform over the range's n_K values, then rejection to
# exactly that K), -log2(n_K) - log2 P_gen(K = k); the sampling probability is then p_gen(μ) · 2^this.
K_SELECTION = "k_log2_selection"
# What each legg_hutter_estimator computes, shown beside its estimate (issue 22 point 7).
LEGG_HUTTER_ESTIMANDS = {
    "importance_bits": "paper 001's Σ 2^-K V / Σ 2^-K over the generator's patterns (K in bits)",
    "sampled_phrases": "2^-K-weighted mean of R̄ over the sampled episodes (K in phrases): a weighted stratum "
                       "mean, not paper 001's Σ 2^-K V over distinct environments",
}
LEGG_HUTTER_NOTE = (
    "A 2^-K-weighted Υ in paper 001's form; what it estimates depends on the rows' legg_hutter_estimator "
    "(column estimand), and only importance_bits targets paper 001's Σ_μ 2^-K(μ) V(μ) over distinct "
    "environments (normalised). importance_bits: K = c (log2 c + log2 N) bits for c LZ76 phrases over the N cells "
    "(Lempel-Ziv code length: Ziv & Lempel 1978; Cover & Thomas 2006 §13.4.2, §13.5.2), each episode weighted by "
    "2^-K / q(μ), q the generator's probability of its ⊕ pattern (pattern_log2_probability, exact; a K range's "
    "rejection constant cancels), so Σ w R̄ / Σ w targets Σ 2^-K V / Σ 2^-K over the patterns the generator can "
    "draw (self-normalised importance sampling, Owen 2013 §9.2). sampled_phrases: today's Σ 2^-c R̄ / Σ 2^-c "
    "over the sampled episodes, c in phrases; it weights patterns by 2^-c times their sampling probability and "
    "estimates neither quantity: with K drawn uniformly (sound), it is the per-K mean Υ weighted by 2^-K, half its "
    "weight on K = 2 (still patterns), three quarters on K <= 3. Both: Kish effective episodes (Σw)²/Σw² and a delta-method 95% CI, "
    "t on ESS - 1 df (undercovers when the ESS is small). Estimated within one environment class (grid, T, "
    "K range, generator ...), whose rejection constants differ; upsilon = the plain mean for comparison.")


def strata_of(by: list[str]) -> list[str]:
    """The factors of `by` that describe environments or cells, not group types: paired comparisons
    are made within each of their levels."""
    return [column for column in by if column not in GROUP_COLUMNS]


def sampling_log2_probability(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) log2 of the probability that the episode sampler drew each row's ⊕ pattern, up to a constant
    per environment class: pattern_log2_probability, plus k_log2_selection where the sampler selects by K.
    Raises DatasetError when a row's probability is not known."""
    if PATTERN_PROBABILITY not in rows:
        raise DatasetError(f"the dataset has no {PATTERN_PROBABILITY} column (swept before it was recorded); "
                           "re-run the sweep")
    log2_probability = rows[PATTERN_PROBABILITY].to_numpy(float)
    if "k_sampling" in rows and (rows["k_sampling"] == "stratified").any():
        if K_SELECTION not in rows or rows.loc[rows["k_sampling"] == "stratified", K_SELECTION].isna().any():
            raise DatasetError(f"rows sampled with k_sampling = stratified need {K_SELECTION} (-log2 of the number "
                               "of K values - log2 P_gen(K)) to be weighted")
    if K_SELECTION in rows:
        log2_probability = log2_probability + rows[K_SELECTION].fillna(0.0).to_numpy(float)
    if not np.isfinite(log2_probability).all():
        classes = rows.loc[~np.isfinite(log2_probability), ["pattern_generator", "evil_pairing"]].drop_duplicates()
        raise DatasetError("the pattern probability is unknown for rows of "
                           + "; ".join(f"pattern_generator {g}, evil_pairing {e}" for g, e in classes.itertuples(index=False))
                           + " (known for the cyclic generator with index_shift pairing)")
    return log2_probability


def legg_hutter_table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Legg-Hutter Υ per level of `by` and environment class (LEGG_HUTTER_NOTE); raises DatasetError when
    the rows' estimator cannot weight them."""
    from collective.analysis.scores import legg_hutter_log2_weights, weighted_estimate

    rows = rows.assign(legg_hutter_estimator=rows["legg_hutter_estimator"] if "legg_hutter_estimator" in rows
                       else "sampled_phrases")
    classes = [c for c in ENVIRONMENT_CLASS_COLUMNS if c in rows and c not in by and rows[c].nunique(dropna=False) > 1]
    keys = [*by, *classes]
    records = []
    for key, part in rows.groupby(keys, observed=True, sort=True, dropna=False):
        method = part["legg_hutter_estimator"].iloc[0]
        cells = math.prod(map(int, part["grid"].iloc[0].split("x")))  # the alphabet: one grid per class
        probability = sampling_log2_probability(part) if method == "importance_bits" else None
        try:
            log2_weights = legg_hutter_log2_weights(method, part["k_raw"].to_numpy(), cells, probability)
        except ValueError as error:
            raise DatasetError(str(error)) from None
        estimate = weighted_estimate(part["score"].to_numpy(), log2_weights)
        records.append(dict(zip(keys, key if isinstance(key, tuple) else (key,)), method=method, episodes=len(part),
                            estimand=LEGG_HUTTER_ESTIMANDS.get(method, method),
                            upsilon=float(part["score"].mean()), upsilon_legg_hutter=estimate.estimate,
                            ci95_low=estimate.ci95_low, ci95_high=estimate.ci95_high,
                            effective_episodes=estimate.effective_episodes,
                            effective_fraction=estimate.effective_episodes / len(part)))
    return pd.DataFrame(records, columns=[*keys, "method", "estimand", "episodes", "upsilon", "upsilon_legg_hutter", "ci95_low",
                                          "ci95_high", "effective_episodes", "effective_fraction"])


def _group_types(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[["group", "behaviour", "mix", "protocol"]].drop_duplicates("group").set_index("group")


def _paired(rows: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    """Scores of two groups on the same environments: columns cell, episode, first, second, + strata."""
    a = rows[rows["group"] == first]
    b = rows[rows["group"] == second][["cell", "episode", "score"]]
    return a.merge(b, on=["cell", "episode"], suffixes=("_first", "_second"))


def _paired_statistics(first: np.ndarray, second: np.ndarray) -> dict:
    """Mean difference with its paired-t 95% CI, Cohen's d_z, paired t and Wilcoxon signed-rank p."""
    differences = first - second
    n, mean, low, high = mean_ci(differences)
    sd = float(np.std(differences, ddof=1)) if n > 1 else math.nan
    p_t = float(stats.ttest_rel(first, second).pvalue) if n > 1 and sd > 0 else math.nan
    p_wilcoxon = float(stats.wilcoxon(differences).pvalue) if n > 1 and np.any(differences) else math.nan
    return dict(pairs=n, difference=mean, ci95_low=low, ci95_high=high,
                cohen_dz=mean / sd if sd > 0 else math.nan, p_t=p_t, p_wilcoxon=p_wilcoxon)


HOLM_COLUMNS = {"p_t": "p_holm", "p_wilcoxon": "p_wilcoxon_holm"}  # raw p -> Holm-corrected p


def _holm(frame: pd.DataFrame) -> pd.DataFrame:
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


def _compare(rows: pd.DataFrame, pairs: list[tuple[str, str]], strata: list[str], names: tuple[str, str]) -> pd.DataFrame:
    records = []
    for first, second in pairs:
        paired = _paired(rows, first, second)
        for key, part in (paired.groupby(strata, observed=True, sort=True) if strata else [((), paired)]):
            key = key if isinstance(key, tuple) else (key,)
            record = {names[0]: first, names[1]: second, **dict(zip(strata, key)),
                      f"upsilon_{names[0]}": part["score_first"].mean(),
                      f"upsilon_{names[1]}": part["score_second"].mean()}
            record.update(_paired_statistics(part["score_first"].to_numpy(), part["score_second"].to_numpy()))
            records.append(record)
    columns = [*names, *strata, f"upsilon_{names[0]}", f"upsilon_{names[1]}", "pairs", "difference", "ci95_low",
               "ci95_high", "cohen_dz", "p_t", "p_wilcoxon"]
    return _holm(pd.DataFrame(records, columns=columns))


def collective_gains(rows: pd.DataFrame, strata: list[str]) -> pd.DataFrame:
    """Each collective (a group with a protocol) against the isolated agents of the same behaviour or mix
    (protocol none) in the same cells, paired by (cell, episode); difference = collective - isolated."""
    types = _group_types(rows)
    isolated = types[types["protocol"] == "none"]
    pairs = []
    for label, group in types[types["protocol"] != "none"].iterrows():
        match = isolated[(isolated["behaviour"] == group["behaviour"]) & (isolated["mix"] == group["mix"])]
        pairs += [(label, baseline) for baseline in match.index]
    return _compare(rows, pairs, strata, ("collective", "isolated"))


def protocol_comparisons(rows: pd.DataFrame, strata: list[str]) -> pd.DataFrame:
    """Every pair of collectives (groups with a protocol) that played the same cells, paired by
    (cell, episode); difference = first - second; `winner` is the better one where Holm p < 0.05."""
    collectives = sorted(_group_types(rows).query("protocol != 'none'").index)
    cells = rows.groupby("group")["cell"].agg(set)
    pairs = [(a, b) for a, b in combinations(collectives, 2) if cells[a] & cells[b]]
    frame = _compare(rows, pairs, strata, ("first", "second"))
    significant = frame["p_holm"] < 0.05
    frame["winner"] = np.where(significant, np.where(frame["difference"] > 0, frame["first"], frame["second"]), "")
    return frame


def _is_reference(rows: pd.DataFrame, behaviour: str) -> pd.Series:
    return (rows["behaviour"] == behaviour) & (rows["protocol"] == "none") & (rows["mix"] == "")


def reference_upsilon(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell, Υ of the random and the oracle groups (NaN where the cell lacks one)."""
    columns = {behaviour: rows[_is_reference(rows, behaviour)].groupby("cell")["score"].mean()
               for behaviour in REFERENCE_BEHAVIOURS}
    return pd.DataFrame(columns).reindex(rows["cell"].unique())


def normalised_accuracy(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (group, cell): accuracy = (Υ - Υ_random) / (Υ_oracle - Υ_random) over the cell's episodes,
    0 for the random agent and 1 for the oracle of the same cell (paper 004, Step 1); NaN where the cell
    lacks a reference or the oracle does not beat random."""
    per_cell = rows.groupby(["group", "cell"], sort=False).agg(upsilon=("score", "mean")).reset_index()
    references = reference_upsilon(rows)
    span = references["oracle"] - references["random"]
    per_cell["accuracy"] = ((per_cell["upsilon"] - per_cell["cell"].map(references["random"]))
                            / per_cell["cell"].map(span.where(span > 0)))
    return per_cell


ACCURACY_NOTE = (
    "accuracy = (Υ - Υ_random) / (Υ_best - Υ_random): 0 for the random agent, 1 at the ceiling (issue 22 point 4; "
    "paper 004 Step 1 with the ceiling in place of the oracle). Υ_best = the mean ceiling of R̄ of the level's "
    "episodes (upsilon_best: the best each agent could earn from its start, by dynamic programming over the known "
    "⊕/⊖ paths; an upper bound when coordination_threshold > 1); Υ_random = the random group's Υ on the same "
    "grid (and environment class), over all its group sizes (its expectation does not depend on G). Always per "
    "grid: Υ is defined for one H (paper 003 Definition 3). 95% CI: delta method for a ratio of means (Cochran "
    "1977, Sampling Techniques §6.3), Var = [Var(mean(R̄ - A·best)) + (A - 1)² Var(Υ_random)] / (Υ_best - "
    "Υ_random)², the random group's mean an independent sample; Student-t on episodes - 1 df. Blank without a "
    "random group on the grid, or a ceiling not above Υ_random.")


def reference_keys(rows: pd.DataFrame) -> list[str]:
    """The grid and the environment-class columns that vary: the levels a random reference is matched on."""
    return ["grid"] + [c for c in ENVIRONMENT_CLASS_COLUMNS
                       if c != "grid" and c in rows and rows[c].nunique(dropna=False) > 1]


def ceiling_accuracy(scores: np.ndarray, ceilings: np.ndarray, random: np.ndarray) -> tuple[float, float, float]:
    """(accuracy, low, high) of ACCURACY_NOTE from a level's scores and ceilings (paired by episode) and the
    random group's scores on the same grid; NaN where not defined."""
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
    variance = float(np.var(scores - accuracy * ceilings, ddof=1)) / n
    if len(random) > 1:
        variance += (accuracy - 1) ** 2 * float(np.var(random, ddof=1)) / len(random)
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * math.sqrt(variance) / span
    return accuracy, accuracy - half, accuracy + half


def random_references(rows: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """The random group's scores per reference level (`reference_keys`: the grid and the varying class columns)."""
    return {key if isinstance(key, tuple) else (key,): part["score"].to_numpy(float)
            for key, part in rows[_is_reference(rows, "random")].groupby(reference_keys(rows), dropna=False)}


def accuracy_table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Accuracy against the ceiling (ACCURACY_NOTE) with Υ, Υ_random and Υ_best for every level of `by`
    and of the grid (and varying environment-class columns), which are added to `by` when missing."""
    keys = [*by, *[c for c in reference_keys(rows) if c not in by]]
    references = random_references(rows)
    ceilings = rows["upsilon_best"] if "upsilon_best" in rows else pd.Series(math.nan, index=rows.index)
    records = []
    for key, part in rows.assign(_best=ceilings).groupby(keys, observed=True, sort=True, dropna=False):
        level = dict(zip(keys, key))
        random = references.get(tuple(level[c] for c in reference_keys(rows)), np.empty(0))
        accuracy, low, high = ceiling_accuracy(part["score"].to_numpy(float), part["_best"].to_numpy(float), random)
        records.append(dict(level, episodes=len(part), upsilon=float(part["score"].mean()),
                            upsilon_random=float(random.mean()) if len(random) else math.nan,
                            upsilon_best=float(part["_best"].mean()), accuracy=accuracy, ci95_low=low, ci95_high=high))
    return pd.DataFrame(records, columns=[*keys, "episodes", "upsilon", "upsilon_random", "upsilon_best", "accuracy",
                                          "ci95_low", "ci95_high"])


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


def _members(behaviour: str, mix: str) -> list[str]:
    from collective.config import parse_mix

    return parse_mix(mix) if mix else [behaviour]


def is_privileged(behaviour: str, mix: str) -> bool:
    """True when any member sees what the test hides from agents (collective.behaviours.privileged)."""
    from collective.behaviours import privileged

    return any(privileged(name) for name in _members(behaviour, mix))


def episode_agent_steps(rows: pd.DataFrame) -> pd.Series:
    """Agent-steps per episode, a group's decisions in the scored pass (G x T) and its learners' training
    passes (learners x q_training_passes x T), as `collective.evaluate` counts them."""
    from collective.behaviours import learns as behaviour_learns

    share = per_distinct(lambda b, m: sum(map(behaviour_learns, _members(b, m))) / len(_members(b, m)),
                         rows["behaviour"], rows["mix"])
    count = share.astype(float) * rows["group_size"]
    scored = rows["group_size"] * rows["iterations"]
    return scored + count * rows["q_training_passes"] * rows["iterations"]


def demonstrations(rows: pd.DataFrame) -> pd.Series:
    """Novel training episodes per test episode: training_episodes for learners on held-out episodes, else 0.
    A replay learner's passes over the test episode are its own practice after the task is revealed, which
    paper 004 allows ("AGIs are allowed to learn what they need ... after the reveal"): not demonstrations;
    their cost is in the agent-steps."""
    flags = training_experience(rows) > 0
    held_out = rows["learning_protocol"] == "held_out" if "learning_protocol" in rows else False
    episodes = rows["training_episodes"] if "training_episodes" in rows else 0
    return pd.Series(np.where(flags & held_out, episodes, 0), index=rows.index)


def demonstration_score(count: float) -> float:
    """Paper 004's demonstration score of `count` related demonstrations (DEMONSTRATION_SCORES)."""
    return next((score for below, score in DEMONSTRATION_SCORES if count < below), 0)


def log_scale_score(value: float, zero_at: float, ten_at: float) -> float:
    """A 0..10 resource score, linear in log10(value) between the anchors (paper 004, Step 2)."""
    position = (math.log10(zero_at) - math.log10(max(value, ten_at))) / (math.log10(zero_at) - math.log10(ten_at))
    return 10 * min(1.0, max(0.0, position))


PGI_NOTE = (
    "PGII = accuracy² x Σ resources x Π generalisation (paper 004, \"PGI Index\", Steps 1-3). Accuracy: 0 = "
    "random, 1 = oracle of the same cell, the mean over Λ*'s (else the first environment class's) grids. Resources, "
    "0..10 each: computation = agent-steps per episode, scored and training (log scale, 0 = 10^21, 10 = 1: the "
    "paper's computations scale; machine-independent, kernel_seconds is shown but not scored); demonstrations = "
    "novel training episodes per test episode (held-out learners; replays of the test episode are practice, not "
    "demonstrations) on the paper's related-data scale (10 = none, 9 = <10, 7 = <1000, 5 = <10k, 3 = <1M, "
    "1 = <100M, else 0). Generalisation over grids: each grid in turn the task known in advance and every other "
    "grid a new one, the mean over these ordered pairs of min(1, accuracy on the new grid / on the known one) "
    "(the paper names no reference grid; a fixed one, such as the smallest, rewards doing badly on it); over "
    "environment classes, min(1, accuracy on the other classes / on the reference class). privileged: a member "
    "sees ⊕'s future (oracle, imitation's guide); its PGII is left blank. Not "
    "measured by the platform: energy, memory, time on a reference machine, unrelated demonstrations (priors), "
    "new modalities and tasks added over time (Step 3 asks for them; other grids and environment classes are "
    "variations of one task family, so the generalisation factors are optimistic).")


def grid_generalisation(accuracies: np.ndarray) -> float:
    """Mean over ordered pairs (known grid k, new grid n), k != n, of min(1, max(0, accuracy_n / accuracy_k));
    pairs whose known grid has no positive accuracy are left out (NaN when none is left)."""
    ratios = [min(1.0, max(0.0, new / known)) for k, known in enumerate(accuracies) if known > 0
              for n, new in enumerate(accuracies) if n != k and not math.isnan(new)]
    return float(np.mean(ratios)) if ratios else math.nan


def pgi_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The Pragmatic General Intelligence index per (group, group size), paper 004 "PGI Index" (PGI_NOTE):
    PGII = accuracy² x Σ resource scores x Π generalisation factors.

    - accuracy: normalised accuracy (see `normalised_accuracy`) on the reference class, Λ* (else the first
      environment class by name), the mean over its grids of each grid's mean, clipped at 0;
    - resources (Step 2, 0..10 each): computation = agent-steps per episode (`episode_agent_steps`) on the
      paper's computations scale, and demonstrations (`demonstrations`) on its related-data scale;
    - generalisation (Step 3): over the grids of that class, each grid in turn known in advance (Step 1:
      "tasks known in advance") and each other grid new, the mean over ordered pairs of min(1, accuracy on
      the new grid / on the known one); over the other environment classes, min(1, accuracy there /
      accuracy on the reference class), one factor each; a factor with no other level
      in the data is left out (an empty product is 1).
    One row per group type, size and training regime (training steps per agent, demonstrations); groups
    with a privileged member are flagged and get no PGII: they are references, not contestants."""
    accuracy = normalised_accuracy(rows)
    cells = rows.drop_duplicates("cell").set_index("cell")
    accuracy = accuracy.join(cells[["env", "rows", "cols", "group_size"]], on="cell")
    classes = sorted(rows["env"].unique())
    reference_env = "lambda_star" if "lambda_star" in classes else classes[0]
    steps_per_episode = episode_agent_steps(rows)
    demonstrations_per_episode = demonstrations(rows)
    # one row per training regime: sweeps that differ in passes or held-out episodes are different agents
    regime = pd.DataFrame(dict(group=rows["group"], cell=rows["cell"], training_steps=training_experience(rows),
                               demonstrations=demonstrations_per_episode)).drop_duplicates(["group", "cell"])
    accuracy = accuracy.merge(regime, on=["group", "cell"])
    records = []
    for (label, size, trained, shown), part in accuracy.groupby(["group", "group_size", "training_steps",
                                                                  "demonstrations"], sort=True):
        in_env = part["env"] == reference_env
        by_grid = part[in_env].groupby(["rows", "cols"])["accuracy"].mean()
        reference = by_grid.mean()
        factors = {}
        if len(by_grid) > 1:
            factors["generalisation_grid"] = grid_generalisation(by_grid.to_numpy())
        if (~in_env).any():
            ratio = part.loc[~in_env, "accuracy"].mean() / reference if reference > 0 else math.nan
            factors["generalisation_env"] = min(1.0, max(0.0, ratio)) if not math.isnan(ratio) else math.nan
        group_rows = rows["cell"].isin(part["cell"]) & (rows["group"] == label)
        first = rows[group_rows].iloc[0]
        steps = float(steps_per_episode[group_rows].mean())
        computation_score = log_scale_score(steps, *COMPUTATION_SCALE_STEPS)
        experience_score = demonstration_score(shown)
        clipped = max(0.0, reference) if not math.isnan(reference) else math.nan
        product = math.prod(factors.values())
        privileged = is_privileged(first["behaviour"], first["mix"])
        pgi = math.nan if privileged else \
            0.0 if clipped == 0 else clipped ** 2 * (computation_score + experience_score) * product
        records.append(dict(group=label, group_size=size, privileged=privileged, accuracy=reference,
                            training_steps=trained, agent_steps=steps, computation_score=computation_score, demonstrations=shown,
                            experience_score=experience_score, resource_sum=computation_score + experience_score,
                            kernel_seconds=float(rows.loc[group_rows, "kernel_seconds"].mean()), **factors,
                            generalisation=product, pgi=pgi))
    frame = pd.DataFrame(records)
    order = ["group", "group_size", "privileged", "accuracy", "training_steps", "agent_steps", "computation_score", "demonstrations",
             "experience_score", "resource_sum", "kernel_seconds", "generalisation_grid", "generalisation_env",
             "generalisation", "pgi"]
    return frame[[column for column in order if column in frame.columns]]


def with_grid(by: list[str]) -> list[str]:
    """`by` with the grid appended when missing: Υ is defined for one H (paper 003 Definition 3), so no table
    pools grids."""
    return by if "grid" in by else [*by, "grid"]


def analyse(dataset: Dataset, by: list[str], k_bin_width: int = 4) -> Analysis:
    """Every table for `dataset`, grouped by the factors `by` (names or aliases) and always by grid."""
    rows = add_k_bins(dataset.rows, k_bin_width)
    by = with_grid(resolve_factors(rows, by))
    strata = strata_of(by)
    analysis = Analysis()
    shown = ", ".join(by)
    analysis.add(Table("accuracy", f"Accuracy against the ceiling by {shown}", ACCURACY_NOTE, accuracy_table(rows, by)))
    analysis.add(Table("upsilon", f"Υ by {shown}",
                       "Υ = mean episode score R̄ (paper 003 Definitions 2-3); 95% CI clustered by environment "
                       "(seed, cell, episode: groups of a cell share it), Student-t on environments - 1 df "
                       "(Cameron & Miller 2015); with one group per level, the CI over episodes. centralised: a "
                       "behaviour of the level declared that its agents act on each other's observations.",
                       upsilon_table(rows, by)))
    try:
        analysis.add(Table("legg_hutter", f"2^-K-weighted Υ (Legg-Hutter form; see estimand) by {shown}",
                           LEGG_HUTTER_NOTE, legg_hutter_table(rows, by)))
    except DatasetError as error:
        analysis.skipped["legg_hutter"] = str(error)
    in_strata = f" within {', '.join(strata)}" if strata else ""
    analysis.add(Table("gains", f"Gain of collectives over isolated agents{in_strata}",
                       "difference = Υ(collective) - Υ(isolated, same behaviour, protocol none), paired by "
                       "(cell, episode); paired-t CI, Cohen's d_z = mean/sd of differences, paired t and "
                       "Wilcoxon signed-rank p, each Holm-corrected over the table (p_holm, p_wilcoxon_holm).",
                       collective_gains(rows, strata)))
    analysis.add(Table("protocols", f"Protocol comparisons{in_strata}",
                       "difference = Υ(first) - Υ(second) on the same environments, paired by (cell, episode); "
                       "paired t and Wilcoxon signed-rank p, each Holm-corrected over the table (p_holm, "
                       "p_wilcoxon_holm); winner where Holm-corrected paired-t p < 0.05.",
                       protocol_comparisons(rows, strata)))
    from collective.analysis.communication import add_communication_tables  # it imports this module

    add_communication_tables(analysis, rows, strata)
    from collective.analysis.focal import add_focal_table  # focal.py imports this module

    add_focal_table(analysis, rows)
    from collective.analysis.regression import add_regression_tables  # regression.py imports this module

    add_regression_tables(analysis, rows)
    from collective.analysis.replication import add_replication_tables  # replication.py imports this module

    add_replication_tables(analysis, rows)
    analysis.add(Table("pgi", "PGI index (paper 004)", PGI_NOTE, pgi_table(rows)))
    from collective.analysis.learning import add_learning_tables  # learning.py imports this module

    add_learning_tables(analysis, rows)
    from collective.analysis.validity import VALIDITY_NOTE, validate  # validity.py imports this module

    analysis.add(Table("validity", "Validity suite: negative controls and known answers", VALIDITY_NOTE,
                       validate(rows)))
    return analysis


def provenance(dataset: Dataset) -> dict:
    """Where the data came from: sweeps (id, spec, seed, version), machine, compute time and size."""
    rows = dataset.rows
    sweeps = []
    for source in dataset.sources:
        description = source.description or {}
        spec = description.get("spec", {})
        sweeps.append(dict(dataset=str(source.dataset), sweep_id=description.get("sweep_id"),
                           name=description.get("name"), description=description.get("description"),
                           seed=spec.get("seed"), version=description.get("version"), spec=spec,
                           plan=description.get("plan"), files=source.files, bytes=source.bytes))
    return dict(
        sweeps=sweeps, rows=len(rows), columns=len(rows.columns), cells=int(rows["cell"].nunique()),
        group_types=int(rows["group"].nunique()), episodes_per_cell=int(rows.groupby("cell")["episode"].nunique().max()),
        bytes=sum(source.bytes for source in dataset.sources),
        versions=sorted(rows["version"].unique()) if "version" in rows else [],
        seeds=sorted(int(seed) for seed in rows["seed"].unique()) if "seed" in rows else [],
        wall_seconds=float(rows["wall_seconds"].sum()) if "wall_seconds" in rows else math.nan,
        kernel_seconds=float(rows["kernel_seconds"].sum()),
        report_machine=f"{platform.node()} ({platform.system()} {platform.release()}, {platform.machine()}, "
                f"Python {platform.python_version()})")


def _number(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else f"{value:.4g}" if abs(value) < 1e-3 or abs(value) >= 1e5 else f"{value:.4f}"
    return str(value)


def _text_cells(frame: pd.DataFrame) -> list[list[str]]:
    return [[_number(value) for value in row] for row in frame.itertuples(index=False)]


def column_panels(widths: list[int], width: int | None, leading: int) -> list[list[int]]:
    """The columns (by their `widths`) of an aligned table in panels that each fit `width` characters
    (None: one panel), each panel repeating the first column and up to `leading - 1` more (the factors a
    table is read by) while they take at most half the width."""
    def span(columns: list[int]) -> int:
        return sum(widths[i] for i in columns) + 2 * (len(columns) - 1)

    if width is None or span(list(range(len(widths)))) <= width:
        return [list(range(len(widths)))]
    keys = [0]
    while len(keys) < min(leading, len(widths) - 1) and span(keys + [len(keys)]) <= width // 2:
        keys.append(len(keys))
    panels, panel = [], list(keys)
    for column in range(len(keys), len(widths)):
        if len(panel) > len(keys) and span(panel + [column]) > width:
            panels.append(panel)
            panel = list(keys)
        panel.append(column)
    return panels + [panel]


def format_analysis(analysis: Analysis, fmt: str, width: int | None = None) -> str:
    """The tables as aligned text, CSV sections ("# name" lines), one JSON object or Markdown; then a line
    per skipped table (in JSON, {"skipped": reason} under its name). Aligned text ("table") wider than
    `width` comes in panels of columns that fit it (`column_panels`); "wide" is never split."""
    if fmt == "json":
        return json.dumps({**{name: dict(title=table.title, note=table.note,
                                         rows=json.loads(table.frame.to_json(orient="records")))
                              for name, table in analysis.tables.items()},
                           **{name: dict(skipped=reason) for name, reason in analysis.skipped.items()}},
                          ensure_ascii=False, indent=1)
    blocks = []
    for name, table in analysis.tables.items():
        header, cells = [str(c) for c in table.frame.columns], _text_cells(table.frame)
        if fmt == "csv":
            blocks.append(f"# {name}: {table.title}\n" + table.frame.to_csv(index=False))
        elif fmt == "markdown":
            lines = [f"### {table.title}", "", table.note, "", "| " + " | ".join(header) + " |",
                     "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in cells]
            blocks.append("\n".join(lines) + "\n")
        else:
            widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(header)]
            lines = [table.title, table.note]
            floats = [pd.api.types.is_float_dtype(dtype) for dtype in table.frame.dtypes]
            leading = floats.index(True) if True in floats else len(floats)  # the factors come first
            for number, panel in enumerate(column_panels(widths, width if fmt == "table" else None, leading)):
                lines += [""] if number else []
                lines += ["  ".join(header[i].rjust(widths[i]) for i in panel),
                          "  ".join("-" * widths[i] for i in panel)]
                lines += ["  ".join(row[i].rjust(widths[i]) for i in panel) for row in cells]
            if not cells:
                lines.append("(no rows: the dataset has nothing to compare here)")
            blocks.append("\n".join(lines) + "\n")
    prefix = "# " if fmt == "csv" else ""
    skipped = [f"{prefix}Table {name} skipped: {reason}" for name, reason in analysis.skipped.items()]
    return "\n".join(blocks + skipped)
