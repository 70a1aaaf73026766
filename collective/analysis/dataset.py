"""Reading sweep datasets: the rows of one or more sweep directories, refused with one line when they are not
a dataset or not one experiment, with notices of what loading found (an unfinished sweep, rows without a
score, duplicates), and where the rows came from (`provenance`).
"""
from __future__ import annotations

import math
import platform
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pandas.api.types import union_categoricals

from collective.analysis.base import ENVIRONMENT_CLASS_COLUMNS, DatasetError
from collective.analysis.factors import GROUP_COLUMNS
from collective.config import CPP_SWITCHES
from collective.dataset_schema import check_chunk
from collective.sweeps.store import DATASET_DIR, SPEC_FILE, parse_sweep_file

REQUIRED_COLUMNS = ("cell", "episode", "group", "score", "k_raw", "entropy_bits", "group_size", "behaviour",
                    "mix", "protocol", "env", "grid", "iterations", "q_training_passes", "kernel_seconds")
ROW_KEY = ("sweep_id", "cell", "group_key", "episode")  # one row per key: more are duplicates

# Config columns a sweep's factors and groups vary by design (sweeps.spec FACTOR_KEYS, [groups]); any other
# config column (the profile, T, learning and environment settings) that differs between datasets makes
# them different experiments, which `load_dataset` pools only when told (issue 22 point 5).
DESIGN_COLUMNS = ("behaviour", "group_size", "mix", "rows", "cols", "episodes", "seed", "protocol", "protocol_params",
                  "behaviour_params", "communication_control", "k_min", "k_max", "observation_range", "env")
# The columns the tables, figures and dashboard read: `load_dataset` keeps these (and the factors asked for) and
# leaves the others (settings the analysis never reads, the environments' motion statistics: ~40% of a row) on
# disk; tests/test_dataset_columns.py fails when an analysis module names a column missing here.
ANALYSIS_COLUMNS = tuple(dict.fromkeys(
    REQUIRED_COLUMNS + ROW_KEY + DESIGN_COLUMNS + ENVIRONMENT_CLASS_COLUMNS + GROUP_COLUMNS + CPP_SWITCHES + (
        "seed_word", "upsilon_best", "pattern_log2_probability", "centralised", "coordination_threshold",
        "training_episodes", "learning_protocol", "learner_training", "profile", "version", "wall_seconds",
        "score_by_behaviour", "motion", "good_displacement_per_iteration", "communication_accounting", "messages_per_iteration", "bits_per_iteration",
        "message_entropy_bits", "information_bits_per_iteration", "distinct_messages_per_iteration",
        "distinct_information_bits_per_iteration", "training_run")))
# Chunk files read into Arrow before their columns become pandas (`_batch`): a file's Arrow columns cost ~0.2 MB
# besides its rows (small buffers, dictionaries), so at 10^4 files more than the rows; a batch bounds that.
BATCH_FILES = 256
# Whole-number settings the tables only group, compare and print, never compute with: kept as categories, one
# byte a row instead of eight (tests/test_dataset_columns.py checks the tables against the rows as on disk).
CATEGORY_SETTINGS = ("episodes", "seed", "observation_range", "coordination_threshold", "k_min", "k_max",
                     "landscape_peaks", "landscape_peak_width")


@dataclass
class SweepSource:
    """One sweep directory's provenance: its sweep.json (None when only a dataset folder was given)."""

    dataset: Path
    description: dict | None
    files: int
    bytes: int


@dataclass
class Dataset:
    """The rows of one or more sweeps (concatenated), with their sources. `rows` holds the columns the analysis
    reads (`ANALYSIS_COLUMNS` and the factors asked for), text as categories; `columns` names every column on
    disk."""

    rows: pd.DataFrame
    sources: list[SweepSource]
    notices: list[str] = field(default_factory=list)  # what loading found that changes what is counted
    columns: list[str] = field(default_factory=list)

    @property
    def descriptions(self) -> list[dict]:
        """The sweep.json contents of the sources that have one (what `validity.sham_mechanism` re-plays)."""
        return [source.description for source in self.sources if source.description]


def display_labels(dataset: Dataset, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """Display label by group identifier: the spec's (sweep.json's `display`), then `overrides`. A label that
    another group of the rows is shown by too (datasets merged by hand, a --label given twice) is followed by
    the group's identifier, so that no group hides another."""
    labels = {}
    for source in dataset.sources:
        for group in (source.description or {}).get("groups", []):
            if isinstance(group, dict) and group.get("display"):
                labels.setdefault(str(group.get("label")), str(group["display"]))
    labels.update(overrides or {})
    shown = Counter(labels.get(group, group) for group in map(str, dataset.rows["group"].unique()))
    return {group: f"{label} ({group})" if shown[label] > 1 else label for group, label in labels.items()}


def _settings() -> list[str]:
    """The config columns that make two datasets different experiments when their values differ."""
    from dataclasses import fields

    from collective.config import EvaluationConfig

    return [f.name for f in fields(EvaluationConfig) if f.name not in DESIGN_COLUMNS and not f.name.startswith("cpp_")]


def _check_poolable(values: list[dict[str, set]], paths: list[Path]) -> None:
    """Raise DatasetError naming the first setting whose values (per dataset: column -> distinct values) differ
    between two datasets."""
    first = values[0]
    for other, path in zip(values[1:], paths[1:]):
        for name in _settings():
            if name not in first or name not in other:
                continue
            a, b = sorted(map(str, first[name])), sorted(map(str, other[name]))
            if a != b:
                raise DatasetError(f"{paths[0]} and {path} differ in {name} ({', '.join(a)} vs {', '.join(b)}): "
                                   "they are different experiments; pass --pool to analyse them together")


def _read_part(part: Path, schema: pa.Schema, keep: set[str], settings: list[str],
               values: dict[str, set], checked: dict) -> dict[str, pa.ChunkedArray]:
    """One chunk file (its `schema` read beforehand): its columns in `keep` by name, as Arrow read them (text
    dictionary-encoded), the seed word of `spawn_key` as `seed_word`; the distinct values of its `settings` are
    added to `values` (read here, then left out of the rows). DatasetError when the file breaks the dataset schema
    (`dataset_schema`)."""
    missing = [name for name in REQUIRED_COLUMNS if name not in schema.names]
    if missing:
        raise DatasetError(f"{part}: column{'s' * (len(missing) > 1)} {', '.join(missing)} missing; expected a sweep "
                           f"dataset's chunk, which has {', '.join(REQUIRED_COLUMNS)}")
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    wanted = [name for name in schema.names if name in keep or name in settings or name == "spawn_key"]
    chunk = pq.ParquetFile(part, read_dictionary=text)
    table = chunk.read(columns=wanted)
    check_chunk(part, chunk.metadata, table, checked)
    for name in settings:
        if name in table.column_names:
            values.setdefault(name, set()).update(pc.unique(table[name]).to_pylist())
    if "spawn_key" in table.column_names:  # the environment's seed word (`Cell.seed_key`), shared by paired cells
        table = table.append_column("seed_word", pc.list_element(table["spawn_key"], 0))
    return {name: table[name] for name in table.column_names if name in keep}


def _pandas(column: pa.ChunkedArray, name: str) -> pd.Series:
    """An Arrow column as pandas: text (dictionaries) as categories, a CATEGORY_SETTINGS whole number too."""
    series = column.to_pandas()
    if name in CATEGORY_SETTINGS and pd.api.types.is_integer_dtype(series):
        series = series.astype("category")
    return series


def _joined(parts: list[pd.Series | None], lengths: list[int]) -> pd.Series:
    """Pieces of one column as one Series, a missing piece (None) as missing values (NaN) in its `lengths` rows;
    categories united in sorted order (so groupings order levels as text does)."""
    first = next(part for part in parts if part is not None)
    if isinstance(first.dtype, pd.CategoricalDtype):
        none = pd.CategoricalDtype(first.cat.categories[:0])
        return pd.Series(union_categoricals([part.array if part is not None else pd.Categorical.from_codes(
            np.full(length, -1), dtype=none) for part, length in zip(parts, lengths)], sort_categories=True))
    return pd.concat([part if part is not None else pd.Series(np.nan, index=pd.RangeIndex(length))
                      for part, length in zip(parts, lengths)], ignore_index=True)


def _column(name: str, chunks: list[pa.ChunkedArray | None], lengths: list[int]) -> pd.Series:
    """One column of some chunk files (None: a file without it) as one Series (`_joined`'s): files that agree on
    its type converted at once (Arrow unifies their dictionaries), otherwise file by file."""
    if all(chunk is not None for chunk in chunks) and len({chunk.type for chunk in chunks}) == 1:
        series = _pandas(pa.chunked_array([piece for chunk in chunks for piece in chunk.chunks], chunks[0].type), name)
        if isinstance(series.dtype, pd.CategoricalDtype):
            series = series.cat.reorder_categories(series.cat.categories.sort_values())
        return series
    return _joined([None if chunk is None else _pandas(chunk, name) for chunk in chunks], lengths)


def _batch(pieces: list[dict[str, pa.ChunkedArray]]) -> dict[str, pd.Series]:
    """Chunk files' columns (`_read_part`) as pandas columns by name, each column's Arrow data freed as it is
    converted."""
    names = list(dict.fromkeys(name for piece in pieces for name in piece))
    lengths = [len(next(iter(piece.values()))) for piece in pieces]
    batch = {name: _column(name, [piece.pop(name, None) for piece in pieces], lengths) for name in names}
    pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed pages: the rows are pandas' now
    return batch


def _frame(batches: list[dict[str, pd.Series]]) -> pd.DataFrame:
    """The batches' columns (`_batch`) as one frame, joined a column at a time, each column's pieces freed as it
    is joined (the peak holds the rows about once, not twice)."""
    names = list(dict.fromkeys(name for batch in batches for name in batch))
    lengths = [len(next(iter(batch.values()))) for batch in batches]
    return pd.DataFrame({name: _joined([batch.pop(name, None) for batch in batches], lengths) for name in names},
                        copy=False)


def load_dataset(paths: list[str | Path], pool: bool = False, factors: list[str] = ()) -> Dataset:
    """Read sweep directories (or their dataset/ folders), file by file, keeping `ANALYSIS_COLUMNS` and the columns
    `factors` name; raises DatasetError naming a bad path or a damaged sweep.json, a dataset given twice, or two
    datasets whose profile or settings differ unless `pool`. Notices say what is not as planned: a sweep that did
    not finish, rows without a score (left out) and duplicate rows (counted once)."""
    from collective.analysis.factors import FACTOR_ALIASES

    keep_factors = {FACTOR_ALIASES.get(name, name) for name in factors}
    keep = set(ANALYSIS_COLUMNS) | keep_factors
    settings = _settings()
    pieces, batches, values, sources, notices, seen, columns, checked = [], [], [], [], [], {}, {}, {}
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
        values.append({})
        rows = 0
        for part in parts:
            try:
                schema = pq.read_schema(part)
                piece = _read_part(part, schema, keep, settings, values[-1], checked)
                columns.update(dict.fromkeys(schema.names))
            except DatasetError:
                raise
            except Exception as error:  # pyarrow raises several types for unreadable files
                raise DatasetError(f"{part}: unreadable Parquet data ({type(error).__name__}: "
                                   f"{str(error).splitlines()[0]})") from None
            length = len(next(iter(piece.values()), ()))
            rows += length
            if length:  # a file of no rows adds none (its text columns' categories would have no type)
                pieces.append(piece)
            if len(pieces) == BATCH_FILES:
                batches.append(_batch(pieces))
                pieces = []
        description = _sweep_description(data_dir.parent / SPEC_FILE)
        if description:
            notices += _incomplete(data_dir, description, len(parts), rows)
        sources.append(SweepSource(dataset=data_dir.resolve(), description=description, files=len(parts),
                                   bytes=sum(part.stat().st_size for part in parts)))
    if not pool:
        _check_poolable(values, list(map(Path, paths)))
    batches += [_batch(pieces)] if pieces else []
    if not batches:
        raise DatasetError(f"{', '.join(map(str, paths))}: the dataset has no rows")
    rows = _frame(batches)
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
    if "group_key" not in keep_factors:
        rows = rows.drop(columns="group_key", errors="ignore")  # it told duplicates apart; the group's name stays
    return Dataset(rows=rows, sources=sources, notices=notices,
                   columns=[name for name in columns if name != "spawn_key"] + ["seed_word"] * ("spawn_key" in columns))


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
        sweeps=sweeps, rows=len(rows), columns=len(dataset.columns or rows.columns), cells=int(rows["cell"].nunique()),
        group_types=int(rows["group"].nunique()), episodes_per_cell=int(rows.groupby("cell")["episode"].nunique().max()),
        bytes=sum(source.bytes for source in dataset.sources),
        versions=sorted(rows["version"].unique()) if "version" in rows else [],
        seeds=sorted(int(seed) for seed in rows["seed"].unique()) if "seed" in rows else [],
        wall_seconds=float(rows["wall_seconds"].sum()) if "wall_seconds" in rows else math.nan,
        kernel_seconds=float(rows["kernel_seconds"].sum()),
        report_machine=f"{platform.node()} ({platform.system()} {platform.release()}, {platform.machine()}, "
                f"Python {platform.python_version()})")
