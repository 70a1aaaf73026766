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
  exactly the environments `collective evaluate --seed s` plays (`evaluate.generate_environments`,
  SeedSequence-keyed by episode); before any seed the configuration's seed is used.

Step logic is the plain-Python geometry of `reference_simulation.ReferenceWorld`. An environment
class plugs in as an `EpisodeScene` factory in `SCENES`: one episode's "reward of cell c at
iteration t" and "observation window of cell c at t". pettingzoo and gymnasium are optional:
`pip install 'collective[adapters]'`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from pettingzoo import ParallelEnv
except ImportError as error:  # pragma: no cover - exercised only without the extras
    raise ImportError("collective.adapters needs pettingzoo and gymnasium: "
                      "pip install 'collective[adapters]'") from error

from collective.config import DEFAULT_PROFILE, RENAMED_FIELDS, ConfigError, EvaluationConfig
from collective.evaluate import generate_environments
from collective.environments.lambda_star import EnvironmentBatch
from collective.simulation.reference import ACTION_MOVES, ReferenceWorld

# The settings of the environment alone; behaviours and protocols are the caller's agents'.
ENVIRONMENT_FIELDS = ("group_size", "rows", "cols", "iterations", "seed", "observation_range", "reward_radius",
                      "pattern_generator", "evil_pairing", "k_min", "k_max", "landscape_peaks",
                      "landscape_peak_width", "landscape_deception", "landscape_noise", "landscape_normalisation",
                      "landscape_entropy", "landscape_motion")


class EpisodeScene(Protocol):
    """One episode of an environment class, as the adapters step it."""

    def reward(self, cell: int, t: int) -> float:
        """R of `cell` after t iterations (t = 0: the start)."""
        ...

    def window(self, cell: int, t: int) -> np.ndarray:
        """Rewards of `cell`'s range-k Moore window after t iterations, row by row, float32."""
        ...


@dataclass(frozen=True)
class GridScene:
    """Λ* or a fitness landscape: rewards from `ReferenceWorld.payoffs` along ⊕/⊖'s paths."""

    world: ReferenceWorld
    good: tuple[int, ...]  # ⊕'s cells at iterations 0..T (a landscape's global optimum)
    evil: tuple[int, ...]

    @classmethod
    def from_batch(cls, config: EvaluationConfig, batch: EnvironmentBatch) -> "GridScene":
        """The scene of the batch's first episode."""
        landscape = tuple(batch.landscapes[0].tolist()) if batch.landscapes is not None else None
        world = ReferenceWorld(config.rows, config.cols, config.iterations, config.observation_range,
                               config.reward_radius, landscape=landscape)
        return cls(world, tuple(batch.good[0].tolist()), tuple(batch.evil[0].tolist()))

    def reward(self, cell: int, t: int) -> float:
        return self.world.payoffs(self.good, self.evil, t)(cell)

    def window(self, cell: int, t: int) -> np.ndarray:
        payoff = self.world.payoffs(self.good, self.evil, t)
        return np.array([payoff(c) for c, _, _ in self.world.window(cell)], np.float32)


# Environment class (EvaluationConfig.env) -> scene of one generated episode.
SCENES: dict[str, Callable[[EvaluationConfig, EnvironmentBatch], EpisodeScene]] = {
    "lambda_star": GridScene.from_batch,
    "landscape": GridScene.from_batch,
}


def environment_config(env: str = "lambda_star", profile: str = DEFAULT_PROFILE, **fields) -> EvaluationConfig:
    """The validated configuration of an adapter: environment settings only (`ENVIRONMENT_FIELDS`)."""
    if env not in SCENES:
        raise ConfigError("env", f"unknown environment class {env!r}; allowed: {', '.join(SCENES)}")
    for name in fields:
        if name not in ENVIRONMENT_FIELDS and name not in RENAMED_FIELDS:  # from_profile names the new field
            raise ConfigError(name, f"not an environment setting; allowed: {', '.join(ENVIRONMENT_FIELDS)}")
    return EvaluationConfig.from_profile(profile, env=env, **fields)


class _Episodes:
    """The engine both adapters share: seeding, episode generation, one iteration per step."""

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

    def _moved(self, cell: int, action) -> int:
        if not 0 <= int(action) < 9:
            raise ValueError(f"action must be an integer in 0..8 (got {action!r})")
        return self.geometry.moved(cell, *ACTION_MOVES[int(action)])


def _observation_space(config: EvaluationConfig) -> spaces.Box:
    side = 2 * config.observation_range + 1
    return spaces.Box(-1.0, 1.0, shape=(side * side,), dtype=np.float32)


class LambdaStarParallelEnv(ParallelEnv):
    """The group's test as a PettingZoo parallel environment (all agents act every iteration)."""

    metadata = {"name": "collective_lambda_star_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, **fields):
        self.config = environment_config(env, profile, **fields)
        self.possible_agents = [f"agent_{i}" for i in range(self.config.group_size)]
        self.agents: list[str] = []
        self.render_mode = None
        self._episodes = _Episodes(self.config)
        self._observation_space = _observation_space(self.config)
        self._action_space = spaces.Discrete(9)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        observations = self._episodes.reset(seed)
        self.agents = list(self.possible_agents)
        return dict(zip(self.agents, observations)), {a: {"k": self._episodes.k} for a in self.agents}

    def step(self, actions: dict):
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"every live agent must act; missing: {', '.join(missing)}")
        observations, rewards = self._episodes.step([actions[a] for a in self.agents])
        over = self._episodes.t >= self.config.iterations
        agents = self.agents
        self.agents = [] if over else agents
        return (dict(zip(agents, observations)), dict(zip(agents, rewards)), dict.fromkeys(agents, False),
                dict.fromkeys(agents, over), {a: {} for a in agents})


class LambdaStarEnv(gymnasium.Env):
    """One agent alone on the test, as a Gymnasium environment (group size 1)."""

    metadata = {"render_modes": []}

    def __init__(self, env: str = "lambda_star", profile: str = DEFAULT_PROFILE, **fields):
        if fields.get("group_size", 1) != 1:
            raise ConfigError("group_size", "the single-agent environment has exactly 1 agent; "
                                            "use LambdaStarParallelEnv for groups")
        self.config = environment_config(env, profile, **fields)
        self._episodes = _Episodes(self.config)
        self.observation_space = _observation_space(self.config)
        self.action_space = spaces.Discrete(9)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # Gymnasium's bookkeeping only; episodes come from the SeedSequence tree
        [observation] = self._episodes.reset(seed)
        return observation, {"k": self._episodes.k}

    def step(self, action):
        [observation], [reward] = self._episodes.step([action])
        return observation, reward, False, self._episodes.t >= self.config.iterations, {}
