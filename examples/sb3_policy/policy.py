"""A model trained with Stable-Baselines3 on the adapters (`examples.sb3_policy.train`), as a behaviour plug-in:

    collective evaluate --mix examples.sb3_policy.policy:PPOPolicy:1,local_search:3 --protocol broadcast

Every agent it serves gets the observation the adapters gave in training (`collective.adapters.observations`),
built from its own slice of the seam's observation, and the action the policy's mode picks; it joins any
protocol, as the focal agent did in training. It plays `model_path`, relative to the directory the run starts
in (`collective.simulation.plugins.run_directory`; Ray workers read it there too); the model is one of its
`data_files`, so a missing model is refused before any work and a retrained one changes the plug-in's digest
that every row records. To score another model, subclass it:

    from collective.examples.sb3_policy.policy import PPOPolicy

    class Mine(PPOPolicy):
        model_path = "runs/mine.zip"
"""
from __future__ import annotations

import numpy as np

from . import reproducible  # noqa: F401  (before torch)

from stable_baselines3 import PPO  # noqa: E402

from collective.adapters.observations import agent_observations, observation_size  # noqa: E402
from collective.simulation.plugins import run_directory  # noqa: E402

ROWS_AT_ONCE = 64  # the policy sees at least this many rows a call (padded): a small batch rounds its last bit
# differently in torch's matrix products, so padding keeps an action independent of how many episodes share a batch


class PPOPolicy:
    """A Stable-Baselines3 PPO model, acting on each agent's adapter observation (deterministic: the mode)."""

    model_path = "ppo_lambdastar.zip"
    data_files = (model_path,)
    protocols = ("*",)  # as the focal agent in training: it hears any protocol's targets and fields

    def __init_subclass__(cls, **kwargs):
        """A subclass's model is its data: `data_files` follows `model_path` unless the subclass names its files
        itself, the model among them (the files are fixed per class: the run checks and digests them)."""
        super().__init_subclass__(**kwargs)
        if "data_files" not in cls.__dict__:
            cls.data_files = (cls.model_path,)
        elif cls.model_path not in cls.data_files:
            raise TypeError(f"{cls.__name__}.data_files must name its model_path {cls.model_path!r}")

    def __init__(self):
        self.model = None

    def reset(self, batch):
        if self.model is None:  # the run checked it is there before any work (`data_files`)
            self.model = PPO.load(run_directory() / self.model_path, device="cpu")
        size = self.model.observation_space.shape[0]
        sizes = {observation_size(batch.observation_range, hears): hears for hears in (False, True)}
        if size not in sizes:
            raise ValueError(f"{self.model_path} takes observations of {size} numbers; observation_range "
                             f"{batch.observation_range} gives {' or '.join(map(str, sizes))}")
        self.hears, self.rows, self.cols = sizes[size], batch.rows, batch.cols

    def act(self, obs):
        seen = agent_observations(obs, self.rows, self.cols, self.hears)  # (E, A, D) float32
        flat = seen.reshape(-1, seen.shape[2])  # (E*A, D)
        actions, _ = self.model.predict(padded(flat), deterministic=True)
        return actions[:len(flat)].reshape(obs.cell.shape)  # (E, A)


def padded(rows: np.ndarray) -> np.ndarray:
    """(max(n, ROWS_AT_ONCE), D): the n rows, then rows of zeros."""
    out = np.zeros((max(len(rows), ROWS_AT_ONCE), rows.shape[1]), rows.dtype)
    out[:len(rows)] = rows
    return out
