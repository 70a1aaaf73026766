"""`make demo` draws the figures and the report at once; its line fails when either of the two fails, and
both run to the end whichever fails. The line is taken from `make -n` as make would run it, with a stand-in
`collective` that records what it was asked and fails on the subcommand named in $FAIL."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAND_IN = """#!/bin/sh
sleep 0.2
echo "$1" >> ran
[ "$1" = "$FAIL" ] && exit 3
exit 0
"""


def drawing_line() -> str:
    """The recipe's shell line after the sweep's: the figures and the report."""
    outside = {name: value for name, value in os.environ.items() if name not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "demo"], cwd=ROOT,
                            capture_output=True, text=True, check=True, env=outside).stdout  # as under `make test`
    lines = recipe.replace("\\\n", " ").splitlines()
    assert "collective sweep" in lines[0] and len(lines) == 2, recipe
    return lines[1]


@pytest.mark.parametrize("fail, fails", [("", False), ("figures", True), ("dashboard", True)])
def test_demo_draws_both_and_fails_when_either_fails(tmp_path, fail, fails):
    line = drawing_line()
    assert "figures" in line and "dashboard" in line
    stand_in = tmp_path / ".venv" / "bin" / "collective"
    stand_in.parent.mkdir(parents=True)
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    done = subprocess.run(["sh", "-c", line], cwd=tmp_path, env={"FAIL": fail, "PATH": "/usr/bin:/bin"})
    assert (done.returncode != 0) == fails
    assert sorted((tmp_path / "ran").read_text().split()) == ["dashboard", "figures"]
