"""What a played batch gives back, whichever code played it (an `EpisodeRun`), and runs of a batch's parts
joined as one."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collective.environments.lambda_star import EnvironmentBatch


@dataclass(frozen=True)
class EpisodeRun:
    """One simulated batch of episodes."""

    mean_rewards: np.ndarray  # (episodes,) R̄ per episode (paper 003 Definition 2)
    environments: EnvironmentBatch
    kernel_seconds: float
    messages: float  # sent by the protocol in the batch's scored passes (the config's accounting)
    bits: float
    # (episodes, agents) each agent's mean reward per iteration; None for a homogeneous group on the fused
    # kernel (its per-capita score is R̄; see `simulate_batch`)
    agent_scores: np.ndarray | None = None
    positions: np.ndarray | None = None  # (episodes, T+1, agents) with record=True
    rewards: np.ndarray | None = None  # (episodes, T, agents) with record=True
    transfers: float = 0.0  # messages under the reads_and_writes accounting (protocols/__init__.py)
    message_entropy: np.ndarray | None = None  # (episodes,) bits per message, NaN without messages
    distinct_messages: np.ndarray | None = None  # (episodes,) distinct messages of the scored pass, NaN without
    threads: int = 1  # kernel threads that played the batch (`play`)


def scores_by_behaviour(behaviours: list[str], run: EpisodeRun) -> dict[str, np.ndarray]:
    """Each behaviour of the group (`behaviours`: each agent's, in agent order) and its per-capita R̄ per episode,
    (episodes,): its agents' mean score; a homogeneous group's is R̄ (the fused kernel keeps no agent's score)."""
    names = list(dict.fromkeys(behaviours))
    if run.agent_scores is None:
        return {names[0]: run.mean_rewards}
    members = np.array(behaviours)
    return {name: _row_means(run.agent_scores[:, members == name]) for name in names}


def _row_means(scores: np.ndarray) -> np.ndarray:
    """(E,) each row's mean of (E, k), to the bit what NumPy's mean of each row alone gives (rows written keep
    their bits): under 8 columns NumPy adds a row's values one after another from 0, done here a column at a time
    for every row at once; from 8 on it sums pairwise, done row by row."""
    if scores.shape[1] >= 8:
        return np.array([row.mean() for row in scores])
    total = np.zeros(len(scores))
    for column in scores.T:
        total += column
    return total / scores.shape[1]


def stepping_run(run, environments: EnvironmentBatch) -> EpisodeRun:
    """A stepping-core `GroupRun` as the fused kernel's `EpisodeRun`."""
    return EpisodeRun(run.mean_rewards, environments, run.seconds, run.messages, run.bits, run.agent_scores,
                      run.positions, run.rewards, run.transfers, run.message_entropy, run.distinct_messages)


def joined_runs(runs: list[EpisodeRun], environments: EnvironmentBatch, threads: int = 1) -> EpisodeRun:
    """Runs of consecutive parts of `environments` (without records), played in `threads` threads, as one run
    of the whole batch: per-episode arrays joined in order, counts and kernel seconds summed."""
    def joined(name: str):
        parts = [getattr(run, name) for run in runs]
        return None if parts[0] is None else np.concatenate(parts)

    return EpisodeRun(joined("mean_rewards"), environments, sum(run.kernel_seconds for run in runs),
                      sum(run.messages for run in runs), sum(run.bits for run in runs), joined("agent_scores"),
                      transfers=sum(run.transfers for run in runs), message_entropy=joined("message_entropy"),
                      distinct_messages=joined("distinct_messages"), threads=threads)


def interleaved_runs(runs: list[EpisodeRun], rows: list[np.ndarray], environments: EnvironmentBatch) -> EpisodeRun:
    """Runs of parts of `environments` (part i its episodes `rows[i]`, in order) as one run of the whole batch:
    per-episode arrays put back in the batch's order, counts and kernel seconds summed."""
    order = np.argsort(np.concatenate(rows), kind="stable")

    def joined(name: str):
        parts = [getattr(run, name) for run in runs]
        return None if parts[0] is None else np.concatenate(parts)[order]

    return EpisodeRun(joined("mean_rewards"), environments, sum(run.kernel_seconds for run in runs),
                      sum(run.messages for run in runs), sum(run.bits for run in runs), joined("agent_scores"),
                      joined("positions"), joined("rewards"), sum(run.transfers for run in runs),
                      joined("message_entropy"), joined("distinct_messages"), max(run.threads for run in runs))
