"""The install step's warm-up compiles in parallel processes that share numba's cache: their saves
must not lose each other's entries, and a function one of them is compiling is not compiled again by the other."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numba.core.caching as caching
import pytest
from numba.core import config

from collective.warm_up import lock_cache_saves, main


def save_concurrently(folder) -> dict:
    """Four threads save one entry each into one function's index, the index read slowed down so
    that unserialised read-modify-write saves overlap; returns the index numba then reads."""
    index = caching.IndexDataCacheFile(str(folder), "kernel-1.py311", ("stamp", 1))
    read = caching.IndexDataCacheFile._load_index

    def slow_read(self):
        overloads = read(self)
        time.sleep(0.05)
        return overloads

    caching.IndexDataCacheFile._load_index = slow_read
    try:
        savers = [threading.Thread(target=index.save, args=(f"signature {k}", f"code {k}")) for k in range(4)]
        for saver in savers:
            saver.start()
        for saver in savers:
            saver.join()
    finally:
        caching.IndexDataCacheFile._load_index = read
    return {key: index.load(key) for key in index._load_index()}


def test_unlocked_saves_lose_entries(tmp_path):  # the negative control: the race is real
    assert len(save_concurrently(tmp_path)) < 4


def test_locked_saves_keep_every_entry_with_its_own_data(tmp_path, monkeypatch):
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", caching.IndexDataCacheFile.save)  # undone after
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    lock_cache_saves()
    assert save_concurrently(tmp_path) == {f"signature {k}": f"code {k}" for k in range(4)}


# A cached function that takes a few seconds to compile (a long chain of branches), in a module of its own.
SLOW = "import numba\n\n\n@numba.njit(cache=True)\ndef slow(x):\n" + "".join(
    f"    if x > {k}:\n        x = x * 3 + {k} - x // 7\n" for k in range(150)) + "    return x\n"

# Both processes import the module, meet at a barrier (each writes a file, then waits for the other's), then
# compile `slow`, with or without the warm-up's compile locks; each prints whether it loaded it from the cache.
COMPILE_AT_ONCE = textwrap.dedent("""
    import sys, time
    from contextlib import nullcontext
    from pathlib import Path
    folder, me, locked = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "locked"
    sys.path.insert(0, str(folder))
    from slow_module import slow
    if locked:
        from collective.warm_up import compile_locks
    with compile_locks(folder / "locks") if locked else nullcontext():
        (folder / f"ready-{me}").touch()
        while len(list(folder.glob("ready-*"))) < 2:
            time.sleep(0.01)
        slow(1)
    print(sum(slow.stats.cache_hits.values()))
""")


def compile_at_once(folder, locked: bool) -> list[int]:
    """Cache hits of two processes compiling `SLOW` at the same moment on one empty cache."""
    (folder / "slow_module.py").write_text(SLOW)
    (folder / "locks").mkdir()
    mode = "locked" if locked else "unlocked"
    processes = [subprocess.Popen([sys.executable, "-c", COMPILE_AT_ONCE, str(folder), str(me), mode],
                                  stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache")}) for me in range(2)]
    return sorted(int(process.communicate(timeout=300)[0]) for process in processes)


def test_unlocked_processes_compile_one_function_twice(tmp_path):  # the negative control: the waste is real
    assert compile_at_once(tmp_path, locked=False) == [0, 0]


def test_locked_processes_compile_one_function_once(tmp_path):
    assert compile_at_once(tmp_path, locked=True) == [0, 1]


@pytest.mark.parametrize("processes", ["0", "-1"])
def test_bad_process_count_fails_in_one_line(processes, capsys):
    with pytest.raises(SystemExit) as failed:
        main(["--processes", processes])
    assert failed.value.code == 2
    assert f"--processes must be at least 1, got {processes}" in capsys.readouterr().err.splitlines()[-1]


COMPILED_VARIANTS = """
from collective.warm_up import SHARES, compile_share
from collective.environments.ceiling import best_totals
from collective.simulation.kernel import simulate_batch
from collective.simulation.compiled_plugins import builtin_overhear
from collective.simulation.stepping import observe_windows
for share in range(SHARES):
    compile_share(share)
print(len(simulate_batch.signatures), len(best_totals.signatures), len(observe_windows.signatures),
      len(builtin_overhear.signatures))
"""


def test_every_readme_example_plays_on_one_compiled_kernel():
    """What the install step compiles (Λ* and landscapes, one behaviour and mixes, with and without a
    protocol) is one specialisation of the kernel and the ceiling: compiling each once is what keeps the first
    command's wait short (issue 23; the code before had 3 of the kernel and 2 of the others). The stepping core
    and the sham's rule loop are not among them (issue 43: the warm-up within 30 s on two idle cores; neither
    `make demo` nor the README's first commands play them): the first plug-in or sham compiles them, before
    its timing (`compiled_code.load_code`). Counted on the dispatchers, which are filled from numba's cache as
    well as by compiling."""
    result = subprocess.run([sys.executable, "-c", COMPILED_VARIANTS], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1", "0", "0"]
