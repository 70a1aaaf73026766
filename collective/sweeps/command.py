"""`collective sweep SPEC.toml --out DIR`: run a sweep spec into a Parquet results store.

The spec is validated and planned before anything starts (`--dry-run` stops there and prints the
plan); then the output directory is locked, finished chunks are verified and skipped (so the same
command resumes an interrupted sweep), and the executor plays the remaining units while a progress
bar shows cells and episodes done, the rate in agent-steps per second and the ETA.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from collective.sweeps.store import DATASET_DIR, ResultsStore, StoreError, row_schema
from collective.sweeps.spec import SpecError, SweepSpec, load_spec
from collective.simulation.plugins import PluginError
from collective.sweeps.plan import PACKAGE_VERSION, EnvironmentBlock, plan

# Dry-run estimate: agent-steps per second per worker, a round figure below the learner rates of
# benchmarks/throughput.py (10-20 M/s), which dominate any sweep that has learners.
ESTIMATED_AGENT_STEPS_PER_SECOND = 12e6


@dataclass(frozen=True)
class SweepSummary:
    """What a finished `run_spec` did."""

    sweep_id: str
    dataset: Path
    cells: int
    groups: int
    rows: int
    rows_resumed: int
    chunks_written: int
    chunks_resumed: int
    wall_seconds: float
    executor: str
    workers: int

    def text(self) -> str:
        done = f"{self.rows:,} rows ({self.rows - self.rows_resumed:,} new in {self.chunks_written} chunks"
        if self.chunks_resumed:
            done += f", {self.rows_resumed:,} resumed from {self.chunks_resumed} chunks"
        return (f"sweep {self.sweep_id}: {self.cells} cells x {self.groups} group types, {done}) "
                f"in {self.wall_seconds:.1f} s on {self.executor} with {self.workers} worker(s)\n"
                f"dataset: {self.dataset}\n"
                f"  open with pandas.read_parquet(\"{self.dataset}\") or duckdb \"SELECT * FROM "
                f"read_parquet('{self.dataset}/*.parquet')\"")


def describe(spec: SweepSpec, blocks: tuple[EnvironmentBlock, ...]) -> dict:
    """sweep.json's content: the full spec, its groups and cells with their seed keys, the plan."""
    units = [unit for block in blocks for unit in block.units]
    return {
        "name": spec.name, "description": spec.description, "version": PACKAGE_VERSION, "spec": spec.source,
        "plugins": spec.plugin_digests(),
        "groups": [{"key": g.key, "label": g.label, "behaviour": g.behaviour, "mix": g.mix, "protocol": g.protocol,
                    "protocol_params": dict(g.protocol_params)} for g in spec.groups],
        "cells": [{"key": cell.key, "factors": dict(cell.factors),
                   "groups": [spec.groups[g].label for g in cell.playing]} for cell in spec.cells],
        "plan": {"cells": len(spec.cells), "group_types": len(spec.groups), "episodes": spec.episodes,
                 "environment_blocks": len(blocks), "units": len(units), "rows": sum(u.rows for u in units),
                 "agent_steps": sum(u.cost for u in units)},
        "dataset": DATASET_DIR, "columns": row_schema().names,
    }


def plan_text(spec: SweepSpec, blocks: tuple[EnvironmentBlock, ...], workers: int, executor: str) -> str:
    """The dry-run report: what would run, and roughly how long it would take."""
    units = [unit for block in blocks for unit in block.units]
    steps = sum(unit.cost for unit in units)
    seconds = steps / (ESTIMATED_AGENT_STEPS_PER_SECOND * workers)
    factors = " | ".join(f"{name} {', '.join(str(v) for v in values)}"
                         for name, values in _factor_values(spec).items())
    return "\n".join([
        f"sweep {spec.sweep_id}: {len(spec.cells)} cells x {len(spec.groups)} group types, "
        f"{spec.episodes:,} episodes each, T={spec.iterations}, seed {spec.seed}",
        f"  factors: {factors}",
        f"  groups: {', '.join(group.label for group in spec.groups)}",
        f"  {sum(u.rows for u in units):,} rows in {len(units)} work units over {len(blocks)} environment blocks; "
        f"{steps / 1e9:.2f} G agent-steps",
        f"  estimated time: {_duration(seconds)} with {workers} {executor} worker(s) at ~"
        f"{ESTIMATED_AGENT_STEPS_PER_SECOND / 1e6:.0f} M agent-steps/s each",
    ])


def _factor_values(spec: SweepSpec) -> dict[str, list]:
    values: dict[str, list] = {}
    for cell in spec.cells:
        for name, value in cell.factors:
            if value not in values.setdefault(name, []):
                values[name].append(value)
    return values


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def run_spec(spec: SweepSpec, out: str | Path, executor, progress: bool = False) -> SweepSummary:
    """Run (or resume) `spec` into the results store at `out` with an entered-on-demand executor."""
    started = time.perf_counter()
    blocks = plan(spec)
    planned = {unit.id: unit for block in blocks for unit in block.units}
    with ResultsStore(out, spec.sweep_id, describe(spec, blocks), planned=set(planned)) as store:
        resumed = dict(store.finished)
        if resumed:
            _notice_changed_plugins(store.previous.get("plugins", {}), spec.plugin_digests())
        todo = [EnvironmentBlock(b.cell, b.first, b.stop, tuple(u for u in b.units if u.id not in resumed))
                for b in blocks]
        todo = [block for block in todo if block.units]
        units_left = {c: 0 for c in range(len(spec.cells))}
        for block in todo:
            units_left[block.cell] += len(block.units)
        cells_done = sum(1 for left in units_left.values() if not left)
        rows_total = sum(unit.rows for unit in planned.values())
        rows_done = sum(planned[unit].rows for unit in resumed)
        written = 0
        with tqdm(total=sum(u.cost for u in planned.values()), initial=sum(planned[u].cost for u in resumed),
                  unit="step", unit_scale=True, disable=not progress, dynamic_ncols=True, desc=spec.name,
                  bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}, {rate_fmt}]") as bar:
            def show() -> None:
                bar.set_postfix_str(f"cells {cells_done}/{len(spec.cells)}, episodes {rows_done:,}/{rows_total:,}")

            show()
            if todo:
                with executor:
                    for unit, rows in executor.run(todo):
                        if rows.num_rows != unit.rows:
                            raise RuntimeError(f"unit {unit.id} returned {rows.num_rows} rows, expected {unit.rows}")
                        store.write_chunk(unit.id, rows)
                        written += 1
                        rows_done += unit.rows
                        units_left[unit.cell] -= 1
                        cells_done += not units_left[unit.cell]
                        bar.update(unit.cost)
                        show()
    return SweepSummary(sweep_id=spec.sweep_id, dataset=Path(out).resolve() / DATASET_DIR, cells=len(spec.cells),
                        groups=len(spec.groups), rows=rows_total,
                        rows_resumed=sum(planned[unit].rows for unit in resumed), chunks_written=written,
                        chunks_resumed=len(resumed), wall_seconds=time.perf_counter() - started,
                        executor=executor.name, workers=executor.workers)


def _notice_changed_plugins(before: dict[str, str], now: dict[str, str]) -> None:
    """Say which plug-ins changed since the sweep's earlier rows were written: they change the numbers."""
    for name in sorted(now):
        if before.get(name, now[name]) != now[name]:
            print(f"collective sweep: notice: plug-in {name} changed since this sweep began (source digest "
                  f"{before[name]} -> {now[name]}); rows already written keep the old digest in plugin_digests",
                  file=sys.stderr)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1 (got {text!r})")
    return value


def add_sweep_parser(commands) -> None:
    """Add `collective sweep` to the CLI's subparsers."""
    sweep = commands.add_parser(
        "sweep", help="run a sweep spec (TOML) into a Parquet dataset, on Ray or serially",
        description="Run every (cell, episode, group) of a TOML sweep spec (see experiments/) into DIR/dataset, "
                    "one Parquet row each. Rerunning the same command resumes an interrupted sweep.")
    sweep.add_argument("spec", metavar="SPEC.toml", help="sweep specification, e.g. experiments/quickstart.toml")
    sweep.add_argument("--out", metavar="DIR", help="results directory (required unless --dry-run)")
    sweep.add_argument("--address", metavar="A", default=None,
                       help="join the Ray cluster at A (default: $RAY_ADDRESS, else an embedded local Ray)")
    sweep.add_argument("--workers", type=_positive_int, metavar="N", default=None,
                       help="at most N agent-group workers (default: every CPU)")
    sweep.add_argument("--executor", choices=("ray", "serial"), default="ray",
                       help="ray (default) or serial: the same code in this process, for debugging")
    sweep.add_argument("--dry-run", action="store_true", help="print the plan and an estimated time, then exit")


def run_sweep(args: argparse.Namespace) -> int:
    """`collective sweep`: exit 2 with one line for a bad spec or an unusable --out directory."""
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if args.executor == "serial" and args.address:
        return _usage_error("argument --address: only with --executor ray")
    if not args.out and not args.dry_run:
        return _usage_error("argument --out: required unless --dry-run")
    try:
        spec = load_spec(args.spec)
    except SpecError as error:
        return _usage_error(f"{args.spec}: {error}")
    if args.dry_run:
        workers = 1 if args.executor == "serial" else args.workers or os.cpu_count() or 1
        print(plan_text(spec, plan(spec), workers, args.executor))
        return 0
    if args.executor == "serial":
        from collective.sweeps.runtime import SerialExecutor  # imported late: Ray loads slowly
        executor = SerialExecutor(spec)
    else:
        from collective.sweeps.runtime import RayExecutor
        executor = RayExecutor(spec, address=address, workers=args.workers)
    try:
        summary = run_spec(spec, args.out, executor, progress=sys.stderr.isatty())
    except StoreError as error:
        return _usage_error(f"argument --out: {error}")
    except PluginError as error:
        return _usage_error(f"{error}; the rows written so far are kept: fix the plug-in and rerun to resume")
    print(summary.text())
    return 0


def _usage_error(message: str) -> int:
    print(f"collective sweep: error: {message}", file=sys.stderr)
    return 2
