"""Property test (Hypothesis) of the analysis commands on damaged datasets (issue 46 point 6): one chunk file of a
real small sweep given random damage (a column of another type, a hostile value in one row or in all, a missing
value, the column left out, the file's rows removed or its bytes) is read by analyze, validate, figures or dashboard,
which ends with a complete result or a non-zero status and exactly one line on stderr, never a traceback. A fixed
budget (derandomized, a few examples per command) keeps it reproducible and short in CI."""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from collective.analysis.dataset import ANALYSIS_COLUMNS
from dataset_damage import chunks, copy_dataset, rewrite, small_sweep
from test_hostile_inputs import error_lines, outcome, run_cli

BUDGET = settings(max_examples=6, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# Values put into a column of the kind they fit (None: a missing value); text the identifiers must refuse or
# show as text: markup, a grid and mixes that do not parse, control characters, math and JSON cut short.
HOSTILE = {"whole": [-3, 0, 2**62, -(2**63), None],
           "number": [-3.0, 1e300, -1e300, math.nan, math.inf, -math.inf, None],
           "text": ["", "<script>alert(1)</script>", "tenbyten", "10x", "random:0", "random:1000000000", "a b,c",
                    "line\nbreak", "x" * 5000, "$\\frac{", "{", "[", None],
           "bool": [None], "list": [None, []]}
TYPES = {"text": pa.string(), "whole": pa.int64(), "number": pa.float64(), "bool": pa.bool_()}
COMMANDS = {"analyze": lambda out: [], "validate": lambda out: [], "figures": lambda out: ["--out", str(out / "figures")],
            "dashboard": lambda out: ["--out", str(out / "report.html")]}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    return small_sweep(tmp_path_factory.mktemp("sweep"))


def _kind(kind: pa.DataType) -> str:
    return "whole" if pa.types.is_integer(kind) else "number" if pa.types.is_floating(kind) else \
        "bool" if pa.types.is_boolean(kind) else "list" if pa.types.is_list(kind) else "text"


def _retyped(column: pa.ChunkedArray, kind: pa.DataType, filler: object) -> pa.Array:
    """The column cast to `kind`, or, where its values do not convert, every row `filler`."""
    try:
        return pc.cast(column, kind, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([filler] * len(column), kind)


@st.composite
def damages(draw, kinds: dict[str, str]):
    """(description, change of a chunk table, or None for a file cut to no bytes); `kinds`: the chunk's columns
    the analysis reads, and the kind of each."""
    how = draw(st.sampled_from(["type", "value", "every value", "left out", "no rows", "no bytes"]))
    name = draw(st.sampled_from(sorted(kinds)))
    if how == "no rows":
        return how, lambda table: table.slice(0, 0)
    if how == "no bytes":
        return how, None
    if how == "left out":
        return f"{name} {how}", lambda table: table.drop([name])
    if how == "type":
        to = draw(st.sampled_from(sorted(TYPES)))
        filler = draw(st.sampled_from([value for value in HOSTILE[to] if value is not None] or [True]))

        def change(table):
            return table.set_column(table.column_names.index(name), name, _retyped(table[name], TYPES[to], filler))
        return f"{name} as {to}", change
    row = draw(st.integers(0, 10)) if how == "value" else None
    value = draw(st.sampled_from(HOSTILE[kinds[name]]))

    def change(table):
        values = table[name].to_pylist()
        values = [value] * len(values) if row is None else values[:row] + [value] + values[row + 1:]
        return table.set_column(table.column_names.index(name), name, pa.array(values[:len(table)], table[name].type))
    return f"{name}: {how} {value!r:.40}", change


def _complete(command: str, status: int, stdout: str, out: Path) -> bool:
    """Whether a command that ended with status 0 (validate: 1, a check failing) gave its whole result."""
    if command == "analyze":
        return "Υ by" in stdout
    if command == "validate":
        return "checks" in stdout
    if command == "figures":
        return bool(stdout) and all(Path(line).is_file() for line in stdout.splitlines())
    return (out / "report.html").read_text().rstrip().endswith("</html>")


def check(sweep: Path, tmp_path: Path, command: str, data) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as directory:
        out = Path(directory)
        damaged = copy_dataset(sweep, out / "copy")
        parts = chunks(damaged)
        part = parts[data.draw(st.integers(0, len(parts) - 1), label="chunk")]
        kinds = {field.name: _kind(field.type) for field in pq.read_schema(part)
                 if field.name in ANALYSIS_COLUMNS or field.name == "spawn_key"}
        what, change = data.draw(damages(kinds), label="damage")
        if change is None:
            part.write_bytes(b"")
        else:
            rewrite(part, change)
        status, stdout, stderr = run_cli(command, str(damaged), *COMMANDS[command](out))
        event(f"{command}: exit {status}")
        assert "Traceback" not in stderr, (what, stderr[-600:])
        if status == 0 or (command == "validate" and status == 1):
            assert _complete(command, status, stdout, out), (what, stdout[-300:], stderr[-300:])
        else:
            assert outcome(status, stderr, status) == "clean" and stdout == "", (what, stderr[-600:])
            line, = error_lines(stderr)
            assert line.startswith(f"collective {command}: error: "), (what, line)


@pytest.mark.parametrize("command", ["analyze", "validate", "figures", "dashboard"])
@BUDGET
@given(data=st.data())
def test_a_damaged_dataset_ends_whole_or_in_one_line(sweep, tmp_path, command, data):
    check(sweep, tmp_path, command, data)
