"""A real multi-node Ray cluster on this machine, on loopback: `ray start --head` and worker nodes
(`ray start --address`), each a raylet of its own with its own object store and declared CPUs. The
tests run sweeps across nodes, kill a node or hide `--out` from one with it, and
`benchmarks/cluster_scaling.py` runs emulated workers on it; it is also a way to try a cluster set-up
before a real one."""
from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
# Loopback only, token authentication on (the driver's environment for a `ray start` cluster).
CLUSTER_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
START_SECONDS = 120  # at most, for the head to answer and every node to join


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kill_session(process: subprocess.Popen) -> None:
    """Kill a process started in its own session and everything it started."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


@contextlib.contextmanager
def multi_node_cluster(head_cpus: int = 2, node_cpus: tuple[int, ...] = (), hidden: Path | None = None,
                       cwd: Path | None = None):
    """`ray start --head` with `head_cpus` and one worker node per entry of `node_cpus`. With `hidden`,
    the worker nodes run in a mount namespace of their own where an empty tmpfs covers that folder: a
    node without the shared filesystem, as far as that folder goes (needs root). Yields (address,
    the worker nodes' processes: one may be killed). --block keeps each `ray start` in the foreground
    so that exactly this cluster is stopped (`ray stop` would stop every Ray on the machine)."""
    port = free_port()
    # Ray's local-only mode (CLUSTER_ENV) refuses a second node; every node names its loopback address
    env = {**os.environ, **CLUSTER_ENV, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1" if node_cpus else "0"}
    common = ["--node-ip-address", "127.0.0.1", "--disable-usage-stats", "--block"]
    processes = []
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as temp_dir:
        def start(command: list[str]) -> subprocess.Popen:
            with open(Path(temp_dir) / f"start-{len(processes)}.log", "w") as log:  # `_wait_for` quotes it
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                           start_new_session=True, cwd=cwd)
            processes.append(process)
            return process

        try:
            head = start([RAY, "start", "--head", "--port", str(port), "--include-dashboard=false", "--num-cpus",
                          str(head_cpus), "--object-store-memory", str(200 << 20), "--temp-dir", temp_dir, *common])
            _wait_for(lambda: _answers(port), temp_dir, head)
            address = f"127.0.0.1:{port}"
            nodes = []
            for cpus in node_cpus:
                command = [RAY, "start", "--address", address, "--num-cpus", str(cpus), "--object-store-memory",
                           str(100 << 20), *common]
                if hidden is not None:
                    mount = f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(str(hidden))} && exec {shlex.join(command)}"
                    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount]
                nodes.append(start(command))  # one at a time: nodes starting together on one address race
                _wait_for(lambda: active_nodes(address) == 1 + len(nodes), temp_dir, *nodes)
            yield address, nodes
        finally:
            for process in reversed(processes):
                process.terminate()  # `ray start --block` stops its processes on SIGTERM
                try:
                    process.wait(timeout=60)
                finally:
                    kill_session(process)


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def active_nodes(address: str) -> int:
    """The cluster's active nodes, as `ray status` lists them."""
    status = subprocess.run([RAY, "status", "--address", address], capture_output=True, text=True,
                            env={**os.environ, **CLUSTER_ENV})
    active = status.stdout.partition("Active:")[2].partition("Pending:")[0]
    return sum(line.strip().startswith("1 node_") for line in active.splitlines())


def _wait_for(ready, temp_dir: str, *processes: subprocess.Popen) -> None:
    """Until ready() holds (at most START_SECONDS), every process still running; else a RuntimeError
    quoting the end of the `ray start` logs."""
    deadline = time.monotonic() + START_SECONDS
    while not ready():
        if any(process.poll() is not None for process in processes) or time.monotonic() > deadline:
            logs = "\n".join(log.read_text()[-800:] for log in sorted(Path(temp_dir).glob("start-*.log")))
            raise RuntimeError(f"the local Ray cluster did not start (a `ray start` exited or took too long):\n{logs}")
        time.sleep(0.3)
