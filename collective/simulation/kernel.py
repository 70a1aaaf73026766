"""The fast path: batched Λ* episodes in one compiled kernel (spec §1, §5; paper 003 §4.1, §5.2).

`simulate_batch` plays a batch of episodes, each wholly inside the kernel: learner training
passes, then the scored pass. Inputs and outputs are arrays shaped (episodes, ...); per-episode
state (positions, Q-tables, the oracle's interception pointer, random streams) lives in scratch
arrays reused across episodes. `collective.simulation.reference` is the slow twin that the tests
run in lock-step with this one.

Each agent draws from its own stream per pass (`random_streams.derive_stream_seed`), so the
kernel may play agents apart whenever they cannot affect one another, with the same result as
playing them together (the reference's order; the lock-step tests check it):
- scored pass: together when a coordination threshold or a protocol couples the group, else each
  learner alone (right after its training round, its table still in cache) and the others together; local
  searchers with a silent protocol (`searchers_only`) in a loop of their own (`_search_pass`, with the
  searcher's choice inlined there only);
- a searcher's range-1 window of Λ* and every agent's reward are read from the batch's `SearchTable`
  (`decisions.search_table`: the choice by ⊕'s and ⊖'s offsets from the searcher), in both loops and in the
  protocol rules, to the bit what computing them gives;
- training passes: the whole group together under a coordination threshold (rewards depend on
  everyone) or when learners hear the protocol (see below); the learners together when they share a table;
  else each learner alone on its own table, Q-learners in rounds of up to SIDE_BY_SIDE_LEARNERS stepped side
  by side (`_side_by_side_q_passes`: a lone learner's step waits on the one before, the learners' steps do not
  wait on each other), with a few reused blocks when the scored pass is played alone too (`table_blocks`).
  A learner alone, a round and the learners of a shared table train in loops of their own
  (`_lone_training_passes`, `_side_by_side_q_passes`, `_shared_training_passes`: `_play_pass`'s steps for them,
  without its per-pass and per-step generality), reading the episode's rewards from a table made once for all
  their passes when that pays (`training_rewards`).

Learners' tables (`learner_training`, issue 21): PER_EPISODE trains before every scored episode and
resets after it (paper 003 §5.2.1); with PRETRAINED and ONLINE the tables persist from episode to
episode and from call to call (the caller trains them first by playing the training episodes with
ONLINE, `collective.evaluation.tables.trained_tables`): PRETRAINED scores greedily without learning, ONLINE
keeps learning in the scored passes, ε-greedily, scored as it goes. Their state (`learner_state`) is
(cell, t), or the signs of the rewards of the agent's 3x3 window (`window_state_base`).

Learners that hear (issue 45): a learner that is a member of a talking protocol (stigmergy, broadcast, wisdom take
learners as they take searchers) takes its part in it, as a searcher does (its reports, deposits and reads are
counted), and hears one symbol each step, the king move toward the target the protocol gives it (`heard_symbol`), or
nothing. Its state is (its state above, the symbol): table row `row * HEARD_SYMBOLS + symbol`, ten times the states;
it still acts by its own ε-greedy choice. Its group trains together, under the protocol, in `_play_pass`, and a
Q-learner's update waits for the next state's symbol (the protocol speaks after the move), as SARSA's does. The deaf
control (HEAR_NOTHING) is the same with every symbol replaced by nothing: its state is its own. The noise control
(HEAR_NOISE) is the same with every symbol replaced by a uniform draw among the HEARD_SYMBOLS (`noise_symbol`): the
same table, trained the same way, told nothing about the episode.

Traffic (`Talk.comm`) is the scored pass's: `simulate_batch` restores the count of before an episode's training
passes once they are played, as the rows' columns are per scored iteration (review finding 2). A shared table's
accesses are counted only in a pass that learns (protocols/shared_q.py): read while frozen, it is one's own copy.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.extending import register_jitable

from collective.behaviours import IMITATION, LOCAL_SEARCH, ORACLE, Q_LEARNING, RANDOM, SARSA
from collective.behaviours.decisions import (SearchTable, greedy_action_masked, inline_local_best, learner_action,
                                             local_search_step, max_q, object_offset, oracle_step, random_step,
                                             search_table, tabled_local_best)
from collective.simulation.array_copies import copy_into
from collective.simulation.lent_arrays import lent
from collective.simulation.prefetch import prefetch
from collective.simulation.random_streams import advance_uniform_int, derive_stream_seed, skipped, uniform_int
from collective.environments.scene import (Scene, field_ref, is_landscape, is_reset, reset_scene, scene_blind,
                                           scene_reward)
from collective.environments.torus import (axis_proximities, axis_step_toward, cell_coordinates, chebyshev,
                                          king_moves, proximity, wrap)
from collective.protocols import AUCTION, BROADCAST, DICTATORSHIP, HIERARCHY, NONE, SHARED_Q, STIGMERGY
from collective.protocols.auction import auction_rule
from collective.protocols.broadcast import broadcast_rule
from collective.protocols.dictatorship import dictatorship_rule
from collective.protocols.hierarchy import hierarchy_rule
from collective.protocols.kernel_support import COMM_SLOTS, empty_log, table_distinct, table_entropy_bits, table_log
from collective.protocols.shared_q import count_learning_accesses
from collective.protocols.stigmergy import stigmergy_rule

SCORED_PASS = 0  # pass index of the scored pass; training pass p has index p + 1
SIDE_BY_SIDE_LEARNERS = 3  # Q-learners training alone stepped side by side (`_side_by_side_q_passes`), at most
SIDE_BY_SIDE_BYTES = 4_500_000  # the tables of one round, at most (`side_by_side_width`)
CELL_TIME, WINDOW_SIGNS = 0, 1  # learner states (`learner_state`): (cell, t); signs of the 3x3 window's rewards
WINDOW_STATES = 3 ** 9  # window_signs: each of the 9 cells pays < 0, 0 or > 0
BLANK_WINDOW = (WINDOW_STATES - 1) // 2  # the window_signs state of a window that pays 0 everywhere: digits all 1
PER_EPISODE, PRETRAINED, ONLINE = 0, 1, 2  # learner table modes (`learner_training`, see the module docstring)
# What a learner that is a member of a talking protocol hears each step (`heard_symbol`): the king move from its cell
# toward the target the protocol gives it (0..8, `_play_pass`'s action order), or NOTHING_HEARD
HEARD_SYMBOLS, NOTHING_HEARD = 10, 9
# Whether the learners hear (`simulate_batch`'s `hearing`): not members of a talking protocol; members that hear the
# direction; members that hear nothing (the deaf control: they take part and train as members, their state their own);
# members that hear noise (the noise control: as hearing the direction, each symbol a uniform draw, `noise_symbol`)
HEAR_NONE, HEAR_DIRECTION, HEAR_NOTHING, HEAR_NOISE = 0, 1, 2, 3
# The noise control's streams: agent i's in a pass has stream id NOISE_STREAMS + i (`derive_stream_seed`), above any
# agent's own (i + 1), so its draws are apart from every draw the agents make
NOISE_STREAMS = 1 << 32
_U9 = np.uint64(9)  # actions per state, unsigned (divisions without a sign fix-up)
WORLD_STREAM = 0  # stream id of the world (the hidden oracle's start); agent i has id i + 1
TABLED_REWARD_READS = 2  # the fewest reads per entry, on average, for which the learners' training rewards are tabled
# A shared per-episode table is refilled with Q0 whole after each episode, its training passes listing no written
# state, when those passes write at least this many entries per state on average (notes/learner-speed.md)
REFILL_WRITES = 2

# Per-pass scratch, each shaped (agents,) unless noted; streams (agents, 1); window (max(side², cells),) the rules'
# tie lists.
Scratch = namedtuple("Scratch", "pos_r pos_c new_r new_c pointer window state action "
                                "prev_state prev_action prev_reward streams")
# The settings of a batch: the grid, the agents' view and reward radius, the coordination
# threshold, the learners' α, γ, ε and training reward scale, the 2016 program's switches
# (`KernelSwitches`), the learners' state encoding and table mode (CELL_TIME..., PER_EPISODE...), and whether the
# learners hear a protocol (HEAR_NONE...).
Rules = namedtuple("Rules", "rows cols iterations view_range radius threshold alpha gamma epsilon reward_scale "
                            "reset_first_observation imitation_steps learner_bootstrap oracle_approach "
                            "state_encoding table_mode approach_ties hears",
                    defaults=(CELL_TIME, PER_EPISODE, 0, HEAR_NONE))
# The 2016 switches the kernel's behaviours read (collective.config.CPP_SWITCHES; the auction's and
# the tree's travel in the protocol's values), as ints, and first_episode: the row of the batch that
# is the evaluation's episode 0 (-1: none), whose hidden oracle keeps its own random start cell.
KernelSwitches = namedtuple("KernelSwitches", "first_observation imitation learner_bootstrap oracle approach "
                                               "first_episode")
NO_SWITCHES = KernelSwitches(0, 0, 0, 0, 0, -1)
# One episode's world, each (T+1,): ⊕/⊖ rows and columns, and the landscape's displacement since
# the start (rows, columns); landscape is the base field (cells,), (0,) for Λ*.
EpisodePaths = namedtuple("EpisodePaths", "good_r good_c evil_r evil_c landscape shift_r shift_c")
# The episodes the learners of one scored episode train on, n of them (1 when they replay it):
# EpisodePaths' arrays with a leading axis (n, T+1), landscapes (n, cells) ((n, 0) for Λ*), start cells
# (n, agents), and the hidden oracle's start cell (n,) (-1 without imitators). Pass p plays p mod n.
TrainingSet = namedtuple("TrainingSet", "good_r good_c evil_r evil_c landscapes shift_r shift_c starts hidden")
# A group's protocol (see protocols.kernel_support): code, numeric parameters (PARAMETER_SLOTS,),
# members (participating agent indices), targets (agents,), choice (agents, 3), observed
# (agents, window cells), field (cells,), state (2,), comm (COMM_SLOTS,), the messages and bits sent under
# each accounting, summed over the batch, log, the scored pass's message symbols (a count table,
# protocols.kernel_support), entropy (episodes,), each episode's message entropy, and distinct (episodes,), its
# distinct messages (both NaN: no message).
Talk = namedtuple("Talk", "code values members targets choice observed field state comm log entropy distinct")
# Learners' tables: q (blocks, states, 9) flat, states (T, cells) under CELL_TIME or WINDOW_STATES;
# dirty (blocks, states); written/n_written list the states written this episode so that only those
# are reset (PER_EPISODE only: the other modes keep their tables).
Tables = namedtuple("Tables", "q dirty written n_written")
# The grid's king moves by cell (`cell_moves`): to (cells * 9,), the cell that action a takes cell k to at
# [9k + a]; row, col (cells,), each cell's row and column.
CellMoves = namedtuple("CellMoves", "to row col")


@dataclass(frozen=True)
class LearnerParameters:
    """Tabular learner settings (spec §5; paper 003 Algorithm 1), taken whole from a configuration's learner fields
    (`EvaluationConfig.learner`), whose defaults and profiles decide them."""

    alpha: float
    gamma: float
    epsilon: float
    q_initial: float
    training_passes: int
    reward_scale: float


@njit(cache=True)
def play_together(coordination_threshold, protocol_code):
    """Whether the scored pass must play the group together (agents affect one another): under a
    coordination threshold, or with any protocol. Compiled, so the kernel and Python share it."""
    return coordination_threshold > 1 or protocol_code != NONE


@njit(cache=True)
def separate_tables(coordination_threshold, protocol_code, table_mode):
    """Whether each learner needs its own table block at once (see the module docstring): when the
    learners play together with tables of their own, or keep their tables across episodes."""
    return protocol_code != SHARED_Q and (table_mode != PER_EPISODE or play_together(coordination_threshold,
                                                                                     protocol_code))


def talk_workspace(protocol_code: int, values: tuple[float, ...], participates: np.ndarray,
                   agents: int, rows: int, cols: int, view: int, iterations: int, episodes: int) -> Talk:
    """A group's protocol as the kernel receives it, for a batch of `episodes`; `participates` (agents,)
    marks its members."""
    members = np.flatnonzero(participates).astype(np.int64)
    return Talk(protocol_code, np.asarray(values, np.float64), members,
                np.full(agents, -1, np.int64), np.zeros((agents, 3)), np.zeros((agents, (2 * view + 1) ** 2)),
                np.zeros(rows * cols), np.zeros(2), np.zeros(COMM_SLOTS), table_log(iterations, members.shape[0]),
                np.full(episodes, np.nan), np.full(episodes, np.nan))


def table_blocks(learners: int, coordination_threshold: int, protocol_code: int, table_mode: int,
                 state_encoding: int, rows: int, cols: int, iterations: int) -> int:
    """How many table blocks a group's learners need at once: one each when they need tables of their own
    (`separate_tables`), one when they share it (`shared_q`), else as many as a round of Q-learners training side
    by side holds (`side_by_side_width`), which learners that train and play alone take in turn. The memory
    check counts a block per learner whatever this gives (`config.learner_table_bytes`)."""
    if separate_tables(coordination_threshold, protocol_code, table_mode):
        return learners
    if protocol_code == SHARED_Q:
        return min(learners, 1)
    return min(learners, side_by_side_width(state_encoding, rows, cols, iterations))


@njit(cache=True)
def side_by_side_width(state_encoding, rows, cols, iterations):
    """How many Q-learners training alone step side by side (`_side_by_side_q_passes`): SIDE_BY_SIDE_LEARNERS, fewer
    when their tables (cells·T states x 9 float64 each) would hold more than SIDE_BY_SIDE_BYTES, and 1 (each
    alone) for window-sign states. A learner side by side asks for its next row two of the others' steps ahead,
    time for the caches but not for memory: rounds of 10x10, T = 200 tables (1.44 MB) ran fastest by three
    (two kernel threads: 8.6 MB in all), and 20x20 ones (5.8 MB) at 0.4-0.65x the lone loop (notes/learner-speed.md)."""
    if state_encoding != CELL_TIME:
        return 1
    return max(1, min(SIDE_BY_SIDE_LEARNERS, SIDE_BY_SIDE_BYTES // (table_states(state_encoding, rows, cols,
                                                                                  iterations) * 9 * 8)))


def learner_workspace(codes: np.ndarray, rows: int, cols: int, iterations: int,
                      training_passes: int, q_initial: float, blocks: int,
                      state_encoding: int = CELL_TIME, table_mode: int = PER_EPISODE,
                      hearing: int = HEAR_NONE) -> Tables:
    """The learners' Q-tables, filled with Q0, and the bookkeeping of written states: `blocks` tables
    (`table_blocks`; `simulate_batch` gives learner k the block k mod blocks), each HEARD_SYMBOLS times the
    states when the learners hear the direction (`hearing`, HEAR_NONE...)."""
    learners = int(np.isin(codes, (Q_LEARNING, SARSA)).sum())
    n_states = table_states(state_encoding, rows, cols, iterations) * heard_symbols(hearing) * blocks
    resets = training_passes * iterations * learners if table_mode == PER_EPISODE else 0
    written = np.empty(min(n_states, resets) + 1, np.int64)  # one more: the training loops write ahead
    return Tables(np.full(n_states * 9, q_initial), np.zeros(n_states, np.bool_), written, np.zeros(1, np.int64))


@register_jitable
def table_states(state_encoding: int, rows: int, cols: int, iterations: int) -> int:
    """States of one learner's table: T·cells under CELL_TIME, 3^9 under WINDOW_SIGNS. Plain Python when called
    from Python (the memory check calls it before any kernel loads), compiled into the kernel's callers."""
    return WINDOW_STATES if state_encoding == WINDOW_SIGNS else rows * cols * iterations


@register_jitable
def heard_symbols(hearing: int) -> int:
    """The symbols a learner's state pairs its own with: HEARD_SYMBOLS when the learners hear the direction
    (HEAR_DIRECTION) or noise in its place (HEAR_NOISE), else 1. Plain Python when called from Python (the memory
    check)."""
    return HEARD_SYMBOLS if hearing == HEAR_DIRECTION or hearing == HEAR_NOISE else 1


@njit(cache=True, inline="always")
def heard_symbol(r, c, target, cell_row, cell_col, rows, cols, direct_ties):
    """What a hearing learner at (r, c) hears: the king move toward the protocol's `target` cell for it, as the
    action a = 3·(dr + 1) + (dc + 1) that makes it, one step the shorter way round each axis (`axis_step_toward`,
    as a searcher steps toward it, half-way ties broken as `direct_ties` says; 4: it stands there), or
    NOTHING_HEARD when it has no target (-1). cell_row, cell_col: each cell's row and column (`CellMoves`)."""
    if target < 0:
        return NOTHING_HEARD
    cell = np.uintp(target)
    return (3 * (axis_step_toward(r, cell_row[cell], rows, direct_ties) + 1)
            + axis_step_toward(c, cell_col[cell], cols, direct_ties) + 1)


@njit(cache=True, inline="always")
def noise_symbol(episode_seed, agent, pass_index, t):
    """What a learner hears at iteration t under the noise control (HEAR_NOISE): the (t+1)-th `uniform_int` draw
    among the HEARD_SYMBOLS of its noise stream in the pass (stream NOISE_STREAMS + agent, `derive_stream_seed`),
    read at its counter (`skipped`), so independent of the episode's play and of the agent's own draws. Uniform,
    not the real symbols' marginal (which only a first run could measure): its entropy is the most ten symbols
    hold, so noise splits the table's states at least as finely as the protocol's symbols do; real - noise then
    errs, if at all, toward more than what the symbols tell, real - deaf (no split) toward less (issue 45)."""
    state = skipped(derive_stream_seed(episode_seed, agent + NOISE_STREAMS, pass_index), t)
    return advance_uniform_int(state, np.int64(HEARD_SYMBOLS))[1]  # a run-time int: no variant of its own


@njit(cache=True, inline="always")
def _q_base(t, row, cell, iterations, n_cells):
    """Offset of Q(s=(cell, t), ·) for learner `row` in the flat table (learners, T, cells, 9)."""
    return ((row * iterations + t) * n_cells + cell) * 9


@njit(cache=True, inline="always")
def window_state_base(scene, r, c, row):
    """Offset of Q(s, ·) for learner `row` in the flat table (learners, 3^9, 9), s the signs of the
    rewards of the 3x3 window around (r, c) in `scene`, row by row, each digit 0 (< 0), 1 (0) or
    2 (> 0), the first cell the most significant (issue 21; paper 003 §5.2.1 names the learners
    but no state that transfers between episodes)."""
    if scene_blind(scene, r, c, 1):  # every cell pays 0: each digit 1 (most windows; skips 9 rewards)
        return (row * WINDOW_STATES + BLANK_WINDOW) * 9
    code = 0
    for dr in range(-1, 2):
        for dc in range(-1, 2):
            reward = scene_reward(scene, wrap(r + dr, scene.rows), wrap(c + dc, scene.cols))
            code = code * 3 + (2 if reward > 0.0 else (0 if reward < 0.0 else 1))
    return (row * WINDOW_STATES + code) * 9


@njit(cache=True, inline="always")
def _state_base(rules, scene, t, row, r, c, n_cells):
    """Offset of Q(s, ·) for learner `row` at (r, c) at iteration t under the rules' state encoding."""
    if rules.state_encoding == WINDOW_SIGNS:
        return window_state_base(scene, r, c, row)
    return _q_base(t, row, r * rules.cols + c, rules.iterations, n_cells)


@njit(cache=True, inline="always")
def quorum_pays(rows_at, columns_at, agents, scene, threshold):
    """Whether this step pays the positive part of R (paper 003 §6.1's coordination variant): always at
    threshold 1, else when at least `threshold` of the agents (at rows_at[i], columns_at[i]) stand within the
    reward radius of ⊕."""
    if threshold <= 1:
        return True
    near = 0
    for i in range(agents):
        if chebyshev(rows_at[i], columns_at[i], scene.good_r, scene.good_c, scene.rows, scene.cols) <= scene.radius:
            near += 1
    return near >= threshold


@njit(cache=True, inline="always")
def step_reward(scene, r, c, paid):
    """R of the cell at (r, c): the scene's, or without its positive part when the quorum is not met (Λ* only)."""
    if paid:
        return scene_reward(scene, r, c)
    return -proximity(chebyshev(r, c, scene.evil_r, scene.evil_c, scene.rows, scene.cols), scene.radius)


@njit(cache=True, inline="always")
def tabled_step_reward(scene, r, c, paid, pays):
    """`step_reward` in a Λ* scene from a `SearchTable`'s pays, to the bit (tests/test_search_pass.py)."""
    lost = pays[object_offset(r, c, scene.evil_r, scene.evil_c, scene.rows, scene.cols)]
    if paid:
        return pays[object_offset(r, c, scene.good_r, scene.good_c, scene.rows, scene.cols)] - lost
    return -lost


@njit(cache=True)
def _play_pass(codes, agent_ids, table_row, starts, rules, paths, hidden_start, episode_seed, pass_index,
               learning, tables, scratch, talk, record, rec_positions, rec_rewards, agent_totals, search, moves):
    """One pass of one episode for the agents listed in `codes` (global ids `agent_ids`, learner
    table rows `table_row`, start cells `starts`); returns the sum of their real rewards, and in a
    scored pass adds each agent's to agent_totals (group agents,), by global id.

    Per iteration (spec §1): every agent decides from ⊕/⊖'s current cells, then all move, ⊕/⊖
    take their next pattern step, and rewards come from the new cells. Learners update their
    Q-tables only when `learning` (training passes), with rewards scaled by `reward_scale`.
    The group's protocol (`talk`) speaks after all agents observe and before any acts (spec §6).
    The 2016 switches (`rules`, see KernelSwitches) change what the scored pass's first
    observation shows, how the oracles move, when the imitators' hidden oracle steps and what the
    learners bootstrap from. `search` is the batch's `SearchTable` (the searchers' windows and every reward),
    `moves` the grid's `CellMoves` (a target cell's row and column).
    """
    rows, cols, iterations, view, radius, threshold = (rules.rows, rules.cols, rules.iterations, rules.view_range,
                                                       rules.radius, rules.threshold)
    alpha, gamma, epsilon, reward_scale = rules.alpha, rules.gamma, rules.epsilon, rules.reward_scale
    good_r, good_c, evil_r, evil_c = paths.good_r, paths.good_c, paths.evil_r, paths.evil_c
    landscape, shift_r, shift_c = field_ref(paths.landscape), paths.shift_r, paths.shift_c
    tabled = view == 1 and paths.landscape.shape[0] == 0 and search.keys > 0  # choices and rewards from `search`
    reach, keys, ties, best = search.reach, search.keys, search.ties, search.best
    pays, parts = search.pays, search.parts
    cell_row, cell_col = moves.row, moves.col  # a target cell's row and column, without an integer division
    s = scratch
    q = tables.q
    n_cells = rows * cols
    agents = codes.shape[0]
    for i in range(agents):
        s.pos_r[i] = starts[i] // cols
        s.pos_c[i] = starts[i] % cols
        s.pointer[i] = 0
        s.streams[i, 0] = derive_stream_seed(episode_seed, agent_ids[i] + 1, pass_index)
        if record:
            rec_positions[i, 0] = starts[i]
    s.pointer[agents] = 0
    talk.targets[:] = -1
    if talk.code != NONE:
        talk.field[:] = 0.0
        talk.state[0], talk.state[1] = -np.inf, -1.0
    keeps_totals = pass_index == SCORED_PASS and agent_totals.shape[0] > 0  # a mixed group's scored pass
    table_address_bits = np.ceil(np.log2(max(2, tables.q.shape[0]))) if talk.code == SHARED_Q else 0.0
    talks = talk.code != NONE and talk.code != SHARED_Q  # a rule speaks each iteration
    # The arrays the loops pass on or index, held in locals for the pass: read from the tuples at each use,
    # each would take and drop a reference (an atomic count each) every iteration (issue 25).
    values, members, field, protocol_state, choice, observed, targets, comm, log = (
        talk.values, talk.members, talk.field, talk.state, talk.choice, talk.observed, talk.targets, talk.comm,
        talk.log)
    pos_r, pos_c, new_r, new_c, pointer = s.pos_r, s.pos_c, s.new_r, s.new_c, s.pointer
    streams, window, states, actions = s.streams, s.window, s.state, s.action
    prev_states, prev_actions, prev_rewards = s.prev_state, s.prev_action, s.prev_reward
    dirty, written, n_written = tables.dirty, tables.written, tables.n_written
    # The rules' arrays lent for the pass (`lent_arrays`): a rule's call then counts no reference to any of them.
    rule_arrays = (lent(values), lent(members), lent(pos_r), lent(pos_c), lent(streams), lent(window), lent(field),
                   lent(protocol_state), lent(choice), lent(observed), lent(targets), lent(comm), lent(log))
    rule_search = SearchTable(lent(reach), keys, lent(ties), lent(best), lent(pays), lent(parts))
    hidden_r = hidden_start // cols
    hidden_c = hidden_start % cols
    total = 0.0
    for t in range(iterations):
        scene = Scene(good_r[t], good_c[t], evil_r[t], evil_c[t], landscape, shift_r[t], shift_c[t],
                      rows, cols, radius)
        if rules.reset_first_observation and t == 0 and not learning:
            # main.cpp resets ⊕ and ⊖ onto cell 1 after training and recomputes the field before
            # the first scored observation (cpp_first_observation)
            scene = reset_scene(landscape, rows, cols)
        # The group's protocol rule (protocols/*.py; kernel_support states the arguments), under a flag set
        # once per pass, so the compiler keeps a loop without it for groups that do not talk (A/B at G10:
        # stigmergy +6%, random -1.5%; unguarded, random lost 16%). Called with the pass's lent arrays
        # (`rule_arrays`): a call with the arrays themselves counts a reference to each, atomically, in and out.
        if talks:
            if talk.code == STIGMERGY:
                stigmergy_rule(*rule_arrays[:4], scene, view, *rule_arrays[4:], rule_search)
            elif talk.code == BROADCAST:
                broadcast_rule(*rule_arrays[:4], scene, view, *rule_arrays[4:], rule_search)
            elif talk.code == AUCTION:
                auction_rule(*rule_arrays[:4], scene, view, *rule_arrays[4:], rule_search)
            elif talk.code == DICTATORSHIP:
                dictatorship_rule(*rule_arrays[:4], scene, view, *rule_arrays[4:], rule_search)
            elif talk.code == HIERARCHY:
                hierarchy_rule(*rule_arrays[:4], scene, view, *rule_arrays[4:], rule_search)
        for i in range(agents):
            r, c, code = pos_r[i], pos_c[i], codes[i]
            stream = streams[i, 0]  # the agent's stream state, in a local (decisions.py)
            if code == RANDOM:
                stream, dr, dc = random_step(stream)
            elif code == LOCAL_SEARCH:
                if targets[i] >= 0:
                    target = np.uintp(targets[i])
                    dr, dc = (axis_step_toward(r, cell_row[target], rows, rules.approach_ties),
                              axis_step_toward(c, cell_col[target], cols, rules.approach_ties))
                else:
                    stream, dr, dc = local_search_step(r, c, scene, view, stream, reach, keys, ties, best, parts)
            elif code == ORACLE:
                dr, dc = _oracle_move(r, c, t, good_r, good_c, rules, pointer, i)
            elif code == IMITATION:
                if rules.imitation_steps:  # main.cpp: the hidden oracle steps before each imitator acts
                    pointer[agents] = 0  # several steps per iteration: rescan from t+1 each time
                    hdr, hdc = _oracle_move(hidden_r, hidden_c, t, good_r, good_c, rules, pointer, agents)
                    hidden_r, hidden_c = wrap(hidden_r + hdr, rows), wrap(hidden_c + hdc, cols)
                if chebyshev(r, c, hidden_r, hidden_c, rows, cols) <= view:
                    dr, dc = (axis_step_toward(r, hidden_r, rows, rules.approach_ties),
                              axis_step_toward(c, hidden_c, cols, rules.approach_ties))
                else:
                    stream, dr, dc = local_search_step(r, c, scene, view, stream, reach, keys, ties, best, parts)
            else:  # Q_LEARNING or SARSA
                row = table_row[i]
                if rules.hears == HEAR_DIRECTION:  # its state pairs its own with what it hears (module docstring)
                    row = row * HEARD_SYMBOLS + heard_symbol(r, c, targets[i], cell_row, cell_col, rows, cols,
                                                                  rules.approach_ties)
                elif rules.hears == HEAR_NOISE:  # the noise control: a draw in the symbol's place
                    row = row * HEARD_SYMBOLS + noise_symbol(episode_seed, agent_ids[i], pass_index, t)
                base = _state_base(rules, scene, t, row, r, c, n_cells)
                states[i] = base
                if talk.code == SHARED_Q and learning:  # every access to a table that learns is traffic
                    count_learning_accesses(comm, 1, code == Q_LEARNING and t + 1 < iterations, table_address_bits)
                if learning:
                    if rules.table_mode == PER_EPISODE and not dirty[base // 9]:
                        dirty[base // 9] = True
                        written[n_written[0]] = base
                        n_written[0] += 1
                    if code == Q_LEARNING and rules.hears != HEAR_NONE and t > 0:  # the last update, s' known
                        old = prev_states[i] + prev_actions[i]
                        q[old] += alpha * (prev_rewards[i] + gamma * max_q(q, base) - q[old])
                    stream, actions[i] = learner_action(q, base, epsilon, stream)
                    if code == SARSA and t > 0 and not rules.learner_bootstrap:
                        old = prev_states[i] + prev_actions[i]
                        q[old] += alpha * (prev_rewards[i] + gamma * q[base + actions[i]] - q[old])
                else:
                    stream, actions[i] = greedy_action_masked(q, base, stream)
                dr, dc = actions[i] // 3 - 1, actions[i] % 3 - 1
            streams[i, 0] = stream
            new_r[i] = wrap(r + dr, rows)
            new_c[i] = wrap(c + dc, cols)
        if hidden_start >= 0 and not rules.imitation_steps:
            hdr, hdc = _oracle_move(hidden_r, hidden_c, t, good_r, good_c, rules, pointer, agents)
            hidden_r, hidden_c = wrap(hidden_r + hdr, rows), wrap(hidden_c + hdc, cols)
        after = Scene(good_r[t + 1], good_c[t + 1], evil_r[t + 1], evil_c[t + 1], landscape, shift_r[t + 1],
                      shift_c[t + 1], rows, cols, radius)
        paid = quorum_pays(new_r, new_c, agents, after, threshold)
        for i in range(agents):
            r, c = new_r[i], new_c[i]
            reward = tabled_step_reward(after, r, c, paid, pays) if tabled else step_reward(after, r, c, paid)
            total += reward
            if keeps_totals:
                agent_totals[agent_ids[i]] += reward
            pos_r[i], pos_c[i] = r, c
            if record:
                rec_positions[i, t + 1] = r * cols + c
                rec_rewards[i, t] = reward
            code = codes[i]
            if learning and (code == Q_LEARNING or code == SARSA):
                scaled = reward * reward_scale
                here = states[i] + actions[i]
                if code == Q_LEARNING and rules.learner_bootstrap:
                    # Qlearning::updateQMatrix reads the row of the new cell alone: state (c', t=0); no terminal
                    target = scaled + gamma * max_q(q, _q_base(0, table_row[i], r * cols + c, iterations, n_cells))
                    q[here] += alpha * (target - q[here])
                elif code == SARSA and rules.learner_bootstrap:
                    # main.cpp's SARSA: a' chosen at (c', t), the same t, bootstrapped from, then discarded
                    following = _q_base(t, table_row[i], r * cols + c, iterations, n_cells)
                    streams[i, 0], next_action = learner_action(q, following, epsilon, streams[i, 0])
                    q[here] += alpha * (scaled + gamma * q[following + next_action] - q[here])
                elif code == Q_LEARNING and rules.hears == HEAR_NONE:  # textbook (Watkins 1989; paper 003 Alg. 1)
                    target = scaled
                    if t + 1 < iterations:  # the state after the last iteration is terminal
                        target += gamma * max_q(q, _state_base(rules, after, t + 1, table_row[i], r, c, n_cells))
                    q[here] += alpha * (target - q[here])
                else:  # SARSA, or a Q-learner that hears: the update waits for the next state; the last is terminal.
                    # With ε = 0 this is Q-learning's update exactly (issue 12): the next action
                    # is greedy, so Q(s', a') = max Q(s', ·); with states (cell, t) nothing writes
                    # Q(s', ·) between Q-learning's read (end of step t) and SARSA's (the decision
                    # at t+1), and both add α·((r + γ·Q) − Q) with the same operations, and draw
                    # the same tie-breaks. With ε > 0, a' is sometimes exploratory and they differ.
                    prev_states[i], prev_actions[i], prev_rewards[i] = states[i], actions[i], scaled
                    if t + 1 == iterations:
                        q[here] += alpha * (scaled - q[here])
    return total


@njit(cache=True)
def searchers_only(codes, protocol_code):
    """Whether `_search_pass` may play these agents' scored pass: all local searchers (whose choices read no
    protocol's targets when none speaks: without a protocol, or under shared_q, which only learners use)."""
    if protocol_code != NONE and protocol_code != SHARED_Q:
        return False
    for code in codes:
        if code != LOCAL_SEARCH:
            return False
    return codes.shape[0] > 0


@njit(cache=True)
def _search_pass(agent_ids, starts, rules, paths, episode_seed, learning, scratch, record, rec_positions,
                 rec_rewards, agent_totals, table):
    """`_play_pass`'s scored pass for local searchers alone with a silent protocol (`searchers_only`): the same
    operations in the same order, so the same rewards, totals, records and streams to the bit. A loop of its
    own, with the searcher's choice inlined (`inline_local_best`): called from `_play_pass`'s loop it costs
    ~10% of a searcher's rate, and inlined there it made the protocol groups' loop slower and the warm-up's
    compile 10% longer (notes/kernel-speed.md); a range-1 window of Λ* is read from `table` (the batch's `SearchTable`)
    instead. `learning` only says whether the 2016 reset of the first observation applies (it does in a pass
    that does not learn)."""
    rows, cols, iterations, view, radius, threshold = (rules.rows, rules.cols, rules.iterations, rules.view_range,
                                                       rules.radius, rules.threshold)
    good_r, good_c, evil_r, evil_c = paths.good_r, paths.good_c, paths.evil_r, paths.evil_c
    landscape, shift_r, shift_c = field_ref(paths.landscape), paths.shift_r, paths.shift_c
    pos_r, pos_c, new_r, new_c, streams = scratch.pos_r, scratch.pos_c, scratch.new_r, scratch.new_c, scratch.streams
    agents = agent_ids.shape[0]
    tabled = view == 1 and paths.landscape.shape[0] == 0 and table.keys > 0  # a range-1 window of Λ*, tabled
    reach, keys, ties, best, pays = table.reach, table.keys, table.ties, table.best, table.pays
    for i in range(agents):
        pos_r[i] = starts[i] // cols
        pos_c[i] = starts[i] % cols
        streams[i, 0] = derive_stream_seed(episode_seed, agent_ids[i] + 1, SCORED_PASS)
        if record:
            rec_positions[i, 0] = starts[i]
    keeps_totals = agent_totals.shape[0] > 0
    reset_first = rules.reset_first_observation and not learning
    total = 0.0
    for t in range(iterations):
        scene = Scene(good_r[t], good_c[t], evil_r[t], evil_c[t], landscape, shift_r[t], shift_c[t],
                      rows, cols, radius)
        if reset_first and t == 0:  # main.cpp's reset before the first scored observation (`_play_pass`)
            scene = reset_scene(landscape, rows, cols)
        if tabled and not (reset_first and t == 0):
            for i in range(agents):
                r, c = pos_r[i], pos_c[i]
                streams[i, 0], action = tabled_local_best(r, c, good_r[t], good_c[t], evil_r[t], evil_c[t], rows,
                                                          cols, reach, keys, ties, best, streams[i, 0])
                new_r[i] = wrap(r + action // 3 - 1, rows)
                new_c[i] = wrap(c + action % 3 - 1, cols)
        else:
            for i in range(agents):
                r, c = pos_r[i], pos_c[i]
                stream, dr, dc, _ = inline_local_best(r, c, scene, view, streams[i, 0])
                streams[i, 0] = stream
                new_r[i] = wrap(r + np.sign(dr), rows)
                new_c[i] = wrap(c + np.sign(dc), cols)
        after = Scene(good_r[t + 1], good_c[t + 1], evil_r[t + 1], evil_c[t + 1], landscape, shift_r[t + 1],
                      shift_c[t + 1], rows, cols, radius)
        paid = quorum_pays(new_r, new_c, agents, after, threshold)
        for i in range(agents):
            r, c = new_r[i], new_c[i]
            reward = tabled_step_reward(after, r, c, paid, pays) if tabled else step_reward(after, r, c, paid)
            total += reward
            if keeps_totals:
                agent_totals[agent_ids[i]] += reward
            pos_r[i], pos_c[i] = r, c
            if record:
                rec_positions[i, t + 1] = r * cols + c
                rec_rewards[i, t] = reward
    return total


@njit(cache=True)
def _oracle_move(r, c, t, good_r, good_c, rules, pointer, slot):
    """An oracle's step at iteration t: interception of ⊕'s earliest reachable future cell (paper
    003 §5.2.1, `oracle_step`), or with `cpp_oracle` one approach step toward ⊕'s next cell, as
    Oracle::performAction(goodObjPositions.at(t)) does in main.cpp. Called, not inlined: inlined
    at its three call sites it made the oracle 2.7x slower (21 -> 56 M agent-steps/s called, CPU
    clock, G10) and the kernel slower to compile (notes/compile-time.md: Inlining). Half-way ties as
    `cpp_approach_position` says (`axis_step_toward`)."""
    ties = rules.approach_ties
    if rules.oracle_approach:
        rows, cols = rules.rows, rules.cols
        return axis_step_toward(r, good_r[t + 1], rows, ties), axis_step_toward(c, good_c[t + 1], cols, ties)
    return oracle_step(r, c, t, good_r, good_c, rules.iterations, rules.rows, rules.cols, pointer, slot, ties)


@njit(cache=True, nogil=True)
def simulate_batch(codes, rows, cols, iterations, view, radius, threshold,
                   good, evil, landscapes, starts, seeds,
                   training_good, training_evil, training_landscapes, training_starts, training_seeds,
                   training_passes, alpha, gamma, epsilon, q_initial, reward_scale,
                   tables, talk, record, rec_positions, rec_rewards, agent_totals, switches,
                   state_encoding, table_mode, hearing):
    """Play a batch of episodes; returns R̄ per episode, shape (episodes,) (paper 003 Definition 2).

    codes (agents,) behaviour codes; good, evil (episodes, T+1) cell indices; landscapes
    (episodes, cells) base fitness fields, (episodes, 0) for Λ* (for a landscape, `good` is the
    global optimum's path and the field moves with it, see collective.environments.landscapes); starts
    (episodes, agents); seeds (episodes,) the agents' episode seeds. The learners' training
    episodes, n per episode: training_good, training_evil (episodes, n, T+1), training_landscapes
    (episodes, n, cells) ((episodes, n, 0) for Λ*), training_starts (episodes, n, agents), training_seeds
    (episodes, n) (their world seeds: the hidden oracle's start); training pass p plays training
    episode p mod n. To replay the scored episode (paper 003 §5.2.1) pass views of the episode's
    own arrays with n = 1 (`good[:, None]`, ...: no copies). Tables from
    `learner_workspace`; talk from `talk_workspace`. With `record`, rec_positions
    (episodes, agents, T+1) and rec_rewards (episodes, agents, T) receive the scored pass.
    agent_totals (episodes, agents), zeros, receives each agent's summed scored rewards (the
    per-capita scores of a mixed group's behaviours, Melting Pot's focal/background returns); shaped
    (episodes, 0), they are skipped (a homogeneous group: its per-capita score is R̄), by a branch the
    compiler hoists out of the loop rather than a None that would compile the kernel a second time
    (issue 23). switches: the 2016 program's (`KernelSwitches`).
    state_encoding: the learners' states (CELL_TIME, WINDOW_SIGNS); table_mode: PER_EPISODE (train
    `training_passes` passes before each scored episode, then reset), PRETRAINED (no training
    passes, greedy scored passes, tables kept) or ONLINE (no training passes, scored passes that
    learn, tables kept); see the module docstring. hearing: whether the learners hear the protocol (HEAR_NONE...).
    """
    episodes = good.shape[0]
    agents = codes.shape[0]
    true, false, scored_pass, no_hidden = _runtime_constants()
    rules = Rules(rows, cols, iterations, view, radius, threshold, alpha, gamma, epsilon, reward_scale,
                  switches.first_observation, switches.imitation, switches.learner_bootstrap, switches.oracle,
                  state_encoding, table_mode, switches.approach, hearing)
    together = play_together(threshold, talk.code)
    scored_learning = table_mode == ONLINE
    shared = talk.code == SHARED_Q
    agent_ids = np.arange(agents)
    table_row = np.full(agents, -1, np.int64)
    learner_ids = np.empty(0, np.int64)
    has_imitator = False
    # the tables' blocks (`table_blocks`): learner k takes block k mod blocks
    blocks = max(1, tables.q.shape[0] // (9 * table_states(state_encoding, rows, cols, iterations) *
                                          heard_symbols(hearing)))
    for i in range(agents):
        if codes[i] == Q_LEARNING or codes[i] == SARSA:
            table_row[i] = learner_ids.shape[0] % blocks
            learner_ids = np.append(learner_ids, i)
        has_imitator |= codes[i] == IMITATION
    passes = training_passes if learner_ids.shape[0] > 0 and table_mode == PER_EPISODE else 0
    others = np.flatnonzero(table_row < 0)  # the non-learners
    # local searchers with a silent protocol play their scored pass in a loop of their own (`_search_pass`)
    searchers = searchers_only(codes, talk.code)
    others_search = searchers_only(codes[others], talk.code)
    recorded = others.shape[0] if record else 0
    others_positions = np.empty((recorded, iterations + 1), np.int32)
    others_rewards = np.empty((recorded, iterations), np.float64)
    view_side = 2 * view + 1
    scratch = Scratch(np.empty(agents, np.int64), np.empty(agents, np.int64), np.empty(agents, np.int64),
                      np.empty(agents, np.int64), np.zeros(agents + 1, np.int64),
                      np.empty(max(view_side * view_side, rows * cols), np.int64), np.zeros(agents, np.int64),
                      np.zeros(agents, np.int64), np.zeros(agents, np.int64), np.zeros(agents, np.int64),
                      np.zeros(agents, np.float64), np.empty((agents, 1), np.uint64))
    steps = iterations + 1
    good_r, good_c = np.empty(steps, np.int64), np.empty(steps, np.int64)
    evil_r, evil_c = np.empty(steps, np.int64), np.empty(steps, np.int64)
    shift_r, shift_c = np.empty(steps, np.int64), np.empty(steps, np.int64)
    n_training = training_good.shape[1] if passes > 0 else 0
    train_good_r, train_good_c = np.empty((n_training, steps), np.int64), np.empty((n_training, steps), np.int64)
    train_evil_r, train_evil_c = np.empty((n_training, steps), np.int64), np.empty((n_training, steps), np.int64)
    train_shift_r, train_shift_c = np.empty((n_training, steps), np.int64), np.empty((n_training, steps), np.int64)
    train_hidden = np.full(n_training, -1, np.int64)
    moves = cell_moves(rows, cols)
    searched = search_table(rows, cols, radius)  # (a few microseconds, once per batch)
    # the learners' training rewards by (t, cell) (`training_rewards`), when each entry is read often enough to repay
    # its making: one training episode (the replayed one), read in every pass of every learner
    tabled = n_training == 1 and passes * learner_ids.shape[0] >= TABLED_REWARD_READS * rows * cols
    # a shared table's training passes list the states they write (for `_reset_written`) unless it is refilled
    refills = shared and threshold <= 1 and \
        passes * iterations * learner_ids.shape[0] >= REFILL_WRITES * tables.dirty.shape[0]
    rewards = np.empty((n_training, steps, rows * cols) if tabled else (0, 0, 0), np.float64)
    # Q-learners training alone go in rounds side by side with tabled rewards (`side_by_side_width`), on blocks
    # of their own (one per learner when they need tables of their own, else the blocks in turn)
    round_width = min(blocks, side_by_side_width(state_encoding, rows, cols, iterations) if tabled else 1)
    world = np.empty(1, np.uint64)
    scored_comm = np.empty_like(talk.comm)  # the traffic before an episode's training passes (module docstring)
    no_positions = np.empty((0, 0), np.int32)
    no_rewards = np.empty((0, 0), np.float64)
    mean_reward = np.empty(episodes, np.float64)
    for e in range(episodes):
        _cells_to_coordinates(good[e], evil[e], rows, cols, good_r, good_c, evil_r, evil_c, shift_r, shift_c)
        paths = EpisodePaths(good_r, good_c, evil_r, evil_c, landscapes[e], shift_r, shift_c)
        world[0] = derive_stream_seed(seeds[e], WORLD_STREAM, SCORED_PASS)
        hidden_start = uniform_int(world, rows * cols) if has_imitator else -1
        if has_imitator and switches.imitation and e != switches.first_episode:
            # main.cpp resets the hidden oracle onto each agent's next start cell in turn: the last one's
            hidden_start = starts[e, agents - 1]
        for j in range(n_training):
            _cells_to_coordinates(training_good[e, j], training_evil[e, j], rows, cols, train_good_r[j],
                                  train_good_c[j], train_evil_r[j], train_evil_c[j], train_shift_r[j], train_shift_c[j])
            if has_imitator:
                world[0] = derive_stream_seed(training_seeds[e, j], WORLD_STREAM, SCORED_PASS)
                train_hidden[j] = uniform_int(world, rows * cols)
                if switches.imitation:
                    train_hidden[j] = training_starts[e, j, agents - 1]
        training = TrainingSet(train_good_r, train_good_c, train_evil_r, train_evil_c,
                               training_landscapes[e], train_shift_r, train_shift_c,
                               training_starts[e], train_hidden)
        positions_out = rec_positions[e] if record else no_positions
        rewards_out = rec_rewards[e] if record else no_rewards
        if together:
            copy_into(scored_comm, talk.comm)
            if threshold > 1 or hearing != HEAR_NONE:  # rewards depend on everyone, or learners hear: all train
                for p in range(passes):
                    j = p % n_training
                    _play_pass(codes, agent_ids, table_row, training.starts[j], rules, training_paths(training, j),
                               training.hidden[j], seeds[e], p + 1, true, tables, scratch, talk, false,
                               no_positions, no_rewards, agent_totals[e], searched, moves)
            elif shared:  # the learners train together on their one table
                training_rewards(rules, training, rewards)
                _shared_training_passes(codes[learner_ids], learner_ids, training.starts[:, learner_ids], rules,
                                        training, seeds[e], passes, not refills, tables.q, tables.dirty,
                                        tables.written, tables.n_written, talk.comm, moves, rewards)
            else:  # each learner trains alone on its own table, Q-learners in rounds side by side. The loops are
                # called from here (`_train_round` is inlined), not through a compiled wrapper: numba generates a
                # callee's code again in every caller's library, and a wrapper made the install's warm-up compile
                # ~20% longer (notes/learner-speed.md)
                training_rewards(rules, training, rewards)
                first = 0
                while first < learner_ids.shape[0]:
                    stop = _round_end(codes, learner_ids, first, round_width)
                    _train_round(codes, learner_ids[first:stop], table_row, training.starts, rules, training,
                                 seeds[e], passes, tables, moves, rewards)
                    first = stop
            copy_into(talk.comm, scored_comm)  # the traffic is the scored pass's: the training passes' is dropped
            empty_log(talk.log)  # the message entropy is the scored pass's (protocols.kernel_support)
            if searchers:
                total = _search_pass(agent_ids, starts[e], rules, paths, seeds[e], scored_learning, scratch, record,
                                     positions_out, rewards_out, agent_totals[e], searched)
            else:
                total = _play_pass(codes, agent_ids, table_row, starts[e], rules, paths, hidden_start, seeds[e],
                                   scored_pass, scored_learning, tables, scratch, talk, record, positions_out,
                                   rewards_out, agent_totals[e], searched, moves)
            talk.entropy[e] = table_entropy_bits(talk.log)
            talk.distinct[e] = table_distinct(talk.log)
            if refills:  # the training passes' states, unlisted; the scored pass's are listed (and reset again)
                tables.q[:] = q_initial
            _reset_written(tables, q_initial)
        else:  # nobody affects anybody: each learner plays its whole episode alone, the rest together
            total = 0.0
            training_rewards(rules, training, rewards)
            first = 0
            while first < learner_ids.shape[0]:  # a round of learners on the blocks in turn: trained, played, reset
                stop = _round_end(codes, learner_ids, first, round_width)
                _train_round(codes, learner_ids[first:stop], table_row, training.starts, rules, training, seeds[e],
                             passes, tables, moves, rewards)
                for i in learner_ids[first:stop]:
                    one = slice(i, i + 1)
                    agent_positions = positions_out[one] if record else no_positions
                    agent_rewards = rewards_out[one] if record else no_rewards
                    total += _play_pass(codes[one], agent_ids[one], table_row[one], starts[e, one], rules, paths,
                                        hidden_start, seeds[e], scored_pass, scored_learning, tables, scratch, talk,
                                        record, agent_positions, agent_rewards, agent_totals[e], searched, moves)
                _reset_written(tables, q_initial)
                first = stop
            if others.shape[0] > 0:
                if others_search:
                    total += _search_pass(others, starts[e][others], rules, paths, seeds[e], false, scratch, record,
                                          others_positions, others_rewards, agent_totals[e], searched)
                else:
                    total += _play_pass(codes[others], others, table_row[others], starts[e][others], rules, paths,
                                        hidden_start, seeds[e], scored_pass, false, tables, scratch, talk, record,
                                        others_positions, others_rewards, agent_totals[e], searched, moves)
                if record:  # back to the agents' own rows
                    for k in range(others.shape[0]):
                        copy_into(positions_out[others[k]], others_positions[k])
                        copy_into(rewards_out[others[k]], others_rewards[k])
        mean_reward[e] = total / (agents * iterations)
    return mean_reward


@njit(cache=True, inline="always")
def _runtime_constants():
    """True, False, SCORED_PASS and -1 (no hidden oracle) as run-time values for `_play_pass`'s
    arguments: numba types a literal (True, 0, -1) as a type of its own and would compile
    `_play_pass` once per combination at its call sites (4 times for the quickstart's groups, three
    quarters of the kernel's compile time; issue 23); NumPy scalars give every call one type."""
    return np.bool_(True), np.bool_(False), np.int64(SCORED_PASS), np.int64(-1)


@njit(cache=True)
def _cells_to_coordinates(good, evil, rows, cols, good_r, good_c, evil_r, evil_c, shift_r, shift_c):
    """⊕/⊖ cell paths (T+1,) as rows and columns, and ⊕'s displacement since the start (the
    landscape's), into the given (T+1,) arrays."""
    for t in range(good.shape[0]):
        good_r[t], good_c[t] = good[t] // cols, good[t] % cols
        evil_r[t], evil_c[t] = evil[t] // cols, evil[t] % cols
        shift_r[t], shift_c[t] = (good_r[t] - good_r[0]) % rows, (good_c[t] - good_c[0]) % cols


@njit(cache=True, inline="always")
def training_paths(training, j):
    """Training episode j of a `TrainingSet` as the `EpisodePaths` a pass plays (views, no copies)."""
    return EpisodePaths(training.good_r[j], training.good_c[j], training.evil_r[j], training.evil_c[j],
                        training.landscapes[j], training.shift_r[j], training.shift_c[j])


@njit(cache=True, inline="always")
def _training_state_base(rules, scene, t, row, r, c, n_cells):
    """`_state_base` for the training loops: (cell, t) inlined, the window's signs (nine rewards) by a call,
    which keeps the loops' compile time down (the per-episode tables of window states are rare)."""
    if rules.state_encoding == WINDOW_SIGNS:
        return _window_state_base_called(scene, r, c, row)
    return _q_base(t, row, r * rules.cols + c, rules.iterations, n_cells)


@njit(cache=True)
def _window_state_base_called(scene, r, c, row):
    """`window_state_base`, compiled once as a function of its own."""
    return window_state_base(scene, r, c, row)


@njit(cache=True)
def cell_moves(rows, cols):
    """The grid's king moves by cell (`CellMoves`): where action a (row step a // 3 - 1, column step a % 3 - 1,
    wrapped, as `_play_pass` moves) takes each cell (`torus.king_moves`, flat), and each cell's row and column."""
    row, col = cell_coordinates(rows, cols)
    return CellMoves(king_moves(rows, cols).ravel(), row, col)


@njit(cache=True, inline="always")
def _prefetch_rows(q, to, cell, first):
    """Ask the processor for the Q(s, ·) rows of the nine cells one move from `cell` (`cell_moves`' `to`), the
    rows of one time step starting at offset `first` (that of cell 0): a learner's next row is one of them, and
    its read waits on the decision before it, so without this the read starts only then (each row 72 bytes,
    at most two cache lines: its first and its last value)."""
    moved = np.uint64(cell) * _U9
    for a in range(9):
        b = first + to[moved + np.uint64(a)] * 9
        prefetch(q, b)
        prefetch(q, b + 8)


@njit(cache=True)
def _start_row_maxima(q, row, iterations, n_cells, kept):
    """max_a Q((c, t = 0), a) of learner `row` for each cell c (`max_q`), which the 2016 program's Q-learning
    bootstraps from at every step (`learner_bootstrap`), when `kept`, else an empty array. The training loops
    keep it by writing an entry again, with the same `max_q`, after each write of its row (only steps at t = 0
    write those rows: nine reads once per pass instead of at every step), so every read is the value
    `max_q` returns there, to the bit (-0.0 beside 0.0 included)."""
    maxima = np.empty(n_cells if kept else 0)
    for cell in range(maxima.shape[0]):
        maxima[cell] = max_q(q, _q_base(0, row, cell, iterations, n_cells))
    return maxima


@njit(cache=True, inline="always")
def _lone_reward(scene, r, c, threshold):
    """R of the cell at (r, c) for a learner training alone: one agent never makes a quorum, so above threshold
    1 the positive part is withheld (Λ* only; `step_reward`)."""
    return step_reward(scene, r, c, threshold <= 1)


@njit(cache=True, inline="always")
def _training_scene(rules, training, landscape, j, t):
    """The scene of training episode j at iteration t (`landscape` its field's `field_ref`)."""
    return Scene(training.good_r[j, t], training.good_c[j, t], training.evil_r[j, t], training.evil_c[j, t],
                 landscape, training.shift_r[j, t], training.shift_c[j, t], rules.rows, rules.cols, rules.radius)


@njit(cache=True)
def training_rewards(rules, training, out):
    """The scaled reward a learner training alone receives on arriving at each cell at each iteration t >= 1 of
    each training episode j, into out (n, T+1, cells) at [j, t, cell] (row t = 0 unused): what
    `_lone_training_passes` computes at every step, to the bit, and what `_shared_training_passes` computes at
    threshold 1 (every step pays); every pass of every learner reads it (`simulate_batch` makes it when they are
    many enough, else out is (0, 0, 0)). In Λ* an object pays f(Chebyshev distance) = the smaller of f(row
    distance) and f(column distance), the same float (f = `proximity` does not increase and a min returns one
    of its operands; `ceiling._pay_zones` argues the same), so each iteration's rewards come from f by row and
    by column difference (`axis_proximities`, made once); landscapes and the 2016 reset field are computed cell
    by cell (`_lone_reward`)."""
    rows, cols, scale = rules.rows, rules.cols, rules.reward_scale
    paid = rules.threshold <= 1  # one agent never makes a quorum (`_lone_reward`)
    near_rows, near_cols = axis_proximities(rows, rules.radius), axis_proximities(cols, rules.radius)
    good_by_col, evil_by_col = np.empty(cols), np.empty(cols)  # an iteration's f by column, for a straight loop
    for j in range(out.shape[0]):
        landscape = field_ref(training.landscapes[j])
        for t in range(1, out.shape[1]):
            scene = _training_scene(rules, training, landscape, j, t)
            if is_landscape(scene) or is_reset(scene):
                for r in range(rows):
                    for c in range(cols):
                        out[j, t, r * cols + c] = _lone_reward(scene, r, c, rules.threshold) * scale
                continue
            for c in range(cols):  # f by axis difference (`axis_proximities`)
                good_by_col[c], evil_by_col[c] = near_cols[cols + c - scene.good_c], near_cols[cols + c - scene.evil_c]
            for r in range(rows):
                good_row, evil_row = near_rows[rows + r - scene.good_r], near_rows[rows + r - scene.evil_r]
                for c in range(cols):
                    evil = min(evil_row, evil_by_col[c])
                    reward = min(good_row, good_by_col[c]) - evil if paid else -evil
                    out[j, t, r * cols + c] = reward * scale


@njit(cache=True, inline="always")
def _lone_state_base(rules, training, landscape, j, t, row, cell, cell_row, cell_col, windows):
    """`_training_state_base` for `_lone_training_passes`, which follows the learner's cell: the scene of
    training episode j at t is built only for `windows` (window-sign states)."""
    if windows:
        return _window_state_base_called(_training_scene(rules, training, landscape, j, t), cell_row[cell],
                                         cell_col[cell], row)
    return _q_base(t, row, cell, rules.iterations, rules.rows * rules.cols)


@njit(cache=True)
def _lone_training_passes(code, agent_id, row, starts, rules, training, episode_seed, passes, q, dirty, written,
                          n_written, moves, rewards):
    """`passes` training passes of one learner (`code` Q_LEARNING or SARSA, global id `agent_id`, table row
    `row`) alone: `_play_pass`'s steps for one learning agent with a silent protocol, nothing recorded and no
    hidden oracle, the same operations in the same order, so the same tables and streams to the bit. Its own
    loop, with the agent's cell, stream, state and action in locals and every array taken once for all the
    passes (`_play_pass` takes ~40 per pass, each an atomic reference count, and walks its agents through
    arrays). Pass p plays training episode p mod n of the `TrainingSet`; starts (n,) the learner's start cell in
    each. The agent moves by the grid's `cell_moves` table (one read instead of a division and two wraps on
    the path from one step's choice to the next's), and reads its rewards from `rewards` ((n, T+1, cells),
    `training_rewards`) unless that is empty ((0, 0, 0)), then computes them."""
    iterations, threshold = rules.iterations, rules.threshold
    alpha, gamma, epsilon, reward_scale = rules.alpha, rules.gamma, rules.epsilon, rules.reward_scale
    bootstrap, per_episode = rules.learner_bootstrap, rules.table_mode == PER_EPISODE
    windows, tabled = rules.state_encoding == WINDOW_SIGNS, rewards.shape[0] > 0
    sarsa = code == SARSA
    n_cells = rules.rows * rules.cols
    to, cell_row, cell_col = moves.to, moves.row, moves.col
    n_training = training.good_r.shape[0]
    prev_state, prev_action, prev_reward = 0, 0, 0.0
    start_maxima = _start_row_maxima(q, row, iterations, n_cells, not sarsa and bootstrap and not windows)
    n = n_written[0]
    for p in range(passes):
        j = p % n_training
        landscape = field_ref(training.landscapes[j])
        cell = starts[j]
        stream = derive_stream_seed(episode_seed, agent_id + 1, p + 1)
        for t in range(iterations):
            base = _lone_state_base(rules, training, landscape, j, t, row, cell, cell_row, cell_col, windows)
            if per_episode:  # without a branch: `written` has room for one more state than the table holds
                state = np.uint64(base) // _U9
                written[n] = base
                n += not dirty[state]
                dirty[state] = True
            if not windows and t + 1 < iterations:  # the rows the next decision may read
                _prefetch_rows(q, to, cell, _q_base(t + 1, row, 0, iterations, n_cells))
            stream, action = learner_action(q, base, epsilon, stream)
            if sarsa and t > 0 and not bootstrap:
                old = prev_state + prev_action
                q[old] += alpha * (prev_reward + gamma * q[base + action] - q[old])
            left = cell
            cell = to[np.uint64(cell) * _U9 + np.uint64(action)]
            if tabled:
                scaled = rewards[j, t + 1, cell]
            else:
                scaled = _lone_reward(_training_scene(rules, training, landscape, j, t + 1), cell_row[cell],
                                      cell_col[cell], threshold) * reward_scale
            here = base + action
            if not sarsa and bootstrap and not windows:  # max Q(s' = (c', 0), ·) kept by start row
                q[here] += alpha * (scaled + gamma * start_maxima[cell] - q[here])
                if t == 0:  # it wrote a start row
                    start_maxima[left] = max_q(q, base)
            elif not sarsa and bootstrap:
                target = scaled + gamma * max_q(q, _q_base(0, row, cell, iterations, n_cells))
                q[here] += alpha * (target - q[here])
            elif sarsa and bootstrap:
                following = _q_base(t, row, cell, iterations, n_cells)
                stream, next_action = learner_action(q, following, epsilon, stream)
                q[here] += alpha * (scaled + gamma * q[following + next_action] - q[here])
            elif not sarsa:
                target = scaled
                if t + 1 < iterations:
                    following = _lone_state_base(rules, training, landscape, j, t + 1, row, cell, cell_row, cell_col,
                                                 windows)
                    target += gamma * max_q(q, following)
                q[here] += alpha * (target - q[here])
            else:
                prev_state, prev_action, prev_reward = base, action, scaled
                if t + 1 == iterations:
                    q[here] += alpha * (scaled - q[here])
    n_written[0] = n


@njit(cache=True, inline="always")
def _round_end(codes, learner_ids, first, width):
    """Where the round of learners that starts at learner_ids[first] ends: up to `width` Q-learners in a row
    train side by side (`_side_by_side_q_passes`; width 1 where it does not apply); a SARSA learner, or a
    Q-learner with no Q-learner after it, trains alone (`_lone_training_passes`: SARSA's two draws per step ran
    ~10% slower side by side)."""
    stop = first + 1
    if codes[learner_ids[first]] == Q_LEARNING:
        while stop < learner_ids.shape[0] and stop - first < width and codes[learner_ids[stop]] == Q_LEARNING:
            stop += 1
    return stop


@njit(cache=True, inline="always")
def _train_round(codes, side, table_row, starts, rules, training, episode_seed, passes, tables, moves, rewards):
    """The training passes of a round of learners (`_round_end`), each on its own table block: starts (n, agents)
    the group's start cells in each training episode."""
    if side.shape[0] == 1:
        i = side[0]
        _lone_training_passes(codes[i], i, table_row[i], starts[:, i], rules, training, episode_seed, passes,
                              tables.q, tables.dirty, tables.written, tables.n_written, moves, rewards)
    else:
        _side_by_side_q_passes(side, table_row[side], starts[:, side], rules, training, episode_seed, passes,
                               tables.q, tables.dirty, tables.written, tables.n_written, moves, rewards)


@njit(cache=True)
def _side_by_side_q_passes(agent_ids, table_rows, starts, rules, training, episode_seed, passes, q, dirty, written,
                           n_written, moves, rewards):
    """`_lone_training_passes` for several Q-learners (global ids `agent_ids`) at once, each alone on its own
    table block (`table_rows`, distinct), stepped side by side: each learner's steps are its lone loop's in the
    same order, on its own table, stream and start-row maxima, so every table and stream is the same to the bit;
    only the order in which `written` lists the states interleaves. A lone learner asks for the nine rows its
    next decision may read before it decides (`_prefetch_rows`); side by side, each asks for its next row once
    it has moved, and the others' steps run while the row comes. Cell-time states and tabled rewards only
    (`rewards`, `training_rewards`): the rest trains alone (`_round_end`). starts (n, k) their start cells in
    each training episode."""
    iterations = rules.iterations
    alpha, gamma, epsilon = rules.alpha, rules.gamma, rules.epsilon
    kept, per_episode = rules.learner_bootstrap, rules.table_mode == PER_EPISODE  # max Q((c', 0), ·) kept by row
    n_cells = rules.rows * rules.cols
    to = moves.to
    n_training = training.good_r.shape[0]
    learners = agent_ids.shape[0]
    cells, streams = np.empty(learners, np.int64), np.empty(learners, np.uint64)
    start_maxima = np.empty((learners, n_cells if kept else 0))
    for i in range(learners):
        start_maxima[i] = _start_row_maxima(q, table_rows[i], iterations, n_cells, kept)
    n = n_written[0]
    for p in range(passes):
        j = p % n_training
        for i in range(learners):
            cells[i] = starts[j, i]
            streams[i] = derive_stream_seed(episode_seed, agent_ids[i] + 1, p + 1)
        for t in range(iterations):
            for i in range(learners):
                row, cell = table_rows[i], cells[i]
                base = _q_base(t, row, cell, iterations, n_cells)
                if per_episode:  # without a branch: `written` has room for one more state than the tables hold
                    state = np.uint64(base) // _U9
                    written[n] = base
                    n += not dirty[state]
                    dirty[state] = True
                streams[i], action = learner_action(q, base, epsilon, streams[i])
                left = cell
                cell = to[np.uint64(cell) * _U9 + np.uint64(action)]
                cells[i] = cell
                following = _q_base(t + 1, row, cell, iterations, n_cells)  # its next row (t + 1 < T)
                if t + 1 < iterations:
                    prefetch(q, following)
                    prefetch(q, following + 8)
                scaled = rewards[j, t + 1, cell]
                here = base + action
                if kept:
                    q[here] += alpha * (scaled + gamma * start_maxima[i, cell] - q[here])
                    if t == 0:  # it wrote a start row
                        start_maxima[i, left] = max_q(q, base)
                else:
                    target = scaled
                    if t + 1 < iterations:
                        target += gamma * max_q(q, following)
                    q[here] += alpha * (target - q[here])
    n_written[0] = n


@njit(cache=True)
def _shared_training_passes(codes, agent_ids, starts, rules, training, episode_seed, passes, lists, q, dirty,
                            written, n_written, comm, moves, rewards):
    """`passes` training passes of the learners `codes` (global ids `agent_ids`) together on their one shared
    table (row 0, `shared_q`), counting its traffic in `comm` (which `simulate_batch` then drops, as it drops every
    training pass's: the traffic is the scored pass's): `_play_pass`'s steps for these agents, learning,
    with nothing recorded and no hidden oracle, the same operations in the same order (every agent decides,
    then every agent is paid and updates), so the same table, traffic and streams to the bit; its own loop for
    the reasons of `_lone_training_passes` (tests/test_training_loops.py compares it with `_play_pass`).
    starts (n, agents) their start cells in each training episode. The agents move by `cell_moves`, as in
    `_lone_training_passes`. At threshold 1 (every step pays) the rewards are read from `rewards` ((n, T+1, cells),
    `training_rewards`) unless that is empty ((0, 0, 0)). With `lists` False a per-episode table's written states
    are not listed (`written`, `dirty` untouched): the caller refills the whole table after the episode, cheaper
    when the passes write each state several times (`REFILL_WRITES`)."""
    rows, cols, iterations, radius, threshold = rules.rows, rules.cols, rules.iterations, rules.radius, rules.threshold
    alpha, gamma, epsilon, reward_scale = rules.alpha, rules.gamma, rules.epsilon, rules.reward_scale
    bootstrap, listing = rules.learner_bootstrap, rules.table_mode == PER_EPISODE and lists
    n_cells = rows * cols
    agents = codes.shape[0]
    tabled = rewards.shape[0] > 0 and threshold <= 1
    cell_time = rules.state_encoding != WINDOW_SIGNS
    address_bits = np.ceil(np.log2(max(2, q.shape[0])))
    good_r, good_c, evil_r, evil_c = training.good_r, training.good_c, training.evil_r, training.evil_c
    shift_r, shift_c, landscapes = training.shift_r, training.shift_c, training.landscapes
    n_training = good_r.shape[0]
    to, cell_row, cell_col = moves.to, moves.row, moves.col
    cells, pos_r, pos_c = np.empty(agents, np.int64), np.empty(agents, np.int64), np.empty(agents, np.int64)
    streams, states, actions = np.empty(agents, np.uint64), np.empty(agents, np.int64), np.empty(agents, np.int64)
    prev_states, prev_actions, prev_rewards = np.zeros(agents, np.int64), np.zeros(agents, np.int64), np.zeros(agents)
    start_maxima = _start_row_maxima(q, 0, iterations, n_cells, bootstrap and cell_time)
    bootstrapping = 0  # the Q-learners, whose updates read the next state's row
    for i in range(agents):
        bootstrapping += codes[i] != SARSA
    n = n_written[0]
    for p in range(passes):
        j = p % n_training
        landscape = field_ref(landscapes[j])
        for i in range(agents):
            cells[i] = starts[j, i]
            streams[i] = derive_stream_seed(episode_seed, agent_ids[i] + 1, p + 1)
        for t in range(iterations):
            scene = Scene(good_r[j, t], good_c[j, t], evil_r[j, t], evil_c[j, t], landscape, shift_r[j, t],
                          shift_c[j, t], rows, cols, radius)
            for i in range(agents):
                sarsa = codes[i] == SARSA
                cell = cells[i]
                if cell_time:
                    base = _q_base(t, 0, cell, iterations, n_cells)
                else:
                    base = _window_state_base_called(scene, cell_row[cell], cell_col[cell], 0)
                states[i] = base
                if listing:  # the written states, as in `_lone_training_passes`
                    state = np.uint64(base) // _U9
                    written[n] = base
                    n += not dirty[state]
                    dirty[state] = True
                streams[i], action = learner_action(q, base, epsilon, streams[i])
                actions[i] = action
                if sarsa and t > 0 and not bootstrap:
                    old = prev_states[i] + prev_actions[i]
                    q[old] += alpha * (prev_rewards[i] + gamma * q[base + action] - q[old])
                cell = to[np.uint64(cell) * _U9 + np.uint64(action)]  # every agent decided from its old cell
                cells[i] = cell
                if cell_time and t + 1 < iterations:  # the row of its next decision, read after all the updates
                    following = _q_base(t + 1, 0, cell, iterations, n_cells)
                    prefetch(q, following)
                    prefetch(q, following + 8)
            after = Scene(good_r[j, t + 1], good_c[j, t + 1], evil_r[j, t + 1], evil_c[j, t + 1], landscape,
                          shift_r[j, t + 1], shift_c[j, t + 1], rows, cols, radius)
            if threshold > 1:
                for i in range(agents):
                    pos_r[i], pos_c[i] = cell_row[cells[i]], cell_col[cells[i]]
            paid = quorum_pays(pos_r, pos_c, agents, after, threshold)
            for i in range(agents):
                cell = cells[i]
                if tabled:
                    scaled = rewards[j, t + 1, cell]
                else:
                    scaled = step_reward(after, cell_row[cell], cell_col[cell], paid) * reward_scale
                here = states[i] + actions[i]
                sarsa = codes[i] == SARSA
                if not sarsa and bootstrap and cell_time:  # as in `_lone_training_passes`
                    q[here] += alpha * (scaled + gamma * start_maxima[cell] - q[here])
                elif not sarsa and bootstrap:
                    target = scaled + gamma * max_q(q, _q_base(0, 0, cell, iterations, n_cells))
                    q[here] += alpha * (target - q[here])
                elif sarsa and bootstrap:
                    following = _q_base(t, 0, cell, iterations, n_cells)
                    streams[i], next_action = learner_action(q, following, epsilon, streams[i])
                    q[here] += alpha * (scaled + gamma * q[following + next_action] - q[here])
                elif not sarsa:
                    target = scaled
                    if t + 1 < iterations:
                        target += gamma * max_q(q, _training_state_base(rules, after, t + 1, 0, cell_row[cell],
                                                                        cell_col[cell], n_cells))
                    q[here] += alpha * (target - q[here])
                else:
                    prev_states[i], prev_actions[i], prev_rewards[i] = states[i], actions[i], scaled
                    if t + 1 == iterations:
                        q[here] += alpha * (scaled - q[here])
                if t == 0 and start_maxima.shape[0] > 0:  # it wrote a start row (row 0: its base is cell * 9)
                    start_maxima[states[i] // 9] = max_q(q, states[i])
        count_learning_accesses(comm, agents * iterations, bootstrapping * (iterations - 1), address_bits)
    n_written[0] = n


@njit(cache=True)
def _reset_written(tables, q_initial):
    """Return the states written since the last reset to Q0 (the table is reset per episode, spec §5)."""
    q, dirty, written = tables.q, tables.dirty, tables.written
    for k in range(tables.n_written[0]):
        base = np.uint64(written[k])
        for a in range(9):
            q[base + np.uint64(a)] = q_initial
        dirty[base // _U9] = False
    tables.n_written[0] = 0
