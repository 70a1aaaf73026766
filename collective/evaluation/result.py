"""What an evaluation reports: its `EvaluationResult`, and the totals its batches add up to in episode order."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from collective.analysis.scores import ExactSum, ScoreAccumulator, UpsilonEstimate, legg_hutter_log2_weights
from collective.config import EvaluationConfig
from collective.environments.pattern_probability import pattern_log2_probabilities
from collective.evaluation.runs import EpisodeRun, scores_by_behaviour
from collective.evaluation.tables import episode_runs
from collective.version import VERSION


@dataclass(frozen=True)
class EvaluationResult:
    config: EvaluationConfig
    estimate: UpsilonEstimate
    entropy_bits: float
    wall_seconds: float
    # The compiled kernel's: CPU seconds of the threads that played (`time.thread_time`, summed over `threads`),
    # their own work, not the minutes the threads preparing the next batches took from them on a busy machine.
    # The stepping core's (plug-ins, the sham): wall seconds, since a plug-in may work in threads of its own
    # (a built-in group's sham played in threads: each thread's, summed).
    kernel_seconds: float
    agent_steps: int  # scored agent-steps
    training_steps: int  # learner agent-steps spent in training passes
    messages: float  # protocol messages of the scored pass (spec §6); learners' training passes are not counted
    bits: float
    compile_seconds: float = 0.0  # loading or compiling the kernels, outside wall_seconds
    local_optima_mean: float | None = None  # landscapes only (spec §7)
    correlation_length_mean: float | None = None
    transfers: float = 0.0  # messages under the reads_and_writes accounting, of the scored pass
    message_entropy_bits: float = math.nan  # mean over the episodes with messages (protocols/__init__.py)
    # means over the episodes with messages of D/T and entropy x D/T, D the scored pass's distinct messages
    distinct_messages_per_iteration: float = math.nan
    distinct_information_bits_per_iteration: float = math.nan

    @property
    def information_bits_per_iteration(self) -> float:
        """Entropy per message times the reads_and_writes messages per scored iteration (0 without any)."""
        per_iteration = self.transfers / (self.estimate.episodes * self.config.iterations)
        return per_iteration * self.message_entropy_bits if per_iteration else 0.0
    upsilon_best: float | None = None  # mean ceiling of R̄ (`ceiling.upsilon_best`; exact at threshold 1)
    k_evil_mean: float | None = None  # mean K of ⊖'s played path (Λ* only)
    # of wall_seconds, the time spent waiting for environments and ceilings (`batches_ahead`); not recorded
    generation_wait_seconds: float = 0.0
    threads: int = 1  # the most kernel threads a batch was played in (`play`); no number depends on it
    # a mixed group's: each behaviour's per-capita Υ (its agents' mean R̄) with its interval, in agent order
    by_behaviour: dict[str, UpsilonEstimate] | None = None

    def as_record(self) -> dict[str, object]:
        """Flat JSON-ready record: results first, then every config field (spec §3-4)."""
        e = self.estimate
        total_steps = self.agent_steps + self.training_steps
        return {
            "upsilon": e.upsilon, "ci95_low": e.ci95_low, "ci95_high": e.ci95_high, "std": e.std,
            "upsilon_legg_hutter": e.upsilon_legg_hutter, "legg_hutter_ci95_low": e.legg_hutter_ci95_low,
            "legg_hutter_ci95_high": e.legg_hutter_ci95_high,
            "legg_hutter_effective_episodes": e.legg_hutter_effective_episodes, **e.interval_notes(),
            "episodes": e.episodes, "iterations": self.config.iterations,
            "group_size": self.config.group_size, "grid": self.config.grid,
            "behaviour": self.config.behaviour, "protocol": self.config.protocol,
            "profile": self.config.profile, "k_mean": e.k_mean, "k_normalised_mean": e.k_normalised_mean,
            "k_evil_mean": self.k_evil_mean, "upsilon_best": self.upsilon_best,
            "entropy_bits": self.entropy_bits, "seed": self.config.seed,
            "wall_seconds": self.wall_seconds, "kernel_seconds": self.kernel_seconds,
            "compile_seconds": self.compile_seconds, "kernel_threads": self.threads,
            "agent_steps": self.agent_steps, "training_steps": self.training_steps,
            "agent_steps_per_second": total_steps / self.kernel_seconds if self.kernel_seconds else None,
            "messages_per_iteration": self.messages / (e.episodes * self.config.iterations),
            "bits_per_iteration": self.bits / (e.episodes * self.config.iterations),
            "message_entropy_bits": _finite(self.message_entropy_bits),
            "information_bits_per_iteration": _finite(self.information_bits_per_iteration),
            "distinct_messages_per_iteration": _finite(self.distinct_messages_per_iteration),
            "distinct_information_bits_per_iteration": _finite(self.distinct_information_bits_per_iteration),
            "communication_accounting": self.config.communication_accounting,
            "communication_control": self.config.communication_control,
            "mix": self.config.mix, "protocol_params": dict(self.config.protocol_params), "env": self.config.env,
            "local_optima_mean": self.local_optima_mean, "correlation_length_mean": self.correlation_length_mean,
            "upsilon_by_behaviour": None if self.by_behaviour is None else {
                name: {"agents": self.config.behaviour_counts[name], "upsilon": float(part.upsilon),
                       "ci95_low": float(part.ci95_low), "ci95_high": float(part.ci95_high)}
                for name, part in self.by_behaviour.items()},
            "version": VERSION,
            "config": self.config.as_record(),
        }


def _finite(value: float) -> float | None:
    """A float for JSON: None where it is NaN (not measured)."""
    return None if math.isnan(value) else value


class BatchTotals:
    """What an evaluation's batches add up to, added batch by batch in episode order: the scores
    (`ScoreAccumulator`), kernel seconds, traffic, and every float summed over episodes exactly, so that no
    number depends on where batches end (`ExactSum`)."""

    def __init__(self, config: EvaluationConfig, kernel_seconds: float = 0.0):
        self.config = config
        self.scores = ScoreAccumulator()
        self.kernel_seconds = kernel_seconds  # a kept table's training, before the batches
        self.messages = self.bits = self.transfers = 0.0  # whole numbers: exact in any order
        (self.best, self.k_evil, self.entropy, self.distinct, self.distinct_information, self.optima,
         self.correlation) = (ExactSum() for _ in range(7))
        self.entropy_episodes = 0  # the episodes with messages
        self.generation_wait = 0.0
        self.threads = 1
        self.runs: dict[int, tuple[ExactSum, list[int]]] = {}  # kept tables: each training run's R̄ sum, episodes
        # a mixed group's behaviours: the same totals of each one's per-capita R̄ (its agents' mean)
        mixed = len(config.behaviour_counts) > 1
        self.behaviours = {name: (ScoreAccumulator(), {}) for name in config.behaviour_counts} if mixed else {}

    def add(self, run: EpisodeRun, waited: float) -> None:
        """A played batch, and the seconds its evaluation waited for its environments."""
        config, environments = self.config, run.environments
        self.generation_wait += waited
        self.threads = max(self.threads, run.threads)
        k_raw = environments.k_raw
        weights = legg_hutter_log2_weights(  # the patterns' probabilities only where the estimator reads them
            config.legg_hutter_estimator, k_raw, config.rows * config.cols,
            pattern_log2_probabilities(config, environments)
            if config.legg_hutter_estimator == "importance_bits" else None)
        runs = episode_runs(config, environments.episode_index) if environments.episode_index is not None else None
        parts = [(self.scores, self.runs, run.mean_rewards)]
        if self.behaviours:
            per_capita = scores_by_behaviour(config.behaviours, run)
            parts += [(scores, by_run, per_capita[name]) for name, (scores, by_run) in self.behaviours.items()]
        for scores, by_run, mean_rewards in parts:
            scores.add(mean_rewards, k_raw, environments.k_normalised, weights)
            for number in () if runs is None else np.unique(runs):
                total, count = by_run.setdefault(int(number), (ExactSum(), [0]))
                total.add(mean_rewards[runs == number])
                count[0] += int(np.sum(runs == number))
        self.best.add(environments.upsilon_best)
        if environments.k_evil is not None:
            self.k_evil.add(environments.k_evil)
        self.kernel_seconds += run.kernel_seconds
        self.messages += run.messages
        self.bits += run.bits
        self.transfers += run.transfers
        measured = run.message_entropy[~np.isnan(run.message_entropy)]
        self.entropy.add(measured)
        self.entropy_episodes += len(measured)
        spoke = ~np.isnan(run.distinct_messages)
        self.distinct.add(run.distinct_messages[spoke])
        self.distinct_information.add((run.distinct_messages * run.message_entropy)[spoke])
        if environments.landscapes is not None:
            self.optima.add(environments.local_optima)
            self.correlation.add(environments.correlation_length)

    def estimate(self, scores: ScoreAccumulator | None = None, runs: dict | None = None) -> UpsilonEstimate:
        """The scores' estimate (default: the group's); with kept tables of two or more training runs, Υ's interval
        across runs (issue 45 item 3): every episode is an environment of its own, so the two-way interval of the
        tables (`analysis.inference.two_way_variance`) is the one clustered by run, SE² = R/(R-1) Σ_r (S_r - n_r
        Υ)² / n², Student-t on R - 1 df (Cameron & Miller 2015 §II-III), from each run's exact sum."""
        scores, runs = (self.scores, self.runs) if scores is None else (scores, runs)
        estimate = scores.estimate()
        count = len(runs)
        if count < 2:
            return estimate
        mean, n = estimate.upsilon, estimate.episodes
        deviations = np.array([total.value - episodes[0] * mean for total, episodes in runs.values()])
        half = stats.t.ppf(0.975, count - 1) * math.sqrt(count / (count - 1) * float(np.sum(deviations ** 2))) / n
        return replace(estimate, ci95_low=mean - half, ci95_high=mean + half)

    def result(self, compile_seconds: float, started: float) -> EvaluationResult:
        """The evaluation's result, its wall seconds counted from `started` (`time.perf_counter`) to now, the
        estimate included."""
        config, episodes, spoken = self.config, self.config.episodes, self.entropy_episodes
        return EvaluationResult(
            config=config, estimate=self.estimate(), entropy_bits=config.environment().entropy_bits,
            wall_seconds=time.perf_counter() - started, kernel_seconds=self.kernel_seconds,
            compile_seconds=compile_seconds, agent_steps=episodes * config.iterations * config.group_size,
            training_steps=config.training_steps(episodes),
            messages=self.messages, bits=self.bits, transfers=self.transfers,
            message_entropy_bits=self.entropy.value / spoken if spoken else math.nan,
            distinct_messages_per_iteration=self.distinct.value / (spoken * config.iterations) if spoken
            else math.nan,
            distinct_information_bits_per_iteration=self.distinct_information.value / (spoken * config.iterations)
            if spoken else math.nan,
            local_optima_mean=self.optima.value / episodes if config.env == "landscape" else None,
            correlation_length_mean=self.correlation.value / episodes if config.env == "landscape" else None,
            upsilon_best=self.best.value / episodes,
            k_evil_mean=self.k_evil.value / episodes if config.env != "landscape" else None,
            generation_wait_seconds=self.generation_wait, threads=self.threads,
            by_behaviour={name: self.estimate(*part) for name, part in self.behaviours.items()} or None)
