"""Cold and warm first commands: the wall time of the demo's sweep and of each README example in a
fresh process, and the part of it spent compiling.

Each example runs in a subprocess with its own fresh NUMBA_CACHE_DIR: first on the empty cache
(cold: it compiles what it needs), then again on the cache the first run filled (warm: it loads).
With --warmed, the cold run is replaced by the first run after `python -m collective.warm_up` (the
install step's warm-up) filled the cache: what a fresh install's first command waits. With --warm-up,
the warm-up itself on an empty cache, in one process and in two (its default on two idle cores), alternated
--repeat times: wall seconds and the CPU seconds of all its processes. The compile
seconds are what the command itself reports ("collective: ... done in N s" after its compile
notice, or evaluate's `compile_seconds` with --json); 0 when it compiled nothing. Run it from the
project root (the examples' paths are relative to it); `uptime` first, since the machine's load
moves every figure:

    .venv/bin/python benchmarks/cold_start.py                    # every example, cold and warm
    .venv/bin/python benchmarks/cold_start.py --only demo_sweep  # one of them
    .venv/bin/python benchmarks/cold_start.py --warmed           # after the install's warm-up
    .venv/bin/python benchmarks/cold_start.py --warm-up          # the warm-up alone, serial and parallel
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

# The demo's sweep (`make demo`) and the README's examples, as the README writes them.
EXAMPLES = {
    "demo_sweep": ["sweep", "experiments/quickstart.toml", "--out", "{tmp}/quickstart"],
    "evaluate_paper": ["evaluate", "--behaviour", "local_search", "--group-size", "10", "--grid", "10x10",
                       "--iterations", "200", "--episodes", "1000", "--seed", "0", "--profile", "paper",
                       "--observation-range", "1", "--complexity", "2:23", "--json"],
    "evaluate_mix_wisdom": ["evaluate", "--mix", "local_search:8,q_learning:2", "--protocol", "wisdom"],
    "evaluate_stigmergy": ["evaluate", "--behaviour", "local_search", "--group-size", "10", "--protocol",
                           "stigmergy", "--protocol-param", "form=reference"],
    "evaluate_landscape": ["evaluate", "--env", "landscape", "--peaks", "5", "--deception", "0.8", "--noise", "0.3",
                           "--behaviour", "local_search"],
    "demo": ["demo"],
    "byo_agent_sweep": ["sweep", "experiments/byo_agent.toml", "--out", "{tmp}/byo_agent"],
    "anytime": ["anytime", "--behaviour", "local_search", "--group-size", "5", "--protocol", "broadcast",
                "--start-budget", "10", "--max-environments", "20", "--json"],
}
DONE = re.compile(r"collective: \.\.\. done in (\d+) s")


def timed_run(args: list[str], cache: str, tmp: str) -> tuple[float, float]:
    """Wall seconds of one CLI run in a new process, and the compile seconds it reports."""
    command = [sys.executable, "-m", "collective", *(arg.format(tmp=tmp) for arg in args)]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "NUMBA_CACHE_DIR": cache})
    wall = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr}")
    if "--json" in args and args[0] == "evaluate":
        return wall, json.loads(result.stdout)["compile_seconds"]
    return wall, sum(float(seconds) for seconds in DONE.findall(result.stderr))


def warm_up(cache: str, *options: str) -> tuple[float, float]:
    """Run the install step's warm-up into `cache`; its wall seconds and its processes' CPU seconds."""
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "collective.warm_up", *options], check=True,
                   env={**os.environ, "NUMBA_CACHE_DIR": cache})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return time.perf_counter() - started, cpu


def time_warm_ups(repeat: int) -> None:
    """The warm-up on empty caches, serial and parallel alternately."""
    print(f"{'warm-up':<22}{'load':<8}{'wall s':>9}{'cpu s':>11}")
    for _ in range(repeat):
        for label, options in (("one process", ("--processes", "1")), ("two processes", ("--processes", "2"))):
            load = os.getloadavg()[0]
            with tempfile.TemporaryDirectory() as cache:
                wall, cpu = warm_up(cache, *options)
            print(f"{label:<22}{load:<8.1f}{wall:>9.1f}{cpu:>11.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated example names: " + ", ".join(EXAMPLES))
    parser.add_argument("--warmed", action="store_true", help="start from the install step's warm-up, not empty")
    parser.add_argument("--warm-up", action="store_true", help="time the warm-up alone, serial and parallel")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of --warm-up (default 1)")
    args = parser.parse_args()
    if args.warm_up:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        time_warm_ups(args.repeat)
        return
    names = args.only.split(",") if args.only else list(EXAMPLES)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'example':<22}{'start':<8}{'wall s':>9}{'compile s':>11}")
    with tempfile.TemporaryDirectory() as warmed:
        if args.warmed:
            print(f"{'(warm-up)':<22}{'':<8}{warm_up(warmed)[0]:>9.1f}", flush=True)
        for name in names:
            with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as tmp:
                if args.warmed:  # each example on its own copy of the warmed cache
                    shutil.copytree(warmed, cache, dirs_exist_ok=True)
                for start in ("warmed" if args.warmed else "cold", "warm"):
                    wall, compiled = timed_run(EXAMPLES[name], cache, f"{tmp}/{start}")
                    print(f"{name:<22}{start:<8}{wall:>9.1f}{compiled:>11.1f}", flush=True)


if __name__ == "__main__":
    main()
