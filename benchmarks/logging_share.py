"""What message-entropy logging costs the communicating groups' kernel (issue 25 point 3: < 5%).

Each protocol row of `benchmarks/throughput.py` (group size 10 of local searchers, 10x10 torus, T=200,
profile "paper" unless --profile names another) is timed on two builds of the same sources, each in a fresh
interpreter: the project as installed, and a copy in a temporary folder whose `log_to`
(protocols/kernel_support.py, through which every rule logs) returns its state at once, so that no rule logs
a symbol and the count table stays empty (the hashing that only feeds the log is then dead code, removed by
the compiler). Logging's share is 1 - (rate with logging) / (rate without).
The copy lives in one folder under the system's temporary directory, its files rewritten only when they
change, so that it compiles its kernels once per version of the sources (a few minutes on 2 cores). The
two builds then alternate, ROUNDS rounds, the best rate of each counting; a rate is agent-steps per second
of the timing thread's CPU time (`time.thread_time`), steadier than wall time on a loaded machine, and
the 1-minute load average is printed with each round.

    .venv/bin/python benchmarks/logging_share.py                         # every protocol row
    .venv/bin/python benchmarks/logging_share.py --protocol stigmergy    # one row (repeatable)
    .venv/bin/python benchmarks/logging_share.py --protocol stigmergy --profile lambdastar2016  # the 2016 form
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from collective.config import PROFILES

PROTOCOLS = ("stigmergy", "broadcast", "wisdom", "auction", "dictatorship", "hierarchy")
ROUNDS = 3
TARGET_SECONDS = 0.5  # kernel time per timing
# Where `log_to`'s body starts (after its docstring), and what the copy without logging puts there.
LOG_TO = "def log_to(log, state, symbol, copies):\n"
LOG_BODY = "    n, distinct, pending, pending_copies, slots = state\n"
NO_LOG = "    return state\n"

# Runs in a child: kernel agent-steps per second of each protocol named in argv, best of 3 timings.
_TIMER = """
import sys
import time
import numpy as np
from collective.config import EvaluationConfig
from collective.evaluation.batches import batch_episodes
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
target, profile = float(sys.argv[1]), sys.argv[2]
for protocol in sys.argv[3:]:
    config = EvaluationConfig.from_profile(profile, behaviour="local_search", group_size=10, protocol=protocol,
                                           rows=10, cols=10, iterations=200, episodes=1_000_000)
    batch = generate_environments(config, np.arange(batch_episodes(config)))
    calls = max(1, round(target / play(config, batch).kernel_seconds))
    timings = []
    for _ in range(3):
        started = time.thread_time()
        for _ in range(calls):
            play(config, batch)
        timings.append(time.thread_time() - started)
    print(protocol, calls * len(batch) * config.iterations * config.group_size / min(timings), flush=True)
"""


def package_folder(name: str) -> Path:
    return Path(importlib.util.find_spec(name).submodule_search_locations[0]).resolve()


def sources() -> dict[Path, bytes]:
    """Every file of the collective package by its path in the copy (its protocols and dashboards inside it,
    as a wheel installs them), `log_to` returning at once."""
    files = {}
    for name, folder in (("", "collective"), ("protocols", "collective.protocols"),
                         ("dashboards", "collective.dashboards")):
        root = package_folder(folder)
        for path in root.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                files[Path("collective", name, path.relative_to(root))] = path.read_bytes()
    support = Path("collective", "protocols", "kernel_support.py")
    files[support] = without_logging(files[support].decode(), support).encode()
    return files


def without_logging(text: str, name: Path) -> str:
    """kernel_support.py's text with NO_LOG first in `log_to`'s body; exits naming what moved when the
    function no longer has that signature or body (the copy would otherwise time logging, silently)."""
    start = text.find(LOG_TO)
    body = text.find(LOG_BODY, start)
    following = text.find("\ndef ", start + len(LOG_TO))
    if text.count(LOG_TO) != 1 or body < 0 or (following >= 0 and body > following):
        sys.exit(f"{name}: no `{LOG_TO.strip()}` whose body starts with {LOG_BODY.strip()!r}; update LOG_TO "
                 "and LOG_BODY")
    return text[:body] + NO_LOG + text[body:]


def copy_without_logging(root: Path) -> Path:
    """The copy of `sources` under root, files written only when they differ (numba's cache keys on their
    times); the folder to put on PYTHONPATH."""
    for relative, content in sources().items():
        path = root / relative
        if not path.exists() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return root


def rates(protocols: list[str], profile: str, pythonpath: str | None) -> dict[str, float]:
    """Kernel agent-steps per second per protocol under `profile`, timed in a child (PYTHONPATH first when
    given)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    run = subprocess.run([sys.executable, "-c", _TIMER, str(TARGET_SECONDS), profile, *protocols], env=env,
                         cwd=pythonpath or None, capture_output=True, text=True, check=True)
    return {name: float(rate) for name, rate in (line.split() for line in run.stdout.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", action="append", choices=PROTOCOLS, help="time these rows only")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="alternations of the two builds")
    parser.add_argument("--profile", default="paper", choices=sorted(PROFILES),
                        help="the configuration profile of every row (default paper; the 2016 C++ program's "
                             "stigmergy is `lambdastar2016`'s, its wisdom and auction `sound`'s)")
    args = parser.parse_args()
    protocols = args.protocol or list(PROTOCOLS)
    without_path = str(copy_without_logging(Path(tempfile.gettempdir()) / "collective-logging-share"))
    print(f"Warming up the copy without logging in {without_path} (compiled once per version: a few minutes) ...",
          flush=True)
    rates(protocols, args.profile, without_path)
    best_with: dict[str, float] = {}
    best_without: dict[str, float] = {}
    for round_index in range(args.rounds):
        for name, rate in rates(protocols, args.profile, None).items():
            best_with[name] = max(best_with.get(name, 0.0), rate)
        for name, rate in rates(protocols, args.profile, without_path).items():
            best_without[name] = max(best_without.get(name, 0.0), rate)
        print(f"round {round_index + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nKernel M agent-steps per CPU second, G10 local searchers, 10x10, T=200, {args.profile}; best of "
          f"{args.rounds} rounds")
    print(f"{'protocol':<14}{'logging':>10}{'no logging':>12}{'share':>8}")
    for name in protocols:
        share = 1.0 - best_with[name] / best_without[name]
        print(f"{name:<14}{best_with[name] / 1e6:>10.2f}{best_without[name] / 1e6:>12.2f}{share:>8.1%}")


if __name__ == "__main__":
    main()
