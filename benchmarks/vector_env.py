"""Agent-steps per second of the batched RL adapters (`collective.adapters.vector`) under a uniform
random policy: 10x10 torus, T=200, group size 10, 1,000 episodes per batch (10,000 agents per
step), one thread. Actions are drawn per step from a NumPy Generator, inside the timing; compile
time is not timed (`load_kernel` and one warm-up step first). Runs in well under a minute.

    .venv/bin/python benchmarks/vector_env.py
"""
from __future__ import annotations

import time

import numpy as np

from collective.adapters.vector import LambdaStarBatchedParallelEnv, LambdaStarVectorEnv
from collective.evaluation.compiled_code import load_kernel

SETTINGS = dict(group_size=10, rows=10, cols=10, iterations=200, episodes=1000)
STEPS = 1000  # five batches of T=200; the timing includes autoresets (generating the next batch)
TARGET = 1e6  # agent-steps per second


def vector_rate(rng: np.random.Generator) -> float:
    env = LambdaStarVectorEnv(**SETTINGS)
    env.reset(seed=0)
    env.step(rng.integers(0, 9, env.num_envs))  # warm-up
    moved, started = 0, time.perf_counter()
    for _ in range(STEPS):
        *_, infos = env.step(rng.integers(0, 9, env.num_envs))
        moved += "episode" not in infos  # an autoreset step (NEXT_STEP) starts a batch, moves no one
    return moved * env.num_envs / (time.perf_counter() - started)


def batched_rate(rng: np.random.Generator) -> float:
    env = LambdaStarBatchedParallelEnv(**SETTINGS)
    env.reset(seed=0)
    shape = (env.episodes, len(env.possible_agents))
    env.step(dict(zip(env.agents, rng.integers(0, 9, shape).T)))  # warm-up
    steps, started = 0, time.perf_counter()
    while steps < STEPS:
        if not env.agents:
            env.reset()  # PettingZoo style: the next batch of episodes
        env.step(dict(zip(env.agents, rng.integers(0, 9, shape).T)))  # {agent: (E,)}
        steps += 1
    return steps * shape[0] * shape[1] / (time.perf_counter() - started)


def main() -> None:
    load_kernel()
    rng = np.random.default_rng(0)
    print(f"10x10, T=200, group size 10, 1000 episodes per batch, {STEPS} steps, random policy")
    for name, rate in (("LambdaStarVectorEnv", vector_rate(rng)), ("LambdaStarBatchedParallelEnv", batched_rate(rng))):
        print(f"{name:30s} {rate / 1e6:6.2f} M agent-steps/s ({'meets' if rate >= TARGET else 'BELOW'} 1 M)")


if __name__ == "__main__":
    main()
