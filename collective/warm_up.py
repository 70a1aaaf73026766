"""Compile ahead: `python -m collective.warm_up` fills numba's cache (`collective.numba_cache`) with
every compiled variant that the demo and the README's first commands play, so that none of them
compiles. The install step (`make .venv/.installed`) runs it once; a later run loads from the cache
in seconds, and after an edit of the sources (a new cache directory) it compiles again.

What they play is the kernel (one specialisation for Λ* and landscapes, one behaviour or a mix) and the
environment generator of a profile, each loaded by one tiny episode
(`collective.evaluation.compiled_code.load_compiled`, `collective.sweeps.plan.prepare_process`). The
stepping core (plug-ins, the sham control) is not among them: the first command that plays it compiles it,
under the compile notice (notes/compile-time.md: The warm-up without the stepping core).
The work is cut in SHARES, one process per share on idle cores (see `warm_up`); then this process loads
every share from the cache, which also compiles whatever a helper process did not leave there.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path

import numpy as np

from collective.cli import DEMO_BEHAVIOURS, build_parser, config_from_args
from collective.evaluation.compiled_code import load_compiled, load_generator
from collective.evaluation.environments import generate_environments, with_ceiling
from collective.progress import announce_compilation, compilation_done
from collective.shipped import shipped
from collective.sweeps.plan import prepare_process
from collective.sweeps.spec import load_spec

# The README's first `collective evaluate` commands (their variants; episodes do not matter) and
# `collective demo`'s behaviours under the default profile: the kernel (one specialisation for every group and
# both environment classes) and the generators and ceilings of their environments.
EVALUATIONS = (
    "--behaviour local_search --group-size 10 --grid 10x10 --profile paper --observation-range 1 --complexity 2:23",
    "--mix local_search:8,q_learning:2 --protocol wisdom",
    "--behaviour local_search --group-size 10 --protocol stigmergy --protocol-param form=reference",
    "--env landscape --peaks 5 --deception 0.8 --noise 0.3 --behaviour local_search",
    *(f"--behaviour {behaviour} --group-size 5" for behaviour in DEMO_BEHAVIOURS),
)
SPECS = ("quickstart.toml",)  # `make demo`'s sweep (the package carries it: `collective.shipped`)
# Share 0 compiles the kernel through its tiny episodes; share 1 its largest callees by their types
# (`warm_up_callees`), then the environments' generators and ceilings, which share 0 then loads.
SHARES = 2


RECORD = "compiled_by_warm_up.json"  # in the cache directory: what the warm-ups there compiled (`CompileRecord`)


class CompileRecord:
    """The specialisations this process compiles, by compiled function (module.qualname -> signatures), from
    numba's compile events; `save` merges them into the cache directory's RECORD (a union: a warm-up that finds
    the cache full adds nothing, and two warm-up processes each add theirs). tests/test_compile_budget.py
    holds them to a recorded budget, so a change that adds compiled variants says so."""

    def __init__(self):
        from numba.core import event

        self.signatures: dict[str, set[str]] = {}
        record = self

        class Listener(event.Listener):
            def on_start(self, ev) -> None:
                function = ev.data["dispatcher"].py_func
                name = f"{function.__module__}.{function.__qualname__}"
                record.signatures.setdefault(name, set()).add(str(ev.data["args"]))

            def on_end(self, ev) -> None:
                pass

        event.register("numba:compile", Listener())

    def save(self) -> None:
        import fcntl
        import json

        from numba.core import config

        path = Path(config.CACHE_DIR) / RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two warm-up processes merge one after the other
            merged = json.loads(path.read_text()) if path.exists() else {}
            for name, signatures in self.signatures.items():
                merged[name] = sorted(set(merged.get(name, ())) | signatures)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(merged, indent=1, sort_keys=True))
            temporary.replace(path)


def compile_share(share: int) -> None:
    """Load (compiling when missing) the variants of one share."""
    if share == 1:
        from collective.warm_up_callees import compile_callees

        compile_callees()  # first: share 0 reaches them after its generators
    parser = build_parser()
    configs = [config_from_args(args, args.behaviour)
               for args in (parser.parse_args(["evaluate", *options.split(), "--episodes", "1"])
                            for options in EVALUATIONS)]
    if share == 0:
        for config in configs:
            load_compiled(config)
        for name in SPECS:
            prepare_process(load_spec(shipped("experiments") / name))
        return
    for config in reversed(configs):  # from the other end of share 0's list
        load_generator(config)
        with_ceiling(config, generate_environments(config, np.arange(1)))


@contextmanager
def compile_locks(folder: Path):
    """Within it, this process compiles a function of numba's cache for one signature under an exclusive lock on a
    file of `folder` named after both: of two warm-up processes, the one that reaches a callee the other is
    compiling waits for it and loads it from the cache (numba looks there first), rather than compiling it again.
    The locks a process holds are a chain of callers and callees, so two processes never wait for each other."""
    import fcntl
    import hashlib

    from numba.core import caching, sigutils
    from numba.core.dispatcher import Dispatcher

    compile = Dispatcher.compile

    def locked_compile(self, sig):
        args, _ = sigutils.normalize_signature(sig)
        if isinstance(self._cache, caching.NullCache) or tuple(args) in self.overloads:
            return compile(self, sig)
        function = self.py_func
        key = hashlib.sha1(f"{function.__module__}.{function.__qualname__}{tuple(args)}".encode()).hexdigest()
        with open(folder / key, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return compile(self, sig)

    Dispatcher.compile = locked_compile
    try:
        yield
    finally:
        Dispatcher.compile = compile


def lock_cache_saves() -> bool:
    """numba saves a cache entry by reading its function's index, adding the entry and writing the
    index back, then the entry's data file: two processes saving entries of one function at once
    could lose one entry, or pair it with the other's data file. In the processes of a parallel
    warm-up each save holds an exclusive lock on a file of the cache directory. False (and nothing
    changed) when this numba saves otherwise: the warm-up then compiles in one process."""
    import fcntl

    from numba.core import caching, config

    lock_path = Path(config.CACHE_DIR) / ".warm_up.lock"
    save = getattr(getattr(caching, "IndexDataCacheFile", None), "save", None)
    if save is None:
        return False
    if getattr(save, "locked", False):  # wrapped already: a second lock in this process would wait for itself
        return True

    def locked_save(self, key, data) -> None:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            save(self, key, data)

    locked_save.locked = True
    caching.IndexDataCacheFile.save = locked_save
    return True


def default_processes() -> int:
    """One process per core, unless other work keeps the machine busy (a 1-minute load average of at
    least the cores minus a half): then one. Just after the install's pip the load is about 1 on an
    otherwise idle machine, which still gets two."""
    cores = os.cpu_count() or 1
    return cores if os.getloadavg()[0] < cores - 0.5 else 1


def warm_up(processes: int | None = None) -> float:
    """Load (compiling when missing) every variant above, the shares in `processes` processes (at most
    one per share; by default `default_processes`); returns the seconds it took. Two processes compile
    disjoint functions (`compile_locks`), each about half of the CPU time of one process; on busy cores they
    would save nothing (notes/compile-time.md: Parallel warm-up)."""
    started = time.perf_counter()
    processes = default_processes() if processes is None else processes
    processes = min(SHARES, processes)
    with tempfile.TemporaryDirectory(prefix="collective-warm-up-") as locks, ExitStack() as locked:
        if processes > 1 and os.name == "posix" and lock_cache_saves():  # the cache's lock is fcntl's
            from numba.core import config

            locked.enter_context(compile_locks(Path(locks)))
            helpers = [subprocess.Popen([sys.executable, "-m", "collective.warm_up", "--share", str(share),
                                         "--locks", locks], env={**os.environ, "NUMBA_CACHE_DIR": config.CACHE_DIR})
                       for share in range(1, processes)]
            try:
                compile_share(0)
            except BaseException:  # an error or Ctrl-C here leaves no helper compiling on
                for helper in helpers:
                    helper.terminate()
                    helper.wait()
                raise
            for helper in helpers:
                if helper.wait():
                    print(f"collective: a warm-up process failed ({helper.returncode}); compiling its share here",
                          file=sys.stderr)
        for share in range(SHARES):  # what this process compiled is loaded already; the rest loads from the cache
            compile_share(share)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m collective.warm_up", description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int,
                        help=f"processes compiling in parallel, at most {SHARES} (default: one per core unless the machine is busy)")
    parser.add_argument("--share", type=int, choices=range(SHARES), help=argparse.SUPPRESS)  # a helper process's share
    parser.add_argument("--locks", type=Path, help=argparse.SUPPRESS)  # and the folder of its compile locks
    args = parser.parse_args(argv)
    if args.processes is not None and args.processes < 1:
        parser.error(f"--processes must be at least 1, got {args.processes}")
    record = CompileRecord() if os.name == "posix" else None  # the record's lock is fcntl's
    if args.share is not None:
        lock_cache_saves()
        with compile_locks(args.locks) if args.locks else nullcontext():
            compile_share(args.share)
        if record:
            record.save()
        return 0
    announce_compilation()
    seconds = warm_up(args.processes)
    if record:
        record.save()
    compilation_done()
    print(f"collective: kernels ready in numba's cache ({seconds:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
