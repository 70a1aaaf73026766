"""Executors for a sweep's plan: `SerialExecutor` in a child of this process, `RayExecutor` on Ray.

Both run the same functions of `collective.sweeps.plan` and yield (unit, chunk record) as units
finish. On Ray, `GroupHost` actors (one per CPU, spread over the nodes) each generate the
environments of the units they play (`plan.EnvironmentCache`), play them and write their chunks
into the sweep's dataset directory (`store.ChunkWriter`); the driver only hands out units and
appends each finished chunk's manifest line, so nothing central does work per episode or per row.
A host that does not see the directory (a node without the shared filesystem: it cannot read the
sweep's lock file) returns its rows as an Arrow stream for the driver to write, and the sweep says so.

Fault tolerance: a killed actor process is restarted (on any node with room) and its unfinished
calls retried, so a dead worker or node costs time, never a row. A plug-in that raises stops the
sweep with its `PluginError` (the unit's rows are never recorded).

User plug-ins reach the workers through Ray's runtime environment (`plugin_runtime_env`): each
plug-in module's top-level package, or its file, is shipped as a `py_modules` entry, so workers
that have never seen the user's files (a cluster joined by `--address`) run them; every GroupHost
then checks that its copies have the driver's source digests before playing anything. Safe defaults for an embedded
Ray: no dashboard, a bounded object store, every server on the loopback address (Ray's local-only
mode, its default on macOS and Windows, chosen through `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` before
Ray is imported), no usage reporting. Ray's messages (its `ray` logger, the `(raylet)` lines about a
worker's death) go to `OUT/ray.log` (`ray_messages_to`), so that a failed sweep's own line is its last.
An embedded Ray runs in a temporary directory of its own (its `_temp_dir`, and the working directory
ray.init sees, which Ray puts first on its workers' sys.path), watched by `ray_watchdog.py`, which ends its
processes when the driver dies; a cluster's workers get an empty directory, since removed, on their sys.path.

Memory: every actor asks Ray for the memory its work needs (Ray's `memory` resource, from the
spec's largest work unit and the environments it keeps, `plan.largest_unit_bytes` and
`plan.largest_span_bytes`), so Ray never runs more at once on a node than its memory holds: fewer
workers start when that many would not fit (with a notice), and a spec whose largest unit fits on
no node is refused (`ResourceError`).
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from collective.progress import LOADING_KERNELS, STARTING_RAY
from collective.simulation.plugins import (RUN_DIRECTORY_VARIABLE, SHIPPED_FILES_VARIABLE, PluginError,
                                          is_import_path, run_directory)
from collective.sweeps.spec import SweepSpec
from collective.sweeps.plan import (CACHED_SPANS, EnvironmentBlock, EnvironmentCache, WorkUnit, largest_span_bytes,
                                    largest_unit_bytes, play_unit, prepare_process)
from collective.sweeps.store import ChunkRecord, ChunkWriter, StoreError

RAY_LOG_FILE = "ray.log"  # in the sweep's directory: Ray's messages (`ray_messages_to`)
OBJECT_STORE_BYTES = 256 << 20  # embedded Ray: only rows a host cannot write itself pass through it
ACTOR_RESTARTS = 5  # per actor: a killed actor comes back this many times ...
ACTOR_TASK_RETRIES = 5  # ... and its unfinished calls are retried
CALLS_PER_HOST = 2  # a GroupHost's unit playing and its next one, queued so that it does not wait, a few ms
# a unit, for the driver to see the last one finish and send another (notes/sweep-runtime.md)
PROBE_SECONDS = 3.0  # TCP connect timeout when checking a --address
# Ray's memory request (a logical resource: Ray places no more actors on a node than its memory
# holds) is the actor's base, a warm process before any work (Python, NumPy, pyarrow, numba and
# the loaded kernels: 450-480 MB resident measured), plus what its work needs: its largest work
# unit and the environments of the spans it keeps.
ACTOR_BASE_BYTES = 512 << 20
CHILD_STOP_SECONDS = 10.0  # the serial executor's child, asked to stop, is killed after this


class ResourceError(RuntimeError):
    """The cluster cannot hold even one worker of the spec."""


class WorkerLost(RuntimeError):
    """A worker died more often than Ray restarts it, playing a unit of built-in groups only."""


def memory_capped_workers(workers: int, nodes: list[dict[str, float]], host_bytes: int) -> int:
    """How many of `workers` GroupHosts (1 CPU and `host_bytes` of Ray's memory resource each) the
    nodes' resources hold."""
    free = [node.get("memory", 0.0) for node in nodes]
    cpus = [int(node.get("CPU", 0)) for node in nodes]
    fit = sum(min(cpu, int(memory // host_bytes)) for cpu, memory in zip(cpus, free))
    if not fit:
        raise ResourceError(f"a worker needs ~{host_bytes / 2**30:.1f} GiB of memory for the spec's largest work "
                            f"unit; Ray offers {max(free) / 2**30:.1f} GiB on its largest node: use smaller grids, "
                            "groups or T, or a node with more memory")
    if fit < workers:
        print(f"collective sweep: notice: {workers} workers capped at {fit}: each needs ~{host_bytes / 2**30:.1f} GiB "
              f"of memory for the spec's largest work unit", file=sys.stderr)
    return min(workers, fit)


def _is_loopback(address: str) -> bool:
    """Whether a Ray address ("host:port") names this machine's loopback interface."""
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host == "::1" or host.startswith("127.")


def unreachable(address: str) -> str | None:
    """Why nothing answers at a "[ray://]host:port" Ray address, probed with a short TCP connect
    (ray.init would retry for ~25 s), or why it is no address; None when it answers or is "auto"."""
    if address == "auto":
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        return "not an address: expected HOST:PORT, ray://HOST:PORT or auto"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS).close()
    except OSError as error:
        return error.strerror or str(error) or type(error).__name__
    return None


def cap_workers(requested: int | None, cpus: int, where: str) -> int:
    """`requested` workers (default: all) at most `cpus`, with a notice on stderr when capped."""
    if requested and requested > cpus:
        print(f"collective sweep: notice: --workers {requested} capped at {cpus}, the CPUs of {where}", file=sys.stderr)
    return min(requested or cpus, cpus)


def plugin_runtime_env(spec: SweepSpec) -> dict:
    """Ray's runtime environment shipping the spec's plug-in code to the workers (Ray's `py_modules`):
    a module plug-in's top-level package (or single module), a file plug-in's file, with the files'
    names mapped for `plugins._import_file`. Code installed in the interpreter (site-packages, the
    standard library) is not shipped: every worker must have it installed; nor is the package's own
    (a built-in plug-in such as `heading_search`): every worker runs the package. Plug-ins' `data_files` are read
    on the workers relative to the driver's directory (`RUN_DIRECTORY_VARIABLE`)."""
    installed = {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    shipped, files, data = set(), {}, False
    for cell in spec.cells:
        for plugin in (p for config in cell.configs if config is not None for p in config.plugins):
            data = data or bool(plugin.data_files)
            if plugin.cls.__module__.partition(".")[0] == "collective":  # a built-in plug-in: workers run the package
                continue
            if not is_import_path(plugin.spec):
                raise PluginError(plugin.spec, "", "is registered by name in this process only: name it by import "
                                                   "path (MODULE:CLASS or FILE.py:CLASS) to run it on Ray")
            module = plugin.spec.rpartition(":")[0]
            if plugin.source_file is None:
                raise PluginError(plugin.spec, "", "its module has no source file to ship to Ray workers")
            if module.endswith(".py"):
                files[module] = plugin.source_file.stem
                shipped.add(plugin.source_file.resolve())
                continue
            top = Path(sys.modules[module.split(".")[0]].__file__).resolve()
            top = top.parent if top.name == "__init__.py" else top
            if not any(top.is_relative_to(root) for root in installed):
                shipped.add(top)
    names = [path.stem for path in shipped]
    clashing = sorted({name for name in names if names.count(name) > 1})
    if clashing:
        raise PluginError(clashing[0], "", "two plug-in sources of this name cannot both be shipped to Ray workers; "
                                           "rename one")
    variables = {SHIPPED_FILES_VARIABLE: json.dumps(files)} if shipped else {}
    if data:  # the plug-ins' data files are read where the driver runs (`plugins.run_directory`)
        variables[RUN_DIRECTORY_VARIABLE] = str(run_directory())
    return {key: value for key, value in (("py_modules", sorted(str(path) for path in shipped)),
                                          ("env_vars", variables)) if value}


@contextlib.contextmanager
def ray_messages_to(path: Path):
    """Appends to `path` (yielded, open) what Ray prints in this process while it runs: its `ray` logger's
    records, the `(raylet)` messages it prints on stdout (a worker's death, each retry) and what its C++ core
    worker and the processes ray.init starts write on file descriptor 2 (e.g. core_worker.cc's warning on an
    actor whose constructor arguments are in the object store), which would otherwise mix with the sweep's
    lines. sys.stdout is the file meanwhile, and sys.stderr a copy of descriptor 2 as it was: the sweep prints
    there."""
    stderr = sys.stderr
    try:  # sys.stderr follows descriptor 2's old file only where it writes there (not Jupyter's or capsys's)
        on_descriptor_2 = stderr is not None and stderr.fileno() == 2
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is an OSError and a ValueError
        on_descriptor_2 = False
    if stderr is not None:
        stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with open(fd, "a", buffering=1) as log, contextlib.redirect_stdout(log), \
            open(os.dup(2), "w", buffering=1, encoding=getattr(stderr, "encoding", None),
                 errors=getattr(stderr, "errors", None)) as ours:
        terminal = ours.fileno()
        os.set_inheritable(terminal, False)
        os.dup2(fd, 2)
        if on_descriptor_2:
            sys.stderr = ours
        logger = logging.getLogger("ray")
        handlers, propagate = logger.handlers, logger.propagate
        logger.handlers, logger.propagate = [logging.StreamHandler(log)], False
        try:
            yield log
        finally:
            logger.handlers, logger.propagate = handlers, propagate
            ours.flush()
            os.dup2(terminal, 2)
            if on_descriptor_2:
                sys.stderr = stderr


@contextlib.contextmanager
def ray_watchdog(temp_dir: str, log):
    """`ray_watchdog.py` watching this process while an embedded Ray runs in `temp_dir`: it ends that Ray's
    processes within seconds if this process dies (kill -9 included), else what ray.shutdown left; then it
    removes `temp_dir`. Its own output goes to `log` (None: this process's stdout and stderr)."""
    watchdog = subprocess.Popen([sys.executable, "-I", str(Path(__file__).with_name("ray_watchdog.py")), temp_dir,
                                 str(os.getpid()), str(os.getsid(0))],
                                stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True)
    try:
        yield
    finally:
        watchdog.stdin.close()
        watchdog.wait()


def _silent(phase: str) -> None:
    """The default `report_phase` of an executor: nobody listens."""


class SerialExecutor:
    """Runs the plan on one worker: the same code as on Ray, for debugging and as the baseline. The
    worker is a child process forked from this one once it has loaded the code (so the child loads
    nothing), playing the units in plan order, writing their chunks and sending each chunk's record (or
    the error that stopped it) back; a child that ends before reporting every unit (a plug-in's
    `os._exit`, even with status 0, or a crash in native code) stops the sweep with `WorkerLost`.
    Set by the caller: `report_phase` hears what entering does (`collective.progress` phases),
    `writer` writes the chunks (the results store's)."""

    name = "serial"

    def __init__(self, spec: SweepSpec):
        self.spec = spec
        self.workers = 1
        self.report_phase = _silent
        self.writer: ChunkWriter | None = None  # set by the caller before running: where chunks go
        self.notices: list[str] = []  # what entering found that a user should hear of (see RayExecutor)
        self.child: multiprocessing.Process | None = None

    def __enter__(self) -> "SerialExecutor":
        self.report_phase(LOADING_KERNELS)
        prepare_process(self.spec)
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop_child()

    def run(self, blocks: list[EnvironmentBlock]) -> Iterator[tuple[WorkUnit, ChunkRecord]]:
        units = [unit for block in blocks for unit in block.units]
        yield from self._in_child(_play_units, (self.spec, units), units)

    def stamp(self, units: list[str], episodes: int) -> Iterator[tuple[str, ChunkRecord]]:
        """Stamp the kept chunks of `units` with `episodes` (`ChunkWriter.stamp`) in the worker; yield each record."""
        yield from self._in_child(_stamp_chunks, (units, episodes), units)

    def _in_child(self, target, args: tuple, jobs: list) -> Iterator[tuple[object, ChunkRecord]]:
        """Run `target(*args, writer, connection, driver)` in the forked worker; yield each job with the record
        it sends back, in order."""
        receiving, sending = multiprocessing.Pipe(duplex=False)
        self.child = multiprocessing.get_context("fork").Process(
            target=target, args=(*args, self.writer, sending, os.getpid()), name="collective-serial", daemon=True)
        sys.stdout.flush()  # else the child, a copy of this process, would print what is buffered again
        sys.stderr.flush()
        self.child.start()
        sending.close()
        try:
            for done, job in enumerate(jobs):
                try:
                    record = receiving.recv()
                except EOFError:
                    self.child.join()
                    raise self._ended_early(len(jobs) - done, len(jobs)) from None
                if isinstance(record, BaseException):
                    raise record
                yield job, record
        finally:
            receiving.close()
            self._stop_child()

    def _ended_early(self, left: int, units: int) -> WorkerLost:
        code = self.child.exitcode
        status = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        plugins = sorted(self.spec.plugin_digests())
        cause = "a plug-in that ends its process (os._exit" + (f"; here {', '.join(plugins)}" if plugins else "") + \
            "), a crash in native code or a kill does this"
        return WorkerLost(f"the sweep ended early: its serial worker process stopped ({status}) with {left} of "
                          f"{units} work units unreported; {cause}; rerun the same command to resume")

    def _stop_child(self) -> None:
        """End the child (Ctrl-C or SIGTERM reached this process, or the caller stopped early) and wait for it."""
        child, self.child = self.child, None
        if child is not None and child.is_alive():
            child.terminate()
            child.join(CHILD_STOP_SECONDS)
            if child.is_alive():
                child.kill()
                child.join()


def _die_with(driver: int) -> None:
    """On Linux the kernel kills this process when the driver dies, a kill -9 of it too (prctl's
    PR_SET_PDEATHSIG), so no worker goes on writing chunks beside a rerun; elsewhere nothing is set."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != driver:  # it died before the call
        os._exit(1)


def _play_units(spec: SweepSpec, units: list[WorkUnit], writer: ChunkWriter, connection, driver: int) -> None:
    """The serial executor's child: play `units` in order, write each chunk and send its record (`_send_each`)."""
    def played():
        cache = EnvironmentCache(spec)
        for unit in units:
            yield writer.write(unit.id, play_unit(spec, unit, cache.environments(unit)))

    _send_each(played(), connection, driver)


def _stamp_chunks(units: list[str], episodes: int, writer: ChunkWriter, connection, driver: int) -> None:
    """The serial executor's child stamping a grown sweep's kept chunks (`ChunkWriter.stamp`), each record sent."""
    _send_each((writer.stamp(unit, episodes) for unit in units), connection, driver)


def _send_each(records: Iterator[ChunkRecord], connection, driver: int) -> None:
    """Send each record to the driver as it is made, or the error that stopped them. A Ctrl-C (the command
    line's handler, inherited, tells it from a plug-in's own KeyboardInterrupt) or the driver's SIGTERM ends
    the child silently: the driver, stopping too, says what is kept; the driver's death ends it (`_die_with`)."""
    _die_with(driver)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        try:
            for record in records:
                connection.send(record)
        except Exception as error:  # the driver raises it as it would have been raised here
            try:
                error = pickle.loads(pickle.dumps(error))
            except Exception:  # an error that does not cross processes: its text
                error = RuntimeError(f"{type(error).__name__}: {error}")
            connection.send(error)
    except (BrokenPipeError, KeyboardInterrupt):  # the driver is gone, or stops
        return


class _Actor:
    def pid(self) -> int:
        """The actor's process id (start-up waits on it; fault-injection tests kill it)."""
        return os.getpid()


class GroupHost(_Actor):
    """A Ray actor hosting agent groups: generates the environments of its units, plays them in a warm
    process (numba code loaded) and writes their chunks where it sees the sweep's directory. Each
    generates its own environments rather than one maker for the cluster, which fed about one worker
    of a one-group sweep (generation and ceilings cost about what a cheap group's play does)."""

    def __init__(self, spec: SweepSpec, writer: ChunkWriter | None):
        self.spec = spec
        self.writer = writer if writer and writer.visible() else None  # None: rows go to the driver (`play`)
        self.cache = EnvironmentCache(spec)
        self.failure: PluginError | None = None  # a plug-in this node cannot load: `check_plugins` says so
        try:
            prepare_process(spec)
        except PluginError as error:  # raised from __init__ it would kill the actor, its message lost in a traceback
            self.failure = error

    def writes(self) -> bool:
        """Whether this host writes its chunks itself (it sees the sweep's directory)."""
        return self.writer is not None

    def check_plugins(self, expected: dict[str, str]) -> None:
        """PluginError when this worker cannot load a plug-in (a data file missing on its node) or its copy is
        not the driver's (same source digest: code and data files)."""
        if self.failure is not None:
            raise self.failure
        for name, digest in self.spec.plugin_digests().items():
            if digest != expected[name]:
                raise PluginError(name, "", f"the Ray worker's copy (source digest {digest}) differs from the "
                                            f"driver's ({expected[name]}): install the same version, and the same "
                                            "data files, on every node")

    def play(self, unit: WorkUnit) -> ChunkRecord | pa.Buffer:
        """Play the unit; its chunk's record once written, or its rows as an Arrow IPC stream
        (`arrow_stream`) where this host does not see the sweep's directory."""
        rows = play_unit(self.spec, unit, self.cache.environments(unit))
        return self.writer.write(unit.id, rows) if self.writer else arrow_stream(rows)

    def stamp(self, unit: str, episodes: int) -> ChunkRecord | None:
        """Stamp the unit's kept chunk (`ChunkWriter.stamp`); None where this host does not see the sweep's
        directory (the driver then stamps it, as it writes such a host's rows)."""
        return self.writer.stamp(unit, episodes) if self.writer else None


class RayExecutor:
    """Runs the plan on an embedded Ray (default) or on the cluster at `address`; `report_phase` as
    for `SerialExecutor`."""

    name = "ray"

    def __init__(self, spec: SweepSpec, address: str | None = None, workers: int | None = None):
        """`workers` GroupHost actors, at most (and by default) the CPUs of this machine or of the cluster."""
        self.spec = spec
        self.address = address
        self.requested_workers = workers
        self.workers = 0
        self.host_bytes = 0  # each GroupHost's memory request
        self.hosts: list = []
        self.writer: ChunkWriter | None = None  # set by the caller before entering (see SerialExecutor)
        self.report_phase = _silent
        self.notices: list[str] = []  # what entering found that a user should hear of
        self.stack = contextlib.ExitStack()  # what __exit__ undoes of entering

    @property
    def log_path(self) -> Path | None:
        """The file in the sweep's directory that gets Ray's messages (`ray_messages_to`); None for an executor
        entered without a writer (its rows all come back to the caller), where Ray prints as it does."""
        return self.writer.dataset.parent / RAY_LOG_FILE if self.writer else None

    def __enter__(self) -> "RayExecutor":
        self.report_phase(STARTING_RAY)
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not self.address or _is_loopback(self.address):
            # Read when Ray is first imported, and by the processes it starts: without it Ray
            # resolves 127.0.0.1 to the machine's address and cannot reach a loopback cluster.
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        if not self.address:
            os.environ["RAY_worker_niceness"] = "0"  # Ray's default (15) starves the actors next to other work
        import ray

        if not self.address or _is_loopback(self.address):
            # Ray reads the variable once, on import: a caller that imported Ray first would get a
            # cluster on the machine's network address, so set the flag Ray's address lookup reads
            from ray._private import ray_constants
            ray_constants.ENABLE_RAY_CLUSTER = False
        # ray.init sets the level and format of the `ray` logger's handler, `ray_messages_to`'s by then
        settings = dict(logging_level=logging.ERROR, log_to_driver=False,
                        runtime_env=plugin_runtime_env(self.spec) or None)
        terminate = signal.getsignal(signal.SIGTERM)
        with contextlib.ExitStack() as stack:
            log = stack.enter_context(ray_messages_to(self.log_path)) if self.log_path else None
            if self.address:
                if (Path.home() / ".ray" / "auth_token").exists():
                    os.environ.setdefault("RAY_AUTH_MODE", "token")  # as `ray start` decides for the cluster
                with tempfile.TemporaryDirectory(prefix="collective-ray-") as empty, contextlib.chdir(empty):
                    ray.init(address=self.address, **settings)
            else:
                self.workers = cap_workers(self.requested_workers, os.cpu_count() or 1, "this machine")
                temp_dir = tempfile.mkdtemp(prefix="collective-ray-", dir="/tmp")  # short: Ray's socket paths
                stack.enter_context(ray_watchdog(temp_dir, log))
                with contextlib.chdir(temp_dir):
                    ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                             object_store_memory=OBJECT_STORE_BYTES, _temp_dir=temp_dir, **settings)
            stack.callback(ray.shutdown)
            if callable(terminate) and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, terminate)  # Ray's core worker installs one that dumps a C stack, dies
            if self.address:
                self.workers = cap_workers(self.requested_workers, max(1, int(ray.cluster_resources().get("CPU", 1))),
                                           "the Ray cluster")
            self.host_bytes = self.host_memory()
            self.workers = memory_capped_workers(self.workers, [node["Resources"] for node in ray.nodes()
                                                                if node["Alive"]], self.host_bytes)
            restartable = dict(max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_TASK_RETRIES)
            self.report_phase(LOADING_KERNELS)  # each actor imports the code and loads the kernels
            self.hosts = self.start_hosts(ray.remote(**restartable))
            blind = ray.get([actor.writes.remote() for actor in self.hosts]).count(False)  # every actor warm
            if blind and self.writer:
                self.notices.append(f"{blind} of {self.workers} Ray workers do not see {self.writer.dataset.parent} "
                                    "(no shared filesystem on their node): their rows travel to this process, which "
                                    "writes them")
            _raise_plugin_errors(lambda: ray.get([host.check_plugins.remote(self.spec.plugin_digests())
                                                  for host in self.hosts]))
            self.stack = stack.pop_all()
        return self

    def host_memory(self) -> int:
        """Bytes a GroupHost holds at most: a warm process, the spec's largest unit, the spans it keeps."""
        return ACTOR_BASE_BYTES + largest_unit_bytes(self.spec) + CACHED_SPANS * largest_span_bytes(self.spec)

    def start_hosts(self, remote) -> list:
        """One GroupHost per worker, each holding a CPU and its memory, spread over the nodes; `remote` is
        `ray.remote` with the restart options (`benchmarks/cluster_scaling.py` starts emulated hosts here)."""
        host = remote(GroupHost).options(num_cpus=1, memory=self.host_bytes, scheduling_strategy="SPREAD")
        return [host.remote(self.spec, self.writer) for _ in range(self.workers)]

    def __exit__(self, *exc_info) -> None:
        import ray

        for actor in self.hosts:
            ray.kill(actor)
        self.stack.close()  # ray.shutdown, the watchdog's clean-up, Ray's messages to the terminal again

    def actor_pids(self) -> list[int]:
        """Process ids of the GroupHosts (for fault-injection tests)."""
        import ray

        return ray.get([actor.pid.remote() for actor in self.hosts])

    def run(self, blocks: list[EnvironmentBlock]) -> Iterator[tuple[WorkUnit, ChunkRecord]]:
        """Feed units to the hosts in plan order, each holding its next unit while it plays one
        (`CALLS_PER_HOST`) until the queue runs short, a unit going where its span was last sent
        when that host is as free as any; yield each unit's chunk record as it finishes (written
        here, for a host that returned its rows)."""
        import ray

        queue = deque(unit for block in blocks for unit in block.units)
        calls = {h: 0 for h in range(len(self.hosts))}  # host -> its calls submitted and unfinished
        running: dict[object, tuple[int, WorkUnit]] = {}  # ObjectRef -> (host, unit)
        span_host: dict[tuple[int, int, int], int] = {}  # (cell, span) -> the host last sent one of its units

        def submit() -> None:
            while queue and (h := next_host(calls, len(queue), span_host.get(queue[0].span_key))) \
                    is not None:
                unit = queue.popleft()
                running[self.hosts[h].play.remote(unit)] = (h, unit)
                calls[h] += 1
                span_host[unit.span_key] = h

        submit()
        while running:
            [finished], _ = ray.wait(list(running), num_returns=1)
            h, unit = running.pop(finished)
            calls[h] -= 1
            try:
                result = _raise_plugin_errors(lambda: ray.get(finished))
            except ray.exceptions.RayActorError:  # its queued unit died with it: either may be the cause
                raise self._worker_died([unit] + [held for host, held in running.values() if host == h]) from None
            submit()
            yield unit, result if isinstance(result, ChunkRecord) else self.writer.write(unit.id, stream_table(result))

    def stamp(self, units: list[str], episodes: int) -> Iterator[tuple[str, ChunkRecord]]:
        """Stamp the kept chunks of `units` with `episodes` (`ChunkWriter.stamp`), spread over the hosts; yield
        each record as it comes."""
        import ray

        running = {self.hosts[i % len(self.hosts)].stamp.remote(unit, episodes): unit for i, unit in enumerate(units)}
        while running:
            [finished], _ = ray.wait(list(running), num_returns=1)
            unit = running.pop(finished)
            try:
                record = ray.get(finished)
            except ray.exceptions.RayActorError:
                raise WorkerLost(f"the Ray worker stamping chunk {unit} died: out of memory, or killed from outside; "
                                 "rerun the same command to resume") from None
            yield unit, record or self.writer.stamp(unit, episodes)

    def _worker_died(self, units: list[WorkUnit]) -> Exception:
        """The error for a GroupHost that died, its restarts used up, holding `units` (the one it was
        playing and any queued behind it): a PluginError naming their plug-ins (their code runs in that
        process), else a WorkerLost."""
        groups = [(unit.cell, g) for unit in units for g in unit.groups]
        configs = [self.spec.cells[c].configs[g] for c, g in groups]
        labels = ", ".join(dict.fromkeys(self.spec.groups[g].label for _, g in groups))
        plugins = sorted({plugin.spec for config in configs for plugin in config.plugins})
        held = f"unit {units[0].id}" if len(units) == 1 else f"units {', '.join(unit.id for unit in units)}"
        message = (f"the Ray worker playing groups {labels} ({held}) died {ACTOR_RESTARTS + 1} times, "
                   "more than Ray restarts it" + (f" (Ray's messages: {self.log_path})" if self.log_path else ""))
        if plugins:
            return PluginError(", ".join(plugins), "", f"{message}: a plug-in that ends its process (os._exit, "
                                                       "a crash in native code) or exhausts its memory does this")
        return WorkerLost(f"{message}: out of memory, or killed from outside")


def next_host(calls: dict[int, int], units_queued: int, preferred: int | None = None) -> int | None:
    """The host that takes the next unit, given each host's unfinished calls, or None to wait: the least
    busy one (`preferred`, the host holding the unit's environments, among equals), with its next unit
    queued behind the one it plays (`CALLS_PER_HOST`) only while more units are queued than there are
    hosts. A queued unit cannot move to a host that runs dry first, so near the end (where the plan's
    units are small) a unit goes only to a host with nothing to play."""
    host = min(calls, key=lambda h: (calls[h], h != preferred))
    return host if calls[host] < (CALLS_PER_HOST if units_queued > len(calls) else 1) else None


def arrow_stream(table: pa.Table) -> pa.Buffer:
    """`table` as one Arrow IPC stream, the form in which a GroupHost returns a unit's rows: Ray copies it
    as plain bytes, where its own serialisation of a pa.Table rebuilds every column's buffers in Python,
    on the worker between two units and on the driver next to the workers (notes/sweep-runtime.md, "A unit's
    rows as one Arrow IPC stream")."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def stream_table(stream: pa.Buffer) -> pa.Table:
    """The table that `arrow_stream` wrote (its arrays read in place from `stream`)."""
    return pa.ipc.open_stream(stream).read_all()


def _raise_plugin_errors(call):
    """call(); a plug-in's error raised on a worker comes back as the PluginError itself, and a chunk the
    worker refused to write (`ChunkWriter.write`) as the StoreError itself: one line each."""
    import ray

    try:
        return call()
    except ray.exceptions.RayTaskError as error:
        if isinstance(error.cause, (PluginError, StoreError)):
            raise error.cause from None
        raise
