"""The install's warm-up compiles no more specialisations than recorded (issue 43 item 2): each compiled function of
ours and how many signatures the warm-up compiles for it, from its compile record (`collective.warm_up.CompileRecord`,
written beside numba's cache by the install step's warm-up, so this costs nothing there). A change that adds a
compiled function or a variant fails here until COMPILE_BUDGET is updated, after measuring what it costs the
warm-up (`benchmarks/cold_start.py --warm-up`; notes/compile-time.md) — the warm-up grew from ~30 to ~60 s by
steps of 2-15% that each looked small.

    .venv/bin/python tests/test_compile_budget.py --update   # write COMPILE_BUDGET from the warm-up's record
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from numba.core import config

from collective.warm_up import RECORD

COMPILE_BUDGET = Path(__file__).with_name("compile_budget.json")
OURS = ("collective.",)  # numba's own helpers (str, sort, ...) follow numba's version, not our changes


def warm_up_record(scratch: Path) -> dict[str, int]:
    """Signatures compiled by the warm-up, per function of ours: from the install's record in this cache when
    there is one, else from a warm-up on an empty cache in `scratch` (a cache filled by other commands has none)."""
    path = Path(config.CACHE_DIR) / RECORD
    if not path.exists():
        subprocess.run([sys.executable, "-m", "collective.warm_up", "--processes", "1"], check=True,
                       env={**os.environ, "NUMBA_CACHE_DIR": str(scratch)}, capture_output=True, timeout=1800)
        path, = scratch.glob(f"numba-*/{RECORD}")  # the cache directory is keyed by the sources' digest
    signatures = json.loads(path.read_text())
    return {name: len(found) for name, found in sorted(signatures.items()) if name.startswith(OURS)}


def over_budget(compiled: dict[str, int], budget: dict[str, int]) -> dict[str, str]:
    """The functions compiled in more signatures than their budget (a function not in it has 0)."""
    return {name: f"{count} (budget {budget.get(name, 0)})" for name, count in compiled.items()
            if count > budget.get(name, 0)}


def test_a_new_variant_or_function_is_over_budget():  # the check can fail
    budget = {"collective.a.f": 1, "collective.a.g": 2}
    assert not over_budget({"collective.a.f": 1, "collective.a.g": 1}, budget)
    assert over_budget({"collective.a.f": 2}, budget) == {"collective.a.f": "2 (budget 1)"}
    assert over_budget({"collective.a.h": 1}, budget) == {"collective.a.h": "1 (budget 0)"}


def test_the_record_merges_what_each_process_compiled(tmp_path, monkeypatch):
    import numba

    from collective.warm_up import CompileRecord

    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    record = CompileRecord()
    twice = numba.njit(lambda x: x + 1)
    twice(1), twice(1.5)
    record.save()
    record.signatures = {"collective.a.f": {"(int64,)"}}  # what a second process compiled
    record.save()
    saved = json.loads((tmp_path / RECORD).read_text())
    assert saved["collective.a.f"] == ["(int64,)"] and len(saved[next(n for n in saved if "lambda" in n)]) == 2


def test_the_warm_up_compiles_within_its_recorded_budget(tmp_path):
    budget = json.loads(COMPILE_BUDGET.read_text())
    compiled = warm_up_record(tmp_path)
    over = over_budget(compiled, budget)
    assert not over, (f"the warm-up compiles more than {COMPILE_BUDGET.name} allows: {over}; measure the warm-up "
                      "(benchmarks/cold_start.py --warm-up), note it in notes/compile-time.md, then run "
                      "tests/test_compile_budget.py --update")
    assert sum(compiled.values()) > 10  # the record is read: a warm-up that compiled nothing would pass above


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(__doc__)
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        COMPILE_BUDGET.write_text(json.dumps(warm_up_record(Path(scratch)), indent=1) + "\n")
    print(f"{COMPILE_BUDGET}: {sum(json.loads(COMPILE_BUDGET.read_text()).values())} specialisations")
