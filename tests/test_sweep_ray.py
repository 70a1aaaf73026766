"""Sweeps on Ray with real parts: embedded Ray at several worker counts and the `auto` executor, a
killed worker process, a killed driver resumed, a Ctrl-C that keeps the finished chunks, a cluster
started with `ray start` and joined by address, and multi-node clusters on loopback (a raylet per
node): workers writing their own chunks, workers that cannot see --out, a worker node killed."""
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from numba.core import config as numba_config

from collective.sweeps.store import MANIFEST_FILE, TIMING_COLUMNS, ResultsStore
from collective.sweeps.runtime import RayExecutor, SerialExecutor, arrow_stream, stream_table
from collective.sweeps.command import run_spec
from collective.sweeps.spec import parse_spec
from collective.sweeps.plan import generate_block, plan, play_unit
from sweep_support import (BLOCKS_ROWS, BLOCKS_SPEC, CLUSTER_ENV, SLOW_ROWS, SLOW_SPEC, TINY_ROWS, TINY_SPEC,
                           collective, descendants, kill_session, multi_node_cluster, ray_cluster, rows, running,
                           start_collective, write_spec)


@pytest.fixture(scope="module")
def tiny():
    return parse_spec(tomllib.loads(TINY_SPEC), "tiny")


@pytest.fixture(scope="module")
def tiny_reference(tiny, tmp_path_factory):
    return rows(run_spec(tiny, tmp_path_factory.mktemp("serial"), SerialExecutor(tiny)).dataset)


@pytest.fixture(scope="module")
def slow():
    return parse_spec(tomllib.loads(SLOW_SPEC), "slow")


def test_a_units_rows_reach_the_driver_as_played(tiny):
    """A GroupHost returns a unit's rows as an Arrow IPC stream: the rows of several groups' tables (one
    record batch each), with null, NaN and list columns, come out of it with the played schema and values."""
    block = plan(tiny)[0]
    unit = max(block.units, key=lambda u: len(u.groups))
    played = play_unit(tiny, unit, generate_block(tiny, block))
    assert played.column("score").num_chunks == len(unit.groups) > 1
    assert played.column("local_optima").null_count and "nan" in str(played.column("message_entropy_bits"))
    received = stream_table(arrow_stream(played))
    assert received.schema.equals(played.schema, check_metadata=True)
    assert str(received.to_pylist()) == str(played.to_pylist())  # NaN compares equal as text


@pytest.mark.parametrize("workers", [1, 2])
def test_embedded_ray_rows_equal_serial_rows_for_any_worker_count(tiny, tiny_reference, tmp_path, workers):
    """The workers load the kernels that this process (`tiny_reference`) compiled: none of them
    compiles (a compilation would write its code into the shared cache; the suite runs one test at
    a time, so nothing else writes there meanwhile)."""
    cache = sorted(Path(numba_config.CACHE_DIR).rglob("*"))
    before = [path.stat().st_mtime_ns for path in cache]
    summary = run_spec(tiny, tmp_path, RayExecutor(tiny, workers=workers))
    assert summary.executor == "ray" and summary.workers == workers
    assert rows(summary.dataset).equals(tiny_reference)
    assert cache and sorted(Path(numba_config.CACHE_DIR).rglob("*")) == cache
    assert [path.stat().st_mtime_ns for path in cache] == before


def test_auto_executor_says_what_it_picked_and_gives_the_same_rows(tiny, tiny_reference, tmp_path):
    """A tiny sweep's work (~0.1 s) would never win back Ray's start-up: `auto` plays it serially."""
    result = collective("sweep", str(write_spec(tmp_path, TINY_SPEC)), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    picked = [line for line in result.stderr.splitlines() if line.startswith("collective sweep: executor ")]
    assert len(picked) == 1 and picked[0].startswith("collective sweep: executor serial (auto: "), picked
    assert "on serial with 1 worker(s)" in result.stdout
    assert rows(tmp_path / "out" / "dataset").equals(tiny_reference)


def wait_for_a_chunk(driver, out) -> None:
    """Until the sweep's manifest lists a finished chunk, the driver still running (at most 240 s)."""
    deadline = time.monotonic() + 240
    while not (out / MANIFEST_FILE).exists() or not (out / MANIFEST_FILE).read_text().strip():
        assert driver.poll() is None, driver.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("executor, stop", [("serial", "ctrl-c"), ("ray", "ctrl-c"), ("serial", "kill"),
                                            ("ray", "kill")])
def test_ctrl_c_keeps_every_finished_chunk_and_prints_one_line(slow, tmp_path, executor, stop):
    """A terminal's Ctrl-C (SIGINT to the whole process group, Ray's processes included), or `kill PID` (SIGTERM
    to the driver alone), once the first chunks are written: exit 130 or 143, one line saying which rows are
    kept (no stack dump of Ray's core worker after it), and the rerun resumes them all."""
    spec = write_spec(tmp_path, SLOW_SPEC)
    out = tmp_path / "out"
    workers = ["--workers", "2"] if executor == "ray" else []  # serial plays in one process
    driver = start_collective("sweep", str(spec), "--out", str(out), *workers, "--executor", executor)
    try:
        wait_for_a_chunk(driver, out)
        if stop == "ctrl-c":
            os.killpg(driver.pid, signal.SIGINT)
        else:
            os.kill(driver.pid, signal.SIGTERM)
        _, stderr = driver.communicate(timeout=120)
    finally:
        kill_session(driver)
    finished = len((out / MANIFEST_FILE).read_text().splitlines())
    assert driver.returncode == (130 if stop == "ctrl-c" else 143), stderr
    lines = stderr.splitlines()
    playing = next(i for i, line in enumerate(lines) if line.startswith("collective sweep: progress: slow: playing"))
    after = lines[playing:]
    last = [line for line in after if not line.startswith("collective sweep: progress: ")]
    assert len(last) == 1 and re.fullmatch(rf"collective sweep: interrupted: [\d,]+ of {SLOW_ROWS:,} rows kept in "
                                           rf"{finished} chunks; rerun the same command to resume", last[0]), stderr
    assert 1 <= finished < sum(len(block.units) for block in plan(slow))
    resumed = collective("sweep", str(spec), "--out", str(out), "--executor", "serial")
    assert resumed.returncode == 0 and f"resumed from {finished} chunks" in resumed.stdout, resumed.stderr


@pytest.mark.parametrize("spec_text, expected_rows", [(SLOW_SPEC, SLOW_ROWS), (BLOCKS_SPEC, BLOCKS_ROWS)])
def test_killed_actor_process_loses_no_row(spec_text, expected_rows, tmp_path):
    """A GroupHost killed while it plays (and generates: each host draws its units' environments) is
    restarted and its units retried: every unit's chunk is written once, with the serial executor's rows."""
    import ray

    spec = parse_spec(tomllib.loads(spec_text), "killed")
    blocks = list(plan(spec))
    units = {unit.id: unit for block in blocks for unit in block.units}
    results = {}
    with ResultsStore(tmp_path, spec.sweep_id, {}, planned=set(units)) as store:
        executor = RayExecutor(spec, workers=2)
        executor.writer = store.writer
        with executor:
            assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}  # loopback only
            pid = executor.actor_pids()[0]
            for unit, record in executor.run(blocks):
                if not results:
                    os.kill(pid, signal.SIGKILL)  # the actor restarts and its unfinished calls are retried
                results[unit.id] = record
            assert pid not in executor.actor_pids()
    assert set(results) == set(units) and sum(r.rows for r in results.values()) == expected_rows
    assert sorted(path.name for path in store.dataset.iterdir()) == sorted(r.file for r in results.values())
    for block in (blocks[0], blocks[-1]):  # the rows equal the serial executor's
        environments = generate_block(spec, block)
        for unit in block.units:
            expected = play_unit(spec, unit, environments).drop_columns(list(TIMING_COLUMNS))
            played = pq.read_table(store.dataset / results[unit.id].file).drop_columns(list(TIMING_COLUMNS))
            # compared as DataFrames: NaN (message entropy without messages) equals NaN there, not in Arrow
            assert played.to_pandas().equals(expected.to_pandas())


@pytest.mark.parametrize("cluster", ["embedded", "multi-node"])
def test_killed_driver_resumes_without_duplicates(slow, tmp_path, cluster):
    """kill -9 of the driver once chunks are written, then the same command: on an embedded Ray, whose
    processes (the raylet, its agents, the workers) all end within 10 s of the driver, and on a multi-node
    cluster whose workers (writing chunks themselves) may outlive the driver for a while."""
    spec = write_spec(tmp_path, SLOW_SPEC)
    out = tmp_path / "out"
    units = sum(len(block.units) for block in plan(slow))
    with contextlib.ExitStack() as stack:
        where = []
        if cluster == "multi-node":
            address, _ = stack.enter_context(multi_node_cluster(head_cpus=1, node_cpus=(1,)))
            where = ["--address", address]
        command = ["sweep", str(spec), "--out", str(out), "--workers", "2", "--executor", "ray", *where]
        driver = start_collective(*command, env=CLUSTER_ENV)
        embedded_ray = {}  # its processes: (pid, start time) -> name
        try:
            wait_for_a_chunk(driver, out)
            embedded_ray = descendants(driver.pid) if cluster == "embedded" else {}
            os.kill(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
            deadline = time.monotonic() + 10
            while running(embedded_ray) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = [embedded_ray[process] for process in running(embedded_ray)]
        finally:
            kill_session(driver)
            for pid, _ in running(embedded_ray):
                os.kill(pid, signal.SIGKILL)
        if cluster == "embedded":
            assert {"raylet", "gcs_server"} <= set(embedded_ray.values()), embedded_ray
            assert not left, f"still running 10 s after the driver's kill -9: {left}"
        finished = len((out / MANIFEST_FILE).read_text().splitlines())
        assert 1 <= finished < units
        assert (out / "sweep.lock").exists()  # left behind by the killed driver: stale
        command[command.index("--workers") + 1] = "1"
        resumed = collective(*command, env=CLUSTER_ENV)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from {finished} chunks" in resumed.stdout
    frame = rows(out / "dataset")
    assert len(frame) == SLOW_ROWS and not frame.duplicated(["cell", "episode", "group_key"]).any()
    assert frame.groupby(["cell", "group_key"]).episode.agg(lambda e: sorted(e) == list(range(4000))).all()


def test_cluster_started_with_ray_start_and_joined_by_address(tiny, tiny_reference, tmp_path):
    with ray_cluster() as address:
        result = subprocess.run(
            [sys.executable, "-m", "collective", "sweep", str(write_spec(tmp_path, TINY_SPEC)), "--out",
             str(tmp_path / "out"), "--address", address],
            capture_output=True, text=True, timeout=600, env={**os.environ, **CLUSTER_ENV})
    assert result.returncode == 0, result.stderr
    assert "on ray with 2 worker(s)" in result.stdout
    assert rows(tmp_path / "out" / "dataset").equals(tiny_reference)
    assert len(tiny_reference) == TINY_ROWS


def test_a_multi_node_cluster_writes_the_serial_rows_from_its_workers(tiny, tiny_reference, tmp_path):
    """A head and a worker node, each a raylet with one CPU: the two GroupHosts spread over the nodes,
    each generates its units' environments and writes its chunks; the rows are the serial executor's."""
    with multi_node_cluster(head_cpus=1, node_cpus=(1,)) as (address, _):
        result = collective("sweep", str(write_spec(tmp_path, TINY_SPEC)), "--out", str(tmp_path / "out"),
                            "--address", address, env=CLUSTER_ENV)
    assert result.returncode == 0, result.stderr
    assert "on ray with 2 worker(s)" in result.stdout and "do not see" not in result.stderr
    assert rows(tmp_path / "out" / "dataset").equals(tiny_reference)


def test_workers_that_do_not_see_out_send_their_rows_and_the_sweep_says_so(tiny, tiny_reference, tmp_path):
    """The only node with CPUs runs where --out's folder is hidden (a mount namespace of its own): its
    workers cannot read the sweep's lock, so they return their rows and the driver writes them."""
    out = tmp_path / "hidden" / "out"
    out.parent.mkdir()
    with multi_node_cluster(head_cpus=0, node_cpus=(2,), hidden=out.parent) as (address, _):
        result = collective("sweep", str(write_spec(tmp_path, TINY_SPEC)), "--out", str(out), "--address", address,
                            env=CLUSTER_ENV)
    assert result.returncode == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if "do not see" in line]
    assert notices == [f"collective sweep: notice: 2 of 2 Ray workers do not see {out.resolve()} (no shared "
                       "filesystem on their node): their rows travel to this process, which writes them"], result.stderr
    assert rows(out / "dataset").equals(tiny_reference)


def test_a_worker_node_killed_mid_sweep_loses_no_row(slow, tmp_path):
    """kill -9 of a worker node (its raylet and the GroupHost on it) once chunks are written: the host
    restarts on the head's spare CPU and its units are retried; or, when Ray spends the host's restarts
    before it marks the node dead (seen in CI), the sweep stops with one line and the same command
    resumes. Either way every row is there once, as serially."""
    spec = write_spec(tmp_path, SLOW_SPEC)
    out = tmp_path / "out"
    with multi_node_cluster(head_cpus=2, node_cpus=(1,)) as (address, [node]):
        command = ["sweep", str(spec), "--out", str(out), "--workers", "2", "--address", address]
        driver = start_collective(*command, env=CLUSTER_ENV)
        try:
            wait_for_a_chunk(driver, out)
            os.killpg(node.pid, signal.SIGKILL)
            _, stderr = driver.communicate(timeout=600)
            assert node.poll() is not None
        finally:
            kill_session(driver)
        if driver.returncode:
            assert driver.returncode == 1 and stderr.splitlines()[-1].endswith("out of memory, or killed from outside")
            resumed = collective(*command, env=CLUSTER_ENV)
            assert resumed.returncode == 0 and "resumed from" in resumed.stdout, resumed.stderr
    assert len((out / MANIFEST_FILE).read_text().splitlines()) == sum(len(block.units) for block in plan(slow))
    serial = run_spec(slow, tmp_path / "serial", SerialExecutor(slow)).dataset
    assert rows(out / "dataset").equals(rows(serial))


WIDE_SPEC = """
name = "wide"
seed = 1
profile = "paper"
episodes = 1
iterations = 3
[factors]
grid = ["4x4", "5x5", "6x6", "7x7", "8x8", "9x9"]
group_size = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
[groups]
behaviours = ["random", "local_search", "oracle", "imitation"]
"""


def test_a_spec_too_big_to_pass_inline_prints_only_our_lines(tmp_path):
    """A spec whose cells pickle beyond Ray's 100 KB inline limit (the full 2016 replication's: 480 KB) made Ray's
    C++ core worker print 'core_worker.cc:...: Actor with class name: 'GroupHost' ... has constructor arguments in
    the object store' on the sweep's stderr; what Ray writes on descriptor 2 goes to OUT/ray.log with the rest."""
    spec = write_spec(tmp_path, WIDE_SPEC, "wide.toml")
    done = collective("sweep", str(spec), "--out", str(tmp_path / "out"), "--executor", "ray", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if not line.startswith("collective")] == []
    assert "GroupHost" in (tmp_path / "out" / "ray.log").read_text()
    assert pq.read_table(tmp_path / "out" / "dataset").num_rows == 6 * 20 * 4


def test_ray_messages_leave_a_callers_own_stderr_alone(tmp_path, capfd):
    """Review of the descriptor-2 redirection: a caller whose sys.stderr is not descriptor 2 (Jupyter, a
    redirect_stderr) keeps the sweep's lines there while Ray's C-level writes go to the log; a caller on
    descriptor 2 keeps its lines on descriptor 2's old file."""
    from collective.sweeps.runtime import ray_messages_to

    caught = io.StringIO()
    with contextlib.redirect_stderr(caught), ray_messages_to(tmp_path / "ray.log"):
        print("ours", file=sys.stderr)
        os.write(2, b"from C\n")
    assert caught.getvalue() == "ours\n"
    with ray_messages_to(tmp_path / "ray.log"):
        print("ours again", file=sys.stderr)
        os.write(2, b"from C again\n")
    assert capfd.readouterr().err == "ours again\n"
    assert (tmp_path / "ray.log").read_text() == "from C\nfrom C again\n"
