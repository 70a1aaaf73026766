"""`collective sweep SPEC.toml --out DIR`: run a sweep spec into a Parquet results store.

The spec is validated and planned before anything starts (`--dry-run` stops there and prints the
plan); then the output directory is locked, finished chunks are verified and skipped (so the same
command resumes an interrupted sweep), and the executor plays the remaining units while a progress
bar (or, off a terminal, a plain line every 10 s) shows cells and rows done, the rate in agent-steps
per second and the ETA.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from collective.sweeps.store import (DATASET_DIR, ResultsStore, StoreError, continued_sweep, listed_units,
                                     row_schema, utc_now)
from collective.sweeps.spec import SpecError, SweepSpec, load_spec
from collective.simulation.plugins import CtrlC, PluginError, interrupted_status
from collective.evaluation.compiled_code import kernel_cached
from collective.output_files import write_stdout
from collective.sweeps.plan import (COST_PER_SECOND, SAMPLE_AGENT_STEPS, SAMPLE_EPISODES, SUMMARY_BLOCKS,
                                    EnvironmentBlock, PlanSize, SampleTimes, episode_agent_steps, plan, plan_size,
                                    time_sample)
from collective.progress import (PLAYING, Progress, announce_compilation,
                                 announce_compiling, compilation_done, duration, unconfirmed_work)
from collective.version import VERSION

# The dry-run's estimate is built from what a run does: the driver loads and plans the spec (timed
# in the dry run, which does the same), starts the executor, and its workers, each on a CPU of its
# own, play every (cell, group)'s episodes (kernel seconds per episode timed on a sample of each,
# `plan.time_sample`), build a result row per (episode, group) and share the environment generation
# (timed on the same sample). What is not sampled was measured on the 2-core machine:
ROW_SECONDS = 30e-6  # a worker builds a row: agent seeds, columns, Arrow (26-34 µs, 2 busy cores)
RAY_INIT_SECONDS = 3.0  # ray.init of an embedded Ray: ~2.5 s quiet, 7.7-8 s on 2 busy cores
RAY_STOP_SECONDS = 1.5  # the actors' exit and ray.shutdown: 1.2-1.6 s
# `--executor auto` plays on Ray only when its workers win back its start-up. Each actor imports what
# the driver imported and loads the kernels from the cache, all at once on the workers' CPUs:
KERNEL_LOAD_SECONDS = 2.0  # an actor loads the cached kernels (2.5 s measured at load average 9)
# An episode's environment (generated once per cell, shared by its groups): ~20 µs, plus its generation
# and ceiling's share that grows with cells x T (Λ* 10x10 T = 100: 26 µs; 50x50 T = 500: 0.4 ms; landscapes
# 50x50 T = 500: 0.9 ms; 80x80 T = 1000: 1.6-3.6 ms). With ROW_SECONDS a row, the quickstart sweep (36,000
# rows, 2.1e7 agent-steps) comes to ~3.3 s serially: 3.5 s measured at load average 4 (2.1 s of it kernel).
ENVIRONMENT_SECONDS = 20e-6
ENVIRONMENT_CELL_STEP_SECONDS = 0.5e-9


def choose_executor(size: PlanSize, cpus: int, import_seconds: float, address: str | None) -> tuple[str, str]:
    """`--executor auto`: ("ray" or "serial", why, in a few words). Ray when a cluster is named;
    else serial unless the work (its weighted cost at COST_PER_SECOND, ROW_SECONDS a row, ENVIRONMENT_SECONDS and
    ENVIRONMENT_CELL_STEP_SECONDS an environment) done by `cpus` workers saves more than Ray's start-up
    (RAY_INIT_SECONDS, every actor's imports and kernel loading, RAY_STOP_SECONDS)."""
    if address:
        return "ray", f"the Ray cluster at {address} is named"
    agent_steps, rows = size.agent_steps, size.rows
    serial = (size.cost / COST_PER_SECOND + rows * ROW_SECONDS + size.environments * ENVIRONMENT_SECONDS
              + size.environment_cell_steps * ENVIRONMENT_CELL_STEP_SECONDS)
    start_up = RAY_INIT_SECONDS + RAY_STOP_SECONDS + import_seconds + KERNEL_LOAD_SECONDS
    saved = serial - serial / max(cpus, 1)
    work = f"~{duration(serial)} of work serially ({agent_steps:.2g} agent-steps, {rows:,} rows)"
    if saved > start_up:
        return "ray", f"{work}; {cpus} workers save more than Ray's ~{duration(start_up)} start-up"
    return "serial", f"{work}; {cpus} worker(s) would not win back Ray's ~{duration(start_up)} start-up"


class IncompleteSweep(RuntimeError):
    """The executor stopped without reporting every planned unit, or reported a unit's rows wrong."""


class SweepInterrupted(CtrlC):
    """Ctrl-C during a sweep: its text says which rows are kept (every chunk written is)."""


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


def describe(spec: SweepSpec, blocks: tuple[EnvironmentBlock, ...], growth: list[dict]) -> dict:
    """sweep.json's content: the full spec, its groups and cells with their seed keys, the plan (its agent-steps
    as played, `plan.episode_agent_steps`, not the cost that sizes its units) and its growth (each episode count
    a run of it asked for, and when: `store.continued_sweep`)."""
    units = [unit for block in blocks for unit in block.units]
    return {
        "name": spec.name, "description": spec.description, "version": VERSION, "spec": spec.source,
        "plugins": spec.plugin_digests(),
        "groups": [{"key": g.key, "label": g.label, "behaviour": g.behaviour, "mix": g.mix, "protocol": g.protocol,
                    "protocol_params": dict(g.protocol_params), "display": g.display or g.label} for g in spec.groups],
        "cells": [{"key": cell.key, "factors": dict(cell.factors),
                   "groups": [spec.groups[g].label for g in cell.playing]} for cell in spec.cells],
        "plan": {"cells": len(spec.cells), "group_types": len(spec.groups), "episodes": spec.episodes,
                 "environment_blocks": len(blocks), "units": len(units), "rows": sum(u.rows for u in units),
                 "agent_steps": sum((u.stop - u.first) * episode_agent_steps(spec.cells[u.cell].configs[g])
                                    for u in units for g in u.groups)},
        "growth": growth, "dataset": DATASET_DIR, "columns": row_schema().names,
    }


@dataclass(frozen=True)
class Estimate:
    """How long a sweep should take, by part (`estimate`)."""

    driver: float  # this process: Python, the imports, loading and planning the spec
    executor: float  # Ray's start and its actors' warm-up, or loading the kernels in this process
    work: float  # per worker
    stop: float

    @property
    def total(self) -> float:
        return self.driver + self.executor + self.work + self.stop


def estimate(spec: SweepSpec, size: PlanSize, workers: int, executor: str, sample: SampleTimes,
             driver_seconds: float, import_seconds: float) -> Estimate:
    """The sweep's time from the sample's per-episode seconds: every (cell, group)'s kernel time and
    each cell's generation over all episodes, and its kept table's training once per unit playing it
    (`size.trainings`), plus ROW_SECONDS per row, shared by `workers` (each on a CPU of its own); on
    Ray after RAY_INIT_SECONDS and the warm-up of the GroupHosts (each imports what this process
    imported and loads the kernels, each on a CPU of its own), before RAY_STOP_SECONDS."""
    kernel = spec.episodes * sum(sample.kernel.values())
    generation = spec.episodes * sum(sample.generation.values())
    training = sum(units * sample.training[key] for key, units in size.trainings.items() if key in sample.training)
    rows = spec.episodes * sum(len(cell.playing) for cell in spec.cells) * ROW_SECONDS
    work = (kernel + generation + training + rows) / workers
    if executor == "serial":
        return Estimate(driver_seconds, sample.load_seconds, work, 0.0)
    warm_up = import_seconds + sample.load_seconds
    return Estimate(driver_seconds, RAY_INIT_SECONDS + warm_up, work, RAY_STOP_SECONDS)


def plan_text(spec: SweepSpec, size: PlanSize, workers: int, executor: str, sample: SampleTimes,
              driver_seconds: float, import_seconds: float) -> str:
    """The dry-run report: what would run (`size`, from `plan_size`), and how long it should take
    with the basis of that estimate (in time independent of the number of episodes)."""
    factors = " | ".join(f"{name} {', '.join(str(v) for v in values)}"
                         for name, values in _factor_values(spec).items())
    times = estimate(spec, size, workers, executor, sample, driver_seconds, import_seconds)
    started = (f"to start Ray and warm its {workers} workers" if executor == "ray" else "to load the kernels")
    return "\n".join([
        f"sweep {spec.sweep_id}: {len(spec.cells)} cells x {len(spec.groups)} group types, "
        f"{spec.episodes:,} episodes each, T={spec.iterations}, seed {spec.seed}",
        f"  factors: {factors}",
        f"  groups: {', '.join(group.label for group in spec.groups)}",
        f"  {size.rows:,} rows in {'' if size.units_exact else '~'}{size.units:,} work units over {size.blocks:,} "
        f"environment blocks; {size.agent_steps / 1e9:,.2f} G agent-steps",
        f"  estimated time: {duration(times.total)} with {workers} {executor} worker(s): "
        f"{duration(times.driver + times.executor)} start-up ({duration(times.driver)} to load and plan the spec, "
        f"{duration(times.executor)} {started}), {duration(times.work)} of work per worker"
        + (f", {duration(times.stop)} to stop Ray" if times.stop else ""),
        f"  basis: kernel and environment generation timed here on a sample of every (cell, group), up to "
        f"{SAMPLE_AGENT_STEPS:,} agent-steps or {SAMPLE_EPISODES} episodes each ({sample.seconds:.1f} s), "
        f"{ROW_SECONDS * 1e6:.0f} µs per result row, each worker on a CPU of its own",
    ])


def _factor_values(spec: SweepSpec) -> dict[str, list]:
    values: dict[str, list] = {}
    for cell in spec.cells:
        for name, value in cell.factors:
            if value not in values.setdefault(name, []):
                values[name].append(value)
    return values


def run_spec(spec: SweepSpec, out: str | Path, executor, progress: bool = False, announce: str = "") -> SweepSummary:
    """Run (or resume) `spec` into the results store at `out` with an entered-on-demand executor;
    `progress` shows it on stderr (`collective.progress.Progress`); `announce` is a line printed once the
    store has accepted `out` (after bad input is refused, so a refusal stays one line)."""
    started = time.perf_counter()
    continued = continued_sweep(out, spec.sweep_id, spec.source)
    if continued and continued.sweep_id != spec.sweep_id:  # a grown sweep: its rows keep the study's id
        spec = executor.spec = replace(spec, study=continued.sweep_id)
    growth = continued.growth if continued else [{"episodes": spec.episodes, "at": utc_now()}]
    blocks = plan(spec)
    planned = {unit.id: unit for block in blocks for unit in block.units}
    with ResultsStore(out, spec.sweep_id, describe(spec, blocks, growth), planned=set(planned)) as store:
        if announce:
            print(announce, file=sys.stderr, flush=True)
        for notice in store.notices:
            print(f"collective sweep: notice: {notice}", file=sys.stderr)
        if continued and continued.episodes < spec.episodes:
            print(f"collective sweep: notice: {growth_text(spec, continued.episodes, planned, set(store.finished))}",
                  file=sys.stderr)
        stale = store.unstamped(spec.episodes) if len(growth) > 1 else []  # kept chunks a worker stamps
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

        def status() -> str:
            return f"cells {cells_done}/{len(spec.cells)}, rows {rows_done:,}/{rows_total:,}"

        # counted in the plan's cost (`plan.episode_cost`): a local searcher's agent-step is one, a sham's 85, so the
        # rate is steady and the ETA right whatever the groups cost; not the agent-steps played (the plan's)
        with Progress(total, "searcher-steps", "collective sweep", spec.name, initial=initial, enabled=progress,
                      bookends=True) as bar:
            bar.update(0, status())
            if todo or stale:
                executor.report_phase, executor.writer = bar.phase, store.writer
                try:
                    with executor:
                        compilation_done()  # the workers are warm
                        for notice in executor.notices:
                            print(f"collective sweep: notice: {notice}", file=sys.stderr)
                        for _, record in executor.stamp(stale, spec.episodes) if stale else ():
                            store.commit(record)
                        bar.phase(PLAYING)
                        for unit, record in executor.run(todo):
                            if record.rows != unit.rows:  # written, never listed: a rerun removes the chunk
                                raise IncompleteSweep(f"unit {unit.id} returned {record.rows} rows, "
                                                      f"expected {unit.rows}")
                            store.commit(record)
                            written += 1
                            rows_done += unit.rows
                            units_left[unit.cell] -= 1
                            cells_done += not units_left[unit.cell]
                            bar.update(unit.cost, status())
                except KeyboardInterrupt:  # a plug-in's own became a PluginError (`plugins.plugin_code`); Ray
                    # raises a plain KeyboardInterrupt for the Ctrl-C that reaches ray.get or ray.wait
                    kept = [unit for unit in store.recorded() if unit in planned]  # what a rerun resumes
                    raise SweepInterrupted(f"{sum(planned[unit].rows for unit in kept):,} of {rows_total:,} rows kept "
                                           f"in {len(kept)} chunks; rerun the same command to resume") from None
        missing = len(planned) - len(store.finished)
        if missing:  # never a success line for a sweep that did not finish
            raise IncompleteSweep(f"the {executor.name} executor stopped with {missing} of {len(planned)} work units "
                                  "unreported; rerun the same command to resume")
    return SweepSummary(sweep_id=spec.sweep_id, dataset=Path(out).resolve() / DATASET_DIR, cells=len(spec.cells),
                        groups=len(spec.groups), rows=rows_total,
                        rows_resumed=sum(planned[unit].rows for unit in resumed), chunks_written=written,
                        chunks_resumed=len(resumed), wall_seconds=time.perf_counter() - started,
                        executor=executor.name, workers=executor.workers)


def growth_text(spec: SweepSpec, had: int, planned: dict | None, kept: set[str]) -> str:
    """What growing a sweep from `had` episodes to the spec's plays: the new episodes' rows, and (given the plan's
    units) those of the units planned differently (cut short at the old count, the plan's finer tail) or
    unfinished, played again."""
    new_rows = (spec.episodes - had) * sum(len(cell.playing) for cell in spec.cells)
    text = (f"growing sweep {spec.sweep_id} from {had:,} to {spec.episodes:,} episodes: adds "
            f"{spec.episodes - had:,} per cell and group ({new_rows:,} rows)")
    if planned is None:
        return text
    rows = sum(unit.rows for name, unit in planned.items() if name not in kept)
    return f"{text}; plays {rows:,} rows, {rows - new_rows:,} of them again (units the old count cut short, or unfinished)"


def _notice_changed_plugins(before: dict[str, str], now: dict[str, str]) -> None:
    """Say which plug-ins changed since the sweep's earlier rows were written: they change the numbers."""
    for name in sorted(now):
        if before.get(name, now[name]) != now[name]:
            print(f"collective sweep: notice: plug-in {name} changed since this sweep began (source digest "
                  f"{before[name]} -> {now[name]}); rows already written keep the old digest in plugin_digests",
                  file=sys.stderr)


def run_sweep(args: argparse.Namespace) -> int:
    """`collective sweep`: one line on stderr, no traceback (unless --debug), and exit 2 for bad input
    (spec, sizes, --out, --address: refused before anything is written) or 1 for an environment
    failure while running (a full disk, a lost cluster)."""
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if args.executor == "serial" and args.address:
        return _error("argument --address: only with --executor ray")
    if not args.out and not args.dry_run:
        return _error("argument --out: required unless --dry-run")
    import_seconds = _process_age()  # Python and the imports: what every Ray actor does first
    announce_compilation()  # loading a spec may compile its K ranges' pattern probe
    try:
        spec = load_spec(args.spec, args.overrides)
    except SpecError as error:  # the spec's path once: file errors carry it already
        return _error(str(error) if error.path == str(args.spec) else f"{args.spec}: {error}")
    from collective.sweeps.runtime import (RayExecutor, ResourceError, SerialExecutor, WorkerLost,  # Ray loads slowly
                                           cap_workers, unreachable)
    if args.executor == "serial" and args.workers not in (None, 1):
        return _error(f"argument --workers: {args.workers} workers need --executor ray or auto; serial plays in "
                      "this process, one worker")
    try:
        continued = continued_sweep(args.out, spec.sweep_id, spec.source) if args.out else None
    except StoreError as error:
        return _error(f"argument --out: {error}")
    if continued and continued.sweep_id != spec.sweep_id:  # growing the sweep in --out: its id (`run_spec`)
        spec = replace(spec, study=continued.sweep_id)
    size = plan_size(spec)
    executor_name, choice = args.executor, ""
    if executor_name == "auto":
        cpus = min(args.workers or os.cpu_count() or 1, os.cpu_count() or 1)
        executor_name, why = choose_executor(size, cpus, import_seconds, address)
        choice = f"collective sweep: executor {executor_name} (auto: {why}; --executor ray or serial to choose)"
    if args.dry_run:
        if choice:
            print(choice, file=sys.stderr, flush=True)
        if executor_name == "serial":
            workers = 1
        else:  # a cluster's CPUs are known once joined
            workers = args.workers or 1 if address else cap_workers(args.workers, os.cpu_count() or 1, "this machine")
        driver_seconds, cold = _process_age(), not kernel_cached()
        try:
            sample = time_sample(spec)
        except PluginError as error:
            return _error(str(error))
        compilation_done()
        write_stdout(plan_text(spec, size, workers, executor_name, sample, driver_seconds, import_seconds))
        if continued and continued.episodes < spec.episodes:
            planned = {unit.id: unit for block in plan(spec) for unit in block.units} \
                if size.blocks <= SUMMARY_BLOCKS else None  # a plan of more stays unlisted (`plan_size`)
            write_stdout(f"  {growth_text(spec, continued.episodes, planned, listed_units(args.out))}")
        if cold:
            write_stdout("  (this dry run compiled the kernels, and the start-up above counts it: the run will load them)")
        if (load := os.getloadavg()[0]) > 1:
            write_stdout(f"  (load average {load:.1f}: other work shares the CPUs, so the workers will run slower "
                         "than sampled and the sweep take longer)")
        return 0
    if message := unconfirmed_work(size.agent_steps, args.yes):
        return _error(message)
    if executor_name == "ray" and address and (why := unreachable(address)):
        option = "argument --address" if args.address else "$RAY_ADDRESS"
        return _error(f"{option}: no Ray cluster answers at {address!r} ({why}); start one with "
                      f"`ray start --head` or fix the address")
    executor = SerialExecutor(spec) if executor_name == "serial" else \
        RayExecutor(spec, address=address, workers=args.workers)
    if executor_name == "ray" and not address and not kernel_cached():
        announce_compiling()  # in the embedded Ray's workers, sharing this machine's cache
    try:
        summary = run_spec(spec, args.out, executor, progress=True, announce=choice)
    except StoreError as error:
        return _error(f"argument --out: {error}")
    except ResourceError as error:
        return _error(str(error))
    except (IncompleteSweep, WorkerLost) as error:
        return _error(str(error), status=1)
    except SweepInterrupted as error:
        if getattr(args, "debug", False):
            raise
        print(f"collective sweep: interrupted: {error}", file=sys.stderr)
        return interrupted_status()
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
    write_stdout(summary.text())
    return 0


def _process_age() -> float:
    """Seconds since this process started, from Linux's /proc (elsewhere its CPU time, about the
    same for the imports and the spec, which keep a CPU busy)."""
    try:
        started_ticks = int(Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19])
        return float(Path("/proc/uptime").read_text().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.process_time()


def _error(message: str, status: int = 2) -> int:
    print(f"collective sweep: error: {message}", file=sys.stderr)
    return status
