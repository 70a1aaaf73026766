"""Evaluate one agent group on Λ*: stream batches of episodes through the simulator and score them.

A group of built-ins plays in the fused kernel (`collective.simulation.kernel`); a group with a
plug-in behaviour or protocol plays on the stepping core (`collective.simulation.stepping`), its
plug-in objects made once per evaluation (`plugin_group`), so a persistent agent keeps what it
learned from batch to batch, in episode order. Memory stays flat whatever the number of episodes:
each batch is generated, simulated and folded into the evaluation's totals (`BatchTotals`), then
dropped. Episode e always gets the same seeds (see `random_streams`), so the result does not depend on
the batch size, nor on the number of threads a batch is played in (`play`'s `threads`: episodes are
independent). The parts are in `collective.evaluation`, one question a file.
"""
from __future__ import annotations

import contextlib
import time

from collective.config import EvaluationConfig
from collective.evaluation.batches import batch_episodes, batches_ahead, ramps
from collective.evaluation.compiled_code import load_compiled
from collective.evaluation.play import play
from collective.evaluation.result import BatchTotals, EvaluationResult
from collective.evaluation.stepping_group import plugin_group
from collective.evaluation.tables import evaluation_tables
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
    compile_seconds = load_compiled(config, notify=progress)
    started = time.perf_counter()
    size = batch_size or batch_episodes(config)
    group = plugin_group(config) if config.on_stepping_core else None
    tables, training_seconds = evaluation_tables(config)  # by training run; online: carried from batch to batch
    totals = BatchTotals(config, training_seconds)
    label = f"{config.mix or config.behaviour} x{config.group_size}"
    with Progress(config.episodes, "episodes", "collective", label, enabled=progress) as bar, \
            contextlib.closing(batches_ahead(config, size, batch_size is None and ramps(config))) as batches:
        for episodes, environments, waited in batches:
            totals.add(play(config, environments, group=group, tables=tables or None, threads=threads), waited)
            bar.update(len(episodes))
    return totals.result(compile_seconds, started)
