"""What the package carries besides its code: the example specs (experiments/), the plug-in examples (examples/)
and the documentation (docs/), so that a pip install works without the repository: `collective sweep quickstart`
runs a built-in spec, `collective examples DIR` copies the specs and examples to edit, `collective docs PAGE`
prints a page. In a wheel they sit inside the package (pyproject.toml's package-dir); in a checkout they are
the repository's folders.
"""
from __future__ import annotations

import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
FOLDERS = ("experiments", "examples", "docs")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def shipped(folder: str) -> Path:
    """The package's copy of the repository's `folder` (one of FOLDERS): inside the package in a wheel, else the
    checkout's own (never a folder of that name beside an installed package: another project's)."""
    inside, checkout = PACKAGE / folder, PACKAGE.parent / folder
    return checkout if not inside.is_dir() and (PACKAGE.parent / "pyproject.toml").is_file() else inside


def builtin_specs() -> dict[str, Path]:
    """Built-in sweep spec by name (its file's stem): quickstart, factors, communication, ..."""
    return {path.stem: path for path in sorted(shipped("experiments").glob("*.toml"))}


def builtin_spec(text: str) -> Path | None:
    """The built-in spec a bare name (`quickstart` or `quickstart.toml`, no folder) stands for, else None."""
    if Path(text).name != text:
        return None
    return builtin_specs().get(text.removesuffix(".toml"))


def copy_examples(destination: Path) -> list[Path]:
    """Copy experiments/ and examples/ into `destination` (which must not exist, or be an empty folder): the
    specs and plug-in examples to edit and run from there. Returns the folders written."""
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise FileExistsError(f"{destination}: exists and is not an empty folder (nothing is overwritten)")
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for folder in ("experiments", "examples"):
        shutil.copytree(shipped(folder), destination / folder, ignore=SKIPPED)
        written.append(destination / folder)
    return written


def doc_pages() -> dict[str, Path]:
    """Documentation page by name: its path under docs/ without `.md` (tutorial, reference/cli, ...)."""
    root = shipped("docs")
    return {str(path.relative_to(root).with_suffix("")): path for path in sorted(root.rglob("*.md"))}
