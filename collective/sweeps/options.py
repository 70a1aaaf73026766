"""The options of `collective sweep`, apart from the command (`collective.sweeps.command`), which loads
numba, pyarrow and Ray: `collective sweep --help` imports none of them."""
from __future__ import annotations

import argparse

from collective.progress import add_yes_option

EXECUTORS = ("auto", "ray", "serial")  # auto: serial or Ray from the dry-run's estimate (sweeps.command.choose_executor)


def positive_int(text: str) -> int:
    """A whole number >= 1 (an option's type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1 (got {text!r})")
    return value


def add_sweep_parser(commands) -> None:
    """Add `collective sweep` to the CLI's subparsers."""
    sweep = commands.add_parser(
        "sweep", help="run a sweep spec (TOML) into a Parquet dataset, on Ray or serially",
        description="Run every (cell, episode, group) of a TOML sweep spec (see experiments/) into DIR/dataset, "
                    "one Parquet row each. Rerunning the same command resumes an interrupted sweep.")
    sweep.add_argument("spec", metavar="SPEC.toml", help="sweep specification, e.g. experiments/quickstart.toml, or a "
                                                         "built-in one by name (quickstart)")
    sweep.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                       help="set a field of the spec, checked like the file's and recorded in sweep.json (a "
                            "different spec: its own sweep), e.g. episodes=2000, factors.grid=10x10,20x20, "
                            "groups.behaviours=random,oracle, settings.q_alpha=0.2")
    sweep.add_argument("--out", metavar="DIR", help="results directory (required unless --dry-run)")
    sweep.add_argument("--address", metavar="A", default=None,
                       help="join the Ray cluster at A (default: $RAY_ADDRESS, else an embedded local Ray when Ray runs)")
    sweep.add_argument("--workers", type=positive_int, metavar="N", default=None,
                       help="at most N agent-group workers (default: every CPU)")
    sweep.add_argument("--executor", choices=EXECUTORS, default="auto",
                       help="auto (default): serial for a small sweep, whose work would not win back Ray's start-up, "
                            "else ray; ray; or serial: the same code in one worker process")
    sweep.add_argument("--dry-run", action="store_true", help="print the plan and an estimated time, then exit")
    add_yes_option(sweep)
