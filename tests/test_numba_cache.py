"""numba's cache follows every source change, not only changes to the cached function's own file."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
# The local searcher stands on ⊕ with ⊖ far away: the best reward it sees is f(0).
PROBE = """
import numpy as np
import collective
from collective.behaviours.decisions import local_best
from collective.environments.scene import FieldRef, Scene
assert collective.__file__.startswith({root!r})
scene = Scene(2, 2, 7, 7, FieldRef(0, 0), 0, 0, 10, 10, 1)
print(local_best(2, 2, scene, 1, np.uint64(1))[3])
"""


def best_reward(root: Path) -> float:
    environment = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(root / "cache")}
    result = subprocess.run([sys.executable, "-c", PROBE.format(root=str(root))], capture_output=True, text=True,
                            env=environment, cwd=root, timeout=300, check=True)
    return float(result.stdout)


def test_editing_a_helper_in_another_module_recompiles_its_callers(tmp_path):
    for package in ("collective", "protocols"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    assert best_reward(tmp_path) == 1.0  # f(0) = 1/(0+1), paper 003 §4.1.2; compiled and cached
    torus = tmp_path / "collective" / "environments" / "torus.py"
    source = torus.read_text()
    assert source.count("return 1.0 / (distance + 1.0)") == 1
    torus.write_text(source.replace("return 1.0 / (distance + 1.0)", "return 2.0 / (distance + 1.0)"))
    assert best_reward(tmp_path) == 2.0  # local_best's own file is unchanged; a stale cache would say 1.0


KEYED = """
import os, sys
import collective
assert "numba" not in sys.modules  # `import collective` (and so `collective --help`) leaves numba unloaded
print(os.environ["NUMBA_CACHE_DIR"])
from numba.core import config
print(config.CACHE_DIR)
"""


def test_the_keyed_cache_directory_reaches_numba_and_child_processes_without_loading_numba(tmp_path):
    from collective.numba_cache import source_digest

    keyed = str(tmp_path / f"numba-{source_digest()}")
    for base in (tmp_path, keyed):  # a user's directory, then a child's inherited keyed one: not nested again
        shown = subprocess.run([sys.executable, "-c", KEYED], capture_output=True, text=True, timeout=300,
                               env={**os.environ, "NUMBA_CACHE_DIR": str(base)}, check=True)
        assert shown.stdout.split() == [keyed, keyed]
