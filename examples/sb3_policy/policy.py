"""A model trained with Stable-Baselines3 on the adapters (`examples.sb3_policy.train`), as a behaviour plug-in:

    collective evaluate --mix examples.sb3_policy.policy:PPOPolicy:1,local_search:3 --protocol broadcast

Every agent it serves gets the observation the adapters gave in training (`collective.adapters.observations`),
built from its own slice of the seam's observation, and the action the policy's mode picks; it joins any
protocol, as the focal agent did in training. It plays `model_path`, relative to the working directory; to
score another model, subclass it: `class Mine(PPOPolicy): model_path = "runs/mine.zip"`.
"""
from __future__ import annotations

from pathlib import Path

from . import reproducible  # noqa: F401  (before torch)

from stable_baselines3 import PPO  # noqa: E402

from collective.adapters.observations import agent_observations, observation_size  # noqa: E402


class PPOPolicy:
    """A Stable-Baselines3 PPO model, acting on each agent's adapter observation (deterministic: the mode)."""

    model_path = "ppo_lambdastar.zip"
    protocols = ("*",)  # as the focal agent in training: it hears any protocol's targets and fields

    def __init__(self):
        self.model = None

    def reset(self, batch):
        if self.model is None:
            path = Path(self.model_path)
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no model there (train one: python -m examples.sb3_policy.train "
                                        f"--out {path})")
            self.model = PPO.load(path, device="cpu")
        size = self.model.observation_space.shape[0]
        sizes = {observation_size(batch.observation_range, hears): hears for hears in (False, True)}
        if size not in sizes:
            raise ValueError(f"{self.model_path} takes observations of {size} numbers; observation_range "
                             f"{batch.observation_range} gives {' or '.join(map(str, sizes))}")
        self.hears, self.rows, self.cols = sizes[size], batch.rows, batch.cols

    def act(self, obs):
        seen = agent_observations(obs, self.rows, self.cols, self.hears)  # (E, A, D) float32
        actions, _ = self.model.predict(seen.reshape(-1, seen.shape[2]), deterministic=True)
        return actions.reshape(obs.cell.shape)  # (E, A)
