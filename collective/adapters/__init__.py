"""Λ* for other libraries: one-episode PettingZoo and Gymnasium environments (`single_episode`) and
batched ones over the stepping core for RL at kernel speed (`vector`). Needs the extras:
pip install 'collective[adapters]'."""
from collective.adapters.single_episode import (GridScene, LambdaStarEnv, LambdaStarParallelEnv,  # noqa: F401
                                                environment_config)
from collective.adapters.vector import LambdaStarBatchedParallelEnv, LambdaStarVectorEnv  # noqa: F401
