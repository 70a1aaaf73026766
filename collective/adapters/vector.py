"""Λ* (and fitness landscapes) for reinforcement-learning libraries at batch speed: a Gymnasium
`VectorEnv` and a PettingZoo-style batched parallel environment over the stepping core
(`collective.simulation.stepping.SteppingCore`), E episodes x A agents per call.

- one iteration per step, in spec §1's order: every agent moves by its action (Discrete(9), spec
  order up-left, up, up-right, left, stay, right, down-left, down, down-right), then ⊕/⊖ (or the
  landscape) take their next step, and each agent's reward is R of its new cell at t+1;
- observation: R over the agent's range-k Moore window, row by row, own cell in the middle,
  float32 in [-1, 1] (shape ((2k+1)²,)); rewards are float64, the kernel's values to the bit;
- after T iterations every sub-environment is truncated (never terminated);
- `reset(seed=s)` plays episodes 0..E-1 of the root seed s, each later batch the next E episode
  indices (E..2E-1, ...), exactly the environments `collective evaluate --seed s` plays
  (`evaluate.generate_environments`, SeedSequence-keyed by episode); before any seed, the
  configuration's seed.

Observations and rewards are those of `collective evaluate`: the stepping core is tested
bit-identical to the fused kernel (tests/test_stepping_core.py), and tests/test_vector_env.py
replays the kernel's recorded moves and a local searcher through these classes and gets the
kernel's rewards exactly. The settings are the single-episode adapters'
(`single_episode.environment_config`) plus `episodes`, the batch size.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from collective.adapters.single_episode import environment_config
from collective.config import DEFAULT_PROFILE, ConfigError
from collective.evaluate import generate_environments, kernel_switches
from collective.simulation.plugins import PluginError
from collective.simulation.stepping import SteppingCore, checked_actions


class _Batches:
    """The engine both classes share: one stepping core per batch of E episodes, seeding and the
    running episode index."""

    def __init__(self, episodes: int, env: str, profile: str, fields: dict):
        if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
            raise ConfigError("episodes", f"episodes per batch must be an integer >= 1 (got {episodes!r})")
        self.config = environment_config(env, profile, **fields)
        self.episodes, self.agents = int(episodes), self.config.group_size
        self._seeded, self._next = self.config, 0
        self.core: SteppingCore | None = None
        self.indices = np.arange(0)  # (E,) episode indices of the batch being played

    def start(self, seed: int | None) -> None:
        """Play the next batch of episodes; a seed restarts at episode 0 of that root seed."""
        if seed is not None:
            self._seeded, self._next = self.config.with_changes(seed=int(seed)), 0
        self.indices = np.arange(self._next, self._next + self.episodes, dtype=np.int64)
        self._next += self.episodes
        c = self._seeded
        self.core = SteppingCore(generate_environments(c, self.indices), c.group_size, c.rows, c.cols, c.iterations,
                                 c.observation_range, c.reward_radius, c.coordination_threshold,
                                 kernel_switches(c, None))

    @property
    def over(self) -> bool:
        return self.core.t >= self.core.iterations

    def windows(self) -> np.ndarray:
        """(E, A, S*S) float32: every agent's window now, a fresh array."""
        return self.core.observe().window.reshape(self.episodes, self.agents, -1).astype(np.float32)

    def actions(self, actions, owner: str) -> np.ndarray:
        """(E, A) int64 actions, or a ValueError naming what is wrong (via `checked_actions`)."""
        try:
            array = checked_actions(actions, owner, (self.episodes, self.agents))
        except PluginError as error:
            raise ValueError(f"{owner}.step: {error.message.removeprefix('returned ')}") from None
        return np.ascontiguousarray(array, np.int64)  # the compiled core's dtype; uint arithmetic would wrap

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Rewards (E, A) float64 of one iteration under validated actions (E, A)."""
        if self.core is None:
            raise RuntimeError("call reset() before step()")
        return self.core.step(actions)


def _window_space(config) -> spaces.Box:
    side = 2 * config.observation_range + 1
    return spaces.Box(-1.0, 1.0, shape=(side * side,), dtype=np.float32)


class LambdaStarVectorEnv(VectorEnv):
    """Gymnasium vector environment: one sub-environment per (episode, agent) of a batch of
    `episodes` episodes of a group of `group_size` agents, num_envs = episodes * group_size,
    episode-major (sub-environment e * A + i is agent i of episode e of the batch).

    Autoreset follows Gymnasium 1.x's default, `AutoresetMode.NEXT_STEP` (declared in
    `metadata["autoreset_mode"]`): the step that truncates returns the last iteration's
    observations and rewards; the next `step` ignores its actions, starts the next batch of
    episodes and returns its first observations with rewards 0 and no truncation. All
    sub-environments end together, so the whole batch is replaced. Infos hold "cell" (num_envs,)
    int64 (row * cols + col) and, whenever a batch starts (reset or autoreset), "episode_index"
    (num_envs,) int64 episode indices; each with its all-True "_key" mask. The key "episode" is left
    to Gymnasium's `RecordEpisodeStatistics`, which fills it with each finished episode's return,
    length and time ({"r", "l", "t"}), as CleanRL's logging loop reads it.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, episodes: int = 1000, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, **fields):
        self._batches = _Batches(episodes, env, profile, fields)
        self.config = self._batches.config
        self.episodes, self.group_size = self._batches.episodes, self._batches.agents
        self.num_envs = self.episodes * self.group_size
        self.single_observation_space = _window_space(self.config)
        self.single_action_space = spaces.Discrete(9)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)  # Box (num_envs, S*S)
        self.action_space = batch_space(self.single_action_space, self.num_envs)  # MultiDiscrete([9] * num_envs)
        self._autoreset = False
        self._mask = np.ones(self.num_envs, np.bool_)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # Gymnasium's np_random bookkeeping; episodes come from the SeedSequence tree
        self._batches.start(seed)
        self._autoreset = False
        return self._observations(), self._infos(started=True)

    def step(self, actions):
        array = np.asarray(actions)
        if array.shape != (self.num_envs,):
            raise ValueError(f"LambdaStarVectorEnv.step: actions shaped {array.shape}; "
                             f"expected (num_envs,) = ({self.num_envs},)")
        moves = self._batches.actions(array.reshape(self.episodes, self.group_size), "LambdaStarVectorEnv")
        if self._autoreset:  # NEXT_STEP: the step after the truncation starts the next batch
            self._batches.start(None)
            rewards, over, self._autoreset = np.zeros(self.num_envs), False, False
        else:
            rewards = self._batches.step(moves).reshape(self.num_envs)  # (num_envs,) float64
            over = self._autoreset = self._batches.over
        return (self._observations(), rewards, np.zeros(self.num_envs, np.bool_), np.full(self.num_envs, over),
                self._infos(started=self._batches.core.t == 0))

    def _observations(self) -> np.ndarray:
        return self._batches.windows().reshape(self.num_envs, -1)  # (num_envs, S*S) float32

    def _infos(self, started: bool) -> dict:
        infos = {"cell": self._batches.core.cells.reshape(self.num_envs).copy(), "_cell": self._mask.copy()}
        if started:
            infos["episode_index"] = np.repeat(self._batches.indices, self.group_size)
            infos["_episode_index"] = self._mask.copy()
        return infos


class LambdaStarBatchedParallelEnv:
    """PettingZoo-style parallel environment over a batch of `episodes` episodes at once.

    Agents "agent_0" .. "agent_{A-1}"; every value is an array over the batch's E episodes:
    `reset(seed=None)` -> (observations {agent: (E, S*S) float32}, infos {agent: {"cell": (E,)
    int64, "episode_index": (E,) int64}}); `step({agent: (E,) ints 0..8})` -> (observations, rewards
    {agent: (E,) float64}, terminations {agent: False}, truncations {agent: True after T
    iterations}, infos {agent: {"cell": (E,)}}). As in PettingZoo, `agents` empties when the batch
    is truncated and `reset()` then plays the next E episodes. Not a `pettingzoo.ParallelEnv`
    subclass: that API types rewards as one float per agent, not one per episode.
    `observation_space(agent)` and `action_space(agent)` are the batched spaces of these arrays.
    """

    metadata = {"name": "collective_lambda_star_batched_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, episodes: int = 1000, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, **fields):
        self._batches = _Batches(episodes, env, profile, fields)
        self.config = self._batches.config
        self.episodes = self._batches.episodes
        self.possible_agents = [f"agent_{i}" for i in range(self.config.group_size)]
        self.agents: list[str] = []
        self.render_mode = None
        self._observation_space = batch_space(_window_space(self.config), self.episodes)  # Box (E, S*S)
        self._action_space = batch_space(spaces.Discrete(9), self.episodes)  # MultiDiscrete([9] * E)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.MultiDiscrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        self._batches.start(seed)
        self.agents = list(self.possible_agents)
        windows, cells = self._batches.windows(), self._batches.core.cells.copy()  # (E, A, S*S), (E, A)
        return ({a: windows[:, i] for i, a in enumerate(self.agents)},
                {a: {"cell": cells[:, i], "episode_index": self._batches.indices.copy()} for i, a in enumerate(self.agents)})

    def step(self, actions: dict):
        if not self.agents:
            raise RuntimeError("the batch is over (or not started): call reset()")
        wrong = sorted(set(actions) ^ set(self.agents))
        if wrong:
            raise ValueError(f"actions must name exactly the live agents; missing or unknown: {', '.join(wrong)}")
        columns = [np.asarray(actions[a]) for a in self.agents]
        for agent, column in zip(self.agents, columns):
            if column.shape != (self.episodes,):
                raise ValueError(f"actions[{agent!r}] shaped {column.shape}; expected (episodes,) = ({self.episodes},)")
        rewards = self._batches.step(self._batches.actions(np.stack(columns, axis=1), type(self).__name__))  # (E, A)
        windows, cells = self._batches.windows(), self._batches.core.cells.copy()
        agents, over = self.agents, self._batches.over
        self.agents = [] if over else agents
        return ({a: windows[:, i] for i, a in enumerate(agents)}, {a: rewards[:, i] for i, a in enumerate(agents)},
                dict.fromkeys(agents, False), dict.fromkeys(agents, over),
                {a: {"cell": cells[:, i]} for i, a in enumerate(agents)})

    def close(self) -> None:
        pass
