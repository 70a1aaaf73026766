"""The distribution installs as itself: every package folder is in the wheel, protocols/ and dashboards/ only
under the collective namespace (no generic top-level `protocols` or `dashboards` in site-packages), and the
installed `collective --version` runs from the wheel alone."""
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
