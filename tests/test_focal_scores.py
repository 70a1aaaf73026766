"""The focal table: per-capita focal and background scores of mixed groups against homogeneous and isolated
groups, paired by (cell, episode) and stratified by cell, on synthetic datasets of known effect."""
import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from collective.analysis.focal import focal_scores
from collective.analysis.dataset import Dataset
from collective.analysis.report import analyse, format_analysis
from collective.config import EvaluationConfig
from collective.sweeps.plan import scores_by_behaviour_json

CELLS, EPISODES, EFFECT = 3, 400, 0.05
PLUGIN = "my_pkg.agents:Homing"  # an import path that does not exist


def group_rows(cell: int, scores: np.ndarray, label: str, behaviour: str, mix: str = "",
               by_behaviour: dict | None = None) -> pd.DataFrame:
    """One group's rows in one cell, with every column `analyse` reads; size 4 as the mixes below."""
    n = len(scores)
    by_behaviour = by_behaviour or {behaviour: scores}
    return pd.DataFrame({
        "cell": cell, "episode": np.arange(n), "group": label, "group_key": hash(label) % 1000,
        "behaviour": behaviour, "mix": mix, "protocol": "none", "protocol_params": "[]", "group_size": 4,
        "score": scores, "score_by_behaviour": [json.dumps({name: float(values[e]) for name, values in
                                                            by_behaviour.items()}) for e in range(n)],
        "k_raw": np.arange(n) % 7 + 1, "entropy_bits": 4.0, "env": "lambda_star", "grid": "4x4", "rows": 4,
        "cols": 4, "iterations": 10, "q_training_passes": 0, "kernel_seconds": 1e-3})


def mixed_dataset(a: str = "local_search", b: str = "random", seed: int = 7) -> pd.DataFrame:
    """3 cells x 400 episodes: homogeneous a and b (isolated) and the mix a:2,b:2. Each episode's
    environment sets a level shared by its groups, cells differ; b gains EFFECT in the mix, a nothing."""
    rng = np.random.default_rng(seed)
    frames = []
    for cell in range(CELLS):
        level = 0.3 + 0.1 * cell + rng.normal(0, 0.05, EPISODES)
        alone_a, alone_b = level + rng.normal(0, 0.05, EPISODES), level - 0.1 + rng.normal(0, 0.05, EPISODES)
        mixed_a = level + rng.normal(0, 0.05, EPISODES)
        mixed_b = level - 0.1 + EFFECT + rng.normal(0, 0.05, EPISODES)
        frames += [group_rows(cell, alone_a, a, a), group_rows(cell, alone_b, b, b),
                   group_rows(cell, (mixed_a + mixed_b) / 2, f"mix({a}:2,{b}:2)", "mix", f"{a}:2,{b}:2",
                              {a: mixed_a, b: mixed_b})]
    return pd.concat(frames, ignore_index=True)


def row(table: pd.DataFrame, focal: str, measure: str) -> pd.Series:
    match = table[(table["focal"] == focal) & (table["measure"] == measure)]
    assert len(match) == 1
    return match.iloc[0]


@pytest.mark.parametrize("b", ["random", PLUGIN])
def test_focal_table_finds_the_known_effect(b):
    analysis = analyse(Dataset(rows=mixed_dataset(b=b), sources=[]), ["group", "group_size"])
    table = analysis.tables["focal"].frame
    gained, unchanged = row(table, b, "focal"), row(table, "local_search", "focal")
    assert gained["baseline"] == b and gained["cells"] == CELLS and gained["pairs"] == CELLS * EPISODES
    assert gained["ci95_low"] < EFFECT < gained["ci95_high"] and gained["p_holm"] < 1e-6
    assert unchanged["ci95_low"] < 0 < unchanged["ci95_high"]
    assert gained["difference"] == pytest.approx(gained["score"] - gained["baseline_score"])
    # background of b is local search in the mix, the same comparison as local search's focal one
    background = row(table, b, "background")
    assert background[["difference", "p_holm"]].tolist() == unchanged[["difference", "p_holm"]].tolist()
    # the mix against homogeneous local search: half its members are b, about 0.1 - EFFECT lower
    assert row(table, b, "group")["difference"] == pytest.approx(-(0.1 - EFFECT) / 2, abs=0.01)
    assert (table["p_holm"] >= table["p_t"]).all()
    assert "Focal and background scores" in format_analysis(analysis, "table")


def test_datasets_without_per_behaviour_scores_skip_the_table_with_a_note():
    old = analyse(Dataset(rows=mixed_dataset().drop(columns="score_by_behaviour"), sources=[]), ["group"])
    assert "focal" not in old.tables and "score_by_behaviour" in old.skipped["focal"]
    text = format_analysis(old, "table")
    assert "Table focal skipped: the dataset has mixed groups but no score_by_behaviour column" in text
    assert json.loads(format_analysis(old, "json"))["focal"] == {"skipped": old.skipped["focal"]}
    homogeneous = mixed_dataset().query("mix == ''")
    analysis = analyse(Dataset(rows=homogeneous, sources=[]), ["group"])
    assert "focal" not in analysis.tables and not analysis.skipped


def test_stratified_estimate_matches_a_hand_computation():
    """2 cells x 3 episodes; the focal differences are 1, 2, 3 in cell 0 and 4, 4, 7 in cell 1."""
    differences = {0: [1.0, 2.0, 3.0], 1: [4.0, 4.0, 7.0]}
    frames = []
    for cell, d in differences.items():
        alone = np.array([10.0, 20.0, 30.0]) + cell
        partner = np.full(3, 5.0)
        frames += [group_rows(cell, alone, "b", "b"), group_rows(cell, partner, "a", "a"),
                   group_rows(cell, (partner + alone + d) / 2, "mix(a:1,b:1)", "mix", "a:1,b:1",
                              {"a": partner, "b": alone + d})]
    focal = row(focal_scores(pd.concat(frames, ignore_index=True)), "b", "focal")
    # cell 0: mean 2, sd 1, SE 1/sqrt(3); cell 1: mean 5, variance (1 + 1 + 4)/2 = 3, SE 1
    # stratified: mean (2 + 5)/2 = 3.5, SE sqrt(1/3 + 1)/2 = 1/sqrt(3), df 6 - 2 = 4, t(0.975, 4) = 2.776445
    se = 1 / math.sqrt(3)
    assert focal["difference"] == pytest.approx(3.5) and focal["std_error"] == pytest.approx(se)
    assert focal["ci95_low"] == pytest.approx(3.5 - 2.776445 * se, abs=1e-6)
    assert focal["ci95_high"] == pytest.approx(3.5 + 2.776445 * se, abs=1e-6)
    assert focal["p_t"] == pytest.approx(2 * stats.t.sf(3.5 / se, 4))
    # d_z over the 6 pairs: mean 3.5, variance (6.25 + 2.25 + 0.25 + 0.25 + 0.25 + 12.25)/5 = 4.3
    assert focal["cohen_dz"] == pytest.approx(3.5 / math.sqrt(4.3))
    assert (focal["cells"], focal["pairs"]) == (2, 6)


@pytest.mark.parametrize("mix", [None, "local_search:2,random:1,q_learning:1"])
def test_score_by_behaviour_column_is_json_of_each_rows_dict(mix):
    """The sweep's column, written for the whole unit at once, is json.dumps of each row's {behaviour: per-capita
    R̄} (the definition), also for numbers JSON spells apart (NaN, ±Infinity, -0.0, subnormals, 17 digits)."""
    config = EvaluationConfig(behaviour="mix", group_size=4, mix=mix) if mix else EvaluationConfig(group_size=4)
    awkward = [np.nan, np.inf, -np.inf, -0.0, 5e-324, 0.1 + 0.2, -1 / 3, 1e300, 7.0]
    rng = np.random.default_rng(3)
    agent_scores = rng.choice(awkward + list(rng.normal(size=5)), size=(40, 4))
    run = SimpleNamespace(mean_rewards=agent_scores.mean(axis=1), agent_scores=agent_scores if mix else None)
    members = np.array(config.behaviours)
    expected = [json.dumps({name: float(row[members == name].mean()) for name in dict.fromkeys(config.behaviours)}
                           if mix else {config.behaviours[0]: float(score)}, separators=(",", ":"))
                for row, score in zip(agent_scores, run.mean_rewards)]
    assert scores_by_behaviour_json(config, run) == expected
    assert scores_by_behaviour_json(config, SimpleNamespace(mean_rewards=np.empty(0), agent_scores=None)) == []
