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
  (`evaluation.environments.generate_environments`, SeedSequence-keyed by episode); before any seed, the
  configuration's seed.

Observations and rewards are those of `collective evaluate`: the stepping core is tested
bit-identical to the fused kernel (tests/test_stepping_core.py), and tests/test_vector_env.py
replays the kernel's recorded moves and a local searcher through these classes and gets the
kernel's rewards exactly. The settings are the single-episode adapters'
(`scenes.environment_config`) plus `episodes`, the batch size: one whose arrays would not fit in memory is
refused when the environment is made (`config.validate_batch_memory`), before anything is allocated.

Teammates (issue 24 point 3; Melting Pot's focal population among background bots): the
`group_size` agents the caller drives are the focal population, agents 0..group_size-1 of the
group; `mix="local_search:2,my_pkg.agents:Homing:1"` adds background agents of any behaviour,
built-in or plug-in, and `protocol=` a protocol (built-in or plug-in) that every focal agent and
every background agent whose behaviour takes part in it joins. The group plays on the stepping
core's loop (`collective.simulation.stepping.Playing`): each iteration every agent observes, the
protocol speaks once, the focal agents' observations are returned; `step` has the background act
on what they heard and everyone move. Under a protocol a focal agent's observation is its window
plus the protocol's field, then 1 if the protocol gave it a target cell (else 0) and the target's
row and column offsets the shorter way round ((2k+1)² + 3 floats, unbounded). Rewards are the
focal agents'; the background's are not returned.

`state()` is the full state of the batch, (episodes, 5, rows, cols) float32: R of every cell, ⊕,
⊖, focal agents per cell, background agents per cell (`collective.adapters.rendering.grid_state`);
`render()` under render_mode "ansi" or "rgb_array" draws the batch's first episode.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from collective.adapters.observations import agent_observations, observation_size
from collective.adapters.rendering import RENDER_FPS, STATE_CHANNELS, ansi_frame, grid_state, rgb_frame, show_frame
from collective.adapters.scenes import environment_config
from collective.config import DEFAULT_PROFILE, ConfigError, EvaluationConfig, validate_batch_memory
from collective.evaluation.environments import generate_environments
from collective.evaluation.fused_kernel import kernel_switches
from collective.evaluation.stepping_group import plugin_group
from collective.simulation.plugins import PluginError
from collective.simulation.stepping import SteppingCore, Playing, agents_part, checked_actions

RENDER_MODES = ("human", "ansi", "rgb_array")


class FocalAgents:
    """The caller's RL agents in a group with teammates, as a behaviour plug-in: their actions are the
    ones `step` was given. They take part in any protocol ("*"), hearing its targets and fields."""

    protocols = ("*",)

    def __init__(self):
        self.actions = None

    def act(self, obs):
        return self.actions


FOCAL = f"{__name__}:FocalAgents"


def _teammates_config(config: EvaluationConfig, profile: str, fields: dict, mix: str, protocol: str):
    """The group of the focal agents (config.group_size of them, agents 0..F-1) and the `mix` of
    background behaviours, under `protocol`; None when there is neither."""
    if not isinstance(mix, str) or not isinstance(protocol, str):
        raise ConfigError("mix" if not isinstance(mix, str) else "protocol", "must be a string")
    if not mix and protocol == "none":
        return None
    group = f"{FOCAL}:{config.group_size}" + (f",{mix}" if mix else "")
    settings = {name: value for name, value in fields.items() if name != "group_size"}
    return EvaluationConfig.from_profile(profile, env=config.env, mix=group, protocol=protocol, **settings)


class _Batches:
    """The engine both classes share: one stepping core per batch of E episodes, seeding and the
    running episode index; with teammates (`mix`, `protocol`) the group plays through the stepping
    core's loop (`stepping.Playing`): each iteration every agent observes, the protocol speaks, the
    focal agents' observations are returned, and `step` has every behaviour act, the focal agents
    as told."""

    def __init__(self, episodes: int, env: str, profile: str, fields: dict, mix: str = "", protocol: str = "none",
                 render_mode: str | None = None):
        if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
            raise ConfigError("episodes", f"episodes per batch must be an integer >= 1 (got {episodes!r})")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ConfigError("render_mode", f"unknown render mode {render_mode!r}; allowed: None, "
                                             f"{', '.join(RENDER_MODES)}")
        self.config = environment_config(env, profile, **fields)
        self.group = _teammates_config(self.config, profile, fields, mix, protocol)
        self.render_mode = render_mode
        validate_batch_memory(self.group or self.config, int(episodes), self._bytes_per_episode())
        self.episodes, self.agents = int(episodes), self.config.group_size  # agents: the focal ones
        self._seeded, self._next = self.group or self.config, 0
        self.core: SteppingCore | None = None
        self.playing: Playing | None = None
        self.indices = np.arange(0)  # (E,) episode indices of the batch being played

    def _bytes_per_episode(self) -> int:
        """This adapter's own arrays per episode: the state and observation spaces' bounds (float32 low and high,
        two bool masks: 10 bytes a value) and action space (int64 counts and starts), a `state()` (float32 and
        its float64 rewards and int64 cells) and the observations (float32)."""
        c, agents = self.config, self.config.group_size
        cells, features = c.rows * c.cols, observation_size(c.observation_range, self.hears)
        spaces_bytes = (len(STATE_CHANNELS) * cells + agents * features) * 10 + agents * 16
        return spaces_bytes + cells * (4 * len(STATE_CHANNELS) + 16) + agents * features * 4

    @property
    def hears(self) -> bool:
        """Whether the focal agents' observations carry a protocol's targets and fields."""
        return self.group is not None and self.group.protocol != "none"

    def start(self, seed: int | None) -> None:
        """Play the next batch of episodes; a seed restarts at episode 0 of that root seed."""
        if seed is not None:
            self._seeded, self._next = (self.group or self.config).with_changes(seed=int(seed)), 0
        self.indices = np.arange(self._next, self._next + self.episodes, dtype=np.int64)
        self._next += self.episodes
        c = self._seeded
        environments = generate_environments(c, self.indices)
        self.k_raw = environments.k_raw  # (E,) each episode's drawn k (one-episode adapters' info "k")
        if self.group is None:
            self.core = SteppingCore(environments, c.group_size, c.rows, c.cols, c.iterations, c.observation_range,
                                     c.reward_radius, c.coordination_threshold, kernel_switches(c, None))
            return
        self.playing = Playing(plugin_group(c), environments, record=False)
        self.core = self.playing.core
        [self.focal] = [member.instance for member, _ in self.playing.indices if isinstance(member.instance, FocalAgents)]
        self._listen()

    def _listen(self) -> None:
        """Every agent observes; the protocol speaks once for this iteration; what the members hear."""
        self.obs = self.core.observe()
        self.said = self.playing.speak(self.obs) if self.playing.speaks else None
        self.heard = self.core.hear(self.obs, self.said, self.playing.members) if self.said else self.obs

    @property
    def over(self) -> bool:
        return self.core.t >= self.core.iterations

    def windows(self) -> np.ndarray:
        """(E, A, D) float32, a fresh array, for the A focal agents: the window (D = S*S); under a
        protocol the window plus its field, then 1 if it gave a target (else 0) and the target's row
        and column offsets the shorter way round (0 without one), D = S*S + 3."""
        if self.group is None:
            return agent_observations(self.core.observe(), self.core.rows, self.core.cols, False)
        return agent_observations(agents_part(self.heard, slice(0, self.agents)), self.core.rows, self.core.cols,
                                  self.hears)

    def state(self) -> np.ndarray:
        """(E, 5, rows, cols) float32, channels `rendering.STATE_CHANNELS` (`rendering.grid_state`)."""
        if self.core is None:
            raise RuntimeError("call reset() before state()")
        return grid_state(self.core, self.agents)

    def render(self):
        """The batch's first episode now: text under "ansi", an RGB array under "rgb_array", drawn on the terminal
        under "human" (`rendering.show_frame`; then None, as without a render mode)."""
        if self.render_mode is None:
            return None
        state = self.state()[0]
        if self.render_mode == "human":
            return show_frame(state, self.core.t)
        return ansi_frame(state, self.core.t) if self.render_mode == "ansi" else rgb_frame(state)

    def actions(self, actions, owner: str) -> np.ndarray:
        """(E, A) int64 actions, or a ValueError naming what is wrong (via `checked_actions`)."""
        try:
            array = checked_actions(actions, owner, (self.episodes, self.agents))
        except PluginError as error:
            raise ValueError(f"{owner}.step: {error.message.removeprefix('returned ')}") from None
        return np.ascontiguousarray(array, np.int64)  # the compiled core's dtype; uint arithmetic would wrap

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Rewards (E, A) float64 of the focal agents for one iteration under validated actions (E, A)."""
        if self.core is None:
            raise RuntimeError("call reset() before step()")
        if self.group is None:
            return self.core.step(actions)
        self.focal.actions = actions
        self.playing.move(self.obs, self.said)
        if not self.over:
            self._listen()
        return self.core.reward[:, :self.agents].copy()

    def cells(self) -> np.ndarray:
        """(E, A) int64: the focal agents' cells, a fresh array."""
        return self.core.cells[:, :self.agents].copy()


def _window_space(batches: _Batches) -> spaces.Box:
    """One focal agent's observation (`_Batches.windows`): in [-1, 1] alone; unbounded under a protocol
    (its field is added to the window; targets are offsets in cells)."""
    bound = np.inf if batches.hears else 1.0
    return spaces.Box(-bound, bound, shape=(observation_size(batches.config.observation_range, batches.hears),),
                      dtype=np.float32)


def _state_space(batches: _Batches) -> spaces.Box:
    """`state()`'s space: (E, 5, rows, cols) float32."""
    c = batches.config
    return spaces.Box(-np.inf, np.inf, shape=(batches.episodes, len(STATE_CHANNELS), c.rows, c.cols), dtype=np.float32)


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

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

    def __init__(self, episodes: int = 1000, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, mix: str = "",
                 protocol: str = "none", render_mode: str | None = None, **fields):
        self._batches = _Batches(episodes, env, profile, fields, mix, protocol, render_mode)
        self.config, self.render_mode = self._batches.config, render_mode
        self.episodes, self.group_size = self._batches.episodes, self._batches.agents
        self.num_envs = self.episodes * self.group_size
        self.single_observation_space = _window_space(self._batches)
        self.state_space = _state_space(self._batches)
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

    def state(self) -> np.ndarray:
        """The full state of the batch: (episodes, 5, rows, cols) float32, channels R of every cell,
        ⊕, ⊖, focal agents per cell, background agents per cell (`rendering.grid_state`)."""
        return self._batches.state()

    def render(self):
        """The batch's first episode: text ("ansi") or an RGB array ("rgb_array"; `rendering.rgb_frame`)."""
        return self._batches.render()

    def _observations(self) -> np.ndarray:
        return self._batches.windows().reshape(self.num_envs, -1)  # (num_envs, D) float32

    def _infos(self, started: bool) -> dict:
        infos = {"cell": self._batches.cells().reshape(self.num_envs), "_cell": self._mask.copy()}
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

    metadata = {"name": "collective_lambda_star_batched_v0", "render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS,
                "is_parallelizable": True}

    def __init__(self, episodes: int = 1000, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, mix: str = "",
                 protocol: str = "none", render_mode: str | None = None, **fields):
        self._batches = _Batches(episodes, env, profile, fields, mix, protocol, render_mode)
        self.config = self._batches.config
        self.episodes = self._batches.episodes
        self.possible_agents = [f"agent_{i}" for i in range(self.config.group_size)]
        self.agents: list[str] = []
        self.render_mode = render_mode
        self.state_space = _state_space(self._batches)
        self._observation_space = batch_space(_window_space(self._batches), self.episodes)  # Box (E, D)
        self._action_space = batch_space(spaces.Discrete(9), self.episodes)  # MultiDiscrete([9] * E)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.MultiDiscrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        self._batches.start(seed)
        self.agents = list(self.possible_agents)
        windows, cells = self._batches.windows(), self._batches.cells()  # (E, A, D), (E, A)
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
        windows, cells = self._batches.windows(), self._batches.cells()
        agents, over = self.agents, self._batches.over
        self.agents = [] if over else agents
        return ({a: windows[:, i] for i, a in enumerate(agents)}, {a: rewards[:, i] for i, a in enumerate(agents)},
                dict.fromkeys(agents, False), dict.fromkeys(agents, over),
                {a: {"cell": cells[:, i]} for i, a in enumerate(agents)})

    def state(self) -> np.ndarray:
        """The full state of the batch (`LambdaStarVectorEnv.state`)."""
        return self._batches.state()

    def render(self):
        """The batch's first episode (`LambdaStarVectorEnv.render`)."""
        return self._batches.render()

    def close(self) -> None:
        pass
