"""A policy trained with a standard RL library, scored as a behaviour: `train` fits Stable-Baselines3's PPO on
the Gymnasium adapter (`collective/LambdaStar-v0`) as the focal agent among teammates under a protocol, and
`policy.PPOPolicy` plays the saved model as a plug-in behaviour in any group (docs/adapters.md, "Train with
Stable-Baselines3"). Needs `pip install 'collective-intelligence[rl]'`."""
