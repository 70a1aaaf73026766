"""Which code plays a batch: the fused kernel for a group of built-ins, in threads where it may be cut;
the stepping core for a group with a plug-in; the sham control for a sham."""
from __future__ import annotations

import numpy as np

from collective.config import EvaluationConfig
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluation.compiled_code import load_code
from collective.evaluation.environments import generate_environments
from collective.evaluation.fused_kernel import play_fused
from collective.evaluation.runs import EpisodeRun, interleaved_runs, stepping_run
from collective.evaluation.sham import play_sham, sham_in_threads
from collective.evaluation.stepping_group import plugin_group
from collective.evaluation.tables import episode_runs, starting_tables
from collective.evaluation.threads import kernel_threads, play_in_threads, sham_threads
from collective.simulation.kernel import Tables
from collective.simulation.stepping import Group, play_group


def play(config: EvaluationConfig, environments: EnvironmentBatch, record: bool = False,
         group: Group | None = None, tables: dict[int, Tables] | None = None, threads: int = 1) -> EpisodeRun:
    """Play the configured group on a batch of environments; `record` keeps the scored trajectories.
    A plug-in group plays on the stepping core with `group` (made once per evaluation by
    `plugin_group`, so that persistent plug-ins keep their state), or a fresh one; so does the sham
    control (`play_sham`). Learners that keep their tables (`learner_training`) play each episode with the
    tables of its training run (`episode_runs`), the episodes of each run in order: `tables` by run (an online
    learner's, carried from batch to batch by `evaluate`), or their pretrained tables (`trained_tables`; an
    online learner's copied, so each call starts from them). On the
    fused kernel, and for a built-in group's sham, up to `threads` threads play runs of the batch's
    episodes at once (`kernel_threads`, `sham_threads`)."""
    load_code(config)
    if config.on_stepping_core:
        if not config.sham:
            return stepping_run(play_group(group or plugin_group(config), environments, record), environments)
        threads = sham_threads(config, environments, threads, record)
        if threads > 1:
            return sham_in_threads(config, environments, threads)
        return play_sham(config, environments, record, group or plugin_group(config))
    if config.keeps_tables:
        indices = environments.episode_index
        runs = episode_runs(config, np.arange(len(environments)) if indices is None else indices)
        present = [int(run) for run in np.unique(runs)]

        def run_tables(run: int) -> Tables:  # trained as its episodes come up: one run's tables held at a time
            return tables[run] if tables is not None else starting_tables(config, environments.seed_prefix, run)

        if len(present) > 1:
            rows = [np.flatnonzero(runs == run) for run in present]
            return interleaved_runs([_play_fused(config, environments.take(part), record, run_tables(run), threads)
                                     for run, part in zip(present, rows)], rows, environments)
        return _play_fused(config, environments, record, run_tables(present[0]) if present else None, threads)
    return _play_fused(config, environments, record, None, threads)


def _play_fused(config: EvaluationConfig, environments: EnvironmentBatch, record: bool, tables: Tables | None,
                threads: int) -> EpisodeRun:
    """The batch on the fused kernel, in up to `threads` threads (`kernel_threads`), with one run's tables."""
    threads = kernel_threads(config, environments, threads, record)
    if threads > 1:
        return play_in_threads(config, environments, threads, tables)
    return play_fused(config, environments, record, tables)


def run_episodes(config: EvaluationConfig, episodes: np.ndarray, seed_prefix: tuple[int, ...] = (),
                 record: bool = False, group: Group | None = None,
                 tables: dict[int, Tables] | None = None) -> EpisodeRun:
    """Generate the given episode indices' environments and play them."""
    return play(config, generate_environments(config, episodes, seed_prefix), record, group, tables)
