"""Reading sweep datasets: the rows of one or more sweep directories, refused with one line when they are not
a dataset or not one experiment, with notices of what loading found (an unfinished sweep, rows without a
score, duplicates), and where the rows came from (`provenance`).
"""
from __future__ import annotations

import math
import platform
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from collective.analysis.base import DatasetError
from collective.sweeps.store import DATASET_DIR, SPEC_FILE, parse_sweep_file

REQUIRED_COLUMNS = ("cell", "episode", "group", "score", "k_raw", "entropy_bits", "group_size", "behaviour",
                    "mix", "protocol", "env", "grid", "iterations", "q_training_passes", "kernel_seconds")
ROW_KEY = ("sweep_id", "cell", "group_key", "episode")  # one row per key: more are duplicates


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
