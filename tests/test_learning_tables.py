"""The learning tables (issue 14 point 6) on hand-built datasets with a known slope: skill on unseen test
episodes against novel training episodes (held-out learning), apart from replays of the test episode."""
import numpy as np
import pandas as pd
import pytest

from collective.analysis.learning import held_out_learning, replay_curves
from collective.analysis.dataset import Dataset
from collective.analysis.report import analyse

CELLS = range(6)
EPISODES = 50
ITERATIONS = 200
LEVELS = (1, 2, 5, 10)  # training_episodes
SLOPES = {20: 0.01, 40: 0.02}  # q_training_passes -> Υ gained per novel training episode
RANDOM, ORACLE = -0.1, 0.9  # constant reference scores: accuracy = score + 0.1, its slope the Υ slope


def frame(group, behaviour, scores, cell, passes=0, protocol="held_out", novel=1):
    return pd.DataFrame(dict(
        group=group, behaviour=behaviour, mix="", protocol="none", protocol_params="{}", group_size=1, seed=7,
        cell=cell, episode=np.arange(len(scores)), score=scores, iterations=ITERATIONS, q_training_passes=passes,
        learning_protocol=protocol, training_episodes=novel))


def dataset(seed=0) -> pd.DataFrame:
    """One 'sweep' per level of training_episodes on the same environments: each environment has its own
    difficulty (sd 0.2, shared by every level, as paired test episodes are), the learners gain SLOPES[passes]
    per novel episode plus noise (sd 0.05); random and oracle play every level's cells."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.3, 0.2, (len(CELLS), EPISODES))  # (cells, episodes)
    frames = []
    for novel in LEVELS:
        for cell in CELLS:
            frames.append(frame("random", "random", np.full(EPISODES, RANDOM), cell, novel=novel))
            frames.append(frame("oracle", "oracle", np.full(EPISODES, ORACLE), cell, novel=novel))
            for passes, slope in SLOPES.items():
                scores = difficulty[cell] + slope * novel + rng.normal(0, 0.05, EPISODES)
                frames.append(frame("q_learning", "q_learning", scores, cell, passes, novel=novel))
    return pd.concat(frames, ignore_index=True)


def test_held_out_slope_recovers_the_known_gain_per_novel_episode():
    """Each number of passes is its own curve; its slope (and the accuracy slope, the same here) is the
    known gain per novel episode, within a CI that covers it; a slope against passes x T would be flat."""
    slopes, points = held_out_learning(dataset())
    assert slopes["paired"].all()  # every level played the same test episodes
    slopes = slopes.set_index("q_training_passes")
    assert list(slopes.index) == [20, 40]
    for passes, slope in SLOPES.items():
        row = slopes.loc[passes]
        assert row["ci95_low"] < slope < row["ci95_high"], row
        assert row["upsilon_per_novel_episode"] == pytest.approx(slope, abs=0.002)
        assert row["accuracy_per_novel_episode"] == pytest.approx(row["upsilon_per_novel_episode"], abs=1e-9)
        assert row["p"] < 1e-6 and row["environments"] == len(CELLS) * EPISODES
        assert row["novel_episodes"] == "1,2,5,10"
    curve = points[points["q_training_passes"] == 20]
    assert list(curve["novel_episodes"]) == list(LEVELS)
    assert list(curve["novel_steps"]) == [n * ITERATIONS for n in LEVELS]


def test_no_gain_gives_a_slope_whose_interval_covers_zero():
    """Seeded: the 95% intervals of both curves cover 0 once the gain is taken out."""
    rows = dataset(seed=3)
    learners = rows["group"] == "q_learning"
    gains = rows.loc[learners, "q_training_passes"].map(SLOPES) * rows.loc[learners, "training_episodes"]
    rows.loc[learners, "score"] -= gains  # the same learners, learning nothing
    slopes, _ = held_out_learning(rows)
    assert ((slopes["ci95_low"] < 0) & (0 < slopes["ci95_high"])).all()


def test_only_environments_played_at_every_level_count():
    """Dropping the hardest test episodes from the most trained level alone would bias the slope upwards;
    the table pairs levels on the environments they share instead."""
    rows = dataset()
    hard = (rows["training_episodes"] == 10) & (rows["group"] == "q_learning") & (rows["episode"] < 10)
    slopes, _ = held_out_learning(rows[~hard])
    assert (slopes["environments"] == len(CELLS) * (EPISODES - 10)).all()
    for passes, slope in SLOPES.items():
        row = slopes.set_index("q_training_passes").loc[passes]
        assert row["ci95_low"] < slope < row["ci95_high"]


def test_replay_learners_go_to_their_own_table():
    """Learners that replay the test episode never enter the held-out slope; with two pass levels they get
    the replay table; analyse says why `learning` is missing."""
    rng = np.random.default_rng(1)
    frames = []
    for passes in (10, 50):
        for cell in CELLS:
            frames.append(frame("random", "random", np.full(EPISODES, RANDOM), cell, protocol="replay"))
            frames.append(frame("oracle", "oracle", np.full(EPISODES, ORACLE), cell, protocol="replay"))
            frames.append(frame("q_learning", "q_learning", 0.1 + passes / 1000 + rng.normal(0, 0.05, EPISODES),
                                cell, passes, protocol="replay"))
    rows = pd.concat(frames, ignore_index=True)
    assert held_out_learning(rows)[0].empty
    curve = replay_curves(rows)
    assert list(curve["training_steps"]) == [10 * ITERATIONS, 50 * ITERATIONS]
    assert curve["gain_per_1000_replay_steps"].iloc[1] == pytest.approx(0.04 / (40 * ITERATIONS) * 1000, rel=0.3)
    analysis = analyse(Dataset(rows.assign(k_raw=5, entropy_bits=6.6, env="lambda_star", grid="10x10",
                                           kernel_seconds=0.01, rows=10, cols=10), []), ["group"])
    assert "learning" not in analysis.tables and "held_out" in analysis.skipped["learning"]
    assert "replay_learning" in analysis.tables


def test_levels_on_different_cells_are_independent_samples():
    """Sweeps that differ in training_episodes play different cells: nothing to pair, so every test episode
    counts, and the slope is still the known one."""
    rows = dataset(seed=5)
    rows["cell"] = rows["cell"] + 100 * rows["training_episodes"]  # each level its own cells, as in real sweeps
    slopes, _ = held_out_learning(rows)
    assert not slopes["paired"].any() and (slopes["environments"] == len(LEVELS) * len(CELLS) * EPISODES).all()
    for passes, slope in SLOPES.items():
        row = slopes.set_index("q_training_passes").loc[passes]
        assert row["ci95_low"] < slope < row["ci95_high"]
