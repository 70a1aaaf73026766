"""The install step's warm-up compiles in parallel processes that share numba's cache: their saves
must not lose each other's entries."""
import subprocess
import sys
import threading
import time

import numba.core.caching as caching
import pytest
from numba.core import config

from collective.warm_up import EVALUATIONS, ENVIRONMENTS, SHARES, SPECS, lock_cache_saves, main


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


def test_every_share_has_work():
    shares = {share for share, _ in (*EVALUATIONS, *ENVIRONMENTS, *SPECS)}
    assert shares == set(range(SHARES))


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
    protocol, the stepping core) is one specialisation of the kernel, the ceiling and the stepping
    core's observation: compiling each once is what keeps the first command's wait short (issue 23;
    the code before had 3 of the kernel and 2 of the others). The sham control's rule loop is among them
    (it had none: the first sham compiled it, ~40 s timed as play). Counted on the dispatchers the commands
    call, which are filled from numba's cache as well as by compiling."""
    result = subprocess.run([sys.executable, "-c", COMPILED_VARIANTS], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1", "1", "1"]
