"""Λ* for other libraries: one-episode PettingZoo and Gymnasium environments (`single_episode`).
Needs the extras: pip install 'collective[adapters]'."""
from collective.adapters.single_episode import (GridScene, LambdaStarEnv, LambdaStarParallelEnv,  # noqa: F401
                                                environment_config)
