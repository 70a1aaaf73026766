"""Hostile inputs and faults of issue 26, each through the command line: exit 0 with a complete result,
or a non-zero exit with exactly one line on stderr, no traceback and nothing written that should not be.

Most cases run `collective.cli.main` in this process (fast); those that need a fresh interpreter
(the working directory on sys.path, concurrent sweeps) run it in subprocesses. `outcome` sorts a
result as the issue's corpus does: clean, traceback (an exception escaped) or silent (exit 0 where
the input should have been refused, or a failed run that claims success)."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from collective.cli import main
from collective.progress import COMPILE_NOTICE
from collective.sweeps.command import run_spec
from collective.sweeps.runtime import SerialExecutor
from collective.sweeps.spec import parse_spec
from collective.sweeps.store import LOCK_FILE, MANIFEST_FILE, SPEC_FILE
from sweep_support import TINY_SPEC

SMALL_SPEC = TINY_SPEC.replace("iterations = 30", "iterations = 10").replace("episodes = 24", "episodes = 6")
ONE_CELL_SPEC = SMALL_SPEC.replace('grid = ["5x5", "6x6"]', 'grid = ["5x5"]').replace(
    "group_size = [1, 3]", "group_size = [1]").replace(
    'protocols = [{ name = "none" }, { name = "wisdom", behaviours = ["local_search"], group_sizes = [3] }]', "")
QUICK = ["--episodes", "3", "--iterations", "5", "--profile", "paper"]

PLUGINS = '''
import sys
import numpy as np
from collective import Parameter


class ExitInAct:
    def act(self, obs):
        sys.exit(0)


class InterruptInAct:
    def act(self, obs):
        raise KeyboardInterrupt


class ExitInInit:
    def __init__(self):
        sys.exit(3)

    def act(self, obs):
        return np.full(obs.cell.shape, 4)


class Unbounded:
    parameters = (Parameter("patience", 3, "iterations to wait"),)

    def __init__(self, patience=3):
        self.patience = patience

    def act(self, obs):
        return np.full(obs.cell.shape, 4)


class TextParameters:
    parameters = "x"

    def act(self, obs):
        return np.full(obs.cell.shape, 4)
'''


def run_cli(*args: str) -> tuple[int, str, str]:
    """`collective ARGS` in this process: (status, stdout, stderr); an exception escapes as a traceback would.
    Ctrl-C is Python's default handler meanwhile, as at a terminal (a suite started in the background by a shell
    without job control inherits SIGINT ignored, and the CLI leaves an ignored SIGINT alone)."""
    import io
    import signal
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    finally:
        signal.signal(signal.SIGINT, previous)
    return status, out.getvalue(), err.getvalue()


def error_lines(stderr: str) -> list[str]:
    """stderr without progress lines, notices and the compile notice."""
    return [line for line in stderr.splitlines() if line and line not in (COMPILE_NOTICE,)
            and not line.startswith(("collective: ... done", "collective sweep: progress: "))
            and ": notice: " not in line]


def outcome(status: int, stderr: str, expected: int) -> str:
    if "Traceback" in stderr:
        return "traceback"
    if status == 0 and expected != 0:
        return "silent"
    if status != expected or (status and len(error_lines(stderr)) != 1):
        return f"other (status {status}, {len(error_lines(stderr))} lines)"
    return "clean"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A finished small sweep (serial): several chunks, every group on two cells."""
    out = tmp_path_factory.mktemp("sweep") / "out"
    spec = parse_spec(tomllib.loads(SMALL_SPEC), "small")
    run_spec(spec, out, SerialExecutor(spec))
    return out


def _plugins(tmp: Path) -> str:
    (tmp / "hostile.py").write_text(PLUGINS)
    return "hostile.py"


def _spec(tmp: Path, text: str = ONE_CELL_SPEC, name: str = "spec.toml") -> str:
    (tmp / name).write_text(text)
    return name


def _copy(dataset: Path, tmp: Path) -> str:
    shutil.copytree(dataset, tmp / "copy")
    return "copy"


def _loop(tmp: Path) -> str:
    os.symlink("loop-b", tmp / "loop-a")
    os.symlink("loop-a", tmp / "loop-b")
    return "loop-a"


def _sweep_json(dataset: Path, tmp: Path, text: str) -> str:
    name = _copy(dataset, tmp)
    (tmp / name / SPEC_FILE).write_text(text)
    return name


def _unfinished(dataset: Path, tmp: Path) -> str:
    name = _copy(dataset, tmp)
    parts = sorted((tmp / name / "dataset").glob("part-*.parquet"))
    for part in parts[1:]:
        part.unlink()
    return name


def _nan_scores(dataset: Path, tmp: Path) -> str:
    name = _copy(dataset, tmp)
    part = sorted((tmp / name / "dataset").glob("part-*.parquet"))[0]
    frame = pd.read_parquet(part)
    frame.loc[frame.index[:2], "score"] = math.nan
    frame.to_parquet(part)
    return name


def _duplicated_chunk(dataset: Path, tmp: Path) -> str:
    name = _copy(dataset, tmp)
    part = sorted((tmp / name / "dataset").glob("part-*.parquet"))[0]
    shutil.copy(part, part.with_name("part-copy.parquet"))
    return name


def _cells(count: int) -> str:
    values = ", ".join(f'"{size}"' for size in range(5, 5 + count))
    return ONE_CELL_SPEC.replace('grid = ["5x5"]', f"grid = [{values}]").replace(
        "group_size = [1]", "group_size = [" + ", ".join(map(str, range(1, count + 1))) + "]")


def _stale_lock_pid_text(tmp: Path) -> list[str]:
    (tmp / "out").mkdir()
    (tmp / "out" / LOCK_FILE).write_text(json.dumps({"pid": "x", "host": os.uname().nodename}))
    return ["sweep", _spec(tmp), "--out", "out", "--executor", "serial"]


def _serial_sweep_with(tmp: Path, plugin: str) -> list[str]:
    spec = ONE_CELL_SPEC.replace('behaviours = ["random", "local_search", "q_learning"]',
                                 f'behaviours = ["{_plugins(tmp)}:{plugin}"]')
    return ["sweep", _spec(tmp, spec), "--out", "out", "--executor", "serial"]


# (name, arguments given the test's directory and the finished dataset, exit status, fragments of the
# one stderr line, or of stdout when the status is 0)
CASES = [
    # point 4: no silent success
    ("plug-in sys.exit(0) in act", lambda tmp, d: ["evaluate", "--behaviour", f"{_plugins(tmp)}:ExitInAct", *QUICK],
     2, ["ExitInAct.act", "SystemExit"]),
    ("plug-in sys.exit(0) at import", lambda tmp, d: (tmp / "exits.py").write_text("import sys\nsys.exit(0)\n") and
     ["evaluate", "--behaviour", "exits.py:Agent", *QUICK], 2, ["exits.py", "SystemExit"]),
    ("plug-in raises KeyboardInterrupt", lambda tmp, d: ["evaluate", "--behaviour", f"{_plugins(tmp)}:InterruptInAct",
                                                         *QUICK], 2, ["InterruptInAct.act", "KeyboardInterrupt"]),
    ("plug-in sys.exit(3) in __init__", lambda tmp, d: ["evaluate", "--behaviour", f"{_plugins(tmp)}:ExitInInit",
                                                        *QUICK], 2, ["ExitInInit.__init__", "SystemExit"]),
    ("serial sweep, plug-in sys.exit(0) in act", lambda tmp, d: _serial_sweep_with(tmp, "ExitInAct"), 2,
     ["ExitInAct.act", "SystemExit"]),
    ("serial sweep, plug-in raises KeyboardInterrupt", lambda tmp, d: _serial_sweep_with(tmp, "InterruptInAct"), 2,
     ["InterruptInAct.act", "KeyboardInterrupt"]),
    ("--protocol-param given twice", lambda tmp, d: ["evaluate", "--behaviour", "local_search", "--group-size", "3",
                                                     "--protocol", "broadcast", "--protocol-param", "memory=true",
                                                     "--protocol-param", "memory=false", *QUICK],
     2, ["--protocol-param", "'memory' is given twice"]),
    ("--behaviour-param given twice", lambda tmp, d: ["evaluate", "--behaviour", f"{_plugins(tmp)}:Unbounded",
                                                      "--behaviour-param", "patience=2", "--behaviour-param",
                                                      "patience=4", *QUICK], 2, ["--behaviour-param", "twice"]),
    ("analyze, the same dataset twice", lambda tmp, d: ["analyze", str(d), str(d / "dataset")], 2, ["given twice"]),
    ("analyze, an unfinished sweep", lambda tmp, d: ["analyze", _unfinished(d, tmp), "--tables", "upsilon"], 0,
     ["Υ by group, grid, group_size"]),
    ("analyze, NaN scores", lambda tmp, d: ["analyze", _nan_scores(d, tmp), "--tables", "upsilon"], 0, ["Υ by"]),
    ("analyze, a chunk copied", lambda tmp, d: ["analyze", _duplicated_chunk(d, tmp), "--tables", "upsilon"], 0,
     ["Υ by"]),
    # point 5: no nonsense numbers
    ("evaluate --episodes 1 --json", lambda tmp, d: ["evaluate", "--behaviour", "local_search", "--group-size", "3",
                                                     "--episodes", "1", "--iterations", "30", "--profile", "paper",
                                                     "--json"], 0, ['"ci95_low": null']),
    ("Legg-Hutter interval of 5 episodes", lambda tmp, d: ["evaluate", "--behaviour", "local_search", "--group-size",
                                                           "3", "--episodes", "5", "--iterations", "30", "--profile",
                                                           "paper", "--json"], 0, ['"legg_hutter_ci95_low": null']),
    # point 3: sizes before allocating
    ("--group-size 10**9", lambda tmp, d: ["evaluate", "--behaviour", "local_search", "--group-size", "1000000000",
                                           "--episodes", "20", "--iterations", "30", "--profile", "paper"],
     2, ["--group-size", "GiB"]),
    ("--mix of 10**9 agents", lambda tmp, d: ["evaluate", "--mix", "local_search:1000000000", "--episodes", "20",
                                              "--iterations", "30", "--profile", "paper"], 2, ["--mix", "GiB"]),
    ("spec group_size = [10**9]", lambda tmp, d: ["sweep", _spec(tmp, ONE_CELL_SPEC.replace(
        "group_size = [1]", "group_size = [1000000000]")), "--out", "out"], 2, ["factors.group_size[0]", "GiB"]),
    ("spec of 10**9 cells", lambda tmp, d: ["sweep", _spec(tmp, ONE_CELL_SPEC.replace('grid = ["5x5"]', "grid = [" + ", ".join(
        f'"{n}"' for n in range(5, 1005)) + "]").replace("group_size = [1]", "group_size = [" + ", ".join(
        map(str, range(1, 1001))) + "]\nobservation_range = [" + ", ".join(map(str, range(1, 1001))) + "]")),
        "--out", "out"], 2, ["factors", "1,000,000,000 cells", "limit"]),
    ("sweep of 10**13 agent-steps without --yes", lambda tmp, d: ["sweep", _spec(tmp, ONE_CELL_SPEC.replace(
        "episodes = 6", "episodes = 1_000_000_000_000")), "--out", "out", "--executor", "serial"], 2,
     ["--yes", "agent-steps"]),
    # point 7: one line, never a traceback
    ("spec group_size = [1.5]", lambda tmp, d: ["sweep", _spec(tmp, ONE_CELL_SPEC.replace(
        "group_size = [1]", "group_size = [1.5]")), "--out", "out"], 2, ["factors.group_size[0]", "integer"]),
    ("spec group_size = [\"2\"]", lambda tmp, d: ["sweep", _spec(tmp, ONE_CELL_SPEC.replace(
        "group_size = [1]", 'group_size = ["2"]')), "--out", "out"], 2, ["factors.group_size[0]", "integer"]),
    ("plug-in Parameter without bounds, given a value", lambda tmp, d: [
        "evaluate", "--behaviour", f"{_plugins(tmp)}:Unbounded", "--behaviour-param", "patience=4", *QUICK], 0, ["Υ"]),
    ("plug-in Parameter without bounds, given text", lambda tmp, d: [
        "evaluate", "--behaviour", f"{_plugins(tmp)}:Unbounded", "--behaviour-param", "patience=soon", *QUICK], 2,
     ["--behaviour-param", "patience must be a number in [-inf, inf]"]),
    ("plug-in parameters = 'x'", lambda tmp, d: ["evaluate", "--behaviour", f"{_plugins(tmp)}:TextParameters",
                                                 *QUICK], 2, ["TextParameters.parameters", "collective.Parameter"]),
    ("sweep.lock with pid \"x\"", lambda tmp, d: _stale_lock_pid_text(tmp), 0, ["sweep tiny"]),
    ("analyze, sweep.json a list", lambda tmp, d: ["analyze", _sweep_json(d, tmp, "[1, 2]")], 2,
     ["sweep.json: damaged"]),
    ("analyze, sweep.json corrupt", lambda tmp, d: ["analyze", _sweep_json(d, tmp, '{"plan": ')], 2,
     ["sweep.json: damaged"]),
    ("dashboard, sweep.json corrupt", lambda tmp, d: ["dashboard", _sweep_json(d, tmp, "\x00\xff"), "--out",
                                                      "report.html"], 2, ["sweep.json: damaged"]),
    ("--k-bin-width 10**30", lambda tmp, d: ["analyze", str(d), "--k-bin-width", str(10**30)], 2, ["--k-bin-width"]),
    ("--by score", lambda tmp, d: ["analyze", str(d), "--by", "score"], 2, ["--by", "'score'"]),
    ("--address 'not a host'", lambda tmp, d: ["sweep", _spec(tmp), "--out", "out", "--address", "not a host"], 2,
     ["--address", "not an address"]),
    ("deeply nested TOML", lambda tmp, d: ["sweep", _spec(tmp, "a = " + "[" * 3000 + "]" * 3000 + "\n"), "--out",
                                           "out"], 2, ["nested too deeply"]),
    ("spec larger than 1 MiB", lambda tmp, d: ["sweep", _spec(tmp, "# " + "x" * (2 << 20) + "\n"), "--out", "out"], 2,
     ["larger than 1 MiB"]),
    ("spec path a symlink loop", lambda tmp, d: ["sweep", _loop(tmp), "--out", "out"], 2,
     ["loop-a", "symbolic links"]),
    ("--out a symlink loop", lambda tmp, d: ["sweep", _spec(tmp), "--out", _loop(tmp), "--executor", "serial"], 2,
     ["--out", "loop-a"]),
    ("analyze a symlink loop", lambda tmp, d: ["analyze", _loop(tmp)], 2, ["loop-a"]),
    ("anytime --trace-out a symlink loop", lambda tmp, d: ["anytime", "--behaviour", "random", "--profile", "paper",
                                                           "--max-environments", "2", "--trace-out", _loop(tmp)], 2,
     ["--trace-out", "loop-a"]),
]


@pytest.mark.parametrize("name, arguments, status, fragments", CASES, ids=[case[0] for case in CASES])
def test_hostile_input_is_one_line_or_a_complete_result(tmp_path, monkeypatch, dataset, name, arguments, status,
                                                        fragments):
    monkeypatch.chdir(tmp_path)
    args = arguments(tmp_path, dataset)
    before = {path.name for path in tmp_path.iterdir()}
    result, stdout, stderr = run_cli(*args)
    assert (got := outcome(result, stderr, status)) == "clean", f"{got}: {stderr[-300:]}"
    shown = stdout if status == 0 else error_lines(stderr)[0]
    for fragment in fragments:
        assert fragment in shown, shown
    if status:
        assert stdout == "" and {path.name for path in tmp_path.iterdir()} <= before | {"out"}
        if "out" not in before and (tmp_path / "out").exists():  # refused after the lock: nothing but the run files
            assert not (tmp_path / "out" / LOCK_FILE).exists()
            assert not list((tmp_path / "out" / "dataset").glob("part-*.parquet"))
    if name.startswith("--address"):
        assert not (tmp_path / "out").exists()  # refused before the run directory is made
    if name == "evaluate --episodes 1 --json" or name.startswith("Legg-Hutter"):
        record = json.loads(stdout, parse_constant=lambda text: pytest.fail(f"{text} in strict JSON"))
        if name.startswith("Legg-Hutter"):  # ESS 1.0005 (one episode's weight dominates): no interval, and why
            assert record["legg_hutter_effective_episodes"] < 2 and "effective sample size" in record["legg_hutter_ci95_note"]
            assert record["ci95_low"] < record["upsilon"] < record["ci95_high"]  # 5 episodes: the plain CI stands
        else:
            assert record["ci95_note"].startswith("no interval") and record["legg_hutter_ci95_high"] is None


def test_analyze_states_what_it_left_out(dataset, tmp_path, monkeypatch):
    """Notices: an unfinished sweep (chunks and rows vs its plan), unscored rows (left out) and duplicate
    rows (counted once, so Υ's episode counts match the data)."""
    monkeypatch.chdir(tmp_path)
    _, full, _ = run_cli("analyze", str(dataset), "--tables", "upsilon", "--format", "csv")
    status, _, stderr = run_cli("analyze", _unfinished(dataset, tmp_path), "--tables", "upsilon")
    plan = json.loads((dataset / SPEC_FILE).read_text())["plan"]
    assert status == 0 and f"in 1 of {plan['units']} chunks" in stderr and "unfinished sweep" in stderr
    shutil.rmtree(tmp_path / "copy")
    status, _, stderr = run_cli("analyze", _nan_scores(dataset, tmp_path), "--tables", "upsilon", "--format", "csv")
    assert status == 0 and "2 of " in stderr and "have no score (NaN" in stderr
    shutil.rmtree(tmp_path / "copy")
    status, copied, stderr = run_cli("analyze", _duplicated_chunk(dataset, tmp_path), "--tables", "upsilon",
                                     "--format", "csv")
    assert status == 0 and "duplicate rows" in stderr and "counted once" in stderr
    assert copied == full  # the copied chunk's rows are counted once


def test_a_sweep_whose_executor_stops_early_never_reports_success(tmp_path):
    """The driver counts the units reported: an executor that stops (a worker's os._exit, a lost
    cluster) ends the sweep with an error, never the summary."""
    spec = parse_spec(tomllib.loads(SMALL_SPEC), "small")

    class StopsAfterOneUnit(SerialExecutor):
        def run(self, blocks):
            yield next(iter(super().run(blocks)))

    with pytest.raises(RuntimeError, match="work units unreported"):  # collective.sweeps.command.IncompleteSweep
        run_spec(spec, tmp_path / "out", StopsAfterOneUnit(spec))
    assert not (tmp_path / "out" / LOCK_FILE).exists()
    assert len((tmp_path / "out" / MANIFEST_FILE).read_text().splitlines()) == 1  # the finished unit is kept


def test_stale_lock_is_taken_by_exactly_one_of_three_sweeps(tmp_path):
    """Three processes find the same stale lock together: one takes the directory, two are refused."""
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).write_text(json.dumps({"pid": 2**22 + 12345, "host": os.uname().nodename}))  # no such PID
    start = time.time() + 3
    claim = ("import sys, time\n"
             "from pathlib import Path\n"
             "from collective.sweeps.store import DirectoryLock, StoreError\n"
             f"time.sleep(max(0, {start} - time.time()))\n"
             f"lock = DirectoryLock(Path({str(out)!r}))\n"
             "try:\n"
             "    lock.acquire()\n"
             "except StoreError as error:\n"
             "    print('refused', error)\n"
             "    sys.exit(0)\n"
             "print('held')\n"
             "time.sleep(2)\n"
             "lock.release()\n")
    processes = [subprocess.Popen([sys.executable, "-c", claim], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(3)]
    results = [process.communicate(timeout=60) for process in processes]
    assert all(not stderr for _, stderr in results), results
    said = sorted(stdout.split()[0] for stdout, _ in results)
    assert said == ["held", "refused", "refused"], results
    assert not (out / LOCK_FILE).exists()


def test_a_module_in_the_working_directory_does_not_shadow_an_installed_package(tmp_path):
    """A plug-in named MODULE:CLASS is imported from the working directory, but no file there named like a
    module that Python, a library or Ray imports (`ray.py`, `numpy.py`, or `cffi.py` and `envwrap.py`, which
    libraries try to import) ever runs, in the driver (`python -m` puts the directory first on sys.path) or
    on the Ray workers (Ray puts the driver's working directory first on theirs), nor with built-ins only."""
    (tmp_path / "agents.py").write_text("import numpy as np\n\nclass Stay:\n    def act(self, obs):\n"
                                        "        return np.full(obs.cell.shape, 4)\n")
    shadows = ("ray", "numpy", "cffi", "envwrap")
    for name in shadows:
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / name)!r} + '-was-executed', 'w').close()\n"
                                             "raise SystemExit(7)\n")
    (tmp_path / "spec.toml").write_text(ONE_CELL_SPEC.replace(
        'behaviours = ["random", "local_search", "q_learning"]', 'behaviours = ["agents:Stay", "random"]'))
    result = subprocess.run([sys.executable, "-m", "collective", "sweep", "spec.toml", "--out", "out", "--workers",
                             "1", "--executor", "ray"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert not [name for name in shadows if (tmp_path / f"{name}-was-executed").exists()]
    assert "sweep tiny" in result.stdout


@pytest.mark.parametrize("plugin, file", [("json:Agent", "json.py"), ("plugins/json.py:Agent", "plugins/json.py")])
def test_a_plugin_module_named_like_an_installed_one_is_refused(tmp_path, plugin, file):
    """A plug-in file `json.py` would replace the standard library's json on the Ray workers (the shipped
    plug-ins come first on their sys.path: the sweep hung), and json:CLASS finds the standard library's:
    refused with one line naming the file, before anything is written."""
    (tmp_path / file).parent.mkdir(exist_ok=True)
    (tmp_path / file).write_text("class Agent:\n    def act(self, obs):\n        return obs.cell\n")
    (tmp_path / "spec.toml").write_text(ONE_CELL_SPEC.replace(
        'behaviours = ["random", "local_search", "q_learning"]', f'behaviours = ["{plugin}"]'))
    result = subprocess.run([sys.executable, "-m", "collective", "sweep", "spec.toml", "--out", "out", "--executor",
                             "ray"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = error_lines(result.stderr)
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("collective sweep: error: spec.toml: groups.behaviours[0]: plug-in ")
    assert file in lines[0] and "installed module 'json'" in lines[0] and "rename it" in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_plugin_that_kills_its_ray_worker_is_named(tmp_path):
    """os._exit in a plug-in's act kills the GroupHost each time Ray restarts it: the sweep ends with a
    PluginError naming the plug-in and its group, not Ray's ActorDiedError, and that line is the last thing
    printed: Ray's `(raylet)` lines about the deaths and retries go to OUT/ray.log, which the line names."""
    (tmp_path / "crash.py").write_text("import os\n\nclass Crash:\n    def act(self, obs):\n        os._exit(1)\n")
    (tmp_path / "spec.toml").write_text(ONE_CELL_SPEC.replace(
        'behaviours = ["random", "local_search", "q_learning"]', 'behaviours = ["crash:Crash"]'))
    result = subprocess.run([sys.executable, "-m", "collective", "sweep", "spec.toml", "--out", "out", "--workers",
                             "1", "--executor", "ray"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert last.startswith("collective sweep: error: plug-in crash:Crash: the Ray worker playing groups crash:Crash")
    log = tmp_path.resolve() / "out" / "ray.log"
    assert f"(Ray's messages: {log})" in last and "(raylet)" in log.read_text()
    assert "(raylet)" not in result.stderr + result.stdout and not result.stdout.strip()
