"""PettingZoo / Gymnasium adapters: API conformance, seeded determinism, and the same rewards as
the compiled kernel on the same environments (spec §1, §5, §9)."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import parallel_api_test  # noqa: E402

from collective.adapters import GridScene, LambdaStarEnv, LambdaStarParallelEnv  # noqa: E402
from collective.config import ConfigError, EvaluationConfig  # noqa: E402
from collective.evaluate import evaluate  # noqa: E402
from collective.evaluation.environments import generate_environments  # noqa: E402
from collective.evaluation.play import play  # noqa: E402
from collective.simulation.random_streams import SplitMix64  # noqa: E402
from collective.simulation.reference import ReferenceWorld  # noqa: E402


CLASSES = {"lambda_star": {}, "landscape": {"env": "landscape", "landscape_peaks": 3}}  # 3 peaks fit small grids


@pytest.mark.parametrize("env", CLASSES)
def test_parallel_api(env):
    parallel_api_test(LambdaStarParallelEnv(profile="paper", group_size=3, rows=6, cols=6, iterations=25, **CLASSES[env]),
                      num_cycles=40)


@pytest.mark.parametrize("env", CLASSES)
def test_gymnasium_checker(env):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*render.*")  # no render modes, no registered spec
        check_env(LambdaStarEnv(profile="paper", rows=6, cols=6, iterations=25, **CLASSES[env]), skip_render_check=True)


def test_spaces_follow_the_spec():
    env = LambdaStarParallelEnv(profile="paper", group_size=4, observation_range=2, rows=7, cols=7, iterations=10)
    assert env.possible_agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert env.action_space("agent_2").n == 9  # spec §1: nine actions
    space = env.observation_space("agent_2")
    assert space.shape == (25,) and space.dtype == np.float32 and space.low.min() == -1 and space.high.max() == 1


def rollout(env, seed, steps, action_seed=0):
    """Observations and rewards of `steps` iterations under actions from a seeded generator."""
    actions = np.random.default_rng(action_seed).integers(0, 9, size=(steps, len(env.possible_agents)))
    observations, _ = env.reset(seed=seed)
    trace = [np.stack(list(observations.values()))]
    for t in range(steps):
        if not env.agents:
            observations, _ = env.reset()
        observations, rewards, *_ = env.step(dict(zip(env.agents, actions[t])))
        trace += [np.stack(list(observations.values())), np.array(list(rewards.values()))]
    return trace


def test_seeded_runs_repeat_exactly_and_seeds_differ():
    make = lambda: LambdaStarParallelEnv(profile="paper", group_size=3, rows=8, cols=8, iterations=30)  # noqa: E731
    first, again, other = rollout(make(), 11, 100), rollout(make(), 11, 100), rollout(make(), 12, 100)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))  # 100 steps cross 3 episodes
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_truncated_after_t_iterations_and_never_terminated():
    env = LambdaStarParallelEnv(profile="paper", group_size=2, rows=5, cols=5, iterations=7)
    env.reset(seed=0)
    for t in range(7):
        _, rewards, terminations, truncations, _ = env.step({a: 4 for a in env.agents})
        assert not any(terminations.values()) and all(truncations.values()) == (t == 6)
        assert all(-1 <= r <= 1 for r in rewards.values())
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_spec_reference_vectors():
    """Spec §9 on a 5x5 grid (cells 1..25 there, 0..24 here)."""
    world = ReferenceWorld(5, 5, 1)
    apart = GridScene(world, good=(6, 6), evil=(18, 18))
    assert apart.window(6, 0).tolist() == [.5, .5, .5, .5, 1, .5, .5, .5, 0]
    assert apart.window(18, 1).tolist() == [0, -.5, -.5, -.5, -1, -.5, -.5, -.5, -.5]
    assert apart.window(8, 0).tolist() == [.5, 0, 0, .5, 0, 0, 0, -.5, -.5]
    assert GridScene(world, good=(6,), evil=(7,)).window(6, 0).tolist() == [.5, 0, 0, .5, .5, -.5, .5, 0, 0]


def local_search(observation, stream):
    """Spec §5 with k = 1: step to the best observed cell, uniform tie-break, one draw; the window
    is in action order, so the chosen cell's index is the action."""
    ties = np.flatnonzero(observation == observation.max())
    return int(ties[stream.uniform_int(len(ties))])


@pytest.mark.parametrize("env", CLASSES)
def test_local_search_through_the_adapter_matches_the_kernel(env):
    """The adapter's rewards are the kernel's, step for step, on the same environments: a local
    searcher that draws its tie-breaks from the kernel's per-agent streams plays identically."""
    settings = dict(group_size=3, rows=8, cols=8, iterations=40, profile="paper", **CLASSES[env])
    config = EvaluationConfig.from_profile(behaviour="local_search", episodes=6, seed=5, **settings)
    environments = generate_environments(config, np.arange(config.episodes))
    kernel = play(config, environments, record=True)
    adapter = LambdaStarParallelEnv(**settings)
    means = []
    for episode in range(config.episodes):
        observations, infos = adapter.reset(seed=5) if episode == 0 else adapter.reset()
        assert infos["agent_0"]["k"] == environments.k_raw[episode]
        streams = [SplitMix64.for_stream(int(environments.agent_seeds[episode]), i + 1, 0) for i in range(3)]
        rewards = []
        while adapter.agents:
            actions = {a: local_search(observations[a], streams[i]) for i, a in enumerate(adapter.agents)}
            observations, step_rewards, *_ = adapter.step(actions)
            rewards.append(list(step_rewards.values()))
        assert np.array_equal(np.array(rewards), kernel.rewards[episode])
        means.append(np.mean(rewards))
    assert np.mean(means) == pytest.approx(evaluate(config).estimate.upsilon, abs=1e-12)


def test_bad_settings_are_rejected():
    with pytest.raises(ConfigError, match="env"):
        LambdaStarParallelEnv(env="maze")
    with pytest.raises(ConfigError, match="behaviour"):
        LambdaStarParallelEnv(behaviour="oracle")
    with pytest.raises(ConfigError, match="group_size"):
        LambdaStarEnv(group_size=2)
    env = LambdaStarEnv(profile="paper", rows=5, cols=5, iterations=5)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="0..8"):
        env.step(9)


def test_the_default_profile_is_sound_and_refuses_a_k_range_it_cannot_play():
    env = LambdaStarParallelEnv(group_size=2, rows=8, cols=8, iterations=50)
    assert env.config.profile == "sound" and env.config.k_sampling == "stratified"
    with pytest.raises(ConfigError, match=r"k_max: .* reach 2\.\.10 \(not 11\.\.23\)"):
        LambdaStarParallelEnv(group_size=2, rows=7, cols=7, iterations=10)


def test_core_imports_without_the_optional_extras():
    code = ("import sys; sys.modules['pettingzoo'] = None; sys.modules['gymnasium'] = None\n"
            "import collective.cli, collective.evaluate, collective.anytime\n"
            "try:\n    import collective.adapters\nexcept ImportError as error:\n    print(error)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "collective-intelligence[adapters]" in result.stdout


def test_gymnasium_makes_the_registered_environments():
    """Issue 43 item 7: `gymnasium.make("collective/LambdaStar-v0", ...)` is the single-agent environment (the same
    episodes as the class, seed for seed) and `make_vec(..., vectorization_mode="vector_entry_point")` the batched
    one; a batch of groups is refused by make_vec in one line."""
    import gymnasium

    from collective.adapters import ENV_ID, LambdaStarVectorEnv

    settings = dict(profile="paper", rows=6, cols=6, iterations=25)
    made, direct = gymnasium.make(ENV_ID, **settings), LambdaStarEnv(**settings)
    assert isinstance(made.unwrapped, LambdaStarEnv)
    for env in (made, direct):
        env.reset(seed=3)
    trail = [(made.step(4)[1], direct.step(4)[1]) for _ in range(25)]
    assert all(a == b for a, b in trail) and any(a != 0 for a, _ in trail)
    batch = gymnasium.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", **settings)
    assert isinstance(batch, LambdaStarVectorEnv) and batch.num_envs == 3
    with pytest.raises(ConfigError, match="num_envs: make_vec plays one agent an episode"):
        gymnasium.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", group_size=2,
                           **settings)


def test_human_render_mode_draws_each_step_on_stdout(capsys):
    """render_mode "human" (with metadata's render_fps): reset and step draw the episode as text without render()
    being called, and render() returns None; PettingZoo's render_test passes on the parallel environment."""
    from pettingzoo.test import render_test
    from pettingzoo.utils.conversions import parallel_to_aec

    env = LambdaStarEnv(profile="paper", rows=6, cols=6, iterations=5, render_mode="human")
    assert env.metadata["render_fps"] > 0 and "human" in env.metadata["render_modes"]
    env.reset(seed=1)
    for _ in range(5):
        env.step(0)
    frames = capsys.readouterr().out.split("t=")[1:]
    assert [frame.split()[0] for frame in frames] == [str(t) for t in range(6)] and env.render() is None
    render_test(lambda render_mode=None: parallel_to_aec(LambdaStarParallelEnv(
        profile="paper", rows=6, cols=6, iterations=5, group_size=2, render_mode=render_mode)))
