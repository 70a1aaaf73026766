"""Issue 21: the built-in window_signs learners against the NumPy plug-in `examples/numpy_window_q.py` on the
same held-out training episodes and the same test episodes (same seeds), at one group size.

The built-in trains its kept tables on `table_training_batch` (q_training_passes = N passes over N held-out
episodes) and is scored greedily on the test episodes; the plug-in plays those same training episodes
(learning, in order, `--chunk` episodes per batch) and then the same test episodes greedily. Local search
on the same test episodes is the reference. Per seed: each variant's mean R̄ over the test episodes (95% CI
over episodes) and its ratio to local search's; then the ratios' mean over seeds (95% CI over seeds: each
seed trains its own tables, whose luck varies far more than the test episodes do) and the paired
differences to the first variant. See docs/learner-diagnosis.md.

    .venv/bin/python benchmarks/window_q_comparison.py --grid 10 --group 10 --train 300 --seeds 1,2,3,4 \
        --variants builtin:q_initial=0,plugin:table=agent:alpha=0.1:gamma=0.7:epsilon=0.2,builtin
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from collective.config import EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
from collective.evaluation.stepping_group import plugin_group
from collective.evaluation.tables import table_training_batch

PLUGIN = "examples/numpy_window_q.py:WindowQ"


def mean_ci(values: np.ndarray) -> str:
    """Mean [95% CI], Student t (few seeds) or normal (many episodes)."""
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    return f"{values.mean():.3f} [{values.mean() - half:.3f}, {values.mean() + half:.3f}]"


def plugin_scores(base: dict, params: dict, reference: EvaluationConfig, tests, chunk: int) -> np.ndarray:
    """R̄ of the test episodes for the plug-in trained on the reference's training episodes, `chunk` per batch."""
    config = EvaluationConfig.from_profile("sound", behaviour=PLUGIN, behaviour_params=params, **base)
    group = plugin_group(config)
    learner = group.behaviours[0].instance
    for first in range(0, reference.q_training_passes, chunk):
        play(config, table_training_batch(reference, (), first, first + chunk), group=group)
    learner.learning = False
    return play(config, tests, group=group).mean_rewards


def variant_scores(variant: str, base: dict, reference: EvaluationConfig, tests, chunk: int) -> np.ndarray:
    """R̄ per test episode of one variant: "builtin:NAME[:field=value...]" or "plugin[:param=value...]"."""
    kind, *settings = variant.split(":")
    values = dict(item.split("=", 1) for item in settings)
    if kind == "plugin":
        return plugin_scores(base, values, reference, tests, chunk)
    name = values.pop("behaviour", "q_learning") if kind == "builtin" else kind
    fields = {key: (value if key == "protocol" else float(value)) for key, value in values.items()}
    config = EvaluationConfig.from_profile("sound", behaviour=name, q_training_passes=reference.q_training_passes,
                                           training_episodes=reference.training_episodes, **{**base, **fields})
    return play(config, tests).mean_rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=10)
    parser.add_argument("--group", type=int, default=10)
    parser.add_argument("--train", type=int, default=300, help="training episodes (= passes)")
    parser.add_argument("--tests", type=int, default=400)
    parser.add_argument("--seeds", default="1", help="comma list: each seed its own tables and test episodes")
    parser.add_argument("--chunk", type=int, default=1, help="training episodes per plug-in batch")
    parser.add_argument("--variants", default="builtin,plugin:table=agent,plugin:table=group",
                        help="space-free comma list of builtin[:behaviour=NAME][:FIELD=VALUE...] (sound "
                             "overrides, e.g. q_alpha=0.2:protocol=shared_q) and plugin[:PARAM=VALUE...] "
                             "(WindowQ parameters, e.g. table=agent:tie_break=first)")
    args = parser.parse_args()
    variants = args.variants.split(",")
    ratios = {variant: [] for variant in variants}
    print(f"grid {args.grid} G {args.group} train {args.train} tests {args.tests}; R̄ of the test episodes, "
          f"95% CI over test episodes; ratio to local search on the same episodes")
    for seed in map(int, args.seeds.split(",")):
        base = dict(rows=args.grid, cols=args.grid, group_size=args.group, iterations=100, episodes=args.tests,
                    seed=seed)
        reference = EvaluationConfig.from_profile("sound", behaviour="q_learning", q_training_passes=args.train,
                                                  training_episodes=args.train, **base)
        tests = generate_environments(reference, np.arange(args.tests), training=False)
        local = play(EvaluationConfig.from_profile("sound", behaviour="local_search", **base), tests).mean_rewards
        print(f"seed {seed}  local_search {mean_ci(local)}")
        for variant in variants:
            started = time.perf_counter()
            scores = variant_scores(variant, base, reference, tests, args.chunk)
            ratios[variant].append(scores.mean() / local.mean())
            print(f"  {variant:<40} {mean_ci(scores)}  ratio {ratios[variant][-1]:.3f}"
                  f"  ({time.perf_counter() - started:.1f} s)", flush=True)
    print("ratio to local search, mean over seeds [95% CI over seeds, t]:")
    for variant, values in ratios.items():
        print(f"  {variant:<40} {mean_ci(np.array(values)) if len(values) > 1 else f'{values[0]:.3f}'}")
    if len(variants) > 1 and len(ratios[variants[0]]) > 1:
        print(f"paired difference of the ratio to {variants[0]}, mean over seeds [95% CI over seeds, t]:")
        for variant in variants[1:]:
            print(f"  {variant:<40} {mean_ci(np.array(ratios[variant]) - np.array(ratios[variants[0]]))}")


if __name__ == "__main__":
    main()
