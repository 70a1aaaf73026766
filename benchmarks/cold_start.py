"""Cold and warm start of `collective evaluate`: the wall time of a small run in a fresh process.

For Λ* and for `--env landscape`, it runs `collective evaluate --behaviour local_search
--episodes 10 --json` twice in subprocesses sharing a fresh, empty NUMBA_CACHE_DIR: the first run
compiles every kernel (cold), the second loads them from the cache (warm). It prints both wall
times and the `compile_seconds` each run reports. Run it from the project root:

    .venv/bin/python benchmarks/cold_start.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

RUN = ["evaluate", "--behaviour", "local_search", "--episodes", "10", "--json"]
ENVIRONMENTS = {"lambda_star": [], "landscape": ["--env", "landscape"]}


def timed_run(args: list[str], cache: str) -> tuple[float, float]:
    """Wall seconds of one CLI run in a new process, and the compile_seconds it reports."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "collective", *args], capture_output=True, text=True,
                            env={**os.environ, "NUMBA_CACHE_DIR": cache}, check=True)
    return time.perf_counter() - started, json.loads(result.stdout)["compile_seconds"]


def main() -> None:
    print(f"{'environment':<14}{'start':<7}{'wall s':>9}{'compile s':>11}")
    for name, extra in ENVIRONMENTS.items():
        with tempfile.TemporaryDirectory() as cache:
            for start in ("cold", "warm"):
                wall, compiled = timed_run(RUN + extra, cache)
                print(f"{name:<14}{start:<7}{wall:>9.2f}{compiled:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
