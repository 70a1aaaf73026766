"""How a sweep scales with its workers: on this machine, and on an emulated cluster of 64 and 256 workers.

    .venv/bin/python benchmarks/cluster_scaling.py local [--rounds N] [--spec one-group|factors|PATH ...]
    .venv/bin/python benchmarks/cluster_scaling.py emulated [--workers 64 256] [--nodes 4]
    .venv/bin/python benchmarks/cluster_scaling.py analysis SWEEP_DIR [--rows 1000000 10000000]

`local` runs each spec with the serial executor, 1 Ray worker and 2 Ray workers on an embedded Ray, in
interleaved rounds (a shared VM's speed drifts from minute to minute; each executor's fastest round
counts). "play s" is the time from the first unit handed out to the last chunk recorded (what the
issue's goals time), "start s" Ray's start and its workers' warm-up (or loading the kernels
serially), "driver CPU ms/1k rows" this process's CPU while the units play. The one-group spec is
local search, G 10, 10x10, T 200, four K ranges of 72,000 episodes (288,000 rows); `factors` is
experiments/factors.toml (348,000 rows, 13 group types).

`emulated` starts a real multi-node Ray cluster on loopback (`collective.sweeps.local_cluster`: a head
with no CPUs for the driver, `--nodes` worker nodes declaring the workers' CPUs between them) and
runs the real driver (`RayExecutor.run`, the results store, its manifest) against emulated workers:
each plays a unit by waiting the time a real worker takes for it (calibrated here: one real unit of
the spec generated, played and written in this process, seconds per planned agent-step) and writing
a real chunk of the unit's rows (a hard link of a chunk written beforehand, renamed into place as a
worker's chunk is). Two cores cannot run 256 real workers; 16 workers share one actor process
(Ray's threaded actors), so what is measured is the orchestration: scheduling, the calls and
replies, the writes' renames and the manifest. It prints the sustained rows per second, the central
CPU per 1,000 rows (the driver, and Ray's GCS, the one process every call's bookkeeping reaches),
the measured parallel efficiency (the workers' planned seconds / (workers x wall)) and the efficiency
the central CPU predicts: the driver serves one unit in c CPU seconds, so N workers with units of u
seconds keep it busy N c / u of the time; beyond 1 it is the bottleneck (efficiency u / (N c)).

`analysis` times `collective analyze` and `collective validate` (each in its own process: wall seconds and peak
RSS) on datasets of 10^6 and 10^7 rows made from a real sweep's (e.g. experiments/factors.toml's): its rows
repeated with their episodes renumbered past the last, as a sweep of more episodes per cell would hold.

Every line ends with the 1-minute load average: quote it with the figures.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from collective.sweeps.command import run_spec
from collective.sweeps.local_cluster import CLUSTER_ENV, multi_node_cluster
from collective.sweeps.plan import EnvironmentCache, WorkUnit, plan, play_unit
from collective.sweeps.runtime import RayExecutor, SerialExecutor
from collective.sweeps.spec import SweepSpec, load_spec, parse_spec
from collective.sweeps.store import ChunkRecord, ChunkWriter, ResultsStore, _sha256

ROOT = Path(__file__).resolve().parent.parent
ONE_GROUP = """
name = "one group"
seed = 3
profile = "sound"
episodes = 72000
iterations = 200

[factors]
grid = ["10x10"]
group_size = [10]
complexity = ["2:10", "11:20", "21:30", "31:40"]

[groups]
behaviours = ["local_search"]
"""
# The dear spec of the emulated cluster: Q-learners (held-out training, the default profile's), G 5.
DEAR = ONE_GROUP.replace('name = "one group"', 'name = "q-learning"').replace('["local_search"]', '["q_learning"]') \
    .replace("group_size = [10]", "group_size = [5]")
LANES = 16  # emulated workers per actor process
EMULATED_HOST_BYTES = 16 << 20  # Ray's memory resource an emulated worker asks for (it holds no environments)
UNITS_PER_WORKER = 12  # the emulated sweep's length: about this many units per worker


def named_spec(name: str, episodes: int | None = None) -> SweepSpec:
    """A spec by name (`episodes` replaces the built-in specs' count), or from a path."""
    if name in ("one-group", "q-learning"):
        text = ONE_GROUP if name == "one-group" else DEAR
        return parse_spec(tomllib.loads(text.replace("episodes = 72000", f"episodes = {episodes or 72000}")), name)
    return load_spec(ROOT / "experiments" / f"{name}.toml" if name == "factors" else name)


class Timed:
    """Wraps an executor to time its start-up and its play apart, and this process's CPU while it plays."""

    def __init__(self, executor):
        self.executor = executor
        self.name, self.notices = executor.name, executor.notices
        self.start_seconds = self.play_seconds = self.driver_seconds = 0.0

    def __enter__(self):
        self.executor.report_phase, self.executor.writer = self.report_phase, self.writer  # set by run_spec
        started = time.perf_counter()
        self.executor.__enter__()
        self.start_seconds = time.perf_counter() - started
        self.workers = self.executor.workers
        return self

    def __exit__(self, *exc_info):
        self.executor.__exit__(*exc_info)

    def run(self, blocks):
        started, cpu = time.perf_counter(), time.process_time()
        yield from self.executor.run(blocks)
        self.play_seconds = time.perf_counter() - started
        self.driver_seconds = time.process_time() - cpu


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def local(args) -> None:
    for name in args.spec:
        spec = named_spec(name)
        executors = {"serial": lambda: SerialExecutor(spec), "ray, 1 worker": lambda: RayExecutor(spec, workers=1),
                     "ray, 2 workers": lambda: RayExecutor(spec, workers=2)}
        print(f"\n{spec.name}: {'executor':<16}{'play s':>9}{'start s':>9}{'driver CPU ms/1k rows':>23}{'rows':>10}"
              f"{'load':>7}")
        fastest = {label: float("inf") for label in executors}
        for _ in range(args.rounds):
            for label, make in executors.items():
                timed = Timed(make())
                with tempfile.TemporaryDirectory(dir=args.tmp) as out:
                    summary = run_spec(spec, out, timed)
                fastest[label] = min(fastest[label], timed.play_seconds)
                print(f"{'':<{len(spec.name) + 2}}{label:<16}{timed.play_seconds:>9.2f}{timed.start_seconds:>9.2f}"
                      f"{1e6 * timed.driver_seconds / summary.rows:>23.3f}{summary.rows:>10,}{load():>7}", flush=True)
        serial, one, two = fastest.values()
        print(f"  fastest play: serial {serial:.2f} s, 1 worker {one:.2f} s, 2 workers {two:.2f} s; 2 workers: "
              f"{one / two:.2f}x 1 worker, {serial / two:.2f}x serial")


class EmulatedHost:
    """Plays a unit as a worker would, by the clock: waits the unit's calibrated seconds, then puts a chunk
    of its rows into the dataset as a worker's ChunkWriter does (a hard link of a template written
    beforehand stands for the Parquet write, a worker's own CPU)."""

    def __init__(self, writer: ChunkWriter, templates: dict[int, tuple[str, int, str]], seconds_per_step: float):
        self.writer, self.templates, self.seconds_per_step = writer, templates, seconds_per_step

    def writes(self) -> bool:
        return self.writer.visible()

    def check_plugins(self, expected) -> None:
        pass

    def pid(self) -> int:
        return os.getpid()

    def play(self, unit: WorkUnit) -> ChunkRecord:
        time.sleep(unit.cost * self.seconds_per_step)
        template, size, digest = self.templates[unit.rows]
        name = f"part-{unit.id}.parquet"
        temporary = self.writer.dataset / f".{name}.tmp"
        os.link(template, temporary)
        os.replace(temporary, self.writer.dataset / name)
        return ChunkRecord(unit=unit.id, file=name, rows=unit.rows, bytes=size, sha256=digest)


class EmulatedExecutor(RayExecutor):
    """The Ray executor with emulated hosts: LANES of them share an actor process (a threaded actor)."""

    def __init__(self, spec, address, workers, nodes, templates, seconds_per_step):
        super().__init__(spec, address=address, workers=workers)
        self.nodes, self.templates, self.seconds_per_step = nodes, templates, seconds_per_step

    def host_memory(self) -> int:
        return EMULATED_HOST_BYTES

    def start_hosts(self, remote) -> list:
        lanes = min(LANES, self.workers // self.nodes)  # an actor's CPUs must fit on one node
        actor = remote(EmulatedHost).options(num_cpus=lanes, memory=lanes * self.host_bytes, max_concurrency=lanes,
                                             scheduling_strategy="SPREAD")
        processes = [actor.remote(self.writer, self.templates, self.seconds_per_step)
                     for _ in range(self.workers // lanes)]
        return [process for process in processes for _ in range(lanes)]


def calibrate(spec: SweepSpec, directory: Path) -> tuple[float, object, int]:
    """Seconds per planned agent-step of one real unit of the spec (generated, played and written here,
    after a warm-up unit), and that unit's rows as a table."""
    units = [unit for block in plan(spec) for unit in block.units]
    first, unit = units[0], units[1]
    with ResultsStore(directory, spec.sweep_id, {}, planned={u.id for u in units}) as store:
        cache = EnvironmentCache(spec)
        play_unit(spec, first, cache.environments(first))  # loads the code
        started = time.perf_counter()
        table = play_unit(spec, unit, EnvironmentCache(spec).environments(unit))
        store.writer.write(unit.id, table)
        seconds = time.perf_counter() - started
    return seconds / unit.cost, table, unit.rows


def templates_for(units: list[WorkUnit], table, directory: Path) -> dict[int, tuple[str, int, str]]:
    """A real chunk of every row count among the units: the calibration unit's rows repeated or cut."""
    templates = {}
    for rows in sorted({unit.rows for unit in units}):
        repeats = -(-rows // table.num_rows)
        chunk = pa.concat_tables([table] * repeats).slice(0, rows)
        path = directory / f"template-{rows}.parquet"
        pq.write_table(chunk, path, compression="zstd")
        templates[rows] = (str(path), path.stat().st_size, _sha256(path))
    return templates


def gcs_cpu_seconds() -> float:
    """CPU seconds of this machine's Ray GCS servers (Linux /proc)."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "gcs_server":
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return total


def emulated(args) -> None:
    print(f"{'spec':<12}{'workers':>8}{'unit s':>8}{'units':>7}{'wall s':>8}{'rows/s':>12}{'driver ms/1k':>14}"
          f"{'GCS ms/1k':>11}{'efficiency':>12}{'predicted':>11}{'load':>7}")
    for name in ("one-group", "q-learning"):
        base = named_spec(name)
        with tempfile.TemporaryDirectory(dir=args.tmp) as scratch:
            scratch = Path(scratch)
            seconds_per_step, table, _ = calibrate(base, scratch / "calibration")
            for workers in args.workers:
                base_units = sum(len(block.units) for block in plan(base))
                spec = named_spec(name, base.episodes * max(1, -(-UNITS_PER_WORKER * workers // base_units)))
                units = [unit for block in plan(spec) for unit in block.units]
                templates = templates_for(units, table, scratch)
                with multi_node_cluster(head_cpus=0, node_cpus=(workers // args.nodes,) * args.nodes) as (address, _):
                    os.environ.update(CLUSTER_ENV)
                    executor = Timed(EmulatedExecutor(spec, address, workers, args.nodes, templates, seconds_per_step))
                    out = scratch / f"out-{workers}"
                    gcs = gcs_cpu_seconds()
                    summary = run_spec(spec, out, executor)
                    gcs = gcs_cpu_seconds() - gcs
                    shutil.rmtree(out)
                planned = sum(unit.cost for unit in units) * seconds_per_step
                unit_seconds = planned / len(units)
                driver_per_unit = executor.driver_seconds / len(units)
                predicted = min(1.0, unit_seconds / (workers * driver_per_unit))
                print(f"{name:<12}{workers:>8}{unit_seconds:>8.2f}{len(units):>7}{executor.play_seconds:>8.1f}"
                      f"{summary.rows / executor.play_seconds:>12,.0f}"
                      f"{1e6 * executor.driver_seconds / summary.rows:>14.3f}{1e6 * gcs / summary.rows:>11.3f}"
                      f"{planned / (workers * executor.play_seconds):>12.1%}{predicted:>11.1%}{load():>7}", flush=True)


def grown_dataset(source: Path, rows: int, directory: Path) -> Path:
    """A dataset of about `rows` rows: `source`'s chunks, each repeated with episodes renumbered past the last."""
    parts = sorted((source / "dataset").glob("part-*.parquet"))
    tables = [pq.read_table(part) for part in parts]
    total = sum(table.num_rows for table in tables)
    copies = max(1, round(rows / total))
    span = 1 + max(pc.max(table["episode"]).as_py() for table in tables)
    out = directory / f"rows-{copies * total}" / "dataset"
    out.mkdir(parents=True)
    for part, table in zip(parts, tables):
        episodes = table["episode"]
        grown = pa.concat_tables([table.set_column(table.schema.get_field_index("episode"), "episode",
                                                   pc.add(episodes, copy * span)) for copy in range(copies)])
        pq.write_table(grown, out / part.name)
    return out.parent


def analysis(args) -> None:
    """Wall seconds and peak RSS of `collective analyze` and `validate` on grown datasets."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for rows in args.rows:
            dataset = grown_dataset(Path(args.sweep), rows, Path(tmp))
            for command in ("analyze", "validate"):
                start = time.perf_counter()
                child = subprocess.Popen([sys.executable, "-m", "collective", command, str(dataset), "--format", "json"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                errors = child.stderr.read().strip()
                _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS (KB on Linux)
                wall = time.perf_counter() - start
                ended = f"exit {os.waitstatus_to_exitcode(status)}" + (f": {errors.splitlines()[-1]}" if errors else "")
                print(f"{dataset.name}: {command} {wall:.1f} s, peak RSS {usage.ru_maxrss / 2**20:.2f} GB ({ended}) "
                      f"{load()}", flush=True)
            shutil.rmtree(dataset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    on_this = commands.add_parser("local", help="serial, 1 and 2 Ray workers on this machine")
    on_this.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    on_this.add_argument("--spec", nargs="+", default=["one-group", "factors"],
                         help="one-group, factors or a spec's path (default: one-group factors)")
    cluster = commands.add_parser("emulated", help="64 and 256 emulated workers on a local multi-node cluster")
    cluster.add_argument("--workers", type=int, nargs="+", default=[64, 256], help="worker counts (default 64 256)")
    cluster.add_argument("--nodes", type=int, default=4, help="worker nodes sharing them (default 4)")
    grown = commands.add_parser("analysis", help="analyze and validate on 10^6 and 10^7 rows")
    grown.add_argument("sweep", help="a finished sweep directory whose rows are repeated")
    grown.add_argument("--rows", type=int, nargs="+", default=[10**6, 10**7], help="dataset sizes (default 10^6 10^7)")
    for command in (on_this, cluster, grown):
        command.add_argument("--tmp", default=None, help="where the datasets are written (default: the system's)")
    args = parser.parse_args()
    {"local": local, "emulated": emulated, "analysis": analysis}[args.command](args)


if __name__ == "__main__":
    main()
