"""Shared pieces of the sweep tests: tiny specs, the CLI in a subprocess, rows without timings."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

from collective.sweeps.local_cluster import (CLUSTER_ENV, free_port, kill_session,  # noqa: F401 (tests import them here)
                                             multi_node_cluster)
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


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (state, parent, ...; the start time is [19])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def descendants(pid: int) -> dict[tuple[int, str], str]:
    """The processes `pid` started, and theirs: (pid, start time), which tells a process from a later one
    reusing its pid, -> its name."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if fields := _stat(child):
                found[child, fields[19]] = Path(f"/proc/{child}/comm").read_text().strip()
                todo.append(child)
    return found


def running(processes) -> list[tuple[int, str]]:
    """Those of `processes` ((pid, start time) pairs) that still run (not ended, not a zombie)."""
    return [(pid, started) for pid, started in processes
            if (fields := _stat(pid)) and fields[19] == started and fields[0] != "Z"]


def rows(dataset: Path) -> pd.DataFrame:
    """The dataset's rows without timing columns, in (cell, group, episode) order."""
    frame = pd.read_parquet(dataset).drop(columns=list(TIMING_COLUMNS))
    return frame.sort_values(["cell", "group_key", "episode"]).reset_index(drop=True)


@contextlib.contextmanager
def ray_cluster(cwd: Path | None = None):
    """A `ray start --head` cluster of 2 CPUs on loopback, its processes started in `cwd`; yields
    its address."""
    with multi_node_cluster(cwd=cwd) as (address, _):
        yield address
