"""What a run holds in memory, estimated from its configuration before anything is allocated, and the batch sizes
those estimates assume; a run that would not fit is refused (`validate_memory`). Each function takes an
`EvaluationConfig`, which imports this module (so it is not named here)."""
from __future__ import annotations

import os

from collective.config.checks import ConfigError
from collective.config.environment import REACHABLE_PROBES
from collective.config.learners import LEARNER_STATES
from collective.simulation.kernel import heard_symbols, table_states

TARGET_AGENT_STEPS_PER_BATCH = 4_000_000  # episodes per batch: about half a second of kernel time
# batches generated while one plays (`evaluation.batches.batches_ahead`): 1 + this many in memory
BATCHES_PREPARED_AHEAD = 2


def training_chunk(c) -> int:
    """Training passes of a kept table played per kernel call (`evaluation.tables.trained_tables`): a batch's
    work."""
    return max(1, min(c.q_training_passes, TARGET_AGENT_STEPS_PER_BATCH // (c.iterations * c.group_size)))


def physical_memory_limit() -> int:
    """Half the physical memory: the most one run may plan to use."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def learner_table_bytes(c) -> int:
    """Bytes of the group's learner tables: per learner, its states (cells·T, or 3^9 window signs; each paired with
    what it hears when it hears a protocol) x 9 float64 values and a flag."""
    states = table_states(LEARNER_STATES.index(c.learner_state), c.rows, c.cols, c.iterations)
    return c.learner_count * states * heard_symbols(c.hearing) * (9 * 8 + 1)


def memory_needs(c, batch: int | None = None, batches: int = 1) -> dict[str, int]:
    """Estimated bytes of the largest arrays of a run, by the field that drives them, from their
    shapes: ⊕/⊖ paths (episodes, T+1) int32 per batch and in the K-range probe, start cells, the
    landscapes (episodes, cells) float64, the protocol's grid field, the learners' Q-tables
    (cells·T states × 9 float64 + a flag; kept tables once per training run), the per-agent arrays and the stepping core's windows (and
    under the sham control each member's copy of the protocol's grid field).
    `batch` is the episodes played in one call: by default an evaluation's batch (`evaluation.batches.batch_episodes`; a
    sweep's work unit may play more); `batches` the batches whose environments are in memory at once
    (an evaluation prepares BATCHES_PREPARED_AHEAD while one plays; a sweep's work unit holds one)."""
    learners = c.learner_count
    steps = c.group_size * c.iterations * (1 + c.passes_per_episode)
    if batch is None:
        batch = max(1, min(c.episodes, TARGET_AGENT_STEPS_PER_BATCH // steps))  # played (a sham: half + shadows)
    cells, agents = c.rows * c.cols, c.group_size
    probes = REACHABLE_PROBES if c.k_min is not None or c.k_max is not None else 0
    window = (2 * c.observation_range + 1) ** 2 * 8 * 2 if c.on_stepping_core else 0
    tables = learner_table_bytes(c)
    if c.keeps_tables:  # each training run's tables (an evaluation holds them all, `evaluation_tables`), and a
        # pretrained table's training passes, one chunk of episodes at a time
        tables = tables * c.runs_played(c.episodes) + training_chunk(c) * (2 * (c.iterations + 1) + c.group_size) * 8
    logs = batch * c.iterations * (2 * agents + 1) * 8 if c.on_stepping_core and c.protocol != "none" else 0
    prepared = batches * batch  # episodes whose environments are in memory
    # held-out training episodes: their paths and fields, and the kernel's (n, T+1) coordinates of them
    held_out = prepared * c.training_episodes if c.trains_on_held_out else 0
    training_paths = (held_out * 2 * 4 + c.training_episodes * 6 * 8) * (c.iterations + 1) if held_out else 0
    return {
        "iterations": 2 * 4 * max(prepared, probes) * (c.iterations + 1) + (tables if c.iterations > cells else 0)
        + training_paths,
        "rows": ((prepared + held_out) * cells * 8 if c.env == "landscape" else 0) + cells * 8
        + (tables if c.iterations <= cells else 0)
        + (batch * agents * cells * 8 if c.sham else 0),  # a sham listener's own copy of the protocol's field
        "group_size": (prepared + held_out) * agents * 8 * 5 + logs,  # + the stepping core's message symbols
        "observation_range": batch * agents * window,
    }


def validate_memory(c) -> None:
    """Refuse, before allocating anything, a run whose arrays would not fit in memory."""
    needs = memory_needs(c, batches=1 + BATCHES_PREPARED_AHEAD)  # as `evaluation.batches.batches_ahead` holds them
    total, limit = sum(needs.values()), physical_memory_limit()
    if total > limit:
        raise ConfigError(max(needs, key=needs.get), f"a run of {c.grid}, T={c.iterations}, group of {c.group_size} "
                          f"needs ~{total / 2**30:.1f} GiB of memory; the limit is {limit / 2**30:.1f} GiB "
                          "(half the physical memory)")


def validate_batch_memory(c, batch: int, bytes_per_episode: int = 0) -> None:
    """Refuse, before allocating anything, `batch` episodes played at once (an adapter's batch: one set of
    environments in memory, and the caller's own `bytes_per_episode`) whose arrays would not fit, naming the
    largest batch that does."""
    limit = physical_memory_limit()

    def needs(episodes: int) -> int:
        return sum(memory_needs(c, batch=episodes, batches=1).values()) + episodes * bytes_per_episode

    def fits(episodes: int) -> bool:
        return needs(episodes) <= limit

    if fits(batch):
        return
    low, high = 0, batch  # fits(low), not fits(high): the needs grow with the batch
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    raise ConfigError("episodes", f"{batch:,} episodes of {c.grid}, T={c.iterations}, group of {c.group_size} "
                                  f"at once need ~{needs(batch) / 2**30:.1f} GiB of memory; at most {low:,} fit in "
                                  f"the limit of {limit / 2**30:.1f} GiB (half the physical memory)")
