"""Measure the 2016 replication on the author's three configurations (nader-chmait/LambdaStar
csvResults.csv): the 13 C++ group types under `lambdastar2016` with every switch on, each switch off
alone, all off, and under `paper`; writes one row per (configuration, group type, variant, episode)
with its score and config, as a sweep would, and prints `collective.analysis.replication`'s tables.

    .venv/bin/python benchmarks/replication_2016.py --episodes 400 --out runs/replication_2016.parquet
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from collective.analysis.replication import (AUTHOR_CONFIGURATIONS, CPP_GROUP_TYPES, author_comparison,
                                             replication_table)
from collective.config import CPP_SWITCHES, EvaluationConfig
from collective.evaluation.play import run_episodes
from collective.sweeps.spec import stable_key

VARIANTS = ("none", *(name for name in CPP_SWITCHES if name != "cpp_groups_of_one"), "all", "paper")


def rows_for(agents: int, side: int, iterations: int, episodes: int, seed: int) -> list[pd.DataFrame]:
    frames = []
    environment = stable_key([side, agents, iterations, seed])
    for label, (behaviour, protocol) in CPP_GROUP_TYPES.items():
        for variant in VARIANTS:
            off = {} if variant in ("none", "paper") else \
                dict.fromkeys(CPP_SWITCHES if variant == "all" else (variant,), False)
            config = EvaluationConfig.from_profile("paper" if variant == "paper" else "lambdastar2016",
                                                   behaviour=behaviour, group_size=agents, rows=side, cols=side,
                                                   iterations=iterations, episodes=episodes, seed=seed,
                                                   protocol=protocol, **off)
            run = run_episodes(config, np.arange(episodes))
            record = config.as_record()
            frame = pd.DataFrame({"group": label, "episode": np.arange(episodes), "score": run.mean_rewards,
                                  "cpp_switch_off": variant, "grid": config.grid,
                                  "seed_word": environment if variant != "paper" else stable_key([environment])})
            for name in ("profile", "behaviour", "protocol", "group_size", "iterations", "rows", "cols",
                         *CPP_SWITCHES):
                frame[name] = record[name]
            frames.append(frame)
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--out", default="runs/replication_2016.parquet")
    args = parser.parse_args()
    started = time.perf_counter()
    frames = []
    for agents, side, iterations, _ in AUTHOR_CONFIGURATIONS:
        frames += rows_for(agents, side, iterations, args.episodes, args.seed)
        print(f"{agents} agents {side}x{side} T={iterations}: {time.perf_counter() - started:.0f} s", flush=True)
    rows = pd.concat(frames, ignore_index=True)
    rows.to_parquet(args.out)
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_rows", 400,
                           "display.float_format", "{:.4f}".format):
        print(author_comparison(rows))
        print(replication_table(rows))


if __name__ == "__main__":
    main()
