"""Throughput of the compiled Λ* simulator, in agent-steps per second on one thread.

Each row is timed two ways. Kernel: for every behaviour at group sizes 1, 10 and 20, and every protocol at group size 10 (10x10 torus,
T=200, profile "paper"), it times the kernel as `collective.evaluation.play.play` reports it, on an
environment batch generated beforehand (generation is not timed). The batch has as many episodes
as one `collective.evaluate` batch holds, and the kernel replays it for about 1.5 s. Each row gets
one warm-up call (JIT compile, or a load from numba's disk cache) and one call to size the timing,
and the best of 3 timings counts. After each row the script prints the process's peak RSS. It
then runs `collective.evaluate.evaluate` for 2,000 and for 20,000 episodes, each in its own
subprocess, to show that memory does not grow with the number of episodes. Last, it compares the
group-size-10 rates with the C++ reference figures quoted in the issues, and times each episode's
ceiling of R̄ (`collective.environments.ceiling`) against the kernel time of local searchers. The sham rows time
each protocol's sham control (`communication_control` sham, on the stepping core). The plug-in rows time
the NumPy examples (`examples/`) on the stepping core the same way (group size 10, batches of
`collective.evaluate` size: 2,000 episodes); run the script from the project root.
`benchmarks/vector_env.py` times the batched Gymnasium and PettingZoo-style environments.

End to end (the indented lines under each row): the same group evaluated by `collective.evaluate.evaluate`
as a user waits for it, under the default profile and under "paper", about E2E_AGENT_STEPS agent-steps
(training passes included): wall time (generation, ceilings and scoring included; compilation excluded, as
`wall_seconds`; each batch played in every usable core's kernel thread, `evaluate`'s default), agent-steps per
wall second and per kernel CPU second, and the time split: kernel (its CPU over the threads), the wait
for environments (`generation_wait_seconds`: generation and ceilings run one batch ahead in a
background thread, only what play did not hide counts), other (scoring and bookkeeping); beside them the
CPU work of generation and of the ceilings timed alone on the same batches, and the 1-minute load average.

    .venv/bin/python benchmarks/throughput.py              # full table, about 2 minutes
    .venv/bin/python benchmarks/throughput.py --quick      # group size 10, short timings
    .venv/bin/python benchmarks/throughput.py --episodes N # one kernel call over N episodes per timing
    .venv/bin/python benchmarks/throughput.py --behaviour q_learning --behaviour sarsa \
        --learning-protocol held_out                      # those rows only, learners on held-out episodes
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version

import numpy as np

from collective.behaviours import behaviour_names, learns
from collective.config import DEFAULT_PROFILE, LEARNING_PROTOCOLS, PROFILES, EvaluationConfig
from collective.evaluate import evaluate
from collective.evaluation.batches import batch_episodes
from collective.evaluation.environments import generate_environments, with_ceiling
from collective.evaluation.play import play
from collective.environments.lambda_star import EnvironmentBatch
from collective.environments.patterns import forget_recent_blocks
from collective.version import VERSION

PROFILE = "paper"
GRID = 10
ITERATIONS = 200
GROUP_SIZES = (1, 10, 20)
QUICK_GROUP_SIZES = (10,)
TARGET_SECONDS = 1.5
QUICK_TARGET_SECONDS = 0.2
REPEATS = 3
E2E_PROFILES = (DEFAULT_PROFILE, "paper")
E2E_AGENT_STEPS, QUICK_E2E_AGENT_STEPS = 8_000_000, 2_000_000  # per end-to-end run: 4,000 episodes of G10, T=200
E2E_MIN_EPISODES, E2E_MAX_EPISODES = 20, 10_000
LARGEST_BATCH = 1_000_000  # never binding: `batch_episodes` caps a batch at ~4 M agent-steps
MEMORY_BEHAVIOUR = "local_search"
MEMORY_GROUP_SIZE = 10
MEMORY_EPISODES = (2_000, 20_000)
REFERENCE_GROUP_SIZE = 10
# C++ reference figures quoted in the issue, at group size 10: (behaviour, which of our rates, M steps/s).
CPP_REFERENCE = (("local_search", "scored", 2.6), ("oracle", "scored", 3.6), ("q_learning", "training", 4.0))
# Protocol rows, at group size 10: (protocol, its members' behaviour), and the C++ figures.
PROTOCOL_ROWS = (("stigmergy", "local_search"), ("broadcast", "local_search"), ("wisdom", "local_search"),
                 ("auction", "local_search"), ("dictatorship", "local_search"), ("hierarchy", "local_search"),
                 ("shared_q", "q_learning"))
CPP_PROTOCOL_REFERENCE = (("stigmergy", "scored", 1.7), ("wisdom", "scored", 1.4), ("auction", "scored", 1.9),
                          ("shared_q", "training", 4.5))
# Sham-control rows (the stepping core's sham of each protocol of local searchers), at group size 10.
SHAM_PROTOCOLS = ("stigmergy", "broadcast", "wisdom", "auction", "dictatorship", "hierarchy")
# Plug-in rows on the stepping core, at group size 10: (label, behaviour, protocol).
PLUGIN_ROWS = (("numpy local", "examples.numpy_local_search:LocalSearch", "none"),
               ("numpy bcast", "examples.numpy_local_search:LocalSearch", "examples.numpy_broadcast:Broadcast"),
               ("np loc+bcast", "examples.numpy_local_search:LocalSearch", "broadcast"))


# Runs in a fresh interpreter so that its peak RSS belongs to this one evaluation alone. It reads
# VmHWM (KiB), the peak RSS of its own process image: Linux carries ru_maxrss across exec, so the
# child's ru_maxrss would be at least this benchmark's own peak.
_MEMORY_PROBE = """
import sys, time
from collective.config import LEARNING_PROTOCOLS, PROFILES, EvaluationConfig
from collective.evaluate import evaluate
from collective.version import VERSION
profile, behaviour, group_size, episodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
config = EvaluationConfig.from_profile(profile, behaviour=behaviour, group_size=group_size, episodes=episodes)
started = time.perf_counter()
result = evaluate(config)
seconds = time.perf_counter() - started
with open("/proc/self/status") as status:
    peak_kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print(peak_kib, result.estimate.upsilon, seconds)
"""


@dataclass(frozen=True)
class Row:
    behaviour: str
    protocol: str
    group_size: int
    episodes: int  # episodes played per timing
    kernel_seconds: float  # best of the repeats
    scored_steps: int  # episodes x T x group size
    training_steps: int  # episodes x passes x T x group size, learners only
    upsilon: float
    peak_rss_kib: int

    @property
    def scored_rate(self) -> float:
        return self.scored_steps / self.kernel_seconds

    @property
    def training_rate(self) -> float:
        return self.training_steps / self.kernel_seconds


def cpu_model() -> str:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def timed_calls(config: EvaluationConfig, batch: EnvironmentBatch, calls: int) -> tuple[float, np.ndarray]:
    """Kernel seconds (as `evaluation.play.play` times them) for `calls` calls over the batch, and the last R̄."""
    seconds = 0.0
    for _ in range(calls):
        run = play(config, batch)
        seconds += run.kernel_seconds
    return seconds, run.mean_rewards


def measure(behaviour: str, group_size: int, target_seconds: float, fixed_episodes: int | None,
            protocol: str = "none", **settings) -> Row:
    """Time one group; with `fixed_episodes`, one call over that many episodes; `settings` are
    further config fields (a learning protocol)."""
    config = EvaluationConfig.from_profile(PROFILE, behaviour=behaviour, group_size=group_size, protocol=protocol,
                                           rows=GRID, cols=GRID, iterations=ITERATIONS,
                                           episodes=fixed_episodes or LARGEST_BATCH, **settings)
    batch = generate_environments(config, np.arange(fixed_episodes or batch_episodes(config)))
    play(config, batch)  # warm-up
    if fixed_episodes:
        calls = 1
    else:
        seconds_per_call, _ = timed_calls(config, batch, 1)
        calls = max(1, round(target_seconds / seconds_per_call))
    timings = [timed_calls(config, batch, calls) for _ in range(REPEATS)]
    best_seconds, mean_rewards = min(timings, key=lambda timing: timing[0])
    episodes = calls * len(batch)
    scored_steps = episodes * config.iterations * group_size
    passes = config.q_training_passes if learns(behaviour) else 0
    return Row(behaviour, protocol, group_size, episodes, best_seconds, scored_steps, scored_steps * passes,
               float(np.mean(mean_rewards)), peak_rss_kib())


@dataclass(frozen=True)
class EndToEnd:
    profile: str
    episodes: int
    steps: int  # scored and training agent-steps
    wall_seconds: float
    kernel_seconds: float
    waited_seconds: float  # of the wall, waiting for environments and ceilings
    generation_seconds: float  # generating the same batches alone
    ceiling_seconds: float  # their ceilings alone
    load: float  # 1-minute load average after the run
    threads: int  # kernel threads each batch was played in (`evaluate`'s default: every usable core)

    def line(self) -> str:
        # kernel_seconds is CPU summed over the threads: its wall share, as if they shared the work evenly
        other = self.wall_seconds - self.kernel_seconds / self.threads - self.waited_seconds

        def share(seconds: float) -> str:
            return f"{seconds:6.2f} s {seconds / self.wall_seconds:4.0%}"
        return (f"   e2e {self.profile:<7}{self.episodes:>7,} ep  wall {self.wall_seconds:6.2f} s "
                f"{self.steps / self.wall_seconds / 1e6:7.2f} M/s end to end, {self.steps / self.kernel_seconds / 1e6:6.2f}"
                f" M/s kernel | kernel {share(self.kernel_seconds / self.threads)} x{self.threads} threads, waited "
                f"{share(self.waited_seconds)}, other "
                f"{share(other)} | alone: generation {self.generation_seconds:5.2f} s, ceilings "
                f"{self.ceiling_seconds:5.2f} s | load {self.load:.1f}")


def end_to_end(profile: str, behaviour: str, group_size: int, steps_wanted: int, protocol: str = "none") -> EndToEnd:
    """One evaluation of about `steps_wanted` agent-steps as a user runs it (learners with the profile's own
    learning settings), and its batches' generation and ceilings timed alone."""
    passes = EvaluationConfig.from_profile(profile).q_training_passes if learns(behaviour) else 0
    episodes = int(np.clip(steps_wanted // (ITERATIONS * group_size * (1 + passes)), E2E_MIN_EPISODES,
                           E2E_MAX_EPISODES))
    config = EvaluationConfig.from_profile(profile, behaviour=behaviour, group_size=group_size, protocol=protocol,
                                           rows=GRID, cols=GRID, iterations=ITERATIONS, episodes=episodes)
    forget_recent_blocks()  # none drawn by an earlier row: the run generates all its environments
    result = evaluate(config)
    forget_recent_blocks()  # and so does the timing alone
    generation = ceilings = 0.0
    size = batch_episodes(config)
    for first in range(0, episodes, size):
        started = time.perf_counter()
        batch = generate_environments(config, np.arange(first, min(first + size, episodes)))
        generation += time.perf_counter() - started
        started = time.perf_counter()
        with_ceiling(config, batch)
        ceilings += time.perf_counter() - started
    return EndToEnd(profile, episodes, result.agent_steps + result.training_steps, result.wall_seconds,
                    result.kernel_seconds, result.generation_wait_seconds, generation, ceilings, os.getloadavg()[0],
                    result.threads)


def end_to_end_lines(behaviour: str, group_size: int, steps_wanted: int, protocol: str = "none") -> str:
    return "\n".join(end_to_end(profile, behaviour, group_size, steps_wanted, protocol).line()
                     for profile in E2E_PROFILES)


def ceiling_overhead(group_size: int) -> str:
    """The ceiling's dynamic programme (best of REPEATS) against the kernel time of a group of local
    searchers on the same evaluate-sized batch."""
    config = EvaluationConfig.from_profile(PROFILE, behaviour="local_search", group_size=group_size, rows=GRID,
                                           cols=GRID, iterations=ITERATIONS, episodes=LARGEST_BATCH)
    batch = generate_environments(config, np.arange(batch_episodes(config)))
    play(config, batch), with_ceiling(config, batch)  # warm-up
    kernel = min(play(config, batch).kernel_seconds for _ in range(REPEATS))
    ceiling = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        with_ceiling(config, batch)
        ceiling.append(time.perf_counter() - started)
    return (f"  G={group_size:<3} ceiling {min(ceiling) / len(batch) * 1e6:7.1f} µs/episode, kernel "
            f"{kernel / len(batch) * 1e6:7.1f} µs/episode: {min(ceiling) / kernel:6.1%} of the kernel time")


def format_row(row: Row, label: str) -> str:
    training = f"{row.training_rate / 1e6:12.2f}" if row.training_steps else f"{'-':>12}"
    return (f"{label:<13}{row.group_size:>3}{row.episodes:>10,}{row.kernel_seconds:>10.2f}"
            f"{row.scored_rate / 1e6:>12.2f}{training}{row.upsilon:>10.4f}{row.peak_rss_kib / 1024:>14.1f}")


def memory_check() -> None:
    """Peak RSS of `evaluate` at each number of episodes in MEMORY_EPISODES, one subprocess each."""
    print(f"\nMemory: collective.evaluate.evaluate, {MEMORY_BEHAVIOUR} G={MEMORY_GROUP_SIZE}, profile {PROFILE!r}, "
          f"one subprocess per run (peak RSS = the child's VmHWM)")
    for episodes in MEMORY_EPISODES:
        probe = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, PROFILE, MEMORY_BEHAVIOUR,
                                str(MEMORY_GROUP_SIZE), str(episodes)],
                               capture_output=True, text=True, check=True)
        rss_kib, upsilon, seconds = probe.stdout.split()
        print(f"  {episodes:>7,} episodes: peak RSS {int(rss_kib) / 1024:7.1f} MiB"
              f"   (Υ = {float(upsilon):.4f}, {float(seconds):.1f} s)")


def reference_comparison(rows: dict[str, Row], figures) -> str:
    parts = []
    for name, rate_name, reference in figures:
        row = rows[name]
        ours = (row.training_rate if rate_name == "training" else row.scored_rate) / 1e6
        unit = "training steps/s" if rate_name == "training" else "agent-steps/s"
        parts.append(f"{name} {ours:.2f} vs {reference} M {unit} = {ours / reference:.1f}x")
    return f"vs C++ reference (issues), G={REFERENCE_GROUP_SIZE}: " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, help="time one kernel call over N episodes per row "
                        "instead of sizing each timing to ~1.5 s")
    parser.add_argument("--quick", action="store_true", help="group size 10 only, short timings (smoke test)")
    parser.add_argument("--behaviour", action="append", default=None, metavar="NAME",
                        help="time these behaviours' rows only (repeatable), without the other sections")
    parser.add_argument("--learning-protocol", choices=LEARNING_PROTOCOLS, default="replay",
                        help="what learners train on; held_out uses the sound profile's training_episodes")
    args = parser.parse_args()
    if args.episodes is not None and args.episodes < 1:
        parser.error("--episodes must be >= 1")
    started = time.perf_counter()
    group_sizes = QUICK_GROUP_SIZES if args.quick else GROUP_SIZES
    target_seconds = QUICK_TARGET_SECONDS if args.quick else TARGET_SECONDS
    e2e_steps = QUICK_E2E_AGENT_STEPS if args.quick else E2E_AGENT_STEPS
    timing = (f"one kernel call over {args.episodes:,} episodes" if args.episodes
              else f"kernel calls replaying one evaluate-sized batch for ~{target_seconds} s")

    print(f"Machine: {cpu_model()}, numba {version('numba')}, single thread "
          f"({os.cpu_count()} CPUs visible), collective {VERSION}")
    print(f"Setup: profile {PROFILE!r}, {GRID}x{GRID} torus, T={ITERATIONS}. Timed: the kernel time "
          f"collective.evaluation.play.play reports, on an environment batch generated beforehand (generation "
          f"excluded); per row one warm-up call, then best of {REPEATS} timings of {timing}.")
    header = (f"{'{}':<13}{'G':>3}{'episodes':>10}{'kernel s':>10}{'scored M/s':>12}"
              f"{'train M/s*':>12}{'Υ':>10}{'peak RSS MiB':>14}")
    learning = {"learning_protocol": args.learning_protocol}
    if args.learning_protocol == "held_out":
        learning["training_episodes"] = PROFILES["sound"]["training_episodes"]
    print(f"End to end (indented lines): collective.evaluate.evaluate under {' and '.join(E2E_PROFILES)}, about "
          f"{e2e_steps:,} agent-steps a run; load average at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    print(f"Learners: {', '.join(f'{key} {value}' for key, value in learning.items())}")
    print()
    print(header.format("behaviour"))
    at_reference = {}
    for behaviour in args.behaviour or behaviour_names():
        for group_size in group_sizes:
            row = measure(behaviour, group_size, target_seconds, args.episodes, **learning)
            if group_size == REFERENCE_GROUP_SIZE:
                at_reference[behaviour] = row
            print(format_row(row, behaviour), flush=True)
            print(end_to_end_lines(behaviour, group_size, e2e_steps), flush=True)
    if args.behaviour:
        print(f"Total runtime: {time.perf_counter() - started:.0f} s")
        return
    print()
    print(header.format("protocol"))
    protocol_rows = {}
    for protocol, behaviour in PROTOCOL_ROWS:
        row = measure(behaviour, REFERENCE_GROUP_SIZE, target_seconds, args.episodes, protocol)
        protocol_rows[protocol] = row
        print(format_row(row, protocol), flush=True)
        print(end_to_end_lines(behaviour, REFERENCE_GROUP_SIZE, e2e_steps, protocol), flush=True)
    passes = EvaluationConfig.from_profile(PROFILE).q_training_passes
    print(f"* Learners only. Scored rate = episodes x T x G / kernel time; training rate = episodes x {passes} "
          "passes x T x G / kernel time; for learners the kernel time covers the training passes and the "
          "scored pass. Protocol rows: local searchers (shared_q: Q-learners). Peak RSS: this process's "
          "ru_maxrss after the row.")

    print()
    print(header.format("sham"))
    for protocol in SHAM_PROTOCOLS:
        print(format_row(measure("local_search", REFERENCE_GROUP_SIZE, target_seconds, args.episodes, protocol,
                                 communication_control="sham"), protocol), flush=True)
    print("Sham rows: each protocol's sham control on the stepping core; the scored rate counts the listening "
          "group's agent-steps, while its kernel time also plays each episode's shadow and the protocol's rule "
          "once per member and iteration (what each member hears).")

    print()
    print(header.format("plug-ins"))
    for label, behaviour, protocol in PLUGIN_ROWS:
        print(format_row(measure(behaviour, REFERENCE_GROUP_SIZE, target_seconds, args.episodes, protocol), label),
              flush=True)
        print(end_to_end_lines(behaviour, REFERENCE_GROUP_SIZE, e2e_steps, protocol), flush=True)
    print("Plug-in rows: the NumPy local searcher (examples/numpy_local_search.py) alone, under the NumPy "
          "broadcast (examples/numpy_broadcast.py), and under the built-in broadcast, on the stepping core.")

    print(f"\nCeiling of R̄ (ceiling.upsilon_best, once per episode and shared by every group of a sweep cell), "
          f"against local searchers, {GRID}x{GRID}, T={ITERATIONS}:")
    for group_size in (1, REFERENCE_GROUP_SIZE):
        print(ceiling_overhead(group_size), flush=True)
    memory_check()
    print()
    print(reference_comparison(at_reference, CPP_REFERENCE))
    print(reference_comparison(protocol_rows, CPP_PROTOCOL_REFERENCE))
    print(f"Total runtime: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
