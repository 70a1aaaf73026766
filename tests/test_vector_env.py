"""Batched RL adapters on the stepping core (issue point 8): Gymnasium VectorEnv conventions,
NEXT_STEP autoreset into the next episode indices, seeded determinism, and the kernel's rewards
exactly when the kernel's recorded moves or a local searcher are played through them (spec §1)."""
import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium import spaces  # noqa: E402
from gymnasium.utils import env_checker  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from gymnasium.wrappers.vector import DictInfoToList, RecordEpisodeStatistics  # noqa: E402

from collective.adapters.vector import LambdaStarBatchedParallelEnv, LambdaStarVectorEnv  # noqa: E402
from collective.config import ConfigError, EvaluationConfig  # noqa: E402
from collective.evaluation.environments import generate_environments  # noqa: E402
from collective.evaluation.play import play  # noqa: E402
from collective.simulation.random_streams import SplitMix64  # noqa: E402
from collective.simulation.stepping import SteppingCore  # noqa: E402

CLASSES = {"lambda_star": {}, "landscape": {"env": "landscape", "landscape_peaks": 3}}  # 3 peaks fit small grids
SMALL = dict(group_size=2, rows=6, cols=6, iterations=6, profile="paper")  # T=6: K 2..23 unreachable under sound


def random_actions(rng, env, steps):
    return rng.integers(0, 9, size=(steps, env.num_envs))


def test_spaces_and_shapes():
    env = LambdaStarVectorEnv(profile="paper", episodes=3, group_size=2, observation_range=2, rows=7, cols=7, iterations=5)
    assert env.num_envs == 6 and env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = env.single_observation_space
    assert single.shape == (25,) and single.dtype == np.float32 and single.low.min() == -1 and single.high.max() == 1
    assert env.single_action_space == spaces.Discrete(9)
    assert env.observation_space.shape == (6, 25) and env.observation_space.dtype == np.float32
    assert isinstance(env.action_space, spaces.MultiDiscrete) and env.action_space.nvec.tolist() == [9] * 6
    observations, infos = env.reset(seed=0)
    assert observations.dtype == np.float32 and observations in env.observation_space
    assert infos["episode_index"].tolist() == [0, 0, 1, 1, 2, 2]  # episode-major: e * A + i
    assert infos["cell"].dtype == np.int64 and infos["cell"].shape == (6,) and infos["_cell"].all()
    observations, rewards, terminations, truncations, infos = env.step(env.action_space.sample())
    assert observations in env.observation_space and rewards.shape == (6,) and rewards.dtype == np.float64
    assert terminations.dtype == truncations.dtype == np.bool_ and not terminations.any() and not truncations.any()
    assert set(infos) == {"cell", "_cell"}  # "episode_index" only when a batch starts

    batched = LambdaStarBatchedParallelEnv(profile="paper", episodes=3, group_size=2, observation_range=2, rows=7, cols=7, iterations=5)
    observations, infos = batched.reset(seed=0)
    assert batched.agents == ["agent_0", "agent_1"]
    assert all(observations[a] in batched.observation_space(a) and observations[a].shape == (3, 25)
               for a in batched.agents)
    assert infos["agent_1"]["cell"].shape == (3,) and infos["agent_1"]["episode_index"].tolist() == [0, 1, 2]
    _, rewards, terminations, truncations, infos = batched.step({a: batched.action_space(a).sample()
                                                                  for a in batched.agents})
    assert rewards["agent_0"].shape == (3,) and infos["agent_0"]["cell"].dtype == np.int64
    assert terminations == truncations == {"agent_0": False, "agent_1": False}


def test_gymnasium_vector_checker():
    if not hasattr(env_checker, "check_vector_env"):
        pytest.skip("this gymnasium has no VectorEnv checker; its vector wrappers are checked below")
    env_checker.check_vector_env(LambdaStarVectorEnv(episodes=2, **SMALL))


def test_gymnasium_vector_wrappers_read_the_autoreset_convention():
    """RecordEpisodeStatistics relies on NEXT_STEP: it must see T-step episodes whose return is the
    sum of the rewards (the autoreset step's 0 reward is not counted)."""
    env = DictInfoToList(RecordEpisodeStatistics(LambdaStarVectorEnv(episodes=2, **SMALL)))
    rng = np.random.default_rng(1)
    env.reset(seed=4)
    returns = np.zeros(env.num_envs)
    for t in range(SMALL["iterations"]):
        _, rewards, _, truncations, infos = env.step(random_actions(rng, env, 1)[0])
        returns += rewards
        assert truncations.all() == (t == SMALL["iterations"] - 1)
    assert [info["episode"]["l"] for info in infos] == [SMALL["iterations"]] * env.num_envs
    assert np.allclose([info["episode"]["r"] for info in infos], returns)
    _, rewards, _, truncations, infos = env.step(random_actions(rng, env, 1)[0])  # the autoreset step
    assert not rewards.any() and not truncations.any() and [info["episode_index"] for info in infos] == [2, 2, 3, 3]


def test_cleanrl_logging_loop_reads_record_episode_statistics():
    """CleanRL's loop over Gymnasium 1.x vector infos: `infos["episode"]` is the wrapper's
    {"r", "l", "t"}, masked by `infos["_episode"]` (it used to hold episode indices: IndexError)."""
    env = RecordEpisodeStatistics(LambdaStarVectorEnv(episodes=2, **SMALL))
    rng = np.random.default_rng(3)
    env.reset(seed=5)
    returns, logged = np.zeros(env.num_envs), []
    for _ in range(2 * SMALL["iterations"] + 1):  # two batches and the autoreset step between them
        _, rewards, _, _, infos = env.step(random_actions(rng, env, 1)[0])
        returns += rewards
        if "episode" in infos:
            logged += [(infos["episode"]["r"][i], infos["episode"]["l"][i]) for i in np.where(infos["_episode"])[0]]
    assert len(logged) == 2 * env.num_envs and {length for _, length in logged} == {SMALL["iterations"]}
    assert np.isclose(sum(r for r, _ in logged), returns.sum())


def rollout(env, seed, steps, action_seed=0):
    rng = np.random.default_rng(action_seed)
    observations, infos = env.reset(seed=seed)
    trace = [observations, infos["cell"]]
    for actions in random_actions(rng, env, steps):
        observations, rewards, _, truncations, infos = env.step(actions)
        trace += [observations, rewards, truncations, infos["cell"]]
    return trace


def test_seeded_runs_repeat_exactly_and_seeds_differ():
    make = lambda: LambdaStarVectorEnv(episodes=3, **SMALL)  # noqa: E731
    steps = 3 * (SMALL["iterations"] + 1)  # three batches, autoresets included
    first, again, other = rollout(make(), 11, steps), rollout(make(), 11, steps), rollout(make(), 12, steps)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    env = make()
    rollout(env, 12, steps)
    assert all(np.array_equal(a, b) for a, b in zip(first, rollout(env, 11, steps)))  # reset(seed) restarts


@pytest.mark.parametrize("env", CLASSES)
def test_autoreset_plays_the_next_episode_indices(env):
    """NEXT_STEP: truncation at iteration T; the next step starts episodes E..2E-1 (reward 0), which
    then play exactly as a core built directly on those episodes' environments."""
    episodes, T = 3, SMALL["iterations"]
    vector = LambdaStarVectorEnv(episodes=episodes, **SMALL, **CLASSES[env])
    config = vector.config.with_changes(seed=9)
    rng = np.random.default_rng(2)
    vector.reset(seed=9)
    for t in range(T):
        _, _, terminations, truncations, infos = vector.step(random_actions(rng, vector, 1)[0])
        assert not terminations.any() and truncations.all() == (t == T - 1) and "episode_index" not in infos
    observations, rewards, terminations, truncations, infos = vector.step(random_actions(rng, vector, 1)[0])
    assert not rewards.any() and not truncations.any() and not terminations.any()
    assert infos["episode_index"].tolist() == np.repeat(np.arange(episodes, 2 * episodes), SMALL["group_size"]).tolist()
    core = SteppingCore(generate_environments(config, np.arange(episodes, 2 * episodes)), SMALL["group_size"],
                        config.rows, config.cols, T, config.observation_range, config.reward_radius,
                        config.coordination_threshold)
    for t in range(T):
        assert np.array_equal(observations, core.observe().window.reshape(vector.num_envs, -1).astype(np.float32))
        assert np.array_equal(infos["cell"], core.cells.reshape(-1))
        actions = random_actions(rng, vector, 1)[0]
        observations, rewards, _, truncations, infos = vector.step(actions)
        assert np.array_equal(rewards, core.step(actions.reshape(episodes, -1)).reshape(-1))
    assert truncations.all()


def recorded_actions(positions, rows, cols):
    """(E, T, A) actions that move each agent between its consecutive recorded cells (torus)."""
    r, c = positions // cols, positions % cols
    dr = (np.diff(r, axis=1) + 1) % rows - 1
    dc = (np.diff(c, axis=1) + 1) % cols - 1
    return (dr + 1) * 3 + dc + 1


@pytest.mark.parametrize("env", CLASSES)
def test_kernel_moves_replayed_give_the_kernel_rewards(env):
    """The fused kernel's recorded random walk, replayed move by move through both classes, earns
    the kernel's recorded rewards to the bit; each window's centre is the reward just earned."""
    settings = dict(group_size=3, rows=7, cols=8, iterations=30, profile="paper", **CLASSES[env])
    episodes, seed = 5, 21
    config = EvaluationConfig.from_profile(behaviour="random", episodes=episodes, seed=seed, **settings)
    kernel = play(config, generate_environments(config, np.arange(episodes)), record=True)
    actions = recorded_actions(kernel.positions.astype(np.int64), config.rows, config.cols)  # (E, T, A)
    vector = LambdaStarVectorEnv(episodes=episodes, **settings)
    batched = LambdaStarBatchedParallelEnv(episodes=episodes, **settings)
    _, infos = vector.reset(seed=seed)
    batched.reset(seed=seed)
    assert np.array_equal(infos["cell"], kernel.positions[:, 0].reshape(-1))
    for t in range(config.iterations):
        observations, rewards, _, _, infos = vector.step(actions[:, t].reshape(-1))
        assert np.array_equal(rewards, kernel.rewards[:, t].reshape(-1))
        assert np.array_equal(infos["cell"], kernel.positions[:, t + 1].reshape(-1))
        assert np.array_equal(observations[:, observations.shape[1] // 2], rewards.astype(np.float32))
        _, step_rewards, *_ = batched.step({a: actions[:, t, i] for i, a in enumerate(batched.agents)})
        assert np.array_equal(np.stack(list(step_rewards.values()), axis=1), kernel.rewards[:, t])
    assert batched.agents == []


@pytest.mark.parametrize("env", CLASSES)
def test_local_searcher_on_the_observations_matches_the_kernel(env):
    """Spec §5 with k = 1 computed from the vector env's observations alone (step to the best
    observed cell; the window is in action order), tie-breaks drawn from the kernel's per-agent
    streams: it plays exactly as the kernel's local searcher, reward for reward."""
    settings = dict(group_size=3, rows=8, cols=8, iterations=40, profile="paper", **CLASSES[env])
    episodes, seed = 4, 5
    config = EvaluationConfig.from_profile(behaviour="local_search", episodes=episodes, seed=seed, **settings)
    environments = generate_environments(config, np.arange(episodes))
    kernel = play(config, environments, record=True)
    streams = [SplitMix64.for_stream(int(environments.agent_seeds[e]), i + 1, 0)
               for e in range(episodes) for i in range(config.group_size)]  # episode-major, as the sub-envs
    vector = LambdaStarVectorEnv(episodes=episodes, **settings)
    observations, _ = vector.reset(seed=seed)
    for t in range(config.iterations):
        ties = [np.flatnonzero(window == window.max()) for window in observations]
        actions = np.array([tie[stream.uniform_int(len(tie))] for tie, stream in zip(ties, streams)])
        observations, rewards, *_ = vector.step(actions)
        assert np.array_equal(rewards, kernel.rewards[:, t].reshape(-1))


def test_bad_actions_and_settings_are_rejected():
    env = LambdaStarVectorEnv(episodes=2, **SMALL)  # num_envs = 4
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(4, np.int64))
    env.reset(seed=0)
    for actions, message in [(np.zeros(3, np.int64), r"shaped \(3,\).*\(4,\)"),
                             (np.zeros((2, 2), np.int64), r"shaped \(2, 2\)"),
                             (np.array([0, 1, 9, 4]), "0..8"), (np.array([0, -1, 2, 4]), "0..8"),
                             (np.array([0.0, 1.0, 2.0, 4.0]), "dtype float64.*integers"),
                             (np.array([True, False, True, False]), "dtype bool")]:
        with pytest.raises(ValueError, match=message):
            env.step(actions)
    env.step([4, 4, 4, 4])  # a list of ints is fine

    batched = LambdaStarBatchedParallelEnv(episodes=2, **SMALL)
    batched.reset(seed=0)
    with pytest.raises(ValueError, match="agent_1"):
        batched.step({"agent_0": [4, 4]})
    with pytest.raises(ValueError, match="agent_7"):
        batched.step({"agent_0": [4, 4], "agent_1": [4, 4], "agent_7": [4, 4]})
    with pytest.raises(ValueError, match=r"actions\['agent_1'\] shaped \(3,\)"):
        batched.step({"agent_0": [4, 4], "agent_1": [4, 4, 4]})
    with pytest.raises(ValueError, match="0..8"):
        batched.step({"agent_0": [4, 4], "agent_1": [4, 12]})
    for _ in range(SMALL["iterations"]):
        batched.step({a: [4, 4] for a in batched.agents})
    with pytest.raises(RuntimeError, match="reset"):
        batched.step({})

    for cls in (LambdaStarVectorEnv, LambdaStarBatchedParallelEnv):
        for bad in (0, True, 2.5):
            with pytest.raises(ConfigError, match="episodes"):
                cls(episodes=bad)
        with pytest.raises(ConfigError, match="env"):
            cls(env="maze")
        with pytest.raises(ConfigError, match="behaviour"):
            cls(behaviour="oracle")


@pytest.mark.parametrize("cls", [LambdaStarVectorEnv, LambdaStarBatchedParallelEnv])
def test_a_batch_too_large_for_memory_is_refused_before_anything_is_allocated(cls):
    """Issue 46 point 5: episodes=10**7 grew to 23 GB at reset. The CLI's memory estimate refuses a batch beyond
    any machine's memory (10**9 episodes: ~1.6 TB of paths) at construction, in one line naming the argument and
    the largest batch that fits; one more than that is refused too."""
    import re
    import resource

    cls(episodes=1)  # the imports and the K range's probe, before the peak is read
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ConfigError) as refused:
        cls(episodes=10**9)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - grown < 100_000  # KiB: nothing allocated
    message = str(refused.value)
    assert "\n" not in message and message.startswith("episodes: 1,000,000,000 episodes of 10x10, T=200"), message
    largest = int(re.search(r"at most ([\d,]+) fit", message).group(1).replace(",", ""))
    assert 1000 < largest < 10**9
    with pytest.raises(ConfigError, match=f"at most {largest:,} fit"):
        cls(episodes=largest + 1)
