"""Numba's on-disk cache, keyed by the sources of the whole code base.

numba invalidates a cached function only when its own file changes, yet the kernels inline
helpers from other modules (`collective.environments.torus`, `collective.environments.scene`, `collective.protocols`): after an
edit or an upgrade, a stale cache entry would go on running the old helpers. Every compiled
function of this code base therefore caches under a directory named by a digest of all its
Python sources, so that a change anywhere starts from a fresh directory.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

PACKAGES = ("collective", "collective.protocols")  # every package with compiled (cache=True) functions


def _package_folder(name: str) -> Path:
    """Where a package's sources are, found without running it (collective.protocols is the repository's
    protocols/ folder in a checkout and collective/protocols in an installed wheel)."""
    return Path(importlib.util.find_spec(name).submodule_search_locations[0]).resolve()


def source_digest() -> str:
    """A digest of every Python source file of PACKAGES, names and contents."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        folder = _package_folder(package)
        for path in sorted(folder.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(folder)}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def use_source_keyed_cache() -> None:
    """Point numba's cache at <NUMBA_CACHE_DIR or ~/.cache/collective>/numba-<digest>. Must run
    before any module with compiled functions is imported (the package's __init__ does it).
    Without importing numba when it is not loaded yet (`collective --help` stays fast): numba reads
    NUMBA_CACHE_DIR when it loads, and child processes (Ray workers) inherit the keyed directory."""
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "collective"
    base = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_home)
    keyed = f"numba-{source_digest()}"
    directory = str(base if base.name == keyed else base / keyed)  # a child's inherited directory is keyed already
    if "numba" in sys.modules:
        from numba.core import config

        config.CACHE_DIR = directory
    else:
        os.environ["NUMBA_CACHE_DIR"] = directory
