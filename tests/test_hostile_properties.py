"""Property tests (Hypothesis) of the command line on generated input, hostile values mixed with valid
ones: `collective evaluate` arguments and `collective sweep` specs either finish with a complete result
(exit 0) or fail with exactly one stderr line, no traceback and nothing on stdout. A fixed budget
(derandomized, 30 examples each) keeps them reproducible and a few seconds long in CI."""
from __future__ import annotations

import json
import math
import shutil

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings, strategies as st

from test_hostile_inputs import error_lines, outcome, run_cli

BUDGET = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# Whole numbers refused whatever else is given: malformed, out of range, or too large to run.
HOSTILE_NUMBERS = ["", "0", "-1", "1.5", "x", "1e3", "１０", " 7", "1_0", str(10**13), str(2**64)]


def _option(name: str, valid) -> st.SearchStrategy:
    return st.one_of(st.just([]), st.builds(lambda value: [name, str(value)], st.one_of(valid,
                                                                                        st.sampled_from(HOSTILE_NUMBERS))))


EVALUATE_ARGS = st.tuples(
    st.one_of(st.builds(lambda b: ["--behaviour", b], st.sampled_from(["random", "local_search", "oracle", "nope",
                                                                        "x:Y", "", "hostile.py:Nothing"])),
              st.builds(lambda m: ["--mix", m], st.sampled_from(["random:2,local_search:1", "random:0", "random:x",
                                                                   "local_search:1000000000", "random:2,,", ":3"]))),
    _option("--group-size", st.integers(1, 4)),
    _option("--episodes", st.integers(1, 4)),
    _option("--iterations", st.integers(1, 12)),
    _option("--grid", st.sampled_from(["5", "6x7", "2", "0x5", "5x", "100000"])),
    _option("--seed", st.integers(0, 2**63)),
    _option("--complexity", st.sampled_from(["3", "2:5", "5:2", "0", "1:99"])),
    st.one_of(st.just([]), st.builds(lambda p, v: ["--protocol", p, "--protocol-param", v],
                                     st.sampled_from(["broadcast", "wisdom", "nope"]),
                                     st.sampled_from(["memory=true", "memory=maybe", "x=1", "=", "memory=true"]))),
    st.sampled_from([[], ["--json"]]),
)


@BUDGET
@given(EVALUATE_ARGS)
def test_evaluate_finishes_or_fails_in_one_line(args):
    argv = ["evaluate", "--profile", "paper"] + [part for option in args for part in option]
    status, stdout, stderr = run_cli(*argv)
    assert outcome(status, stderr, status) == "clean", (argv, stderr)
    if status == 0:
        if "--json" in argv:
            record = json.loads(stdout, parse_constant=lambda text: (_ for _ in ()).throw(ValueError(text)))
            assert math.isfinite(record["upsilon"])
        else:
            assert "Υ" in stdout
    else:
        assert stdout == "" and len(error_lines(stderr)) == 1, (argv, stderr)


def _toml(value) -> str:
    """A TOML value for the generated specs' types (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"


ODD = st.sampled_from([-1, 0, 1.5, "2", "x", True, [], 10**9, float("nan")])
SPECS = st.fixed_dictionaries({
    "seed": st.one_of(st.integers(0, 100), ODD),
    "profile": st.sampled_from(["paper", "sound", "bogus"]),
    "episodes": st.one_of(st.integers(1, 3), ODD),
    "iterations": st.one_of(st.integers(2, 8), ODD),
    "factors": st.fixed_dictionaries({
        "grid": st.lists(st.one_of(st.sampled_from(["5", "6x6", 5]), ODD), min_size=0, max_size=2),
        "group_size": st.lists(st.one_of(st.integers(1, 3), ODD), min_size=0, max_size=2)}),
    "groups": st.fixed_dictionaries({
        "behaviours": st.lists(st.sampled_from(["random", "local_search", "nope", "x:Y", 3]), min_size=0, max_size=2,
                               unique_by=str)}),
})


@BUDGET
@given(SPECS)
def test_sweep_finishes_completely_or_fails_in_one_line(tmp_path_factory, spec):
    directory = tmp_path_factory.mktemp("spec")
    text = "\n".join(f"{key} = {_toml(value)}" for key, value in spec.items() if not isinstance(value, dict))
    for table in ("factors", "groups"):
        text += f"\n[{table}]\n" + "\n".join(f"{key} = {_toml(value)}" for key, value in spec[table].items())
    (directory / "spec.toml").write_text(text + "\n")
    out = directory / "out"
    status, stdout, stderr = run_cli("sweep", str(directory / "spec.toml"), "--out", str(out), "--executor", "serial")
    assert outcome(status, stderr, status) == "clean", (text, stderr)
    if status == 0:  # complete: every planned row is in the dataset
        planned = json.loads((out / "sweep.json").read_text())["plan"]["rows"]
        assert pq.read_table(out / "dataset").num_rows == planned and "sweep " in stdout
    else:
        assert stdout == "" and len(error_lines(stderr)) == 1, (text, stderr)
    shutil.rmtree(directory)
