"""Wall time of one fixed sweep with the serial executor, 1 Ray worker and 2 Ray workers.

The sweep, `experiments/scaling.toml`, is learner-heavy like the factor study: 4 cells (2 grids x
2 group sizes), random, local search, Q-learning and SARSA, 600 episodes, T=100, about 20 units. Each run
writes a fresh results store in a temporary directory. "sweep s" is the time from the first
unit submitted to the last chunk written; "total s" adds starting (and stopping) the embedded
Ray and its actors; "driver CPU s" is this process's CPU time during the sweep (writing the chunks,
waiting for and reading the workers' rows), which 2 workers share the machine's cores with. Ratios: Ray overhead = 1 Ray worker / serial, scaling = 1 worker / 2 workers.

Timings depend on what else the machine runs, and a shared VM's speed drifts by 20% or more from
minute to minute, so the three executors run in interleaved rounds (`--rounds`, default 3) and
the ratios use each executor's fastest sweep, the usual estimate of its undisturbed time. Each line
ends with the machine's 1-minute load average after the run: quote it with the figures.

    .venv/bin/python benchmarks/sweep_scaling.py [--rounds N]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from collective.sweeps.runtime import RayExecutor, SerialExecutor
from collective.sweeps.command import run_spec
from collective.sweeps.spec import load_spec

SPEC = Path(__file__).parent.parent / "experiments" / "scaling.toml"


class Timed:
    """Wraps an executor to time its run apart from its start-up."""

    def __init__(self, executor):
        self.executor = executor
        self.name, self.sweep_seconds, self.driver_seconds = executor.name, 0.0, 0.0
        self.notices = executor.notices

    def __enter__(self):
        self.executor.report_phase, self.executor.writer = self.report_phase, self.writer  # set by run_spec
        self.executor.__enter__()
        self.workers = self.executor.workers
        return self

    def __exit__(self, *exc_info):
        self.executor.__exit__(*exc_info)

    def run(self, blocks):
        started, cpu = time.perf_counter(), time.process_time()
        yield from self.executor.run(blocks)
        self.sweep_seconds = time.perf_counter() - started
        self.driver_seconds = time.process_time() - cpu


def measure(label: str, executor) -> tuple[float, float]:
    timed = Timed(executor)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        summary = run_spec(spec, out, timed)
        total = time.perf_counter() - started
    print(f"{label:<16}{timed.sweep_seconds:>10.2f}{total:>10.1f}{timed.driver_seconds:>14.2f}{summary.rows:>10,}"
          f"{os.getloadavg()[0]:>8.2f}")
    return timed.sweep_seconds, total


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the three executors (default 3)")
rounds = parser.parse_args().rounds
spec = load_spec(SPEC)
executors = {"serial": lambda: SerialExecutor(spec), "ray, 1 worker": lambda: RayExecutor(spec, workers=1),
             "ray, 2 workers": lambda: RayExecutor(spec, workers=2)}
print(f"{'executor':<16}{'sweep s':>10}{'total s':>10}{'driver CPU s':>14}{'rows':>10}{'load':>8}")
fastest = {label: float("inf") for label in executors}
for _ in range(rounds):
    for label, make in executors.items():
        fastest[label] = min(fastest[label], measure(label, make())[0])
serial, one, two = fastest.values()
print(f"fastest sweeps: serial {serial:.2f} s, 1 worker {one:.2f} s, 2 workers {two:.2f} s")
print(f"Ray overhead (1 worker / serial): {one / serial:.3f}; scaling (1 worker / 2 workers): {one / two:.2f}x")
