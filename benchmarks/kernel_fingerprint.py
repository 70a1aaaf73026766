"""A fingerprint of every kernel output over 252 small configurations, to show that a change to the
kernels leaves every number as it was, to the bit.

Each configuration (8x8, T = 30, 7 episodes; `paper`, `lambdastar2016` and `sound`; Λ* and landscapes;
observation range 1 and 2; every behaviour, a mix of all of them, every protocol and form, a
coordination threshold, ε > 0, window-sign states, pretrained and online tables, the sham control) is
played with `collective.evaluation.play.play(record=True)` and its outputs hashed: mean rewards, positions,
rewards, per-agent scores, message entropy, distinct messages, and the messages, bits and transfers
themselves. Configurations the config refuses are listed as refused. Each played configuration is also played
without records in 3 kernel threads (`play(threads=3)`), and any whose outputs differ from the recorded
run's are listed (a check within the one version, not part of the file). Run it on the code before and
after a change (e.g. the commit before in a second `git worktree`), then compare:

    .venv/bin/python benchmarks/kernel_fingerprint.py before.json
    .venv/bin/python benchmarks/kernel_fingerprint.py after.json
    .venv/bin/python benchmarks/kernel_fingerprint.py --compare before.json after.json

The comparison can fail: a local searcher's tie-break one tie short changes 85 of the 204 played
configurations. About 2 minutes on an empty numba cache.
"""
from __future__ import annotations

import argparse
import hashlib
import json

import numpy as np

import collective.evaluation.threads as threads_module
from collective.config import ConfigError, EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play

BASE = dict(rows=8, cols=8, iterations=30)
MIX = "local_search:2,random:1,oracle:1,imitation:2,q_learning:1,sarsa:1"


def configurations() -> list[dict]:
    """The settings of every configuration: a profile and its overrides."""
    cases = []
    for profile in ("paper", "lambdastar2016", "sound"):
        for env in ("lambda_star", "landscape"):
            for view in (1, 2):
                cases += [dict(profile=profile, env=env, observation_range=view, behaviour=b, group_size=g)
                          for b, g in (("local_search", 5), ("random", 3), ("oracle", 3), ("imitation", 4),
                                       ("q_learning", 3), ("sarsa", 3))]
                cases.append(dict(profile=profile, env=env, observation_range=view, mix=MIX, behaviour="mix",
                                  group_size=8))
                for protocol, params in (("stigmergy", {}), ("stigmergy", {"form": "reference"}), ("broadcast", {}),
                                         ("wisdom", {}), ("auction", {}), ("auction", {"sticky": "true"}),
                                         ("dictatorship", {"dictator": "2"}), ("hierarchy", {})):
                    cases.append(dict(profile=profile, env=env, observation_range=view, behaviour="local_search",
                                      group_size=6, protocol=protocol, protocol_params=params))
                cases.append(dict(profile=profile, env=env, observation_range=view, mix="local_search:4,random:2",
                                  behaviour="mix", group_size=6, protocol="auction"))
            cases += [dict(profile=profile, env=env, behaviour="q_learning", group_size=4, protocol="shared_q"),
                      dict(profile=profile, env=env, behaviour="sarsa", group_size=3, protocol="shared_q"),
                      dict(profile=profile, env=env, behaviour="q_learning", group_size=3, q_epsilon=0.2),
                      dict(profile=profile, env=env, behaviour="sarsa", group_size=3, q_epsilon=0.2),
                      dict(profile=profile, env=env, behaviour="q_learning", group_size=3, learner_state="window_signs",
                           learner_training="online", q_epsilon=0.1, q_training_passes=4),
                      dict(profile=profile, env=env, behaviour="sarsa", group_size=3, learner_state="window_signs",
                           learner_training="pretrained", q_training_passes=4),
                      dict(profile=profile, env=env, behaviour="local_search", group_size=4, coordination_threshold=2),
                      dict(profile=profile, env=env, mix="q_learning:2,local_search:2", behaviour="mix", group_size=4,
                           coordination_threshold=2),
                      dict(profile=profile, env=env, behaviour="local_search", group_size=5, protocol="stigmergy",
                           communication_control="sham"),
                      dict(profile=profile, env=env, behaviour="local_search", group_size=5, protocol="broadcast",
                           communication_control="sham")]
    return cases


def digest(value):
    """A short hash of an array's bytes, type and shape (None for none)."""
    if value is None:
        return None
    array = np.ascontiguousarray(np.asarray(value))
    return hashlib.sha256(array.tobytes() + str(array.dtype).encode() + str(array.shape).encode()).hexdigest()[:16]


def fingerprints() -> dict:
    """Each configuration's output hashes (or why it was refused), keyed by its settings."""
    results, threads_differ = {}, []
    threads_module.MIN_STEPS_PER_THREAD = 1  # these small batches are cut into threads too
    for case in configurations():
        overrides = dict(case)
        profile = overrides.pop("profile")
        if overrides.get("protocol_params") == {}:
            overrides.pop("protocol_params")
        key = f"{profile} " + " ".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        if overrides.get("env") == "landscape":
            overrides["landscape_peaks"] = 2
        if "learner_training" in overrides:
            overrides.update(learning_protocol="held_out", training_episodes=2)
        try:
            config = EvaluationConfig.from_profile(profile, **BASE, **overrides, episodes=7)
            batch = generate_environments(config, np.arange(7))
            run = play(config, batch, record=True)
        except ConfigError as error:  # a combination the config refuses
            results[key] = f"refused: {str(error)[:80]}"
            continue
        results[key] = {name: digest(getattr(run, name)) for name in
                        ("mean_rewards", "positions", "rewards", "agent_scores", "message_entropy",
                         "distinct_messages")}
        results[key].update(messages=float(run.messages), bits=float(run.bits), transfers=float(run.transfers))
        if not _same_unrecorded(run, play(config, batch, threads=3)):
            threads_differ.append(key)
    print(f"played again in 3 threads (7 runs of one episode): {len(threads_differ)} differ", *threads_differ)
    return results


def _same_unrecorded(run, other) -> bool:
    """Whether two plays of a batch agree on everything but the records."""
    return all(digest(getattr(run, name)) == digest(getattr(other, name))
               for name in ("mean_rewards", "agent_scores", "message_entropy", "distinct_messages")) and \
        (run.messages, run.bits, run.transfers) == (other.messages, other.bits, other.transfers)


def compare(before: dict, after: dict) -> int:
    """Print the configurations whose outputs differ; their number."""
    differ = [key for key in before if before[key] != after.get(key)] + [key for key in after if key not in before]
    for key in differ:
        print("differs:", key)
    played = sum(isinstance(value, dict) for value in before.values())
    print(f"{len(before)} configurations, {played} played, {len(differ)} differ")
    return len(differ)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="write the fingerprints to this JSON file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two fingerprint files")
    args = parser.parse_args()
    if args.compare:
        with open(args.compare[0]) as before, open(args.compare[1]) as after:
            raise SystemExit(1 if compare(json.load(before), json.load(after)) else 0)
    if not args.out:
        parser.error("give an output file, or --compare BEFORE AFTER")
    results = fingerprints()
    with open(args.out, "w") as out:
        json.dump(results, out, indent=1, sort_keys=True)
    played = sum(isinstance(value, dict) for value in results.values())
    print(f"{len(results)} configurations, {played} played, {len(results) - played} refused")


if __name__ == "__main__":
    main()
