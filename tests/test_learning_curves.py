"""Learning curves, sample efficiency and sharing (issue 21 points 3-4) on hand-built frames with a set curve:
kept tables (learner_training pretrained) whose Υ at each number of training episodes is known, a local-search
reference and shared tables that pool perfectly (or not at all)."""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from collective.analysis.learning import (add_learning_tables, episodes_to_reach, learning_curves, sample_efficiency,
                                         sharing_table)
from collective.analysis.base import Analysis
from collective.sweeps.spec import SpecError, load_spec, parse_spec
from collective.dashboards.figures import FigureOptions, _group_types, _training_curves

LEVELS = (0, 10, 30, 100, 300, 1000)  # training episodes (0: q_training_passes 0, the untrained table)
CURVE = dict(zip(LEVELS, (0.0, 0.1, 0.2, 0.3, 0.45, 0.5)))  # set Υ of an independent learner's table
LOCAL_SEARCH = 0.5  # so 0.8 of it, 0.4, is crossed between 100 and 300: 100 + (0.1 / 0.15) x 200
CROSSING = 100 + 0.1 / 0.15 * 200
RANDOM, BEST = -0.1, 0.9  # constant references: accuracy = Υ + 0.1
SEEDS, EPISODES, GRID = range(4), 60, "10x10"


def set_curve(n: float) -> float:
    """The set curve, linear between its levels (the shared table at G x n reads it there)."""
    return float(np.interp(n, LEVELS, list(CURVE.values())))


def frame(group, behaviour, protocol, size, seed, level, scores):
    """Rows of one sweep cell: cells differ per level and seed (as real sweeps' cells do), shared by groups."""
    return pd.DataFrame(dict(
        group=group, behaviour=behaviour, mix="", protocol=protocol, protocol_params="{}", group_size=size,
        seed=seed, cell=1000 * level + size, episode=np.arange(len(scores)), score=scores, iterations=100,
        q_training_passes=level, training_episodes=max(level, 1), learning_protocol="held_out",
        learner_training="pretrained", grid=GRID, upsilon_best=BEST, k_raw=5, entropy_bits=13.3, env="lambda_star",
        kernel_seconds=0.01, rows=10, cols=10))


def dataset(seed=0, pooling=1.0, local_search=True, sizes=(1, 10)) -> pd.DataFrame:
    """Per level, seed and size: random, local search (when asked), q_learning with the set curve, and (size > 1)
    a shared table scoring the set curve at (1 + pooling x (G - 1)) x n: pooling 1 pools perfectly (a shared
    table at n equals an independent one at G x n), 0 not at all. Each table (seed) has its own offset (sd
    0.02), each environment its difficulty (sd 0.2, shared by the groups of the cell), each score noise 0.05."""
    rng = np.random.default_rng(seed)
    frames = []
    for level in LEVELS:
        for size in sizes:
            for table_seed in SEEDS:
                difficulty = rng.normal(0, 0.2, EPISODES)
                frames.append(frame("random", "random", "none", size, table_seed, level, np.full(EPISODES, RANDOM)))
                if local_search:
                    frames.append(frame("local_search", "local_search", "none", size, table_seed, level,
                                        LOCAL_SEARCH + difficulty + rng.normal(0, 0.05, EPISODES)))
                means = {"q_learning": (CURVE[level], "none")}
                if size > 1:
                    means["q_learning+shared_q"] = (set_curve((1 + pooling * (size - 1)) * level), "shared_q")
                for group, (mean, protocol) in means.items():
                    scores = mean + rng.normal(0, 0.02) + difficulty + rng.normal(0, 0.05, EPISODES)
                    frames.append(frame(group, "q_learning", protocol, size, table_seed, level, scores))
    return pd.concat(frames, ignore_index=True)


def test_curves_recover_the_set_curve_with_table_clustered_intervals():
    """Each level's Υ interval covers the set value, clustered by table (4 per level); accuracy is Υ + 0.1."""
    curves = learning_curves(dataset())
    single = curves[(curves["group"] == "q_learning") & (curves["group_size"] == 1)]
    assert list(single["training_episodes"]) == list(LEVELS)
    assert (single["ci_unit"] == "table").all() and (single["tables"] == len(SEEDS)).all()
    for _, point in single.iterrows():
        assert point["ci95_low"] < CURVE[point["training_episodes"]] < point["ci95_high"], point
        assert point["accuracy"] == pytest.approx(point["upsilon"] + 0.1, abs=1e-9)
        assert point["accuracy_ci95_low"] < point["accuracy"] < point["accuracy_ci95_high"]


def test_curves_never_pool_environment_classes():
    """Two environment classes (here two K ranges) of one grid give two curves, each with its own values: a curve
    pooled over them would sit between the two, 0.15 from either class's set value."""
    easy, hard = dataset(seed=1).assign(k_max=10), dataset(seed=2).assign(k_max=23)
    hard["score"] -= np.where(hard["behaviour"] == "random", 0.0, 0.3)
    hard["cell"] += 10**6
    curves = learning_curves(pd.concat([easy, hard], ignore_index=True))
    single = curves[(curves["group"] == "q_learning") & (curves["group_size"] == 1)]
    assert sorted(single["k_max"].unique()) == [10, 23] and len(single) == 2 * len(LEVELS)
    for _, point in single.iterrows():
        truth = CURVE[point["training_episodes"]] - (0.3 if point["k_max"] == 23 else 0.0)
        assert abs(point["upsilon"] - truth) < 0.08, point  # pooled, it would be 0.15 off


def test_kept_tables_varying_training_episodes_get_the_curve_table():
    """Pretrained tables trained on n episodes with n passes each form one curve per group (the held-out slope
    keys curves by passes, so every level of them was a curve of one level and the table was skipped)."""
    analysis = Analysis()
    add_learning_tables(analysis, dataset())
    assert "learning" not in analysis.skipped and "learning_curves" in analysis.tables and "sharing" in analysis.tables
    efficiency = analysis.tables["sample_efficiency"].frame
    assert set(efficiency["group"]) == {"q_learning", "q_learning+shared_q"}


def test_sample_efficiency_is_the_interpolated_crossing_of_the_set_curve():
    """Independent learners reach 0.8 of local search between 100 and 300 at the set crossing; at fraction 1
    the curve (0.5 at 1000, less its noise) may or may not reach, but an unreachable fraction is 'not reached'
    and a dataset without local search says so."""
    rows = dataset(seed=1)
    curves = learning_curves(rows)
    efficiency = sample_efficiency(rows, curves).set_index(["group", "group_size"])
    row = efficiency.loc[("q_learning", 1)]
    assert row["status"] == "reached"
    assert row["training_episodes_to_reach"] == pytest.approx(CROSSING, rel=0.15)
    assert row["reached_by_band_high"] <= row["training_episodes_to_reach"] <= row["reached_by_band_low"]
    assert row["reached_by_band_high"] < CROSSING < row["reached_by_band_low"]
    low = rows.assign(score=np.where(rows["group"] == "q_learning", rows["score"] - 0.3, rows["score"]))
    unreached = sample_efficiency(low, learning_curves(low)).set_index(["group", "group_size"])
    assert unreached.loc[("q_learning", 1), "status"] == "not reached"
    assert math.isnan(unreached.loc[("q_learning", 1), "training_episodes_to_reach"])
    bare = dataset(local_search=False)
    assert (sample_efficiency(bare, learning_curves(bare))["status"] == "no local_search").all()


def test_episodes_to_reach_interpolates_and_starts_at_the_first_level():
    levels = np.array([0.0, 10, 30])
    assert episodes_to_reach(levels, np.array([0.0, 0.2, 0.6]), 0.4) == pytest.approx(20)
    assert episodes_to_reach(levels, np.array([0.5, 0.2, 0.6]), 0.4) == 0
    assert math.isnan(episodes_to_reach(levels, np.array([0.0, 0.2, 0.3]), 0.4))


def test_perfect_pooling_ties_at_the_same_experience_per_table_and_wins_per_agent():
    """A shared table that pools perfectly scores like an independent one with G x n episodes: the
    same_per_table difference covers 0, the same_per_agent one is positive where the curve still rises
    (paired: both groups play the cell's environments)."""
    table = sharing_table(dataset(seed=2))
    per_table = table[table["comparison"] == "same_per_table"].set_index("shared_training_episodes")
    assert list(per_table.index) == [10, 30, 100]  # G x n a level of the independent curve (0: same per agent)
    for _, row in per_table.iterrows():
        assert row["ci95_low"] < 0 < row["ci95_high"], row
        assert not row["paired"]  # different levels: different cells
    per_agent = table[table["comparison"] == "same_per_agent"].set_index("shared_training_episodes")
    assert per_agent["paired"].all()
    for level in (10, 30, 100):
        expected = set_curve(10 * level) - CURVE[level]
        row = per_agent.loc[level]
        assert row["ci95_low"] > 0 and row["ci95_low"] < expected < row["ci95_high"], row


def test_no_pooling_ties_per_agent_and_loses_per_table():
    """A shared table that learns no faster than one agent's own: same_per_agent covers 0, same_per_table is
    negative where the independent curve has risen further."""
    table = sharing_table(dataset(seed=3, pooling=0.0))
    per_agent = table[table["comparison"] == "same_per_agent"]
    assert ((per_agent["ci95_low"] < 0) & (0 < per_agent["ci95_high"])).all()
    per_table = table[table["comparison"] == "same_per_table"].set_index("shared_training_episodes")
    for level in (10, 30, 100):
        assert per_table.loc[level, "ci95_high"] < 0, per_table.loc[level]


def spec_source(**factors):
    return dict(seed=1, profile="sound", episodes=2, iterations=50, groups=dict(behaviours=["q_learning"]),
                factors=dict(grid=["5x5"], group_size=[1], **factors))


def test_training_episodes_factor_plays_each_level_once():
    """factors.training_episodes n: n held-out episodes, each played once; 0 the untrained table."""
    spec = parse_spec(spec_source(training_episodes=[0, 10]))
    assert [(cell.configs[0].training_episodes, cell.configs[0].q_training_passes) for cell in spec.cells] == \
        [(1, 0), (10, 10)]
    with pytest.raises(SpecError, match=r"factors.training_episodes\[1\]: must be a whole number >= 0"):
        parse_spec(spec_source(training_episodes=[10, -1]))
    clash = dict(spec_source(training_episodes=[10]), settings=dict(q_training_passes=100))
    with pytest.raises(SpecError, match="settings.q_training_passes: set by factors.training_episodes"):
        parse_spec(clash)


def test_the_curve_figure_has_a_panel_per_group_size_with_local_search():
    rows = dataset()
    spec = _training_curves(rows, _group_types(rows, {}), FigureOptions())
    axes = [ax for ax in spec.figure.axes if ax.get_visible()]
    assert [ax.get_title().replace("\n", " ") for ax in axes] == ["$G$ = 1, grid = 10x10, iterations = 100",
                                               "$G$ = 10, grid = 10x10, iterations = 100"]
    labels = {line.get_label() for line in axes[1].get_lines()}
    assert {"q_learning", "q_learning+shared_q", "local_search"} <= labels
    curve, = [line for line in axes[0].get_lines() if line.get_label() == "q_learning"]
    assert list(curve.get_xdata()) == list(LEVELS)
    one_level = rows[rows["q_training_passes"] == 10]
    assert _training_curves(one_level, _group_types(one_level, {}), FigureOptions()) is None


def test_the_learning_curves_experiment_plays_every_level_under_sound():
    spec = load_spec(Path(__file__).parent.parent / "experiments" / "learning_curves.toml")
    factors = [dict(cell.factors) for cell in spec.cells]
    levels = sorted((factor["training_episodes"], factor["group_size"]) for factor in factors)
    assert levels == sorted((n, g) for n in LEVELS for g in (1, 5, 10))
    learners = [config for cell in spec.cells for config in cell.configs if config and config.behaviour == "q_learning"]
    assert {(c.profile, c.learner_training, c.learner_state, (c.rows, c.cols)) for c in learners} == \
        {("sound", "pretrained", "window_signs", (10, 10))}


def test_rows_without_held_out_learners_give_empty_tables():
    """Rows from before held-out learning (no learning_protocol nor training_episodes): empty tables, no error."""
    rows = dataset().drop(columns=["learning_protocol", "training_episodes", "learner_training"])
    assert learning_curves(rows).empty and sharing_table(rows).empty
