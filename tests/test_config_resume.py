"""Rows of a sweep made before the config was split by concern (issue 44 item 3) resume unchanged.

tests/fixtures/sweep_before_config_split holds a tiny sweep (`sound` profile, learners, a protocol and its sham
control: most concerns of the config set) played by the code of 0fd329a, the last commit with one flat
`EvaluationConfig` body. Today's code must write columns of the same names, order and types (but the config fields
added since, `CONFIG_ADDED`, each off in the fixture's rows, and the columns added since, `training_runs` and
`training_run`, after them) and, played afresh, give the same rows, cell keys and group
keys, but for what issue 45 item 3 changed on purpose: `sound` learners that keep tables now train five table sets
per cell, so the fixture's cell (it holds a kept-table Q-learner) has a new key, is played again on resuming, and
its Q-learner's episodes 1 and 2 are played by runs 1 and 2 (episode 0 by run 0, the one set trained before).
"""
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from collective.sweeps.store import row_schema
from sweep_support import collective, rows

FIXTURE = Path(__file__).parent / "fixtures" / "sweep_before_config_split"


CONFIG_ADDED = ("cpp_approach_position",)  # config fields added since 0fd329a, each off in `sound` (issue 45 item 5)
ADDED = [("training_runs", pa.int64()), ("training_run", pa.int64())]  # issue 45 item 3


def test_todays_columns_are_those_of_the_sweep_made_before_then_the_training_runs():
    stored = pq.read_schema(next((FIXTURE / "sweep" / "dataset").glob("part-*.parquet")))
    assert [(f.name, f.type) for f in row_schema() if f.name not in CONFIG_ADDED] == \
        [(f.name, f.type) for f in stored] + ADDED


def test_a_sweep_made_before_plays_its_kept_table_cell_again_without_mixing_the_two(tmp_path):
    out = tmp_path / "sweep"
    shutil.copytree(FIXTURE / "sweep", out)
    result = collective("sweep", str(FIXTURE / "spec.toml"), "--out", str(out), "--executor", "serial")
    assert result.returncode == 0, result.stderr
    assert "15 rows (15 new in 1 chunks)" in result.stdout
    resumed = rows(out / "dataset")
    assert len(resumed) == 15 and (resumed["training_runs"] == 5).all()


def test_a_fresh_sweep_gives_the_rows_and_keys_of_the_sweep_made_before_but_the_learners_runs(tmp_path):
    out = tmp_path / "sweep"
    result = collective("sweep", str(FIXTURE / "spec.toml"), "--out", str(out), "--executor", "serial")
    assert result.returncode == 0, result.stderr
    fresh, stored = rows(out / "dataset"), rows(FIXTURE / "sweep" / "dataset")
    assert not fresh[list(CONFIG_ADDED)].any().any()
    fresh = fresh.drop(columns=list(CONFIG_ADDED))
    assert list(fresh.columns) == list(stored.columns) + [name for name, _ in ADDED]
    learner = (stored["behaviour"] == "q_learning").to_numpy()
    fresh, stored = fresh[stored.columns].drop(columns="cell"), stored.drop(columns="cell")  # the cell's key moved
    assert fresh[~learner].equals(stored[~learner])
    assert fresh[learner].drop(columns="score").equals(stored[learner].drop(columns="score"))
    assert fresh[learner]["episode"].tolist() == [0, 1, 2]
    assert fresh[learner]["score"].iloc[0] == stored[learner]["score"].iloc[0]  # run 0: the one table set of before
    new, old = (json.loads((path / "sweep.json").read_text()) for path in (out, FIXTURE / "sweep"))
    assert new["groups"] == old["groups"]
    assert [cell["factors"] for cell in new["cells"]] == [cell["factors"] for cell in old["cells"]]
    assert [name for name in new["columns"] if name not in CONFIG_ADDED] == old["columns"] + [name for name, _ in ADDED]
