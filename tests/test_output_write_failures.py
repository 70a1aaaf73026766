"""Write failures of the commands' output (issue 46 point 2): a full disk (/dev/full) or a file size limit
(RLIMIT_FSIZE, in a subprocess with SIGXFSZ ignored, as a quota or a small file system would refuse) ends
figures, dashboard, analyze and validate with one line naming the path (or standard output) and status 2, and
leaves the user's previous file as it was, with no temporary left beside it; every command whose standard output
is a full disk says so in one line (status 2), and one whose reader has left ends quietly (status 141)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataset_damage import small_sweep
from test_hostile_inputs import SMALL_SPEC, error_lines, outcome, run_cli

# The tiny sweep's regression prints Satterthwaite's division by zero (issue 46 point 4, left to its own fix): not
# what these tests count
QUIET = ["-W", "ignore::RuntimeWarning"]
PREVIOUS = b"the user's previous file\n"
MAGIC = {"pdf": b"%PDF", "png": b"\x89PNG", "svg": b"<?xml"}
LIMITED = textwrap.dedent("""
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
    from collective.cli import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    return small_sweep(tmp_path_factory.mktemp("sweep"))


def limited(limit: int, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`collective ARGS` in a subprocess that may write no file larger than `limit` bytes."""
    return subprocess.run([sys.executable, *QUIET, "-c", LIMITED, str(limit), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_a_report_too_large_to_write_leaves_the_previous_one(sweep, tmp_path):
    (tmp_path / "report.html").write_bytes(PREVIOUS)
    run = limited(100_000, "dashboard", str(sweep), "--out", "report.html", cwd=tmp_path)
    assert outcome(run.returncode, run.stderr, 2) == "clean", run.stderr[-400:]
    assert error_lines(run.stderr) == ["collective dashboard: error: report.html: File too large"], run.stderr
    assert (tmp_path / "report.html").read_bytes() == PREVIOUS and sorted(tmp_path.iterdir()) == [tmp_path / "report.html"]


def test_figures_too_large_to_write_leave_the_previous_ones(sweep, tmp_path):
    """Files written before the failure are whole new figures; the one that failed, and the rest, as they were."""
    status, stdout, _ = run_cli("figures", str(sweep), "--out", str(tmp_path / "fresh"), "--figures", "upsilon_vs_k")
    names = [Path(line).name for line in stdout.splitlines()]
    assert status == 0 and names
    figures = tmp_path / "figures"
    figures.mkdir()
    for name in names:
        (figures / name).write_bytes(PREVIOUS)
    run = limited(20_000, "figures", str(sweep), "--out", "figures", "--figures", "upsilon_vs_k", cwd=tmp_path)
    assert outcome(run.returncode, run.stderr, 2) == "clean", run.stderr[-400:]
    line, = error_lines(run.stderr)
    failed = line.removeprefix("collective figures: error: figures/").removesuffix(": File too large")
    assert failed in names, line
    assert (figures / failed).read_bytes() == PREVIOUS and sorted(path.name for path in figures.iterdir()) == sorted(names)
    for name in names:
        content = (figures / name).read_bytes()
        assert content == PREVIOUS or content.startswith(MAGIC[name.rpartition(".")[2]]), name


@pytest.mark.parametrize("command", ["dashboard", "figures"])
def test_a_full_disk_is_one_line_naming_the_file(sweep, tmp_path, monkeypatch, command):
    """/dev/full takes no byte: the report written straight into it (a device has no previous content to keep) or
    a figure directory that cannot be one."""
    monkeypatch.chdir(tmp_path)
    status, stdout, stderr = run_cli(command, str(sweep), "--out", "/dev/full")
    assert outcome(status, stderr, 2) == "clean", stderr[-400:]
    line, = error_lines(stderr)
    assert line.startswith(f"collective {command}: error: /dev/full: "), line
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["analyze", "validate"])
def test_standard_output_on_a_full_disk_is_one_line(sweep, tmp_path, command):
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, *QUIET, "-m", "collective", command, str(sweep)], stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=600, cwd=tmp_path)
    assert outcome(run.returncode, run.stderr, 2) == "clean", run.stderr[-400:]
    assert error_lines(run.stderr) == [f"collective {command}: error: standard output: No space left on device"]


QUICK_GROUP = ["--behaviour", "random", "--episodes", "4", "--iterations", "10", "--complexity", "2:10"]
STDOUT_COMMANDS = {
    "evaluate": ["evaluate", *QUICK_GROUP, "--json"],
    "demo": ["demo", *QUICK_GROUP], "anytime": ["anytime", "--behaviour", "random", "--max-environments", "2"],
    "sweep": ["sweep", "spec.toml", "--executor", "serial", "--out", "out"],
    "sweep --dry-run": ["sweep", "spec.toml", "--executor", "serial", "--dry-run"],
    "behaviours": ["behaviours"], "protocols": ["protocols"], "--help": ["--help"], "--version": ["--version"],
}


def with_stdout(args: list[str], stdout: int, cwd: Path) -> subprocess.CompletedProcess:
    """`collective ARGS` with the given stdout, block-buffered as a user's is (PYTHONUNBUFFERED unset)."""
    (cwd / "spec.toml").write_text(SMALL_SPEC)
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, *QUIET, "-m", "collective", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=600, cwd=cwd, env=environment)


@pytest.mark.parametrize("name", STDOUT_COMMANDS)
def test_every_command_says_in_one_line_that_standard_output_is_full(name, tmp_path):
    """Was a traceback (or Python's 'Exception ignored' at exit, status 120)."""
    with open("/dev/full", "w") as full:
        run = with_stdout(STDOUT_COMMANDS[name], full.fileno(), tmp_path)
    assert outcome(run.returncode, run.stderr, 2) == "clean", run.stderr[-400:]
    command = "collective" + ("" if name.startswith("--") else f" {name.split()[0]}")  # argparse's: before the command
    assert error_lines(run.stderr) == [f"{command}: error: standard output: No space left on device"]


@pytest.mark.parametrize("name", STDOUT_COMMANDS)
def test_every_command_ends_quietly_when_its_reader_has_left(name, tmp_path):
    """`collective ... | head -1` once head has gone: status 141 (128 + SIGPIPE), nothing on stderr."""
    reader, writer = os.pipe()
    os.close(reader)  # the reader left before the first line
    try:
        run = with_stdout(STDOUT_COMMANDS[name], writer, tmp_path)
    finally:
        os.close(writer)
    assert run.returncode == 141 and error_lines(run.stderr) == [], run.stderr[-400:]
