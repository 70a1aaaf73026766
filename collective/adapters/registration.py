"""Gymnasium's names for the test (the RL convention `gymnasium.make("collective/LambdaStar-v0")`): importing
`collective.adapters` registers the single-agent environment (`single_episode.LambdaStarEnv`) and, for
`gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`, the batched one (`vector.LambdaStarVectorEnv`,
a batch of `num_envs` episodes at kernel speed)."""
from __future__ import annotations

import gymnasium

from collective.adapters.vector import LambdaStarVectorEnv
from collective.config import ConfigError

ENV_ID = "collective/LambdaStar-v0"


def vector_env(num_envs: int = 1, **settings) -> LambdaStarVectorEnv:
    """`gymnasium.make_vec`'s entry point: `num_envs` single agents, one episode each. A group of several focal
    agents an episode (`mix=`) makes more environments than episodes: refused, naming LambdaStarVectorEnv."""
    env = LambdaStarVectorEnv(episodes=num_envs, **settings)
    if env.num_envs != num_envs:
        raise ConfigError("num_envs", f"make_vec plays one agent an episode; for {env.group_size} focal agents an "
                                      "episode use LambdaStarVectorEnv(episodes=...) directly")
    return env


def register_environments() -> None:
    """Register ENV_ID once per process (a second import finds it registered)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="collective.adapters.single_episode:LambdaStarEnv",
                           vector_entry_point=f"{__name__}:vector_env")
