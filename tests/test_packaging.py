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

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMESPACED = {"protocols": "collective.protocols", "dashboards": "collective.dashboards",
              "examples": "collective.examples", "experiments": "collective.experiments", "docs": "collective.docs"}


def _listed() -> tuple[set[str], dict[str, str]]:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(settings["packages"]), settings["package-dir"]


def test_every_package_folder_is_listed_and_the_top_level_folders_are_namespaced():
    packages, folders = _listed()
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "collective").rglob("__init__.py")}
    found |= set(NAMESPACED.values()) | {"collective.examples.byo_agent", "collective.examples.sb3_policy",
                                         "collective.docs.reference"}
    assert packages == found, "pyproject's [tool.setuptools] packages must list every package folder"
    assert folders == {name: folder for folder, name in NAMESPACED.items()}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once for this module's tests."""
    folder = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(folder),
                            str(ROOT)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    wheel, = folder.glob("collective_intelligence-*.whl")
    return wheel


def test_the_wheel_holds_the_namespaced_packages_and_runs_its_version(wheel, tmp_path):
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
    assert {"collective/experiments/quickstart.toml", "collective/docs/tutorial.md", "collective/docs/reference/cli.md",
            "collective/examples/byo_agent/agents.py", "collective/examples/notebook.ipynb"} <= set(names)


def test_a_pip_install_runs_the_built_in_specs_examples_and_docs_without_the_repository(wheel, tmp_path):
    """The wheel's files and the installed dependencies, from a folder with no experiments/ or docs/: a spec by
    name, the examples copied out and run from their copy, a page of the docs (issue 43 item 4)."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"
    work.mkdir()

    def collective(*args: str, cwd: Path = work) -> subprocess.CompletedProcess:
        code = f"import sys; sys.path.insert(0, {str(site)!r}); from collective.cli import main; sys.exit(main())"
        return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=600)

    where = collective("docs", "reference/cli")
    assert where.returncode == 0 and where.stdout.startswith("# ") and "collective sweep" in where.stdout, where.stderr
    assert "tutorial" in collective("docs").stdout.split()
    mistyped = collective("docs", "tutorail")
    assert mistyped.returncode == 2 and "did you mean tutorial?" in mistyped.stderr
    # a refusal that comes after the spec is read (and its plug-ins imported): no sample played, nothing compiled
    after_the_spec = ("--out", "runs/x", "--executor", "serial", "--workers", "2")
    plan = collective("sweep", "quickstart", *after_the_spec)
    assert plan.returncode == 2 and "argument --workers" in plan.stderr, plan.stderr
    copied = collective("examples", "study")
    assert copied.returncode == 0, copied.stderr
    assert (work / "study" / "experiments" / "quickstart.toml").read_bytes() == \
        (ROOT / "experiments" / "quickstart.toml").read_bytes()
    own = collective("sweep", "experiments/byo_agent.toml", *after_the_spec, cwd=work / "study")
    assert own.returncode == 2 and "argument --workers" in own.stderr, own.stderr
    again = collective("examples", "study")
    assert again.returncode == 2 and len(again.stderr.splitlines()) == 1 and "not an empty folder" in again.stderr
    missing = collective("sweep", "experiments/quickstart.toml", *after_the_spec)
    assert missing.returncode == 2 and "built-in specs, by name: " in missing.stderr and "quickstart" in missing.stderr


def _requirement_name(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower()


def test_every_third_party_module_the_code_imports_is_a_declared_dependency():
    """A module imported by the installed code (collective/, protocols/, dashboards/) that is neither the
    standard library's nor ours comes from a distribution that pyproject declares (a dependency, or an extra for
    the adapters; the examples also the RL example's extra): one that only arrives as another's dependency
    (llvmlite, numba's) could change or go."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    distributions = importlib.metadata.packages_distributions()
    for folders, requirements in ((("collective", "protocols", "dashboards", "experiments", "docs"),
                                   project["dependencies"] + extras["adapters"]),
                                  (("examples",), project["dependencies"] + extras["adapters"] + extras["rl"])):
        declared = {_requirement_name(r) for r in requirements}
        imported = set()
        for folder in folders:
            for path in (ROOT / folder).rglob("*.py"):
                for node in ast.walk(ast.parse(path.read_text())):
                    if isinstance(node, ast.Import):
                        imported |= {alias.name.split(".")[0] for alias in node.names}
                    elif isinstance(node, ast.ImportFrom) and not node.level:
                        imported.add(node.module.split(".")[0])
        third_party = imported - set(sys.stdlib_module_names) - {"collective", *NAMESPACED}
        undeclared = {module: distributions.get(module) for module in third_party
                      if not {_requirement_name(name) for name in distributions.get(module, [module])} & declared}
        assert not undeclared, f"imported by {', '.join(folders)} but not declared in pyproject.toml: {undeclared}"
