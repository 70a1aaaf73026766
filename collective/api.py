"""collective from Python (notebooks, scripts): score a group, run a sweep, load its dataset and read the tables
of `collective analyze` and `collective validate` as DataFrames.

Each function takes the path the command takes and gives what the command prints, as data: `evaluate` is
`collective evaluate --json`, `sweep` is `collective sweep`, `tables` is `collective analyze --format json`,
`validate` is `collective validate --format json`. Bad input raises `ValueError` (ConfigError, SpecError,
DatasetError) with the command's one-line message. examples/notebook.ipynb shows them in use.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from collective.analysis.dataset import load_dataset
from collective.analysis.factors import DEFAULT_BY
from collective.analysis.report import analyse
from collective.analysis.validity import validate as _validity_suite
from collective.config import DEFAULT_PROFILE, EvaluationConfig
from collective.dashboards.commands import TABLES
from collective.evaluate import evaluate as _evaluate
from collective.sweeps.command import SweepSummary, run_spec
from collective.sweeps.spec import SweepSpec, load_spec, parse_spec

__all__ = ["evaluate", "sweep", "load", "tables", "validate"]

Paths = str | Path | list[str | Path]


def evaluate(behaviour: str | None = None, *, profile: str = DEFAULT_PROFILE, progress: bool = False,
             threads: int | None = None, **settings) -> dict[str, object]:
    """Υ of one group with its 95% CI and every setting, as `collective evaluate --json` prints it.
    `settings` are EvaluationConfig fields over the profile's (e.g. group_size=5, protocol="stigmergy",
    rows=10, cols=10, episodes=200, seed=1, mix="local_search:2,random:1"); `behaviour` may be a built-in
    name or a plug-in's MODULE:CLASS."""
    config = EvaluationConfig.from_profile(profile, behaviour=behaviour, **settings)
    return _evaluate(config, progress=progress, threads=threads).as_record()


def sweep(spec: str | Path | dict, out: str | Path, *, executor: str | None = None, address: str | None = None,
          workers: int | None = None, progress: bool = True) -> SweepSummary:
    """Run (or resume) a sweep into `out`, as `collective sweep SPEC --out OUT`. `spec` is a TOML file or
    the same content as a dict. `executor` "serial" plays in one worker process forked from this one; "ray" on an
    embedded local Ray
    (`workers` of them) or on the cluster at `address` (or $RAY_ADDRESS); default: ray when a cluster is
    named, else serial."""
    parsed: SweepSpec = parse_spec(spec) if isinstance(spec, dict) else load_spec(spec)
    address = address or os.environ.get("RAY_ADDRESS") or None
    executor = executor or ("ray" if address else "serial")
    if executor not in ("serial", "ray"):
        raise ValueError(f"executor: expected 'serial' or 'ray' (got {executor!r})")
    from collective.sweeps.runtime import RayExecutor, SerialExecutor  # Ray loads slowly

    runner = SerialExecutor(parsed) if executor == "serial" else RayExecutor(parsed, address=address, workers=workers)
    return run_spec(parsed, out, runner, progress=progress)


def _paths(run_dirs: Paths) -> list[str | Path]:
    return list(run_dirs) if isinstance(run_dirs, (list, tuple)) else [run_dirs]


def load(run_dirs: Paths, columns: list[str] = (), pool: bool = False) -> pd.DataFrame:
    """A sweep's rows (one per episode and group): the columns the analysis reads, plus `columns`; several
    sweeps together when their profile and settings agree (or `pool`)."""
    return load_dataset(_paths(run_dirs), pool=pool, factors=list(columns)).rows


def tables(run_dirs: Paths, names: list[str] | None = None, by: list[str] | None = None, k_bin_width: int = 4,
           pool: bool = False) -> dict[str, pd.DataFrame]:
    """The tables of `collective analyze` by name (accuracy, upsilon, gains, protocols, regression, validity, ...;
    `names` to keep some), grouped by the factors `by` (default group, grid, group size)."""
    unknown = sorted(set(names or ()) - set(TABLES))
    if unknown:
        raise ValueError(f"names: unknown table {unknown[0]!r}; allowed: {', '.join(TABLES)}")
    dataset = load_dataset(_paths(run_dirs), pool=pool, factors=by or [])
    analysis = analyse(dataset, by or list(DEFAULT_BY), k_bin_width, tables=names)
    return {name: table.frame for name, table in analysis.tables.items()}


def validate(run_dirs: Paths, pool: bool = False) -> pd.DataFrame:
    """The validity suite's checks (check, subject, status, figure, criterion), as `collective validate`."""
    dataset = load_dataset(_paths(run_dirs), pool=pool)
    return _validity_suite(dataset.rows, sweeps=dataset.descriptions)
