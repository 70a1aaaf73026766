"""The distribution installs as itself: every package folder is in the wheel, protocols/ and dashboards/ only
under the collective namespace (no generic top-level `protocols` or `dashboards` in site-packages), and the
installed `collective --version` runs from the wheel alone."""
import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMESPACED = {"protocols": "collective.protocols", "dashboards": "collective.dashboards"}


def _listed() -> tuple[set[str], dict[str, str]]:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(settings["packages"]), settings["package-dir"]


def test_every_package_folder_is_listed_and_the_top_level_folders_are_namespaced():
    packages, folders = _listed()
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "collective").rglob("__init__.py")}
    found |= set(NAMESPACED.values())
    assert packages == found, "pyproject's [tool.setuptools] packages must list every package folder"
    assert folders == {name: folder for folder, name in NAMESPACED.items()}


def test_the_wheel_holds_the_namespaced_packages_and_runs_its_version(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
                            str(tmp_path / "wheel"), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    wheel, = (tmp_path / "wheel").glob("collective_intelligence-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "collective/protocols/broadcast.py" in names and "collective/dashboards/report.py" in names
    assert not any(name.split("/")[0] in NAMESPACED for name in names), "a generic top-level package in the wheel"
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    # the interpreter without any site-packages (-S), from a folder outside the repository: only the wheel's files
    probe = ("import sys; sys.path.insert(0, {!r}); {}")
    version = subprocess.run([sys.executable, "-S", "-c", probe.format(
        str(target), "sys.argv = ['collective', '--version']; from collective.cli import main; main()")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("collective"), version.stderr
    generic = subprocess.run([sys.executable, "-S", "-c", probe.format(str(target), "import protocols")],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "No module named 'protocols'" in generic.stderr


def _requirement_name(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower()


def test_every_third_party_module_the_code_imports_is_a_declared_dependency():
    """A module imported by the installed code (collective/, protocols/, dashboards/) that is neither the
    standard library's nor ours comes from a distribution that pyproject declares (a dependency, or an extra for
    the adapters): one that only arrives as another's dependency (llvmlite, numba's) could change or go."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_requirement_name(r) for r in project["dependencies"] + project["optional-dependencies"]["adapters"]}
    imported = set()
    for folder in ("collective", *NAMESPACED):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    imported.add(node.module.split(".")[0])
    distributions = importlib.metadata.packages_distributions()
    third_party = imported - set(sys.stdlib_module_names) - {"collective", *NAMESPACED}
    undeclared = {module: distributions.get(module) for module in third_party
                  if not {_requirement_name(name) for name in distributions.get(module, [module])} & declared}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
