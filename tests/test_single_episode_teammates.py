"""The one-episode adapters with teammates and a protocol, `state()` and `render()`: the batched
adapters' options (tests/test_vector_teammates.py) one episode at a time."""
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import parallel_api_test  # noqa: E402

from collective.adapters import LambdaStarEnv, LambdaStarParallelEnv, LambdaStarVectorEnv  # noqa: E402
from collective.config import ConfigError  # noqa: E402
from adapter_checks import assert_frames_show_the_state, stepped_toward  # noqa: E402

SMALL = dict(rows=7, cols=7, iterations=6, profile="paper")
STAY = 4


def background_cells(env) -> list[int]:
    """The background agents' cells, sorted, from the full state."""
    counts = env.state()[4].ravel().astype(int)
    return sorted(np.repeat(np.arange(counts.size), counts).tolist())


@pytest.mark.parametrize("teammates", [dict(mix="local_search:2"), dict(mix="random:1,local_search:1", protocol="broadcast"),
                                       dict(render_mode="ansi")])
def test_the_apis_hold_with_teammates_protocols_and_render_modes(teammates):
    parallel_api_test(LambdaStarParallelEnv(group_size=2, **SMALL, **teammates), num_cycles=15)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(render fps|having a spec|infinity).*")  # unbounded under a protocol
        check_env(LambdaStarEnv(**SMALL, **teammates))


def test_broadcast_makes_background_local_searchers_follow_the_target_and_none_does_not():
    """Known answer (the batched adapters' test, episode by episode): under broadcast every member
    heads for the best cell any member reports, the target the focal agent is told; under protocol
    none the same searchers follow their own windows."""
    talking = LambdaStarEnv(mix="local_search:3", protocol="broadcast", **SMALL)
    silent = LambdaStarEnv(mix="local_search:3", **SMALL)
    side = 2 * talking.config.observation_range + 1
    assert talking.observation_space.shape == (side * side + 3,) and silent.observation_space.shape == (side * side,)
    followed = differed = 0
    for episode in range(8):
        heard, _ = talking.reset(seed=4) if episode == 0 else talking.reset()
        silent.reset(seed=4) if episode == 0 else silent.reset()
        assert heard[-3] == 1  # the focal agent is told a target
        [cell] = np.flatnonzero(talking.state()[3].ravel())
        target = (cell // 7 + int(heard[-2])) % 7 * 7 + (cell % 7 + int(heard[-1])) % 7
        state = talking.state().reshape(5, -1)
        before = background_cells(talking)
        assert before == background_cells(silent)  # the same episode and start cells
        talking.step(STAY)
        silent.step(STAY)
        if target == state[1].argmax() and state[0, target] == 1:  # one best cell: ⊕, everyone's target
            expected = sorted(stepped_toward(c, target, 7, 7) for c in before)
            assert background_cells(talking) == expected
            followed += 1
            differed += background_cells(silent) != expected
    assert followed >= 2 and differed >= 1  # the control: without the protocol some go elsewhere


def test_the_focal_rewards_and_observations_are_those_of_its_cells_beside_teammates():
    env = LambdaStarParallelEnv(group_size=2, mix="random:2", **SMALL)
    observations, infos = env.reset(seed=2)
    view = env.config.observation_range
    centre = (2 * view + 1) * view + view
    for t in range(SMALL["iterations"]):
        state = env.state()
        assert state.shape == env.state_space.shape == (5, 7, 7)
        assert state[3].sum() == 2 and state[4].sum() == 2
        focal = np.argwhere(state[3] > 0)
        assert sorted(observations[a][centre] for a in env.agents) == sorted(
            state[0][r, c] for r, c in focal for _ in range(int(state[3][r, c])))
        observations, rewards, *_ = env.step({a: (t + i) % 9 for i, a in enumerate(env.agents)})
    assert sorted(rewards.values()) == sorted(env.state()[0][r, c] for r, c in np.argwhere(env.state()[3] > 0)
                                              for _ in range(int(env.state()[3][r, c])))
    assert env.agents == []
    alone = LambdaStarParallelEnv(group_size=2, **SMALL)
    assert infos["agent_0"]["k"] == alone.reset(seed=2)[1]["agent_0"]["k"]  # the same episode's k


@pytest.mark.parametrize("teammates", [{}, dict(mix="local_search:2", protocol="broadcast")])
def test_one_episode_at_a_time_is_the_vector_adapters_batch_of_one(teammates):
    """Lock-step twins: the one-episode adapter (alone: the plain-Python scene) and the vector adapter
    with a batch of one episode (the stepping core) show the same state, observations and rewards,
    episode after episode."""
    for settings in (dict(SMALL, group_size=3), dict(SMALL, group_size=3, env="landscape", landscape_peaks=3)):
        one = LambdaStarParallelEnv(**settings, **teammates)
        batch = LambdaStarVectorEnv(episodes=1, **settings, **teammates)
        actions = np.random.default_rng(3).integers(0, 9, size=(2 * SMALL["iterations"], 3))
        observations, _ = one.reset(seed=7)
        batched, _ = batch.reset(seed=7)
        for step in actions:
            assert np.array_equal(one.state(), batch.state()[0])
            assert np.array_equal(np.stack(list(observations.values())), batched)
            if not one.agents:
                observations, _ = one.reset()
                batched, *_ = batch.step(step)  # NEXT_STEP autoreset: the next episode starts
                continue
            observations, rewards, *_ = one.step(dict(zip(one.agents, step)))
            batched, batch_rewards, *_ = batch.step(step)
            assert np.array_equal(list(rewards.values()), batch_rewards)


@pytest.mark.parametrize("teammates", [{}, dict(mix="local_search:1", protocol="broadcast")])
def test_render_draws_the_grid_good_evil_and_the_agents(teammates):
    image_env = LambdaStarParallelEnv(group_size=2, render_mode="rgb_array", **SMALL, **teammates)
    text_env = LambdaStarParallelEnv(group_size=2, render_mode="ansi", **SMALL, **teammates)
    assert LambdaStarParallelEnv(group_size=2, **SMALL, **teammates).render() is None
    image_env.reset(seed=9)
    text_env.reset(seed=9)
    for t in range(3):
        actions = {a: (3 * t + i) % 9 for i, a in enumerate(image_env.agents)}
        image_env.step(actions)
        text_env.step(actions)
    assert_frames_show_the_state(image_env.state(), image_env.render(), text_env.render(), t=3, side=7)


def test_state_before_reset_and_steps_after_the_end_are_refused():
    for teammates in ({}, dict(mix="random:1")):
        env = LambdaStarEnv(**SMALL, **teammates)
        with pytest.raises(RuntimeError, match="reset"):
            env.state()
        env.reset(seed=0)
        for _ in range(SMALL["iterations"]):
            env.step(STAY)
        with pytest.raises(RuntimeError, match="reset"):
            env.step(STAY)


@pytest.mark.parametrize("make", [LambdaStarEnv, LambdaStarParallelEnv])
@pytest.mark.parametrize("settings, field", [(dict(render_mode="window"), "render_mode"),
                                             (dict(mix="q_learning:1"), "mix"),
                                             (dict(protocol="shouting"), "protocol"),
                                             (dict(protocol="broadcast"), "protocol"),  # one member: nobody to hear
                                             (dict(mix=3), "mix")])
def test_bad_teammates_and_render_modes_are_refused_naming_the_field(make, settings, field):
    with pytest.raises(ConfigError) as error:
        make(**SMALL, **settings)
    assert error.value.field == field
