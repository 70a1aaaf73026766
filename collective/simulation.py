"""The fast path: batched Λ* episodes in one compiled kernel (spec §1, §5; paper 003 §4.1, §5.2).

`simulate_batch` plays a batch of episodes, each wholly inside the kernel: optional learner
training passes, then the scored pass. Inputs and outputs are arrays shaped (episodes, ...);
per-episode state (positions, Q-tables, the oracle's interception pointer) lives in scratch
arrays reused across episodes. `collective.reference_simulation` is the slow twin that the
tests run in lock-step with this one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from collective.behaviours import IMITATION, LOCAL_SEARCH, ORACLE, Q_LEARNING, RANDOM, SARSA
from collective.behaviours.decisions import (greedy_action, learner_action, local_search_step,
                                             max_q, oracle_step, random_step)
from collective.random_streams import uniform_int
from collective.torus import axis_step_toward, chebyshev, proximity, wrap


@dataclass(frozen=True)
class LearnerParameters:
    """Tabular learner settings (spec §5; paper 003 Algorithm 1)."""

    alpha: float = 0.3
    gamma: float = 0.3
    epsilon: float = 0.0
    q_initial: float = 0.0
    training_passes: int = 100
    reward_scale: float = 1.0


@njit(cache=True)
def _play_pass(codes, rows, cols, iterations, view, radius, threshold,
               good_r, good_c, evil_r, evil_c, starts, hidden_start, stream,
               learning, alpha, gamma, epsilon, q_initial, reward_scale,
               q_table, table_row, learners, written, n_written,
               pos_r, pos_c, new_r, new_c, pointer, window, state, action,
               prev_state, prev_action, prev_reward, record, rec_positions, rec_rewards):
    """One pass of one episode; returns the sum of real rewards over agents and iterations.

    Per iteration (spec §1): every agent decides from ⊕/⊖'s current cells, then all move, ⊕/⊖
    take their next pattern step, and rewards come from the new cells. Learners update their
    Q-tables only when `learning` (training passes), with rewards scaled by `reward_scale`,
    logging every state they write in `written[:n_written[0]]` so the episode's end can reset them.
    """
    n_cells = rows * cols
    agents = codes.shape[0]
    for i in range(agents):
        pos_r[i] = starts[i] // cols
        pos_c[i] = starts[i] % cols
        pointer[i] = 0
        if record:
            rec_positions[0, i] = starts[i]
    pointer[agents] = 0
    hidden_r = hidden_start // cols
    hidden_c = hidden_start % cols
    total = 0.0
    for t in range(iterations):
        gr, gc, er, ec = good_r[t], good_c[t], evil_r[t], evil_c[t]
        for i in range(agents):
            r, c, code = pos_r[i], pos_c[i], codes[i]
            if code == RANDOM:
                dr, dc = random_step(stream)
            elif code == LOCAL_SEARCH:
                dr, dc = local_search_step(r, c, gr, gc, er, ec, rows, cols, view, radius, stream, window)
            elif code == ORACLE:
                dr, dc = oracle_step(r, c, t, good_r, good_c, iterations, rows, cols, pointer, i)
            elif code == IMITATION:
                if chebyshev(r, c, hidden_r, hidden_c, rows, cols) <= view:
                    dr, dc = axis_step_toward(r, hidden_r, rows), axis_step_toward(c, hidden_c, cols)
                else:
                    dr, dc = local_search_step(r, c, gr, gc, er, ec, rows, cols, view, radius, stream, window)
            else:  # Q_LEARNING or SARSA
                base = _q_base(t, table_row[i], r * cols + c, learners, n_cells)
                state[i] = base
                if learning:
                    written[n_written[0]] = base
                    n_written[0] += 1
                    action[i] = learner_action(q_table, base, epsilon, stream)
                    if code == SARSA and t > 0:
                        old = prev_state[i] + prev_action[i]
                        q_table[old] += alpha * (prev_reward[i] + gamma * q_table[base + action[i]] - q_table[old])
                else:
                    action[i] = greedy_action(q_table, base, stream)
                dr, dc = action[i] // 3 - 1, action[i] % 3 - 1
            new_r[i] = wrap(r + dr, rows)
            new_c[i] = wrap(c + dc, cols)
        if hidden_start >= 0:
            hdr, hdc = oracle_step(hidden_r, hidden_c, t, good_r, good_c, iterations, rows, cols, pointer, agents)
            hidden_r, hidden_c = wrap(hidden_r + hdr, rows), wrap(hidden_c + hdc, cols)
        gr, gc, er, ec = good_r[t + 1], good_c[t + 1], evil_r[t + 1], evil_c[t + 1]
        paid = True
        if threshold > 1:  # coordination variant (paper 003 §6.1)
            near = 0
            for i in range(agents):
                if chebyshev(new_r[i], new_c[i], gr, gc, rows, cols) <= radius:
                    near += 1
            paid = near >= threshold
        for i in range(agents):
            r, c = new_r[i], new_c[i]
            positive = proximity(chebyshev(r, c, gr, gc, rows, cols), radius) if paid else 0.0
            reward = positive - proximity(chebyshev(r, c, er, ec, rows, cols), radius)
            total += reward
            pos_r[i], pos_c[i] = r, c
            if record:
                rec_positions[t + 1, i] = r * cols + c
                rec_rewards[t, i] = reward
            code = codes[i]
            if learning and (code == Q_LEARNING or code == SARSA):
                scaled = reward * reward_scale
                here = state[i] + action[i]
                if code == Q_LEARNING:  # textbook update (Watkins 1989; paper 003 Algorithm 1)
                    target = scaled
                    if t + 1 < iterations:  # the state after the last iteration is terminal
                        target += gamma * max_q(q_table, _q_base(t + 1, table_row[i], r * cols + c,
                                                                 learners, n_cells))
                    q_table[here] += alpha * (target - q_table[here])
                else:  # SARSA: the update waits for the next action; the last one is terminal
                    prev_state[i], prev_action[i], prev_reward[i] = state[i], action[i], scaled
                    if t + 1 == iterations:
                        q_table[here] += alpha * (scaled - q_table[here])
    return total


@njit(cache=True, inline="always")
def _q_base(t, row, cell, learners, n_cells):
    """Offset of Q(s=(cell, t), ·) for learner `row` in the flat table, laid out
    (T, learners, cells, 9) so that one iteration's states of the whole group sit together."""
    return ((t * learners + row) * n_cells + cell) * 9


@njit(cache=True)
def simulate_batch(codes, rows, cols, iterations, view, radius, threshold,
                   good, evil, starts, seeds,
                   training_passes, alpha, gamma, epsilon, q_initial, reward_scale,
                   record, rec_positions, rec_rewards):
    """Play a batch of episodes; returns R̄ per episode, shape (episodes,) (paper 003 Definition 2).

    codes (agents,) behaviour codes; good, evil (episodes, T+1) cell indices; starts
    (episodes, agents); seeds (episodes,) splitmix64 seeds of the agents' streams. With
    `record`, rec_positions (episodes, T+1, agents) and rec_rewards (episodes, T, agents) get
    the scored pass's trajectory.
    """
    episodes = good.shape[0]
    agents = codes.shape[0]
    n_states = rows * cols * iterations
    table_row = np.full(agents, -1, np.int64)
    learners = 0
    has_imitator = False
    for i in range(agents):
        if codes[i] == Q_LEARNING or codes[i] == SARSA:
            table_row[i] = learners
            learners += 1
        has_imitator |= codes[i] == IMITATION
    passes = training_passes if learners > 0 else 0
    q_table = np.full(n_states * learners * 9, q_initial)  # (T, learners, cells, 9), flat
    written = np.empty(passes * iterations * learners, np.int64)
    n_written = np.zeros(1, np.int64)
    pos_r = np.empty(agents, np.int64)
    pos_c = np.empty(agents, np.int64)
    new_r = np.empty(agents, np.int64)
    new_c = np.empty(agents, np.int64)
    pointer = np.zeros(agents + 1, np.int64)
    window = np.empty((2 * view + 1) ** 2 + 4 * (2 * view + 1), np.int64)
    state = np.zeros(agents, np.int64)
    action = np.zeros(agents, np.int64)
    prev_state = np.zeros(agents, np.int64)
    prev_action = np.zeros(agents, np.int64)
    prev_reward = np.zeros(agents, np.float64)
    good_r = np.empty(iterations + 1, np.int64)
    good_c = np.empty(iterations + 1, np.int64)
    evil_r = np.empty(iterations + 1, np.int64)
    evil_c = np.empty(iterations + 1, np.int64)
    stream = np.empty(1, np.uint64)
    no_positions = np.empty((0, 0), np.int32)
    no_rewards = np.empty((0, 0), np.float64)
    mean_reward = np.empty(episodes, np.float64)
    for e in range(episodes):
        stream[0] = seeds[e]
        for t in range(iterations + 1):
            good_r[t], good_c[t] = good[e, t] // cols, good[e, t] % cols
            evil_r[t], evil_c[t] = evil[e, t] // cols, evil[e, t] % cols
        hidden_start = uniform_int(stream, rows * cols) if has_imitator else -1
        for _ in range(passes):
            _play_pass(codes, rows, cols, iterations, view, radius, threshold,
                       good_r, good_c, evil_r, evil_c, starts[e], hidden_start, stream,
                       True, alpha, gamma, epsilon, q_initial, reward_scale,
                       q_table, table_row, learners, written, n_written,
                       pos_r, pos_c, new_r, new_c, pointer, window, state, action,
                       prev_state, prev_action, prev_reward, False, no_positions, no_rewards)
        positions_out = rec_positions[e] if record else no_positions
        rewards_out = rec_rewards[e] if record else no_rewards
        total = _play_pass(codes, rows, cols, iterations, view, radius, threshold,
                           good_r, good_c, evil_r, evil_c, starts[e], hidden_start, stream,
                           False, alpha, gamma, epsilon, q_initial, reward_scale,
                           q_table, table_row, learners, written, n_written,
                           pos_r, pos_c, new_r, new_c, pointer, window, state, action,
                           prev_state, prev_action, prev_reward, record, positions_out, rewards_out)
        mean_reward[e] = total / (agents * iterations)
        for k in range(n_written[0]):  # reset the table for the next episode (spec §5)
            q_table[written[k]:written[k] + 9] = q_initial
        n_written[0] = 0
    return mean_reward
