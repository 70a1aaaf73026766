"""The analysis reads a lean copy of a dataset (issue 42 point 3): the columns it uses, text as categories, level
by level. Its tables equal those of the whole rows read as they are on disk, and every column an analysis module
names is one it loads."""
import ast
import json
import math
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis_data import sweep
from collective.analysis.base import levels
from collective.analysis.dataset import ANALYSIS_COLUMNS, Dataset, load_dataset
from collective.analysis.factors import DEFAULT_BY
from collective.analysis.report import analyse, format_analysis
from collective.config import EvaluationConfig

ROOT = Path(__file__).parent.parent


def whole_rows(path: Path) -> pd.DataFrame:
    """Every column of every chunk, text as pandas strings: the rows as they are on disk (the loader before the
    lean copy), with the environment's seed word read off `spawn_key` as the loader does."""
    table = pq.read_table(sorted((path / "dataset").glob("part-*.parquet")))
    frame = table.drop_columns(["spawn_key"]).to_pandas()
    frame["seed_word"] = [key[0] for key in table.column("spawn_key").to_pylist()]
    return frame


def differences(a, b, path=""):
    """Where two parsed JSON reports differ (numbers within 1e-12 relative count as equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        same = a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1, abs(a), abs(b))
        return [] if same else [f"{path}: {a} vs {b}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


@pytest.mark.parametrize("name", ["tiny", "sham"])
def test_the_lean_rows_give_the_tables_of_the_whole_rows(tmp_path_factory, name):
    path = sweep(tmp_path_factory.getbasetemp(), name)
    lean = load_dataset([path])
    whole = Dataset(rows=whole_rows(path), sources=lean.sources)
    assert set(lean.rows.columns) < set(whole.rows.columns)  # the lean copy leaves columns on disk
    assert all(isinstance(lean.rows[c].dtype, pd.CategoricalDtype)
               for c in lean.rows.columns if pd.api.types.is_string_dtype(whole.rows[c]))
    reports = [json.loads(format_analysis(analyse(dataset, list(DEFAULT_BY)), "json")) for dataset in (lean, whole)]
    assert differences(*reports) == []


def test_a_factor_left_on_disk_is_loaded_when_asked_for(tmp_path_factory):
    path = sweep(tmp_path_factory.getbasetemp(), "tiny")
    assert "q_alpha" not in load_dataset([path]).rows
    table = analyse(load_dataset([path], factors=["q_alpha"]), ["q_alpha"]).tables["upsilon"].frame
    assert list(table.columns[:2]) == ["q_alpha", "grid"]


def test_every_column_an_analysis_module_names_is_loaded(tmp_path_factory):
    path = sweep(tmp_path_factory.getbasetemp(), "tiny")
    on_disk = set(pq.read_schema(next((path / "dataset").glob("part-*.parquet"))).names)
    columns = (on_disk | {f.name for f in fields(EvaluationConfig)}) - {"spawn_key"}
    named = set()
    for module in [*(ROOT / "collective" / "analysis").glob("*.py"), *(ROOT / "dashboards").glob("*.py")]:
        named |= {node.value for node in ast.walk(ast.parse(module.read_text()))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in columns}
    assert named - set(ANALYSIS_COLUMNS) == set()


def test_levels_are_the_groupings_levels_one_at_a_time():
    generator = np.random.default_rng(7)
    rows = pd.DataFrame({"a": generator.choice(["x", "y", None], 500), "b": generator.integers(0, 4, 500),
                         "c": pd.Categorical(generator.choice(["p", "q"], 500), categories=["q", "p", "r"]),
                         "v": generator.normal(size=500)}, index=generator.permutation(1000)[:500])
    for keys, grouping in [("a", dict(sort=True)), (["a", "b"], dict(sort=True, dropna=False)),
                           (["c", "b"], dict(observed=True, sort=True)), ("b", dict(sort=False)),
                           (["a"], dict(dropna=False))]:
        expected = list(rows.groupby(keys, **grouping))
        got = list(levels(rows, keys, **grouping))
        assert len(got) == len(expected)
        for (key, part), (want, whole) in zip(got, expected):
            assert str(key) == str(want) and type(key) is type(want)
            pd.testing.assert_frame_equal(part, whole)
    where = rows["v"].to_numpy() > 0
    expected = list(rows[where].groupby(["a", "b"], sort=True, dropna=False))
    got = list(levels(rows, ["a", "b"], where, sort=True, dropna=False))
    assert [str(key) for key, _ in got] == [str(key) for key, _ in expected]
    for (_, part), (_, whole) in zip(got, expected):
        pd.testing.assert_frame_equal(part, whole)


def test_the_scaling_benchmark_grows_a_dataset_episodes_past_the_last(tmp_path_factory, tmp_path):
    """benchmarks/cluster_scaling.py analysis measures datasets made by repeating a sweep's rows: each copy's
    episodes past the last, so no row is a duplicate the loader would drop."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cluster_scaling", ROOT / "benchmarks" / "cluster_scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = sweep(tmp_path_factory.getbasetemp(), "sham")
    original = load_dataset([path]).rows
    grown = load_dataset([module.grown_dataset(path, 3 * len(original), tmp_path)])
    assert len(grown.rows) == 3 * len(original) and grown.notices == []
    assert grown.rows.groupby("cell")["episode"].nunique().eq(3 * original["episode"].nunique()).all()
    assert sorted(grown.rows["score"]) == sorted(list(original["score"]) * 3)
