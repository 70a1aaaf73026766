"""Numba's on-disk cache, keyed by the sources of the whole code base.

numba invalidates a cached function only when its own file changes, yet the kernels inline
helpers from other modules (`collective.environments.torus`, `collective.environments.scene`, `protocols/*.py`): after an
edit or an upgrade, a stale cache entry would go on running the old helpers. Every compiled
function of this code base therefore caches under a directory named by a digest of all its
Python sources, so that a change anywhere starts from a fresh directory.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGES = ("collective", "protocols")  # every package with compiled (cache=True) functions


def source_digest() -> str:
    """A digest of every Python source file of PACKAGES, names and contents."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def use_source_keyed_cache() -> None:
    """Point numba's cache at <NUMBA_CACHE_DIR or ~/.cache/collective>/numba-<digest>. Must run
    before any module with compiled functions is imported (the package's __init__ does it)."""
    from numba.core import config

    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "collective"
    base = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_home)
    config.CACHE_DIR = str(base / f"numba-{source_digest()}")
