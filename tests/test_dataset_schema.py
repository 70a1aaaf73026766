"""The dataset schema, checked on read (issue 46 point 1): crafted copies of a real small sweep (a column of one
chunk file of another type, out of range, missing, or an identifier that does not parse) are refused by analyze,
validate, figures and dashboard with exit status 2 and one line naming the chunk file, the column and what was
expected; the sweep itself passes, and its text reaches the dashboard's HTML only escaped."""
from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

from dataset_damage import cast, chunks, copy_dataset, drop, rewrite, set_all, set_value, small_sweep
from test_hostile_inputs import error_lines, outcome, run_cli

COMMANDS = {"analyze": [], "validate": [], "figures": ["--out", "figures"], "dashboard": ["--out", "report.html"]}
# (name, change of the first chunk file, the column named, what the line says was expected)
CASES = [
    ("score as text", cast("score", pa.string()), "score", "expected a number (double)"),
    ("a mix cell holding HTML", set_value("mix", "<script>alert(1)</script>"), "mix", "NAME:COUNT"),
    ("a grid of tenbyten", set_all("grid", "tenbyten"), "grid", "ROWSxCOLS"),
    ("a group size of -3", set_value("group_size", -3), "group_size", ">= 1"),
    ("a score of 1e300", set_value("score", 1e300), "score", "<= 1"),
    ("a K of -5", set_value("k_raw", -5), "k_raw", ">= 0"),
    ("an entropy of NaN", set_value("entropy_bits", math.nan), "entropy_bits", ">= 0"),
    ("an entropy of inf", set_value("entropy_bits", math.inf), "entropy_bits", ">= 0"),
    ("episode as float", cast("episode", pa.float64()), "episode", "a whole number (int64)"),
    ("cell as text", cast("cell", pa.string()), "cell", "a whole number (int64)"),
    ("a mix of 10**9 agents", set_value("mix", "random:1000000000"), "mix", "counts 1..999999"),
    ("a group without a name", set_value("group", None), "group", "a value in every row"),
    ("a protocol holding HTML", set_value("protocol", "<img src=x onerror=alert(1)>"), "protocol",
     "without spaces"),
    ("an empty behaviour", set_value("behaviour", ""), "behaviour", "without spaces"),
    ("score_by_behaviour not JSON", set_value("score_by_behaviour", "{not json"), "score_by_behaviour",
     "a JSON object"),
    ("iterations 0", set_value("iterations", 0), "iterations", ">= 1"),
    ("an unknown environment class", set_value("env", "maze"), "env", "one of lambda_star, landscape"),
    ("a group renamed in one file", set_all("group", "renamed"), "group", "one group per group_key"),
    ("the group column left out", drop("group"), "group", "missing; expected a sweep dataset's chunk"),
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    return small_sweep(tmp_path_factory.mktemp("sweep"))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name, change, column, expected", CASES, ids=[case[0] for case in CASES])
def test_a_damaged_chunk_is_refused_in_one_line_naming_file_and_column(sweep, tmp_path, monkeypatch, command, name,
                                                                       change, column, expected):
    monkeypatch.chdir(tmp_path)
    damaged = copy_dataset(sweep, tmp_path / "copy")
    part = chunks(damaged)[0]
    rewrite(part, change)
    status, stdout, stderr = run_cli(command, str(damaged), *COMMANDS[command])
    assert outcome(status, stderr, 2) == "clean", stderr[-400:]
    line = error_lines(stderr)[0]
    assert line.startswith(f"collective {command}: error: {part}") and f"column {column}" in line, line
    assert expected in line, line
    assert stdout == "" and not (tmp_path / "figures").exists() and not (tmp_path / "report.html").exists()


def test_an_empty_or_unreadable_chunk_file(sweep, tmp_path, monkeypatch):
    """A chunk file of no rows adds none; a file of no bytes is refused, named."""
    monkeypatch.chdir(tmp_path)
    damaged = copy_dataset(sweep, tmp_path / "copy")
    _, full, _ = run_cli("analyze", str(sweep), "--tables", "upsilon", "--format", "csv")
    part = chunks(damaged)[0]
    rewrite(part, lambda table: table.slice(0, 0))
    status, stdout, stderr = run_cli("analyze", str(damaged), "--tables", "upsilon", "--format", "csv")
    assert outcome(status, stderr, 0) == "clean" and "\ngroup,grid," in stdout and stdout != full, stderr
    part.write_bytes(b"")
    status, _, stderr = run_cli("analyze", str(damaged))
    assert outcome(status, stderr, 2) == "clean" and f"{part}: unreadable Parquet data" in error_lines(stderr)[0]


def test_text_from_a_dataset_reaches_the_report_only_escaped(sweep, tmp_path, monkeypatch):
    """A group type renamed, in every file, to markup (a valid name: text without control characters) is
    shown as text: the report holds it escaped, never as a tag, in its tables, figures' data and labels."""
    monkeypatch.chdir(tmp_path)
    damaged = copy_dataset(sweep, tmp_path / "copy")
    markup = '<script>alert("group")</script><img src=x onerror=alert(1)>'
    for part in chunks(damaged):
        rewrite(part, lambda table: table.set_column(
            table.column_names.index("group"), "group",
            pa.array([markup if group == "local_search" else group for group in table["group"].to_pylist()])))
    status, stdout, stderr = run_cli("dashboard", str(damaged), "--out", "report.html")
    assert outcome(status, stderr, 0) == "clean", stderr[-400:]
    report = (tmp_path / "report.html").read_text()
    assert "<script>alert(" not in report and "<img src=x" not in report and "onerror=alert(1)>" not in report
    assert "&lt;script&gt;alert(" in report or "\\u003cscript\\u003e" in report


def test_the_reference_lists_every_rule():
    """docs/reference/cli.md's table of what a dataset may hold says what the check refuses, column by column."""
    from collective.dataset_schema import RULES

    page = (Path(__file__).parent.parent / "docs" / "reference" / "cli.md").read_text()
    lines = {line.split("`")[1]: line for line in page.splitlines() if line.startswith("| `")}
    for name, rule in RULES.items():
        assert lines[name].endswith(f"| {rule.describe()}{', or missing' if rule.nulls else ''} |"), name
