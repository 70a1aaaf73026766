"""`collective evaluate` of a mixed group gives each behaviour's own per-capita Υ (its agents' mean R̄) with its
interval, under the group's row and in `--json`'s `upsilon_by_behaviour`.

Known answers: without a protocol, at coordination threshold 1, agents do not affect each other's rewards, so
agent 0's behaviour scores in the mix exactly what it scores alone (the same streams and start), whatever the
others are; a random agent scores about nothing (⊕ and ⊖ are symmetric under the sound profile); and the
behaviours' scores, weighted by their agents, are the group's Υ.
"""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

import numpy as np

from collective import api
from collective.cli import main
from collective.evaluation.runs import scores_by_behaviour

SETTINGS = dict(rows=10, cols=10, iterations=50, episodes=300, seed=3)


def test_each_behaviour_of_a_mix_scores_its_own_agents():
    record = api.evaluate(mix="local_search:1,random:3", **SETTINGS)
    parts = record["upsilon_by_behaviour"]
    assert list(parts) == ["local_search", "random"] and [p["agents"] for p in parts.values()] == [1, 3]
    alone = api.evaluate("local_search", group_size=1, **SETTINGS)
    assert parts["local_search"]["upsilon"] == alone["upsilon"]
    assert parts["local_search"]["ci95_low"] == pytest.approx(alone["ci95_low"], abs=1e-12)
    assert parts["random"]["ci95_low"] < 0 < parts["random"]["ci95_high"]
    assert parts["local_search"]["ci95_low"] > 0.3
    weighted = (parts["local_search"]["upsilon"] + 3 * parts["random"]["upsilon"]) / 4
    assert weighted == pytest.approx(record["upsilon"], abs=1e-12)


def test_a_homogeneous_group_has_no_rows_by_behaviour():
    assert api.evaluate("local_search", group_size=2, **{**SETTINGS, "episodes": 20})["upsilon_by_behaviour"] is None


def test_the_table_and_json_show_them(capsys):
    argv = ["evaluate", "--mix", "random:2,local_search:1", "--grid", "10", "--iterations", "50", "--episodes", "300",
            "--seed", "3"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    group = next(i for i, line in enumerate(lines) if line.startswith("random:2,local_search:1"))
    random_row, searcher_row = lines[group + 1].split(), lines[group + 2].split()
    assert random_row[:2] == ["random", "2"] and searcher_row[:2] == ["local_search", "1"]
    assert main([*argv, "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)["upsilon_by_behaviour"]
    assert searcher_row[2] == f"{parts['local_search']['upsilon']:+.4f}"
    assert all(math.isfinite(part["ci95_high"]) for part in parts.values())


def test_learners_in_a_mix_have_the_interval_across_training_runs_of_their_own_group():
    """Q-learners beside random agents, without a protocol, train and play as a group of their own: their
    per-capita Υ and its interval, clustered across the 5 training runs as the group's is, are those of the
    homogeneous pair."""
    settings = {**SETTINGS, "episodes": 200, "training_runs": 5}
    learners = api.evaluate(mix="q_learning:2,random:2", **settings)["upsilon_by_behaviour"]["q_learning"]
    pair = api.evaluate("q_learning", group_size=2, **settings)
    assert learners["upsilon"] == pair["upsilon"]
    assert (learners["ci95_low"], learners["ci95_high"]) == pytest.approx((pair["ci95_low"], pair["ci95_high"]),
                                                                          abs=1e-12)


@pytest.mark.parametrize("behaviours", [["a", "b"] * 8 + ["a"], ["a", "b", "c"] * 5, ["a", "b"]])
def test_a_behaviours_mean_per_episode_has_the_bits_of_numpys_mean_of_its_agents_in_the_row(behaviours):
    """Rows written before a sweep resumes keep their bits: each behaviour's per-capita score is NumPy's mean of its
    agents' scores in the row, signed zeros included (a 2-D mean of the selected columns adds in another order from
    8 agents on, and moves the last bit of most rows: checked below for 9 and 8)."""
    members = np.array(behaviours)
    scores = np.random.default_rng(len(behaviours)).normal(size=(300, len(behaviours))) / 7
    scores[::5] = -0.0
    run = SimpleNamespace(agent_scores=scores, mean_rewards=scores.mean(axis=1))
    for name, means in scores_by_behaviour(behaviours, run).items():
        expected = np.array([row[members == name].mean() for row in scores])
        assert np.array_equal(means, expected) and np.array_equal(np.signbit(means), np.signbit(expected))
        if (members == name).sum() >= 8:
            assert not np.array_equal(scores[:, members == name].mean(axis=1), expected)
