"""Shared pieces of the sweep tests: tiny specs, the CLI in a subprocess, rows without timings."""
from __future__ import annotations

import contextlib
import os
import socket
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from collective.sweeps.store import TIMING_COLUMNS

# Two grids x two group sizes, three behaviours and a protocol that plays only the larger groups.
TINY_SPEC = """
name = "tiny"
seed = 7
profile = "paper"
episodes = 24
iterations = 30

[factors]
grid = ["5x5", "6x6"]
group_size = [1, 3]

[groups]
behaviours = ["random", "local_search", "q_learning"]
protocols = [{ name = "none" }, { name = "wisdom", behaviours = ["local_search"], group_sizes = [3] }]

[settings]
q_training_passes = 10
"""
TINY_ROWS = 2 * 24 * 3 + 2 * 24 * 4  # cells of size 1 play 3 groups, of size 3 four

# Learners on several cells, split into many chunks of ~1 s: long enough to be interrupted.
SLOW_SPEC = """
name = "slow"
seed = 3
profile = "paper"
episodes = 4000
iterations = 60

[factors]
grid = ["5x5", "7x7"]
group_size = [3]

[groups]
behaviours = ["random", "q_learning"]
"""
SLOW_ROWS = 2 * 4000 * 2

# Eight cells, so eight environment blocks: most are generated after the sweep has begun.
BLOCKS_SPEC = """
name = "blocks"
seed = 5
profile = "paper"
episodes = 1500
iterations = 60

[factors]
grid = ["5x5", "6x6", "7x7", "8x8"]
group_size = [2, 3]

[groups]
behaviours = ["random", "q_learning"]
"""
BLOCKS_ROWS = 8 * 1500 * 2


def write_spec(directory: Path, text: str, name: str = "spec.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def collective(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collective", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def as_at_a_terminal() -> None:
    """In a child before it runs: Ctrl-C's default disposition, as at a terminal. A test suite started in the
    background by a shell without job control inherits SIGINT ignored, and so would the CLI (it leaves an ignored
    SIGINT alone), so a test of Ctrl-C would test nothing there."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_collective(*args: str, env: dict | None = None) -> subprocess.Popen:
    """The CLI in its own session, so a test can kill it and everything it started; Ctrl-C as at a terminal."""
    return subprocess.Popen([sys.executable, "-m", "collective", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})}, preexec_fn=as_at_a_terminal)


def rows(dataset: Path) -> pd.DataFrame:
    """The dataset's rows without timing columns, in (cell, group, episode) order."""
    frame = pd.read_parquet(dataset).drop(columns=list(TIMING_COLUMNS))
    return frame.sort_values(["cell", "group_key", "episode"]).reset_index(drop=True)


RAY = str(Path(sys.executable).with_name("ray"))
# Loopback only, token authentication on (the driver's environment for a `ray start` cluster).
CLUSTER_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kill_session(process: subprocess.Popen) -> None:
    """Kill a process started in its own session and everything it started."""
    try:
        os.killpg(process.pid, 9)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


@contextlib.contextmanager
def ray_cluster(cwd: Path | None = None):
    """A `ray start --head` cluster of 2 CPUs on loopback, its processes started in `cwd`; yields
    its address. --block keeps `ray start` in the foreground so that exactly this cluster is
    stopped (`ray stop` would stop every Ray on the machine)."""
    port = free_port()
    env = {**os.environ, **CLUSTER_ENV}
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as temp_dir:
        head = subprocess.Popen([RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                                 "--include-dashboard=false", "--num-cpus", "2", "--object-store-memory",
                                 str(200 << 20), "--disable-usage-stats", "--temp-dir", temp_dir, "--block"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
                                cwd=cwd)
        try:
            deadline = time.monotonic() + 120
            while True:
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert head.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
            yield f"127.0.0.1:{port}"
        finally:
            head.terminate()  # `ray start --block` stops its processes on SIGTERM
            try:
                head.wait(timeout=60)
            finally:
                kill_session(head)
