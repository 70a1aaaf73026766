"""Bad input and rough edges through the real CLI: one line and status 2 before any work, no
traceback, nothing written; Ctrl-C, --yes, plain progress lines, the compile notice, README examples."""
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from collective.numba_cache import source_digest
from collective.progress import COMPILE_NOTICE
from sweep_support import as_at_a_terminal

README = Path(__file__).resolve().parent.parent / "README.md"
CLI_PAGE = README.parent / "docs" / "reference" / "cli.md"  # the command line's documented examples
FAR = str(10**12)  # agent-steps at which --yes is required


def collective(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "collective", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=env)


def start(*args):
    return subprocess.Popen([sys.executable, "-m", "collective", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)


def stderr_lines(process: subprocess.Popen) -> queue.Queue:
    """The process's stderr lines as they come (None at the end), read by a thread."""
    lines: queue.Queue = queue.Queue()

    def read():
        for line in process.stderr:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def interrupt(process: subprocess.Popen) -> tuple[int, str, str]:
    """Ctrl-C the process; its exit status, stdout and stderr."""
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return process.returncode, stdout, stderr


BAD_INPUT = [
    (["evaluate", "--behaviour", "random", "--grid", "100000"], "--grid", "GiB"),
    (["evaluate", "--behaviour", "random", "--iterations", "1000000000"], "--iterations", "GiB"),
    (["evaluate", "--behaviour", "random", "--episodes", FAR], "--yes", "agent-steps"),
    # sound's table is trained once (issue 21): 10^10 passes x T = 200 is above the 10^12 agent-steps that need --yes
    (["evaluate", "--behaviour", "q_learning", "--training-passes", str(10**10)], "--yes", "agent-steps"),
    (["evaluate", "--behaviour", "random", "--mix", "local_search:3"], "--behaviour", "--mix"),
    (["evaluate", "--mix", "local_search:3", "--group-size", "4"], "--group-size", "3 agents"),
    (["evaluate", "--behaviour", "random", "--peaks", "3"], "--peaks", "--env landscape"),
    (["evaluate", "--behaviour", "random", "--peak-width", "2"], "--peak-width", "--env landscape"),
    (["evaluate", "--behaviour", "random", "--deception", "0.5"], "--deception", "--env landscape"),
    (["evaluate", "--behaviour", "random", "--noise", "0.5"], "--noise", "--env landscape"),
    (["evaluate", "--behaviour", "random", "--env", "landscape", "--ruggedness", "0.5"], "--ruggedness",
     "renamed --deception"),
    (["evaluate", "--behaviour", "random", "--motion", "static"], "--motion", "--env landscape"),
    (["evaluate", "--behaviour", "random", "--group-size", "2", "--coordination-threshold", "3"],
     "--coordination-threshold", "never pays"),
    (["evaluate", "--behaviour", "random", "--grid", "１０"], "--grid", "ASCII"),
    (["evaluate", "--behaviour", "random", "--grid", "10x١٠"], "--grid", "ASCII"),
    (["evaluate", "--behaviour", "random", "--episodes", "１０"], "--episodes", "ASCII"),
    (["evaluate", "--behaviour", "random", "--seed", str(2**63)], "--seed", "2**63-1"),
    (["evaluate", "--behaviour", "random", "--seed", "-1"], "--seed", "2**63-1"),
    (["evaluate", "--behaviour", "random", "--grid", "2x2"], "--grid", "3x3"),
    # sound samples K stratified over 2:23; 20 iterations reach 2..20: the refusal gives the range that runs
    (["evaluate", "--behaviour", "random", "--iterations", "20"], "--complexity", "the K range 2:20 is reachable"),
    (["demo", "--grid", "100000"], "--grid", "GiB"),
    (["demo", "--episodes", FAR], "--yes", "agent-steps"),
    (["anytime", "--behaviour", "oracle", "--trace-out", "."], "--trace-out", "directory"),
    (["anytime", "--behaviour", "oracle", "--trace-out", "missing/trace.parquet"], "--trace-out", "does not exist"),
    (["anytime", "--behaviour", "oracle", "--mix", "oracle:2"], "--behaviour", "--mix"),
    (["anytime", "--behaviour", "oracle", "--grid", "100000"], "--grid", "GiB"),
    (["anytime", "--behaviour", "oracle", "--start-budget", str(10**9)], "--start-budget", "GiB"),
    (["anytime", "--behaviour", "oracle", "--peaks", "3"], "--peaks", "--env landscape"),
    # a Q-table of 300x300 cells x T=100 (~700 MiB): the test would stop before its first environment
    (["anytime", "--behaviour", "q_learning", "--grid", "300", "--start-budget", "100"], "--grid",
     "memory limit of 512 MiB"),
    (["anytime", "--behaviour", "oracle", "--group-size", "100000"], "--yes", "until the test stops by itself"),
    (["anytime", "--behaviour", "q_learning", "--training-passes", str(10**9)], "--yes", "agent-steps"),
]


@pytest.mark.parametrize("args, option, says", BAD_INPUT, ids=[" ".join(a) for a, _, _ in BAD_INPUT])
def test_bad_input_is_one_line_with_status_2_and_writes_nothing(tmp_path, args, option, says):
    result = collective(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line != COMPILE_NOTICE]  # validating may compile
    assert len(lines) == 1, result.stderr
    assert f"argument {option}:" in lines[0] and says in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_trace_out_refused_by_the_file_system_prints_the_result_then_one_line():
    result = collective("anytime", "--behaviour", "oracle", "--max-environments", "3", "--trace-out",
                        "/proc/trace.parquet")  # /proc refuses new files, even to root
    assert result.returncode == 1
    assert "stopped: max_environments" in result.stdout
    lines = [line for line in result.stderr.splitlines() if not line.startswith("collective: ")]  # compile notice
    assert len(lines) == 1 and "--trace-out" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["device", "fifo", "symlink loop"])
def test_trace_out_that_is_no_regular_file_is_refused_and_left_in_place(tmp_path, kind):
    """Issue 26 point 2: `--trace-out /dev/full` deleted the device node when the write failed."""
    if kind == "device":
        trace = Path("/dev/full")
    elif kind == "fifo":
        trace = tmp_path / "pipe"
        os.mkfifo(trace)
    else:
        trace = tmp_path / "loop"
        trace.symlink_to(tmp_path / "loop")
    before = os.lstat(trace)
    result = collective("anytime", "--behaviour", "oracle", "--max-environments", "3", "--trace-out", str(trace))
    lines = [line for line in result.stderr.splitlines() if line != COMPILE_NOTICE]
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1 and "argument --trace-out:" in lines[0], result.stderr
    after = os.lstat(trace)
    assert (after.st_ino, after.st_mode, after.st_rdev) == (before.st_ino, before.st_mode, before.st_rdev)


def test_the_trace_replaces_its_file_whole_and_leaves_no_temporary(tmp_path):
    """The trace is written beside its target and renamed into place; a write that fails (here
    /proc, which refuses new files even to root) raises and leaves nothing behind."""
    from collective.anytime import AnytimeConfig, run_anytime, write_trace
    from collective.config import EvaluationConfig

    result = run_anytime(AnytimeConfig(EvaluationConfig(behaviour="oracle", group_size=1, profile="paper"),
                                       max_environments=2))
    with pytest.raises(OSError):
        write_trace(result, "/proc/trace.parquet")
    assert not list(Path("/proc").glob(".trace.parquet*"))
    trace = tmp_path / "trace.parquet"
    trace.write_text("an earlier trace")
    write_trace(result, str(trace))
    assert trace.read_bytes()[:4] == b"PAR1" and [p.name for p in tmp_path.iterdir()] == ["trace.parquet"]


def test_ctrl_c_during_evaluate_is_one_line_and_status_130():
    process = start("evaluate", "--behaviour", "local_search", "--episodes", str(10**8))
    time.sleep(3)
    assert process.poll() is None
    status, stdout, stderr = interrupt(process)
    assert status == 130 and stdout == "" and "Traceback" not in stderr
    # "collective: interrupted" if the signal came while the libraries were still loading
    assert re.fullmatch(r"collective( evaluate)?: interrupted", stderr.splitlines()[-1]), stderr


def test_yes_lets_a_huge_run_start():
    refused = collective("evaluate", "--behaviour", "random", "--episodes", FAR)
    assert refused.returncode == 2 and "at ~10 M agent-steps/s" in refused.stderr
    process = start("evaluate", "--behaviour", "random", "--episodes", FAR, "--yes")
    time.sleep(3)
    assert process.poll() is None  # running, not refused
    assert interrupt(process)[0] == 130


def test_progress_lines_when_stderr_is_not_a_terminal():
    process = start("evaluate", "--behaviour", "local_search", "--episodes", str(10**8))
    lines = stderr_lines(process)
    deadline = time.monotonic() + 180  # a cold cache compiles first
    progress = None
    while progress is None and time.monotonic() < deadline:
        line = lines.get(timeout=deadline - time.monotonic())
        assert line is not None and "Traceback" not in line
        progress = re.fullmatch(r"collective: progress: local_search x1: ([\d,]+)/100,000,000 episodes \(\d+%\), "
                                r"[\d.]+( [kMG])? episodes/s, elapsed .+, ETA .+", line)
    assert progress and int(progress.group(1).replace(",", "")) > 0
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130


def test_anytime_json_shows_progress_off_a_terminal():
    """With --json nothing reaches stdout before the end: progress lines come on stderr."""
    result = collective("anytime", "--behaviour", "oracle", "--json", "--budget-seconds", "12")
    assert result.returncode == 0, result.stderr
    progress = [re.fullmatch(r"collective anytime: progress: oracle x1: ([\d,]+) iterations, (\d+) environments, "
                             r"ξ \S+, Υ [+-][\d.]+, [\d.]+( [kMG])? iterations/s, elapsed .+", line)
                for line in result.stderr.splitlines() if "progress" in line]
    assert progress and all(progress), result.stderr
    record = json.loads(result.stdout)
    assert int(progress[-1].group(2)) == record["environments"]  # the last line is the end
    assert int(progress[-1].group(1).replace(",", "")) == record["interactions"]


def test_first_run_announces_compiling_and_keeps_it_out_of_wall_seconds(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    args = ("evaluate", "--mix", "local_search:2,random:1", "--episodes", "10", "--json")  # a mix
    digest = source_digest()
    cold = collective(*args, env=env)
    assert cold.returncode == 0, cold.stderr
    lines = cold.stderr.splitlines()
    assert lines[0] == COMPILE_NOTICE
    assert re.fullmatch(r"collective: \.\.\. done in \d+ s", lines[1]) and len(lines) == 2
    record = json.loads(cold.stdout)
    assert record["compile_seconds"] > 5 * record["wall_seconds"]
    if source_digest() != digest:
        pytest.skip("the sources changed during the cold run: its cache no longer applies")
    warm = collective(*args, env=env)
    assert warm.returncode == 0 and warm.stderr == ""
    assert json.loads(warm.stdout)["upsilon"] == record["upsilon"]


def test_a_cold_plugin_run_announces_compiling_first_and_compiles_nothing_while_timed(tmp_path):
    """The stepping core on a landscape, from an empty cache: the notice comes before numba saves
    its first compiled function (NUMBA_DEBUG_CACHE logs each save; one unbuffered stream keeps the
    order), and every save comes before "done", so nothing compiles inside the timed run."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "NUMBA_DEBUG_CACHE": "1", "PYTHONUNBUFFERED": "1"}
    cold = subprocess.run([sys.executable, "-m", "collective", "evaluate", "--env", "landscape", "--behaviour",
                           "examples.numpy_local_search:LocalSearch", "--group-size", "3", "--episodes", "20", "--json"],
                          cwd=README.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600)
    assert cold.returncode == 0, cold.stdout
    lines = cold.stdout.splitlines()
    saves = [i for i, line in enumerate(lines) if line.startswith("[cache] data saved")]
    notices = [i for i, line in enumerate(lines) if line == COMPILE_NOTICE]
    done = [i for i, line in enumerate(lines) if re.fullmatch(r"collective: \.\.\. done in \d+ s", line)]
    assert saves and notices == [0] and len(done) == 1 and saves[-1] < done[0], cold.stdout
    record = json.loads(lines[-1])
    assert record["behaviour"] == "examples.numpy_local_search:LocalSearch" and record["env"] == "landscape"
    assert record["compile_seconds"] > 5 * record["wall_seconds"] and record["kernel_seconds"] < record["wall_seconds"]


def test_documented_landscape_example_runs():
    line = next(line for line in CLI_PAGE.read_text().splitlines() if "evaluate --env landscape" in line)
    argv = shlex.split(line)
    assert argv[0].endswith("collective")
    result = collective(*argv[1:], "--episodes", "20", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["env"] == "landscape"


def test_help_is_truthful():
    evaluate = collective("evaluate", "--help").stdout
    assert "95% confidence" in evaluate and "%%" not in evaluate + collective("--help").stdout
    assert "95% CIs" in collective("analyze", "--help").stdout
    demo = " ".join(collective("demo", "--help").stdout.split())
    assert "agents in the group (default 5)" in demo and "episodes to average over (default 300)" in demo
    assert "collective demo" in CLI_PAGE.read_text()
