"""The fast batched kernel and the slow reference simulator, driven from the same seeds, must
produce identical trajectories and rewards, step by step (spec §1, §5)."""
import numpy as np
import pytest

from collective.config import EvaluationConfig
from collective.evaluate import run_episodes
from collective.reference_simulation import LearnerSettings, ReferenceWorld, reference_episode


def assert_lockstep(config: EvaluationConfig, behaviours: list[str], episodes: int = 4):
    run = run_episodes(config, np.arange(episodes), record=True, behaviours=behaviours)
    env = run.environments
    world = ReferenceWorld(config.rows, config.cols, config.iterations, config.observation_range,
                           config.reward_radius, config.coordination_threshold)
    learner = LearnerSettings(alpha=config.q_alpha, gamma=config.q_gamma, epsilon=config.q_epsilon,
                              q_initial=config.q_initial, training_passes=config.q_training_passes,
                              reward_scale=config.q_reward_scale)
    for e in range(episodes):
        positions, rewards = reference_episode(world, behaviours, env.good[e].tolist(), env.evil[e].tolist(),
                                               env.starts[e].tolist(), int(env.agent_seeds[e]), learner)
        for t, (expected, actual) in enumerate(zip(positions, run.positions[e])):
            assert list(actual) == expected, f"episode {e}: positions differ at t={t}"
        assert np.array_equal(np.array(rewards), run.rewards[e]), f"episode {e}: rewards differ"
        assert run.mean_rewards[e] == pytest.approx(np.mean(rewards), abs=1e-12)


SMALL = dict(rows=7, cols=6, iterations=40, episodes=4, q_training_passes=6)
GROUPS = [["random"] * 3, ["local_search"] * 4, ["oracle"] * 2, ["q_learning"] * 2, ["sarsa"] * 2,
          ["imitation"] * 3, ["q_learning", "sarsa", "local_search", "imitation", "oracle", "random"]]


@pytest.mark.parametrize("behaviours", GROUPS, ids=lambda g: "+".join(sorted(set(g))))
@pytest.mark.parametrize("variant", [
    dict(),
    dict(q_epsilon=0.2, q_initial=2.0, q_reward_scale=10.0),
    dict(observation_range=2, reward_radius=2, rows=9, cols=11),
    dict(coordination_threshold=2),
    dict(evil_pairing="independent", pattern_generator="ping_pong", k_min=None, k_max=None),
], ids=["default", "epsilon-optimistic", "range2-rect", "coordination", "independent-pingpong"])
def test_fast_kernel_matches_reference(behaviours, variant):
    settings = {**SMALL, **variant}
    profile_fields = {k: v for k, v in settings.items() if v is not None}
    config = EvaluationConfig.from_profile("paper", behaviour=behaviours[0], group_size=len(behaviours),
                                           **profile_fields)
    if settings.get("k_min", 0) is None:
        config = config.with_changes(k_min=None, k_max=None)
    assert_lockstep(config, behaviours)
