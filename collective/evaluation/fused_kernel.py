"""A batch on the fused kernel (`collective.simulation.kernel`): the arrays a group of built-ins plays with,
its fresh learner tables, the 2016 switches, and one call of `simulate_batch` timed on the playing thread."""
from __future__ import annotations

import time

import numpy as np

from collective.behaviours import load_behaviour
from collective.config import LEARNER_STATES, LEARNER_TRAININGS, EvaluationConfig
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluation.runs import EpisodeRun
from collective.protocols import load_protocol
from collective.protocols.kernel_support import READS_AND_WRITES
from collective.simulation.kernel import (KernelSwitches, Tables, learner_workspace, simulate_batch, table_blocks,
                                          talk_workspace)


def play_fused(config: EvaluationConfig, environments: EnvironmentBatch, record: bool,
               tables: Tables | None = None, table_mode: int | None = None) -> EpisodeRun:
    """Play on the fused kernel; learners with `tables` (else fresh ones), in `table_mode` (else the config's)."""
    table_mode = LEARNER_TRAININGS.index(config.learner_training) if table_mode is None else table_mode
    codes = np.array([load_behaviour(name).cls.code for name in config.behaviours], np.int64)
    protocol = load_protocol(config.protocol).cls
    talk = talk_workspace(protocol.code, config.protocol_values, config.protocol_members, config.group_size,
                          config.rows, config.cols, config.observation_range, config.iterations, len(environments))
    shape = (len(environments), config.group_size, config.iterations) if record else (0, 0, 0)
    positions = np.zeros((shape[0], shape[1], shape[2] + record), np.int32)  # (episodes, agents, T+1)
    rewards = np.zeros(shape, np.float64)  # (episodes, agents, T)
    mixed = len(set(config.behaviours)) > 1  # a mix's per-capita scores need each agent's total
    agent_totals = np.zeros((len(environments), config.group_size if mixed else 0))  # (episodes, agents), or none kept
    learner = config.learner
    tables = fresh_tables(config, table_mode) if tables is None else tables
    training = training_arrays(config, environments)
    start = time.thread_time()  # the playing thread's CPU: not the time preparing threads take from it
    mean_rewards = simulate_batch(
        codes, config.rows, config.cols, config.iterations, config.observation_range, config.reward_radius,
        config.coordination_threshold, environments.good, environments.evil, environments.fields(),
        environments.starts, environments.agent_seeds, *training,
        learner.training_passes, learner.alpha, learner.gamma, learner.epsilon,
        learner.q_initial, learner.reward_scale, tables, talk, record, positions, rewards, agent_totals,
        kernel_switches(config, environments), LEARNER_STATES.index(config.learner_state), table_mode,
        config.hearing)
    seconds = time.thread_time() - start
    messages, bits = talk.comm[config.accounting_offset:config.accounting_offset + 2]
    agent_scores = agent_totals / config.iterations if mixed else None
    traffic = dict(transfers=float(talk.comm[READS_AND_WRITES]), message_entropy=talk.entropy,
                   distinct_messages=talk.distinct)
    if record:  # reported as (episodes, T+1, agents) and (episodes, T, agents)
        return EpisodeRun(mean_rewards, environments, seconds, messages, bits, agent_scores,
                          positions.transpose(0, 2, 1), rewards.transpose(0, 2, 1), **traffic)
    return EpisodeRun(mean_rewards, environments, seconds, messages, bits, agent_scores, **traffic)


def fresh_tables(config: EvaluationConfig, table_mode: int) -> Tables:
    """Fresh learner tables for the configured group, played in `table_mode`."""
    codes = np.array([load_behaviour(name).cls.code for name in config.behaviours], np.int64)
    protocol = load_protocol(config.protocol).cls
    states = LEARNER_STATES.index(config.learner_state)
    blocks = table_blocks(config.learner_count, config.coordination_threshold, protocol.code, table_mode, states,
                          config.rows, config.cols, config.iterations)
    return learner_workspace(codes, config.rows, config.cols, config.iterations, config.passes_per_episode,
                             config.q_initial, blocks, states, table_mode, config.hearing)


def kernel_switches(config: EvaluationConfig, environments: EnvironmentBatch | None) -> KernelSwitches:
    """The 2016 switches the kernel's behaviours read, and the batch row of the evaluation's episode 0
    (-1 when the batch does not hold it or its indices are unknown)."""
    indices = environments.episode_index if environments is not None else None
    first = np.flatnonzero(indices == 0) if indices is not None else ()
    return KernelSwitches(int(config.cpp_first_observation), int(config.cpp_imitation),
                          int(config.cpp_learner_bootstrap), int(config.cpp_oracle), int(config.cpp_approach_position),
                          int(first[0]) if len(first) else -1)


def training_arrays(config: EvaluationConfig, environments: EnvironmentBatch) -> tuple:
    """What the learners train on, as `simulate_batch` takes it: ⊕ and ⊖ paths (episodes, n, T+1),
    fields (episodes, n, cells) ((episodes, n, 0) for Λ*), start cells (episodes, n, agents) and world seeds
    (episodes, n). Held out: the batch's training episodes (n = training_episodes), reshaped, not
    copied; replay: the scored episodes themselves as views with n = 1 (paper 003 §5.2.1)."""
    if not config.trains_on_held_out:
        return (environments.good[:, None], environments.evil[:, None], environments.fields()[:, None],
                environments.starts[:, None],
                environments.agent_seeds[:, None])
    training, count = environments.training, config.training_episodes
    if training is None or environments.training_episodes != count:
        raise ValueError(f"learning_protocol held_out needs {count} training episodes per episode; the batch has "
                         f"{environments.training_episodes} (generate it with generate_environments)")
    episodes = len(environments)
    fields = training.fields()  # (episodes x n, cells), converted once
    return (training.good.reshape(episodes, count, -1), training.evil.reshape(episodes, count, -1),
            fields.reshape(episodes, count, fields.shape[1]),
            training.starts.reshape(episodes, count, -1), training.agent_seeds.reshape(episodes, count))
