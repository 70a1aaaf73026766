"""Train a PPO policy (Stable-Baselines3) on Λ* through Gymnasium, as the focal agent of a group:

    python -m examples.sb3_policy.train --mix local_search:3 --protocol broadcast --out ppo_lambdastar.zip

Each of `--envs` environments is `gymnasium.make("collective/LambdaStar-v0", ...)`: one agent the policy drives,
beside the `--mix` background agents, under `--protocol` (observations: docs/adapters.md). The saved model is
scored as a behaviour by `examples.sb3_policy.policy:PPOPolicy` in any group; the training environments are those
of root seeds `--seed` .. `--seed + envs - 1`, so score it with another seed.
"""
from __future__ import annotations

import argparse

from . import reproducible  # noqa: F401  (before torch)

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

from collective.adapters import ENV_ID  # noqa: E402  (importing it registers the environment with Gymnasium)

from .policy import PPOPolicy  # noqa: E402

DEFAULT_MODEL = PPOPolicy.model_path  # the file the behaviour plays


def train(out: str = DEFAULT_MODEL, timesteps: int = 20_000, seed: int = 0, envs: int = 8, **settings) -> PPO:
    """PPO for `timesteps` steps (rounded up to whole rollouts of 256 steps per environment) on `envs` copies of
    the Gymnasium environment made with `settings` (rows, cols, iterations, mix, protocol, profile, ...), saved to
    `out` (nothing saved when out is empty). timesteps=0 saves the untrained policy, a baseline."""
    environment = make_vec_env(ENV_ID, n_envs=envs, seed=seed, env_kwargs=settings)
    model = PPO("MlpPolicy", environment, n_steps=256, batch_size=256, seed=seed, device="cpu", verbose=0)
    if timesteps:
        model.learn(timesteps)
    if out:
        model.save(out)
    return model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.sb3_policy.train", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DEFAULT_MODEL, help=f"the model's file (default {DEFAULT_MODEL})")
    parser.add_argument("--timesteps", type=int, default=20_000, help="agent-steps of training (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="PPO's seed and the first environment's root seed")
    parser.add_argument("--envs", type=int, default=8, help="environments stepped together (default 8)")
    parser.add_argument("--grid", type=int, default=10, help="a square grid's side (default 10)")
    parser.add_argument("--iterations", type=int, default=50, help="iterations per episode, T (default 50)")
    parser.add_argument("--mix", default="", help="background agents, e.g. local_search:3 (default none)")
    parser.add_argument("--protocol", default="none", help="the group's protocol, e.g. broadcast (default none)")
    args = parser.parse_args(argv)
    model = train(args.out, args.timesteps, args.seed, args.envs, rows=args.grid, cols=args.grid,
                  iterations=args.iterations, mix=args.mix, protocol=args.protocol)
    teammates = f"beside {args.mix}" if args.mix else "alone"
    print(f"PPO trained for {model.num_timesteps} steps on {ENV_ID} "
          f"({args.grid}x{args.grid}, T={args.iterations}, {teammates}, protocol {args.protocol}): {args.out}")


if __name__ == "__main__":
    main()
