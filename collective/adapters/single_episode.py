"""Λ* (and fitness landscapes) as a PettingZoo `ParallelEnv` and a single-agent Gymnasium `Env`,
so agents from other libraries can sit the test.

- agents "agent_0" .. "agent_{g-1}"; actions Discrete(9) in the spec's order (up-left, up,
  up-right, left, stay, right, down-left, down, down-right; spec §1);
- observation: the rewards of the (2k+1)² cells of the agent's range-k Moore window, row by row,
  own cell in the middle, as a float32 Box in [-1, 1] (spec §1);
- one iteration per step (spec §1): the agents move, ⊕/⊖ (or the landscape) take their next
  step, each agent is rewarded with the reward of the cell it now stands on; after T iterations
  every agent is truncated (never terminated);
- `reset(seed=s)` draws episode 0 of the root seed s, each later `reset()` the next episode,
  exactly the environments `collective evaluate --seed s` plays
  (`evaluation.environments.generate_environments`, SeedSequence-keyed by episode); before any seed the
  configuration's seed is used.

Alone, the agents step an `EpisodeScene` (`collective.adapters.scenes`), the plain-Python geometry
of `collective.simulation.reference.ReferenceWorld`. With teammates (`mix=` background agents of any
behaviour, `protocol=` a protocol; Melting Pot's focal population among background bots) the caller's
agents are the focal population and the group plays one episode at a time on the stepping core, the
batched adapters' engine (`collective.adapters.vector`, a batch of one episode), with their
observations under a protocol (window plus field, then whether a target was given and its row and
column offsets). `state()` is the episode's full state, (5, rows, cols) float32
(`rendering.STATE_CHANNELS`); `render()` draws it under render_mode "ansi" or "rgb_array".
pettingzoo and gymnasium are optional: `pip install 'collective-intelligence[adapters]'`.
"""
from __future__ import annotations

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from pettingzoo import ParallelEnv
except ImportError as error:  # pragma: no cover - exercised only without the extras
    raise ImportError("collective.adapters needs pettingzoo and gymnasium: "
                      "pip install 'collective-intelligence[adapters]'") from error

from collective.adapters.rendering import RENDER_FPS, ansi_frame, rgb_frame, show_frame
from collective.adapters.scenes import SCENES, EpisodeScene
from collective.adapters.vector import RENDER_MODES, _Batches, _state_space, _window_space
from collective.config import DEFAULT_PROFILE, ConfigError, EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.simulation.reference import ACTION_MOVES, ReferenceWorld


class _Episodes:
    """The engine of agents alone: seeding, episode generation, one iteration per step of a scene."""

    def __init__(self, config: EvaluationConfig):
        self.config = config
        self.geometry = ReferenceWorld(config.rows, config.cols, config.iterations)
        self._seeded = config
        self._next_episode = 0
        self.scene: EpisodeScene | None = None
        self.cells: list[int] = []
        self.t = 0
        self.k = 0

    def reset(self, seed: int | None) -> list[np.ndarray]:
        if seed is not None:
            self._seeded = self.config.with_changes(seed=int(seed))
            self._next_episode = 0
        batch = generate_environments(self._seeded, np.array([self._next_episode]))
        self._next_episode += 1
        self.scene = SCENES[self.config.env](self._seeded, batch)
        self.cells = [int(c) for c in batch.starts[0]]
        self.t = 0
        self.k = int(batch.k_raw[0])
        return [self.scene.window(c, 0) for c in self.cells]

    def step(self, actions: list[int]) -> tuple[list[np.ndarray], list[float]]:
        """Move every agent, advance ⊕/⊖ one iteration, reward each agent's new cell (spec §1)."""
        if self.scene is None or self.t >= self.config.iterations:
            raise RuntimeError("the episode is over: call reset()")
        self.cells = [self._moved(cell, action) for cell, action in zip(self.cells, actions)]
        self.t += 1
        return [self.scene.window(c, self.t) for c in self.cells], [self.scene.reward(c, self.t) for c in self.cells]

    def state(self) -> np.ndarray:
        """(5, rows, cols) float32 (`EpisodeScene.state`)."""
        if self.scene is None:
            raise RuntimeError("call reset() before state()")
        return self.scene.state(self.cells, self.t)

    def _moved(self, cell: int, action) -> int:
        if not 0 <= int(action) < 9:
            raise ValueError(f"action must be an integer in 0..8 (got {action!r})")
        return self.geometry.moved(cell, *ACTION_MOVES[int(action)])


class _EpisodesWithTeammates:
    """The engine of focal agents beside teammates: the batched adapters' engine (`vector._Batches`,
    the stepping core's loop) with a batch of one episode; same interface as `_Episodes`."""

    def __init__(self, batches: _Batches, owner: str):
        self.config, self.batches, self.owner = batches.config, batches, owner
        self.k = 0

    @property
    def t(self) -> int:
        return self.batches.core.t

    def reset(self, seed: int | None) -> list[np.ndarray]:
        self.batches.start(seed)
        self.k = int(self.batches.k_raw[0])
        return list(self.batches.windows()[0])

    def step(self, actions: list[int]) -> tuple[list[np.ndarray], list[float]]:
        if self.batches.core is None or self.batches.over:
            raise RuntimeError("the episode is over: call reset()")
        rewards = self.batches.step(self.batches.actions(np.asarray(actions)[None, :], self.owner))
        return list(self.batches.windows()[0]), rewards[0].tolist()

    def state(self) -> np.ndarray:
        return self.batches.state()[0]


def _engine(batches: _Batches, owner: str) -> _Episodes | _EpisodesWithTeammates:
    """Agents alone step a scene (unchanged numbers); with teammates, the stepping core."""
    return _Episodes(batches.config) if batches.group is None else _EpisodesWithTeammates(batches, owner)


def _frame(render_mode: str | None, episodes: _Episodes | _EpisodesWithTeammates):
    """The episode now: text under "ansi", an RGB array under "rgb_array" (`rendering`), drawn on the terminal
    under "human" (`rendering.show_frame`; then None, as without a render mode)."""
    if render_mode is None:
        return None
    state = episodes.state()
    if render_mode == "human":
        return show_frame(state, episodes.t)
    return ansi_frame(state, episodes.t) if render_mode == "ansi" else rgb_frame(state)


def _one_state_space(batches: _Batches) -> spaces.Box:
    """`state()`'s space: (5, rows, cols) float32."""
    return spaces.Box(-np.inf, np.inf, shape=_state_space(batches).shape[1:], dtype=np.float32)


class LambdaStarParallelEnv(ParallelEnv):
    """The group's test as a PettingZoo parallel environment (all agents act every iteration); with
    `mix=` and/or `protocol=` the agents are the focal population beside background agents."""

    metadata = {"name": "collective_lambda_star_v0", "render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS,
                "is_parallelizable": True}

    def __init__(self, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, mix: str = "", protocol: str = "none",
                 render_mode: str | None = None, **fields):
        batches = _Batches(1, env, profile, fields, mix, protocol, render_mode)
        self.config, self.render_mode = batches.config, render_mode
        self.possible_agents = [f"agent_{i}" for i in range(self.config.group_size)]
        self.agents: list[str] = []
        self._episodes = _engine(batches, type(self).__name__)
        self._observation_space = _window_space(batches)
        self._action_space = spaces.Discrete(9)
        self.state_space = _one_state_space(batches)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        observations = self._episodes.reset(seed)
        self.agents = list(self.possible_agents)
        self._human_frame()
        return dict(zip(self.agents, observations)), {a: {"k": self._episodes.k} for a in self.agents}

    def step(self, actions: dict):
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"every live agent must act; missing: {', '.join(missing)}")
        observations, rewards = self._episodes.step([actions[a] for a in self.agents])
        over = self._episodes.t >= self.config.iterations
        agents = self.agents
        self.agents = [] if over else agents
        self._human_frame()
        return (dict(zip(agents, observations)), dict(zip(agents, rewards)), dict.fromkeys(agents, False),
                dict.fromkeys(agents, over), {a: {} for a in agents})

    def state(self) -> np.ndarray:
        """The episode's full state: (5, rows, cols) float32, channels R of every cell, ⊕, ⊖, focal
        agents per cell, background agents per cell (`rendering.STATE_CHANNELS`)."""
        return self._episodes.state()

    def render(self):
        """The episode now: text ("ansi") or an RGB array ("rgb_array"; `rendering.rgb_frame`); under "human" it is
        drawn on the terminal by reset and step (Gymnasium's convention) and by render."""
        return _frame(self.render_mode, self._episodes)

    def _human_frame(self) -> None:
        if self.render_mode == "human":
            self.render()


class LambdaStarEnv(gymnasium.Env):
    """One agent on the test, as a Gymnasium environment (group size 1): alone, or with `mix=` and/or
    `protocol=` the focal agent beside background agents."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

    def __init__(self, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, mix: str = "", protocol: str = "none",
                 render_mode: str | None = None, **fields):
        if fields.get("group_size", 1) != 1:
            raise ConfigError("group_size", "the single-agent environment has exactly 1 agent; "
                                            "use LambdaStarParallelEnv for groups")
        batches = _Batches(1, env, profile, fields, mix, protocol, render_mode)
        self.config, self.render_mode = batches.config, render_mode
        self._episodes = _engine(batches, type(self).__name__)
        self.observation_space = _window_space(batches)
        self.action_space = spaces.Discrete(9)
        self.state_space = _one_state_space(batches)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # Gymnasium's bookkeeping only; episodes come from the SeedSequence tree
        [observation] = self._episodes.reset(seed)
        self._human_frame()
        return observation, {"k": self._episodes.k}

    def step(self, action):
        [observation], [reward] = self._episodes.step([action])
        self._human_frame()
        return observation, reward, False, self._episodes.t >= self.config.iterations, {}

    def state(self) -> np.ndarray:
        """The episode's full state (`LambdaStarParallelEnv.state`)."""
        return self._episodes.state()

    def render(self):
        """The episode now (`LambdaStarParallelEnv.render`)."""
        return _frame(self.render_mode, self._episodes)

    def _human_frame(self) -> None:
        if self.render_mode == "human":
            self.render()
