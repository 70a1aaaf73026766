"""What an adapter plays: the environment settings it accepts (`environment_config`) and, per
environment class, one generated episode as a scene (`SCENES`): "reward of cell c at iteration t",
"observation window of cell c at t" and the full state, in the plain-Python geometry of
`collective.simulation.reference.ReferenceWorld`. The one-episode adapters step scenes
(`collective.adapters.single_episode`); every adapter takes its settings from here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from collective.adapters.rendering import STATE_CHANNELS
from collective.config import DEFAULT_PROFILE, RENAMED_FIELDS, ConfigError, EvaluationConfig
from collective.environments.lambda_star import EnvironmentBatch
from collective.simulation.reference import ReferenceWorld

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

    def state(self, cells: list[int], t: int) -> np.ndarray:
        """The full state after t iterations with agents on `cells`: (5, rows, cols) float32, channels
        `rendering.STATE_CHANNELS` (no background agents)."""
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

    def state(self, cells: list[int], t: int) -> np.ndarray:
        payoff, n = self.world.payoffs(self.good, self.evil, t), self.world.rows * self.world.cols
        state = np.zeros((len(STATE_CHANNELS), n), np.float32)
        state[0] = [payoff(c) for c in range(n)]
        state[1, self.good[t]] = 1
        state[2, self.evil[t]] = 1
        for cell in cells:
            state[3, cell] += 1
        return state.reshape(len(STATE_CHANNELS), self.world.rows, self.world.cols)


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
