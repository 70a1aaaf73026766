"""Property tests (Hypothesis) of the command line on generated input, hostile values mixed with valid
ones: `collective evaluate` arguments and `collective sweep` specs either finish with a complete result
(exit 0) or fail with exactly one stderr line, no traceback and nothing on stdout. A fixed budget
(derandomized, 30 examples each) keeps them reproducible and a few seconds long in CI."""
from __future__ import annotations

import json
import math
import shutil

import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, given, settings, strategies as st

from test_hostile_inputs import error_lines, outcome, run_cli

BUDGET = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# Whole numbers refused whatever else is given: malformed, out of range, or too large to run.
HOSTILE_NUMBERS = ["", "0", "-1", "1.5", "x", "1e3", "１０", " 7", "1_0", str(10**13), str(2**64)]


VALID_OPTIONS = {"--group-size": st.integers(1, 4), "--episodes": st.integers(1, 4), "--iterations": st.integers(1, 12),
                 "--grid": st.sampled_from(["5", "6x7"]), "--seed": st.integers(0, 2**63 - 1),
                 "--complexity": st.sampled_from(["3", "2:5"])}
HOSTILE_OPTIONS = {"--grid": st.sampled_from(["2", "0x5", "5x", "100000", "x"]),
                   "--complexity": st.sampled_from(["5:2", "0", "1:99", "a:b"]),
                   "--behaviour": st.sampled_from(["nope", "x:Y", "", "hostile.py:Nothing", "random:3"]),
                   "--mix": st.sampled_from(["random:0", "random:x", "local_search:1000000000", "random:2,,", ":3"]),
                   "--protocol-param": st.sampled_from(["memory=maybe", "x=1", "=", "memory"])}


@st.composite
def evaluate_args(draw) -> list[str]:
    """Valid arguments (random or local_search groups, maybe a protocol), then at most one option
    made hostile: a malformed or out-of-range number or name."""
    args = ["--behaviour", draw(st.sampled_from(["random", "local_search"]))]
    for option, values in VALID_OPTIONS.items():
        if draw(st.booleans()):
            args += [option, str(draw(values))]
    if draw(st.booleans()):
        args += ["--protocol", "broadcast", "--protocol-param", "memory=true"]
    hostile = draw(st.sampled_from([None, None, None, *VALID_OPTIONS, *HOSTILE_OPTIONS]))
    if hostile in ("--behaviour", "--mix"):
        args[:2] = [hostile, draw(HOSTILE_OPTIONS[hostile])]
    elif hostile in HOSTILE_OPTIONS:
        args += [hostile, draw(HOSTILE_OPTIONS[hostile])]
    elif hostile:
        args += [hostile, draw(st.sampled_from(HOSTILE_NUMBERS))]
    return args + draw(st.sampled_from([[], ["--json"]]))


@BUDGET
@given(evaluate_args())
def test_evaluate_finishes_or_fails_in_one_line(args):
    argv = ["evaluate", "--profile", "paper", *args]
    status, stdout, stderr = run_cli(*argv)
    event(f"exit {status}")
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


# Odd values: malformed, out of range, or too large to run (10**13 episodes need --yes)
ODD = st.sampled_from([-1, 0, 1.5, "2", "x", True, [], 10**13, 10**19, float("nan"), {"a": 1}])


@st.composite
def specs(draw) -> dict:
    """A small valid spec, then at most one value (or one list item) replaced by an odd one."""
    spec = {"seed": draw(st.integers(0, 100)), "profile": draw(st.sampled_from(["paper", "sound"])),
            "episodes": draw(st.integers(1, 3)), "iterations": draw(st.integers(4, 8)),
            "factors": {"grid": draw(st.lists(st.sampled_from(["5", "6x6", 7]), min_size=1, max_size=2, unique=True)),
                        "group_size": draw(st.lists(st.integers(1, 3), min_size=1, max_size=2, unique=True))},
            "groups": {"behaviours": draw(st.lists(st.sampled_from(["random", "local_search"]), min_size=1,
                                                   max_size=2, unique=True))}}
    where = draw(st.sampled_from([None, None, None, "seed", "profile", "episodes", "iterations", "grid", "group_size",
                                  "behaviours"]))
    odd = draw(ODD)
    if where in ("seed", "profile", "episodes", "iterations"):
        spec[where] = odd
    elif where:
        table = spec["groups" if where == "behaviours" else "factors"]
        table[where][draw(st.integers(0, len(table[where]) - 1))] = odd
    return spec


@BUDGET
@given(specs())
def test_sweep_finishes_completely_or_fails_in_one_line(tmp_path_factory, spec):
    directory = tmp_path_factory.mktemp("spec")
    text = "\n".join(f"{key} = {_toml(value)}" for key, value in spec.items() if not isinstance(value, dict))
    for table in ("factors", "groups"):
        text += f"\n[{table}]\n" + "\n".join(f"{key} = {_toml(value)}" for key, value in spec[table].items())
    (directory / "spec.toml").write_text(text + "\n")
    out = directory / "out"
    status, stdout, stderr = run_cli("sweep", str(directory / "spec.toml"), "--out", str(out), "--executor", "serial")
    event(f"exit {status}")
    assert outcome(status, stderr, status) == "clean", (text, stderr)
    if status == 0:  # complete: every planned row is in the dataset
        planned = json.loads((out / "sweep.json").read_text())["plan"]["rows"]
        assert pq.read_table(out / "dataset").num_rows == planned and "sweep " in stdout
    else:
        assert stdout == "" and len(error_lines(stderr)) == 1, (text, stderr)
    shutil.rmtree(directory)
