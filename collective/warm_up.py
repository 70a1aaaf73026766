"""Compile ahead: `python -m collective.warm_up` fills numba's cache (`collective.numba_cache`) with
every compiled variant that the demo and the README's first commands play, so that none of them
compiles. The install step (`make .venv/.installed`) runs it once; a later run loads from the cache
in seconds, and after an edit of the sources (a new cache directory) it compiles again.

A variant is one specialisation of the kernel (Λ* or a landscape, one behaviour or a mix), the
stepping core (plug-ins, the sham control) and the environment generator of a profile; each is
loaded by one tiny episode (`collective.evaluate.load_compiled`, `collective.sweeps.plan.prepare_process`).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from collective.cli import DEMO_BEHAVIOURS, build_parser, config_from_args
from collective.evaluate import load_compiled, load_stepping_core
from collective.progress import announce_compilation, compilation_done
from collective.sweeps.plan import prepare_process
from collective.sweeps.spec import load_spec

# The README's first `collective evaluate` commands (their variants; episodes do not matter) and
# `collective demo`'s behaviours under the default profile.
EVALUATIONS = (
    "--behaviour local_search --group-size 10 --grid 10x10 --profile paper --observation-range 1 --complexity 2:23",
    "--mix local_search:8,q_learning:2 --protocol wisdom",
    "--behaviour local_search --group-size 10 --protocol stigmergy --protocol-param form=reference",
    "--env landscape --peaks 5 --deception 0.8 --noise 0.3 --behaviour local_search",
    *(f"--behaviour {behaviour} --group-size 5" for behaviour in DEMO_BEHAVIOURS),
)
SPECS = ("quickstart.toml",)  # `make demo`'s sweep, from the repository's experiments/ when present
ENVIRONMENTS = ("lambda_star", "landscape")  # plug-ins play on the stepping core in either


def warm_up() -> float:
    """Load (compiling when missing) every variant above; returns the seconds it took."""
    started = time.perf_counter()
    parser = build_parser()
    for options in EVALUATIONS:
        args = parser.parse_args(["evaluate", *options.split(), "--episodes", "1"])
        load_compiled(config_from_args(args, args.behaviour))
    for env in ENVIRONMENTS:
        load_stepping_core(env)
    experiments = Path(__file__).resolve().parent.parent / "experiments"
    for name in SPECS:
        if (experiments / name).exists():
            prepare_process(load_spec(experiments / name))
    return time.perf_counter() - started


def main() -> int:
    announce_compilation()
    seconds = warm_up()
    compilation_done()
    print(f"collective: kernels ready in numba's cache ({seconds:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
