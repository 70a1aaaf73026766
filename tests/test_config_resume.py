"""Rows of a sweep made before the config was split by concern (issue 44 item 3) resume unchanged.

tests/fixtures/sweep_before_config_split holds a tiny sweep (`sound` profile, learners, a protocol and its sham
control: most concerns of the config set) played by the code of 0fd329a, the last commit with one flat
`EvaluationConfig` body. Today's code must find nothing to play in it, write columns of the same names, order
and types (but the config fields added since, `ADDED`), and, played afresh, give the same rows, cell keys and
group keys.
"""
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from collective.sweeps.store import row_schema
from sweep_support import collective, rows

FIXTURE = Path(__file__).parent / "fixtures" / "sweep_before_config_split"
# config fields added since 0fd329a, each a row column off in the fixture's `sound` rows
ADDED = ("cpp_approach_position",)  # issue 45 item 5


def test_todays_columns_are_those_of_the_sweep_made_before():
    stored = pq.read_schema(next((FIXTURE / "sweep" / "dataset").glob("part-*.parquet")))
    assert [(f.name, f.type) for f in row_schema() if f.name not in ADDED] == [(f.name, f.type) for f in stored]


def test_a_sweep_made_before_resumes_with_nothing_to_play(tmp_path):
    out = tmp_path / "sweep"
    shutil.copytree(FIXTURE / "sweep", out)
    result = collective("sweep", str(FIXTURE / "spec.toml"), "--out", str(out), "--executor", "serial")
    assert result.returncode == 0, result.stderr
    assert "15 rows (0 new in 0 chunks, 15 resumed from 1 chunks)" in result.stdout
    stored = sorted((FIXTURE / "sweep" / "dataset").glob("part-*.parquet"))
    assert [p.name for p in sorted((out / "dataset").glob("part-*.parquet"))] == [p.name for p in stored]
    assert rows(out / "dataset").equals(rows(FIXTURE / "sweep" / "dataset"))


def test_a_fresh_sweep_gives_the_rows_and_keys_of_the_sweep_made_before(tmp_path):
    out = tmp_path / "sweep"
    result = collective("sweep", str(FIXTURE / "spec.toml"), "--out", str(out), "--executor", "serial")
    assert result.returncode == 0, result.stderr
    fresh, stored = rows(out / "dataset"), rows(FIXTURE / "sweep" / "dataset")
    assert not fresh[list(ADDED)].any().any()
    fresh = fresh.drop(columns=list(ADDED))
    assert list(fresh.columns) == list(stored.columns)
    assert fresh.equals(stored)
    new, old = (json.loads((path / "sweep.json").read_text()) for path in (out, FIXTURE / "sweep"))
    new["columns"] = [name for name in new["columns"] if name not in ADDED]
    for part in ("groups", "cells", "plan", "columns"):
        assert new[part] == old[part], part
