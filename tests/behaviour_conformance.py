"""The conformance checks every behaviour plug-in must pass; `test_behaviours.py` applies them
to each registered behaviour, and a new plug-in gets them by registering."""
import numpy as np

from collective.config import EvaluationConfig
from collective.evaluate import evaluate, run_episodes


def check_behaviour_conformance(name: str) -> None:
    config = EvaluationConfig.from_profile("paper", behaviour=name, group_size=3, rows=6, cols=8,
                                           iterations=30, episodes=12, seed=11, q_training_passes=5)
    run = run_episodes(config, np.arange(12), record=True)
    # shapes: (episodes,), (episodes, T+1, agents), (episodes, T, agents)
    assert run.mean_rewards.shape == (12,)
    assert run.positions.shape == (12, 31, 3) and run.rewards.shape == (12, 30, 3)
    # every reward in [-1, 1], every position on the grid, every move a king move (spec §1)
    assert np.all(np.abs(run.rewards) <= 1.0)
    assert run.positions.min() >= 0 and run.positions.max() < 48
    r, c = np.divmod(run.positions, 8)
    assert np.all(np.minimum(np.abs(np.diff(r, axis=1)) % 6, 6 - np.abs(np.diff(r, axis=1)) % 6) <= 1)
    assert np.all(np.minimum(np.abs(np.diff(c, axis=1)) % 8, 8 - np.abs(np.diff(c, axis=1)) % 8) <= 1)
    # starts are the environment's distinct start cells
    assert np.array_equal(run.positions[:, 0], run.environments.starts)
    assert all(len(set(row)) == 3 for row in run.environments.starts)
    # R̄ is the per-agent, per-iteration mean of the rewards (paper 003 Definition 2)
    assert np.allclose(run.mean_rewards, run.rewards.mean(axis=(1, 2)))
    # deterministic under a seed, and independent of how episodes are batched
    again = run_episodes(config, np.arange(12), record=True)
    assert np.array_equal(run.positions, again.positions)
    split = np.concatenate([run_episodes(config, np.arange(0, 5)).mean_rewards,
                            run_episodes(config, np.arange(5, 12)).mean_rewards])
    assert np.array_equal(split, run.mean_rewards)
    assert evaluate(config, batch_size=5).estimate == evaluate(config, batch_size=12).estimate
    # another seed gives other episodes
    other = run_episodes(config.with_changes(seed=12), np.arange(12)).mean_rewards
    assert not np.array_equal(other, run.mean_rewards)
