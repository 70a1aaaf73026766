"""The Python API (`collective.api`) and its notebook: examples/notebook.ipynb runs top to bottom in a real Jupyter
kernel, and each function gives what its command gives."""
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import collective.api as ci
from collective.analysis.base import DatasetError
from collective.cli import strict_json

ROOT = Path(__file__).parent.parent
SPEC = {"name": "api", "seed": 3, "profile": "sound", "episodes": 40, "iterations": 30,
        "factors": {"grid": ["5x5"], "group_size": [1, 3]},
        "groups": {"behaviours": ["random", "local_search"],
                   "protocols": [{"name": "none"}, {"name": "stigmergy", "behaviours": ["local_search"],
                                                     "group_sizes": [3], "controls": ["real", "sham"]}]}}


def test_the_notebook_runs_in_a_kernel():
    notebook = nbformat.read(ROOT / "examples" / "notebook.ipynb", as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    errors = [output for cell in notebook.cells for output in cell.get("outputs", []) if output.output_type == "error"]
    assert not errors
    printed = "".join(output.get("text", "") for output in notebook.cells[3].outputs)
    assert printed.startswith("Υ = 0.")


def _command(*args: str) -> str:
    """What the command prints on stdout (validate exits 1 when a check fails: still its report)."""
    return subprocess.run([sys.executable, "-m", "collective", *args], capture_output=True, text=True).stdout


def test_evaluate_gives_the_commands_record():
    options = dict(group_size=3, protocol="stigmergy", rows=7, cols=7, iterations=30, episodes=60, seed=5)
    record = json.loads(strict_json(ci.evaluate("local_search", **options)))  # tuples as the command's lists
    printed = json.loads(_command("evaluate", "--behaviour", "local_search", "--group-size", "3", "--protocol",
                                  "stigmergy", "--grid", "7x7", "--iterations", "30", "--episodes", "60",
                                  "--seed", "5", "--json"))
    timings = {"wall_seconds", "kernel_seconds", "compile_seconds", "agent_steps_per_second", "kernel_threads"}
    assert {k: v for k, v in record.items() if k not in timings} == \
        {k: v for k, v in printed.items() if k not in timings}


def test_sweep_load_tables_and_validate_give_the_commands_data(tmp_path):
    summary = ci.sweep(SPEC, tmp_path / "api", progress=False)
    assert summary.rows == 40 * (2 * 2 + 2) and summary.executor == "serial"
    rows = ci.load(tmp_path / "api")
    assert len(rows) == summary.rows
    tables = ci.tables(tmp_path / "api", names=["upsilon", "gains"])
    assert set(tables) == {"upsilon", "gains"}
    printed = json.loads(_command("analyze", str(tmp_path / "api"), "--format", "json", "--tables", "upsilon"))
    assert tables["upsilon"]["upsilon"].tolist() == pytest.approx([row["upsilon"] for row in printed["upsilon"]["rows"]])
    checks = ci.validate(tmp_path / "api")
    printed = json.loads(_command("validate", str(tmp_path / "api"), "--format", "json"))
    assert checks[["check", "subject", "status", "figure"]].to_dict("records") == \
        [{key: check[key] for key in ("check", "subject", "status", "figure")} for check in printed]
    assert "holds" in set(checks.loc[checks["check"] == "sham_mechanism", "status"])  # the sweep's spec is read
    again = ci.sweep(SPEC, tmp_path / "api", progress=False)  # a rerun resumes: nothing new
    assert again.chunks_written == 0 and again.rows_resumed == summary.rows


def test_bad_input_is_one_line_value_error(tmp_path):
    with pytest.raises(ValueError, match="group_size"):
        ci.evaluate("local_search", group_size=0)
    with pytest.raises(ValueError, match="names: unknown table 'upsilom'"):
        ci.tables(tmp_path, names=["upsilom"])
    with pytest.raises(DatasetError, match="no such directory"):
        ci.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="executor"):
        ci.sweep(SPEC, tmp_path / "x", executor="threads")
