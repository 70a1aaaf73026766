"""Evaluate one agent group on Λ*: stream batches of episodes through the simulator and score them.

A group of built-ins plays in the fused kernel (`collective.simulation.kernel`); a group with a
plug-in behaviour or protocol plays on the stepping core (`collective.simulation.stepping`), its
plug-in objects made once per evaluation (`plugin_group`), so a persistent agent keeps what it
learned from batch to batch, in episode order. Memory stays flat whatever the number of episodes:
each batch is generated, simulated and folded into a `ScoreAccumulator`, then dropped. Episode e
always gets the same seeds (see `random_streams`), so the result does not depend on the batch size,
nor on the number of threads a batch is played in (`play`'s `threads`: episodes are independent).
The parts are in `collective.evaluation`, one question a file.
"""
from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from collective.analysis.scores import ExactSum, ScoreAccumulator, legg_hutter_log2_weights
from collective.config import EvaluationConfig
from collective.environments.pattern_probability import pattern_log2_probabilities
from collective.evaluation.batches import batch_episodes, batches_ahead, ramps
from collective.evaluation.compiled_code import load_compiled
from collective.evaluation.play import play
from collective.evaluation.result import EvaluationResult
from collective.evaluation.stepping_group import plugin_group
from collective.evaluation.tables import starting_tables, trained_tables
from collective.evaluation.threads import usable_cores
from collective.progress import Progress


def evaluate(config: EvaluationConfig, batch_size: int | None = None, progress: bool = False,
             threads: int | None = None) -> EvaluationResult:
    """Υ of the configured group over `config.episodes` episodes (paper 003 Definitions 2-3).
    `progress` shows progress on stderr (a bar on a terminal, else plain lines) and announces a
    compilation; compiling is timed apart (`compile_seconds`), outside `wall_seconds`. The next
    batch's environments are generated while the current one plays (`batches_ahead`); without a
    `batch_size`, the first batches ramp up to a full one (`ramps`). Each batch is played in up to
    `threads` kernel threads (default: `usable_cores`), with the same numbers as in one."""
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be 1 or more (got {threads})")
    threads = threads or usable_cores()
    used_threads = 1
    compile_seconds = load_compiled(config, notify=progress)
    started = time.perf_counter()
    size = batch_size or batch_episodes(config)
    group = plugin_group(config) if config.on_stepping_core else None
    tables = starting_tables(config) if config.keeps_tables else None  # online: carried from batch to batch
    accumulator = ScoreAccumulator()
    kernel_seconds = trained_tables(config).kernel_seconds if config.keeps_tables else 0.0
    messages = bits = transfers = 0.0  # whole numbers: exact in any order
    # float sums over episodes, exact so that no number depends on where batches end (`ExactSum`)
    best, k_evil, entropy_sum, distinct_sum, distinct_information_sum, optima, correlation = (
        ExactSum() for _ in range(7))
    entropy_episodes = 0
    generation_wait = 0.0
    label = f"{config.mix or config.behaviour} x{config.group_size}"
    with Progress(config.episodes, "episodes", "collective", label, enabled=progress) as bar, \
            contextlib.closing(batches_ahead(config, size, batch_size is None and ramps(config))) as batches:
        for episodes, environments, waited in batches:
            generation_wait += waited
            run = play(config, environments, group=group, tables=tables, threads=threads)
            used_threads = max(used_threads, run.threads)
            k_raw = run.environments.k_raw
            weights = legg_hutter_log2_weights(  # the patterns' probabilities only where the estimator reads them
                config.legg_hutter_estimator, k_raw, config.rows * config.cols,
                pattern_log2_probabilities(config, run.environments)
                if config.legg_hutter_estimator == "importance_bits" else None)
            accumulator.add(run.mean_rewards, k_raw, run.environments.k_normalised, weights)
            best.add(run.environments.upsilon_best)
            if run.environments.k_evil is not None:
                k_evil.add(run.environments.k_evil)
            kernel_seconds += run.kernel_seconds
            messages += run.messages
            bits += run.bits
            transfers += run.transfers
            measured = run.message_entropy[~np.isnan(run.message_entropy)]
            entropy_sum.add(measured)
            entropy_episodes += len(measured)
            spoke = ~np.isnan(run.distinct_messages)
            distinct_sum.add(run.distinct_messages[spoke])
            distinct_information_sum.add((run.distinct_messages * run.message_entropy)[spoke])
            if run.environments.landscapes is not None:
                optima.add(run.environments.local_optima)
                correlation.add(run.environments.correlation_length)
            bar.update(len(episodes))
    agent_steps = config.episodes * config.iterations * config.group_size
    return EvaluationResult(
        config=config, estimate=accumulator.estimate(), entropy_bits=config.environment().entropy_bits,
        wall_seconds=time.perf_counter() - started, kernel_seconds=kernel_seconds, compile_seconds=compile_seconds,
        agent_steps=agent_steps,
        training_steps=config.training_steps(config.episodes),
        messages=messages, bits=bits, transfers=transfers,
        message_entropy_bits=entropy_sum.value / entropy_episodes if entropy_episodes else math.nan,
        distinct_messages_per_iteration=distinct_sum.value / (entropy_episodes * config.iterations) if entropy_episodes
        else math.nan,
        distinct_information_bits_per_iteration=distinct_information_sum.value / (entropy_episodes * config.iterations)
        if entropy_episodes else math.nan,
        local_optima_mean=optima.value / config.episodes if config.env == "landscape" else None,
        correlation_length_mean=correlation.value / config.episodes if config.env == "landscape" else None,
        upsilon_best=best.value / config.episodes,
        k_evil_mean=k_evil.value / config.episodes if config.env != "landscape" else None,
        generation_wait_seconds=generation_wait, threads=used_threads)
