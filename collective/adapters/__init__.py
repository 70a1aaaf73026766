"""Λ* for other libraries: one-episode PettingZoo and Gymnasium environments (`single_episode`, on
the scenes of `scenes`, or with teammates on the stepping core) and batched ones over the stepping
core for RL at kernel speed (`vector`), registered with Gymnasium as "collective/LambdaStar-v0" (`registration`).
Needs the extras: pip install 'collective-intelligence[adapters]'."""
from collective.adapters.scenes import GridScene, environment_config  # noqa: F401
from collective.adapters.single_episode import LambdaStarEnv, LambdaStarParallelEnv  # noqa: F401
from collective.adapters.vector import LambdaStarBatchedParallelEnv, LambdaStarVectorEnv  # noqa: F401
from collective.adapters.registration import ENV_ID, register_environments  # noqa: E402, F401

register_environments()
