"""The vector adapters with teammates and a protocol, `state()` and `render()` (issue 24 point 3)."""
import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.wrappers.vector import RecordEpisodeStatistics  # noqa: E402

from collective.adapters.vector import LambdaStarBatchedParallelEnv, LambdaStarVectorEnv  # noqa: E402
from collective.config import ConfigError  # noqa: E402
from adapter_checks import assert_frames_show_the_state, stepped_toward  # noqa: E402

SMALL = dict(rows=7, cols=7, iterations=6, profile="paper", episodes=8)
STAY = 4


def background_cells(env) -> list[list[int]]:
    """Each episode's background agents' cells, sorted, from the full state."""
    counts = env.state()[:, 4].reshape(env.episodes, -1).astype(int)
    return [sorted(np.repeat(np.arange(counts.shape[1]), row).tolist()) for row in counts]


def test_broadcast_makes_background_local_searchers_follow_the_target_and_none_does_not():
    """Known answer: under broadcast every member heads for the best cell any member reports, the
    target the focal agent is told; under protocol none the same searchers follow their own windows."""
    talking = LambdaStarVectorEnv(group_size=1, mix="local_search:3", protocol="broadcast", **SMALL)
    silent = LambdaStarVectorEnv(group_size=1, mix="local_search:3", **SMALL)
    heard, info = talking.reset(seed=4)
    silent.reset(seed=4)
    side = 2 * talking.config.observation_range + 1
    assert heard.shape == (8, side * side + 3) and silent.single_observation_space.shape == (side * side,)
    assert (heard[:, -3] == 1).all()  # every focal agent is told a target
    cells = info["cell"]
    targets = (cells // 7 + heard[:, -2].astype(int)) % 7 * 7 + (cells % 7 + heard[:, -1].astype(int)) % 7
    state = talking.state().reshape(8, 5, -1)
    good = state[:, 1].argmax(axis=1)
    # Episodes whose reported best is ⊕ itself (R = 1 at ⊕ only): one best cell, so every member is told
    # the same target (with ties each member draws its own among the best cells).
    told_good = np.flatnonzero((targets == good) & (state[np.arange(8), 0, good] == 1))
    assert told_good.size >= 2
    before = background_cells(talking)
    assert before == background_cells(silent)  # the same episodes and start cells
    expected = [sorted(stepped_toward(c, int(targets[e]), 7, 7) for c in before[e]) for e in told_good]
    talking.step(np.full(8, STAY))
    silent.step(np.full(8, STAY))
    assert [background_cells(talking)[e] for e in told_good] == expected
    # the control: without the protocol some of them go elsewhere
    assert [background_cells(silent)[e] for e in told_good] != expected


def test_the_focal_rewards_and_observations_are_those_of_its_cells():
    env = LambdaStarVectorEnv(group_size=2, mix="random:2", **SMALL)
    observations, info = env.reset(seed=2)
    view = env.config.observation_range
    centre = (2 * view + 1) * view + view
    state = env.state()
    rewards = state[:, 0].reshape(8, -1)
    assert np.array_equal(observations[:, centre], rewards[np.repeat(np.arange(8), 2), info["cell"]])
    assert (state[:, 3].sum(axis=(1, 2)) == 2).all() and (state[:, 4].sum(axis=(1, 2)) == 2).all()
    observations, step_rewards, *_ = env.step(np.arange(16) % 9)
    after = env.state()[:, 0].reshape(8, -1)
    assert np.array_equal(step_rewards, after[np.repeat(np.arange(8), 2), env._batches.cells().ravel()])


def test_render_draws_the_grid_good_evil_and_the_agents():
    env = LambdaStarVectorEnv(group_size=2, mix="local_search:1", render_mode="rgb_array", **SMALL)
    text = LambdaStarVectorEnv(group_size=2, mix="local_search:1", render_mode="ansi", **SMALL)
    env.reset(seed=9)
    text.reset(seed=9)
    for _ in range(3):
        actions = np.random.default_rng(0).integers(0, 9, 16)
        env.step(actions)
        text.step(actions)
    assert_frames_show_the_state(env.state()[0], env.render(), text.render(), t=3, side=7)


def test_batched_parallel_env_with_teammates_and_the_cleanrl_loop():
    batched = LambdaStarBatchedParallelEnv(group_size=2, mix="local_search:2", protocol="broadcast", **SMALL)
    observations, _ = batched.reset(seed=1)
    assert batched.agents == ["agent_0", "agent_1"] and observations["agent_1"].shape == (8, 9 + 3)
    assert batched.state().shape == (8, 5, 7, 7) == batched.state_space.shape
    env = RecordEpisodeStatistics(LambdaStarVectorEnv(group_size=1, mix="local_search:2", protocol="broadcast",
                                                      **SMALL))
    env.reset(seed=5)
    logged = 0
    for _ in range(SMALL["iterations"] + 1):
        *_, infos = env.step(np.full(8, STAY))
        logged += int(infos["_episode"].sum()) if "episode" in infos else 0
    assert logged == 8


@pytest.mark.parametrize("settings, field", [(dict(render_mode="window"), "render_mode"),
                                             (dict(mix="q_learning:1"), "mix"),
                                             (dict(protocol="shouting"), "protocol")])
def test_bad_teammates_and_render_modes_are_refused_naming_the_field(settings, field):
    with pytest.raises(ConfigError) as error:
        LambdaStarVectorEnv(group_size=1, **SMALL, **settings)
    assert error.value.field == field
