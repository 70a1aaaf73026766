"""`collective sweep SPEC.toml --out DIR`: run a sweep spec into a Parquet results store.

The spec is validated and planned before anything starts (`--dry-run` stops there and prints the
plan); then the output directory is locked, finished chunks are verified and skipped (so the same
command resumes an interrupted sweep), and the executor plays the remaining units while a progress
bar (or, off a terminal, a plain line every 10 s) shows cells and episodes done, the rate in agent-steps
per second and the ETA.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from collective.sweeps.store import DATASET_DIR, ResultsStore, StoreError, row_schema
from collective.sweeps.spec import SpecError, SweepSpec, load_spec
from collective.simulation.plugins import PluginError
from collective.behaviours import learns
from collective.sweeps.plan import PACKAGE_VERSION, EnvironmentBlock, episode_cost, plan, plan_size

# Dry-run estimate: kernel agent-steps per second by what a group plays (benchmarks/throughput.py
# and the quickstart sweep's kernel_seconds on a 2-core machine; learners' training passes included) ...
GROUP_RATES = {"learner": 14e6, "local_search": 10e6, "other": 40e6, "protocol": 6e6, "plugin": 4e6}
# ... the share of a worker's time spent in the kernel (workers share the CPUs with the driver, the
# environment maker and Parquet writing; 0.55 in the quickstart sweep on 2 cores), the start-up of
# Ray and its warm workers (numba's cached code), and environment generation.
WORKER_EFFICIENCY = 0.55
STARTUP_SECONDS = {"ray": 12.0, "serial": 3.0}
ENVIRONMENT_STEPS_PER_SECOND = 3e6  # episodes x (T+1) generated per second
PROGRESS_SECONDS = 10.0  # between progress lines when stderr is not a terminal


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


def group_rate(config) -> float:
    """Estimated agent-steps per second of one worker playing this group (GROUP_RATES)."""
    if config.uses_plugins:
        return GROUP_RATES["plugin"]
    kinds = ["learner" if learns(name) else name if name == "local_search" else "other" for name in config.behaviours]
    if config.protocol != "none" and "learner" not in kinds:  # learners' training dominates their protocol
        kinds.append("protocol")
    return min(GROUP_RATES[kind] for kind in kinds)


def estimated_seconds(spec: SweepSpec, workers: int, executor: str) -> float:
    """Start-up, then the groups' work at their rates and environment generation shared by `workers`."""
    work = sum(spec.episodes * (episode_cost(cell.configs[g]) / group_rate(cell.configs[g]) +
                                (spec.iterations + 1) / ENVIRONMENT_STEPS_PER_SECOND / len(cell.playing))
               for cell in spec.cells for g in cell.playing)
    return STARTUP_SECONDS[executor] + work / (workers * (WORKER_EFFICIENCY if executor == "ray" else 1))


def plan_text(spec: SweepSpec, workers: int, executor: str) -> str:
    """The dry-run report: what would run, and roughly how long it would take (in time independent
    of the number of episodes)."""
    size = plan_size(spec)
    factors = " | ".join(f"{name} {', '.join(str(v) for v in values)}"
                         for name, values in _factor_values(spec).items())
    return "\n".join([
        f"sweep {spec.sweep_id}: {len(spec.cells)} cells x {len(spec.groups)} group types, "
        f"{spec.episodes:,} episodes each, T={spec.iterations}, seed {spec.seed}",
        f"  factors: {factors}",
        f"  groups: {', '.join(group.label for group in spec.groups)}",
        f"  {size.rows:,} rows in {'' if size.units_exact else '~'}{size.units:,} work units over {size.blocks:,} "
        f"environment blocks; {size.agent_steps / 1e9:,.2f} G agent-steps",
        f"  estimated time: {_duration(estimated_seconds(spec, workers, executor))} with {workers} {executor} "
        f"worker(s): {STARTUP_SECONDS[executor]:.0f} s start-up, then per worker"
        f"{f' {WORKER_EFFICIENCY:.0%} of the time at' if executor == 'ray' else ''} ~"
        f"{GROUP_RATES['learner'] / 1e6:.0f} M agent-steps/s for learners (training passes included), "
        f"{GROUP_RATES['local_search'] / 1e6:.0f} M local search, {GROUP_RATES['other'] / 1e6:.0f} M other "
        f"built-ins, {GROUP_RATES['protocol'] / 1e6:.0f} M with a protocol, {GROUP_RATES['plugin'] / 1e6:.0f} M "
        f"plug-ins, and {ENVIRONMENT_STEPS_PER_SECOND / 1e6:.0f} M episode-iterations/s of environment generation",
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


class ProgressLines:
    """Progress for a stderr that is not a terminal (a pipe, a log file): a plain line at most every
    PROGRESS_SECONDS and at the end, as tqdm's bar only draws on a terminal."""

    def __init__(self, total: int, done: int):
        self.total, self.done, self.resumed, self.shown_done = total, done, done, None
        self.started = self.shown = time.perf_counter()

    def update(self, steps: int, status: str, final: bool = False) -> None:
        self.done += steps
        now = time.perf_counter()
        if (not final and now - self.shown < PROGRESS_SECONDS) or self.shown_done == self.done:
            return
        self.shown, self.shown_done = now, self.done
        rate = (self.done - self.resumed) / max(now - self.started, 1e-9)
        eta = _duration((self.total - self.done) / rate) if rate else "?"
        print(f"collective sweep: progress: {self.done / 1e6:,.1f}/{self.total / 1e6:,.1f} M agent-steps "
              f"({100 * self.done / max(self.total, 1):.0f}%), {status}, {rate / 1e6:.1f} M agent-steps/s, "
              f"elapsed {_duration(now - self.started)}, ETA {eta}", file=sys.stderr, flush=True)


def run_spec(spec: SweepSpec, out: str | Path, executor, progress: str | None = None) -> SweepSummary:
    """Run (or resume) `spec` into the results store at `out` with an entered-on-demand executor;
    `progress` is "bar" (tqdm, for a terminal), "lines" (`ProgressLines`) or None."""
    started = time.perf_counter()
    blocks = plan(spec)
    planned = {unit.id: unit for block in blocks for unit in block.units}
    with ResultsStore(out, spec.sweep_id, describe(spec, blocks), planned=set(planned)) as store:
        for notice in store.notices:
            print(f"collective sweep: notice: {notice}", file=sys.stderr)
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
        total, initial = sum(u.cost for u in planned.values()), sum(planned[u].cost for u in resumed)
        lines = ProgressLines(total, initial) if progress == "lines" else None
        with tqdm(total=total, initial=initial, unit="step", unit_scale=True, disable=progress != "bar",
                  dynamic_ncols=True, desc=spec.name,
                  bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}, {rate_fmt}]") as bar:
            def show(steps: int = 0, final: bool = False) -> None:
                status = f"cells {cells_done}/{len(spec.cells)}, episodes {rows_done:,}/{rows_total:,}"
                bar.update(steps)
                bar.set_postfix_str(status)
                if lines:
                    lines.update(steps, status, final)

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
                        show(unit.cost)
            show(final=True)
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
    """`collective sweep`: one line on stderr, no traceback (unless --debug), and exit 2 for bad input
    (spec, sizes, --out, --address: refused before anything is written) or 1 for an environment
    failure while running (a full disk, a lost cluster)."""
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if args.executor == "serial" and args.address:
        return _error("argument --address: only with --executor ray")
    if not args.out and not args.dry_run:
        return _error("argument --out: required unless --dry-run")
    try:
        spec = load_spec(args.spec)
    except SpecError as error:  # the spec's path once: file errors carry it already
        return _error(str(error) if error.path == str(args.spec) else f"{args.spec}: {error}")
    from collective.sweeps.runtime import RayExecutor, SerialExecutor, cap_workers, unreachable  # Ray loads slowly
    if args.dry_run:
        if args.executor == "serial":
            workers = 1
        else:  # a cluster's CPUs are known once joined
            workers = args.workers or 1 if address else cap_workers(args.workers, os.cpu_count() or 1, "this machine")
        print(plan_text(spec, workers, args.executor))
        return 0
    if args.executor == "ray" and address and (why := unreachable(address)):
        return _error(f"argument --address: no Ray cluster answers at {address} ({why}); start one with "
                      f"`ray start --head` or fix the address")
    executor = SerialExecutor(spec) if args.executor == "serial" else \
        RayExecutor(spec, address=address, workers=args.workers)
    try:
        summary = run_spec(spec, args.out, executor, progress="bar" if sys.stderr.isatty() else "lines")
    except StoreError as error:
        return _error(f"argument --out: {error}")
    except PluginError as error:
        return _error(f"{error}; the rows written so far are kept: fix the plug-in and rerun to resume")
    except OSError as error:
        if getattr(args, "debug", False):
            raise
        if error.errno == errno.ENOSPC:
            return _error(f"no space left on the device of {args.out}: free some space (or move the directory) "
                          f"and rerun the same command to resume; finished chunks are kept", status=1)
        return _error(f"{type(error).__name__}: {' '.join(str(error).split())} (--debug shows the traceback)",
                      status=1)
    print(summary.text())
    return 0


def _error(message: str, status: int = 2) -> int:
    print(f"collective sweep: error: {message}", file=sys.stderr)
    return status
