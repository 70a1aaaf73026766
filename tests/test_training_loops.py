"""The learners' fast paths against their plain twins, to the bit (issue 25).

- `kernel._lone_training_passes` (a learner's training passes when it trains by itself) against what it
  replaces: `kernel._play_pass` called once per pass for that one learner, with a silent protocol;
- `kernel._shared_training_passes` (the learners' passes on one shared table) against `_play_pass` called
  once per pass for them under `shared_q`, its traffic counts included;
- `kernel._side_by_side_q_passes` (Q-learners training alone, stepped side by side) against
  `_lone_training_passes` for each in turn;
- `decisions.greedy_action_masked` (the learners' greedy choice without a branch) against `greedy_action`
  (the scan with a running tie count, and the walk to the drawn tie).
Tables are compared as bits (-0.0 and 0.0 apart), with the written-state bookkeeping and the streams' draws.
"""
import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from collective.behaviours import Q_LEARNING, SARSA
from collective.behaviours.decisions import greedy_action, greedy_action_masked, row_ties, search_table
from collective.environments.scene import RESET_RADIUS, field_ref
from collective.protocols import AUCTION, NONE, SHARED_Q
from collective.simulation.kernel import (CELL_TIME, PER_EPISODE, PRETRAINED, SIDE_BY_SIDE_BYTES, WINDOW_SIGNS, Rules,
                                          Scratch, TrainingSet, table_blocks, table_states,
                                          _cells_to_coordinates, _lone_training_passes, _play_pass, _shared_training_passes,
                                          _lone_reward, _side_by_side_q_passes, _training_scene,
                                          cell_moves, learner_workspace, training_rewards,
                                          talk_workspace, training_paths)

ROWS, COLS, T = 6, 5, 12
AGENTS, LEARNER = 3, 1  # the learner is agent 1 of 3: its stream and table row are its own
PASSES = 9


def _training_set(rng, n_training, landscape):
    """n_training random episodes: ⊕/⊖ random walks (king moves, wrapped), random starts; a random field."""
    steps = T + 1
    arrays = [np.zeros((n_training, steps), np.int64) for _ in range(6)]
    for j in range(n_training):
        paths = []
        for _ in range(2):
            r, c = rng.integers(ROWS), rng.integers(COLS)
            cells = []
            for _ in range(steps):
                cells.append(r * COLS + c)
                r, c = (r + rng.integers(-1, 2)) % ROWS, (c + rng.integers(-1, 2)) % COLS
            paths.append(np.array(cells, np.int64))
        _cells_to_coordinates(paths[0], paths[1], ROWS, COLS, *(array[j] for array in arrays))
    good_r, good_c, evil_r, evil_c, shift_r, shift_c = arrays
    cells = ROWS * COLS if landscape else 0
    landscapes = np.round(rng.normal(0.0, 1.0, (n_training, cells)), 1)  # rounded: ties between cells
    starts = rng.integers(0, ROWS * COLS, (n_training, AGENTS))
    return TrainingSet(good_r, good_c, evil_r, evil_c, landscapes, shift_r, shift_c, starts,
                       np.full(n_training, -1, np.int64))


def _tables(code, rng, state_encoding):
    """A learner table with values from a small set (ties everywhere, -0.0 beside 0.0)."""
    codes = np.array([code] * AGENTS, np.int64)
    tables = learner_workspace(codes, ROWS, COLS, T, PASSES, 2.0, AGENTS, state_encoding)  # a block each
    tables.q[:] = rng.choice(np.array([2.0, 1.5, 0.0, -0.0, -1.0]), tables.q.shape[0])
    return codes, tables


def _copy(tables):
    return type(tables)(*(array.copy() for array in tables))


def _by_play_pass(code, codes, tables, training, rules, seed):
    """The twin: `_play_pass` for the learner alone, once per pass, as the kernel played it before."""
    one = slice(LEARNER, LEARNER + 1)
    scratch = Scratch(*(np.zeros(1, np.int64) for _ in range(4)), np.zeros(2, np.int64),
                      np.empty(max(9, ROWS * COLS), np.int64), *(np.zeros(1, np.int64) for _ in range(4)),
                      np.zeros(1, np.float64), np.empty((1, 1), np.uint64))
    talk = talk_workspace(NONE, (0.0,) * 4, np.zeros(1, bool), 1, ROWS, COLS, 1, T, 1)
    n = training.good_r.shape[0]
    for p in range(PASSES):
        _play_pass(codes[one], np.arange(AGENTS)[one], np.arange(AGENTS)[one], training.starts[p % n][one], rules,
                   training_paths(training, p % n), -1, seed, p + 1, True, tables, scratch, talk, False,
                   np.zeros((0, 0), np.int32), np.zeros((0, 0)), np.zeros(0), search_table(ROWS, COLS, rules.radius),
                   cell_moves(ROWS, COLS))


def _bits(array):
    return array.view(np.uint64) if array.dtype == np.float64 else array


@pytest.mark.parametrize("tabled", [False, True])  # rewards computed at each step, or read from `training_rewards`
@pytest.mark.parametrize("code", [Q_LEARNING, SARSA])
@pytest.mark.parametrize("bootstrap, epsilon, threshold, n_training, landscape, state_encoding", [
    (0, 0.0, 1, 1, False, CELL_TIME),  # paper
    (1, 0.0, 1, 1, False, CELL_TIME),  # lambdastar2016
    (0, 0.2, 1, 3, False, CELL_TIME),  # held-out episodes, ε-greedy
    (1, 0.3, 1, 2, True, CELL_TIME),  # a landscape
    (0, 0.1, 1, 2, False, WINDOW_SIGNS),  # window states
    (0, 0.0, 2, 1, False, CELL_TIME),  # a quorum one agent never makes
])
def test_lone_training_passes_are_play_pass_passes(code, bootstrap, epsilon, threshold, n_training, landscape,
                                                   state_encoding, tabled):
    rng = np.random.default_rng([code, bootstrap, n_training, state_encoding, threshold])
    training = _training_set(rng, n_training, landscape)
    codes, tables = _tables(code, rng, state_encoding)
    rules = Rules(ROWS, COLS, T, 1, 1, threshold, 0.3, 0.7, epsilon, 10.0, 0, 0, bootstrap, 0, state_encoding,
                  PER_EPISODE)
    seed = np.uint64(rng.integers(2**63))
    fast, twin = _copy(tables), _copy(tables)
    rewards = np.empty((n_training, T + 1, ROWS * COLS) if tabled else (0, 0, 0))
    training_rewards(rules, training, rewards)
    _lone_training_passes(code, LEARNER, LEARNER, training.starts[:, LEARNER], rules, training, seed, PASSES,
                          fast.q, fast.dirty, fast.written, fast.n_written, cell_moves(ROWS, COLS), rewards)
    _by_play_pass(code, codes, twin, training, rules, seed)
    written = int(twin.n_written[0])
    assert written > 9  # the passes wrote states
    assert np.array_equal(_bits(fast.q), _bits(twin.q))
    assert not np.array_equal(_bits(fast.q), _bits(tables.q))  # they learned
    assert fast.n_written[0] == written
    assert np.array_equal(fast.written[:written], twin.written[:written])
    assert np.array_equal(fast.dirty, twin.dirty)


@pytest.mark.parametrize("bootstrap, epsilon, threshold, n_training, landscape", [  # cell-time states, tabled rewards
    (0, 0.0, 1, 1, False),  # paper
    (1, 0.0, 1, 1, False),  # lambdastar2016
    (0, 0.2, 1, 3, False),  # held-out episodes, ε-greedy
    (1, 0.3, 1, 2, True),  # a landscape
    (0, 0.0, 2, 1, False),  # a quorum one agent never makes
])
def test_side_by_side_q_passes_are_lone_passes(bootstrap, epsilon, threshold, n_training, landscape):
    rng = np.random.default_rng([7, bootstrap, n_training, threshold])
    training = _training_set(rng, n_training, landscape)
    _, tables = _tables(Q_LEARNING, rng, CELL_TIME)
    rules = Rules(ROWS, COLS, T, 1, 1, threshold, 0.3, 0.7, epsilon, 10.0, 0, 0, bootstrap, 0, CELL_TIME, PER_EPISODE)
    seed = np.uint64(rng.integers(2**63))
    rewards = np.empty((n_training, T + 1, ROWS * COLS))
    training_rewards(rules, training, rewards)
    ids, blocks = np.arange(AGENTS), np.array([2, 0, 1])  # learner i on block blocks[i]
    fast, twin = _copy(tables), _copy(tables)
    _side_by_side_q_passes(ids, blocks, training.starts, rules, training, seed, PASSES, fast.q, fast.dirty,
                           fast.written, fast.n_written, cell_moves(ROWS, COLS), rewards)
    for i in ids:
        _lone_training_passes(Q_LEARNING, i, blocks[i], training.starts[:, i], rules, training, seed, PASSES, twin.q,
                              twin.dirty, twin.written, twin.n_written, cell_moves(ROWS, COLS), rewards)
    written = int(twin.n_written[0])
    assert written > 3 * 9  # each learner wrote states
    assert np.array_equal(_bits(fast.q), _bits(twin.q))
    for block in range(AGENTS):  # every block learned
        rows = slice(block * ROWS * COLS * T * 9, (block + 1) * ROWS * COLS * T * 9)
        assert not np.array_equal(_bits(fast.q[rows]), _bits(tables.q[rows]))
    assert fast.n_written[0] == written
    assert np.array_equal(np.sort(fast.written[:written]), np.sort(twin.written[:written]))  # the same states
    assert np.array_equal(fast.dirty, twin.dirty)


@pytest.mark.parametrize("lists", [True, False])  # written states listed, or left to a whole refill
@pytest.mark.parametrize("tabled", [False, True])  # rewards computed at each step, or read from `training_rewards`
@pytest.mark.parametrize("codes", [(Q_LEARNING,) * 3, (SARSA,) * 3, (SARSA, Q_LEARNING, SARSA)])
@pytest.mark.parametrize("bootstrap, epsilon, threshold, n_training, landscape, state_encoding", [
    (0, 0.0, 1, 1, False, CELL_TIME),
    (1, 0.0, 1, 2, False, CELL_TIME),
    (0, 0.2, 1, 3, True, CELL_TIME),
    (1, 0.1, 1, 1, False, WINDOW_SIGNS),
    (0, 0.0, 2, 2, False, CELL_TIME),  # a quorum of two
])
def test_shared_training_passes_are_play_pass_passes(codes, bootstrap, epsilon, threshold, n_training, landscape,
                                                     state_encoding, tabled, lists):
    rng = np.random.default_rng([*codes, bootstrap, n_training, state_encoding, threshold])
    training = _training_set(rng, n_training, landscape)
    codes = np.array(codes, np.int64)
    tables = learner_workspace(codes, ROWS, COLS, T, PASSES, 2.0, 1, state_encoding)  # one block
    tables.q[:] = rng.choice(np.array([2.0, 1.5, 0.0, -0.0, -1.0]), tables.q.shape[0])
    rules = Rules(ROWS, COLS, T, 1, 1, threshold, 0.3, 0.7, epsilon, 10.0, 0, 0, bootstrap, 0, state_encoding,
                  PER_EPISODE)
    seed = np.uint64(rng.integers(2**63))
    ids = np.arange(AGENTS)
    fast, twin = _copy(tables), _copy(tables)
    fast_talk, talk = (talk_workspace(SHARED_Q, (0.0,) * 4, np.ones(AGENTS, bool), AGENTS, ROWS, COLS, 1, T, 1)
                       for _ in range(2))
    rewards = np.empty((n_training, T + 1, ROWS * COLS) if tabled else (0, 0, 0))
    training_rewards(rules, training, rewards)
    _shared_training_passes(codes, ids, training.starts, rules, training, seed, PASSES, lists, fast.q, fast.dirty,
                            fast.written, fast.n_written, fast_talk.comm, cell_moves(ROWS, COLS), rewards)
    scratch = Scratch(*(np.zeros(AGENTS, np.int64) for _ in range(4)), np.zeros(AGENTS + 1, np.int64),
                      np.empty(max(9, ROWS * COLS), np.int64), *(np.zeros(AGENTS, np.int64) for _ in range(4)),
                      np.zeros(AGENTS, np.float64), np.empty((AGENTS, 1), np.uint64))
    for p in range(PASSES):
        j = p % n_training
        _play_pass(codes, ids, np.zeros(AGENTS, np.int64), training.starts[j], rules, training_paths(training, j), -1,
                   seed, p + 1, True, twin, scratch, talk, False, np.zeros((0, 0), np.int32), np.zeros((0, 0)),
                   np.zeros(0), search_table(ROWS, COLS, rules.radius), cell_moves(ROWS, COLS))
    written = int(twin.n_written[0])
    assert written > 9 and talk.comm.sum() > 0
    assert np.array_equal(_bits(fast.q), _bits(twin.q))
    assert not np.array_equal(_bits(fast.q), _bits(tables.q))
    if lists:
        assert fast.n_written[0] == written
        assert np.array_equal(fast.written[:written], twin.written[:written])
        assert np.array_equal(fast.dirty, twin.dirty)
    else:  # nothing listed: the caller refills the table
        assert fast.n_written[0] == 0 and not fast.dirty.any()
    assert np.array_equal(_bits(fast_talk.comm), _bits(talk.comm))


@njit
def _both_greedy(table, states):
    """(state', action) of both greedy choices for each row of nine values in `table` (flat, so that the
    masked choice reads its rows in place as the learners' table) and each stream state."""
    out = np.empty((states.shape[0], 4), np.uint64)
    for k in range(states.shape[0]):
        v = table[9 * k:9 * k + 9]
        row = (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8])
        state, action = greedy_action(row, states[k])
        out[k, 0], out[k, 1] = state, action
        state, action = greedy_action_masked(table, 9 * k, states[k])
        out[k, 2], out[k, 3] = state, action
    return out


def test_masked_greedy_action_is_greedy_action():
    """Rows from small value sets (one to nine ties, -0.0 tying with 0.0, all equal, infinities), from wide
    ones (no ties) and the C++ profile's table values, each at every offset of a vector load (rows of nine
    values in a flat table); random stream states."""
    rng = np.random.default_rng(25)
    rows = [rng.choice(np.array(pool), (4000, 9)) for pool in
            ([0.0, -0.0], [2.0, 1.0], [2.0, 1.0, 0.5, -0.0, 0.0], [-3.0, -3.0, -1.0], [5.0], [np.inf, 1.0],
             [-np.inf, -1.0], [-np.inf])]
    rows.append(rng.normal(0.0, 1.0, (4000, 9)))
    rows.append(np.round(rng.normal(2.0, 1.0, (4000, 9)), 1))
    values = np.concatenate(rows)
    states = rng.integers(0, 2**64 - 1, values.shape[0], dtype=np.uint64)
    out = _both_greedy(values.ravel(), states)
    assert np.array_equal(out[:, :2], out[:, 2:])
    assert len(np.unique(out[:, 1])) == 9  # every action was drawn
    for best in range(9):  # the best value alone at each position, the ninth included
        row = np.zeros((1, 9))
        row[0, best] = 1.0
        assert _both_greedy(row.ravel(), states[:1])[0, 3] == best


@njit
def _row_ties(table, base):
    return row_ties(table, base)


@pytest.mark.parametrize("table", [np.zeros(36)[::2], np.zeros(18, np.float32), np.zeros((2, 9))],
                         ids=["strided", "float32", "2-d"])
def test_row_ties_refuses_tables_its_vector_load_would_misread(table):
    """`row_ties` reads nine contiguous float64 values without a check: any other table is a typing error."""
    assert _row_ties(np.arange(18.0), 9) == (1 << 8, 1)
    with pytest.raises(TypingError):
        _row_ties(table, 0)


@pytest.mark.parametrize("state_encoding", [CELL_TIME, WINDOW_SIGNS])
@pytest.mark.parametrize("rows, cols, iterations", [(3, 3, 10), (10, 10, 200), (10, 10, 300), (20, 20, 200),
                                                    (80, 80, 1000)])
def test_learners_alone_take_blocks_within_a_rounds_budget(state_encoding, rows, cols, iterations):
    """Learners that train and play alone reuse a few table blocks (`table_blocks`): never more than the learners,
    and never more table than one block or SIDE_BY_SIDE_BYTES, however large a table is (an 80x80, T = 1000
    table is 467 MB); tables of their own and a shared table keep one block per learner and one."""
    block_bytes = table_states(state_encoding, rows, cols, iterations) * 9 * 8
    for learners in (1, 2, 10):
        blocks = table_blocks(learners, 1, NONE, PER_EPISODE, state_encoding, rows, cols, iterations)
        assert 1 <= blocks <= learners
        assert blocks == 1 or blocks * block_bytes <= SIDE_BY_SIDE_BYTES
        assert table_blocks(learners, 1, SHARED_Q, PER_EPISODE, state_encoding, rows, cols, iterations) == 1
        assert table_blocks(learners, 1, AUCTION, PER_EPISODE, state_encoding, rows, cols, iterations) == learners
        assert table_blocks(learners, 1, NONE, PRETRAINED, state_encoding, rows, cols, iterations) == learners
    if state_encoding == CELL_TIME and 3 * block_bytes <= SIDE_BY_SIDE_BYTES:  # room for a round of three
        assert table_blocks(10, 1, NONE, PER_EPISODE, state_encoding, rows, cols, iterations) == 3


@njit(cache=True)
def _rewards_at_each_step(rules, training, out):
    """The twin of `training_rewards`: each cell's reward as the training loops compute it at the step."""
    for j in range(out.shape[0]):
        landscape = field_ref(training.landscapes[j])
        for t in range(1, out.shape[1]):
            scene = _training_scene(rules, training, landscape, j, t)
            for r in range(rules.rows):
                for c in range(rules.cols):
                    out[j, t, r * rules.cols + c] = _lone_reward(scene, r, c, rules.threshold) * rules.reward_scale


@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 7), (6, 5), (10, 10), (4, 9)])
@pytest.mark.parametrize("radius", [RESET_RADIUS, 0, 1, 2, 5])
@pytest.mark.parametrize("threshold, landscape", [(1, False), (2, False), (1, True)])
def test_training_rewards_are_the_rewards_computed_at_each_step(rows, cols, radius, threshold, landscape):
    """The tabled rewards (⊕'s and ⊖'s f by row and by column distance) against the reward computed cell by
    cell, as bits: radii that cover the ring, a quorum one agent never makes, the 2016 reset field, landscapes."""
    rng = np.random.default_rng([rows, cols, radius + 1, threshold, landscape])
    n, steps = 2, T + 1
    arrays = [np.zeros((n, steps), np.int64) for _ in range(6)]
    for j in range(n):
        good, evil = (rng.integers(0, rows * cols, steps) for _ in range(2))
        _cells_to_coordinates(good, evil, rows, cols, *(array[j] for array in arrays))
    fields = np.round(rng.normal(0.0, 1.0, (n, rows * cols if landscape else 0)), 1)
    training = TrainingSet(*arrays[:4], fields, *arrays[4:], np.zeros((n, 1), np.int64), np.full(n, -1, np.int64))
    rules = Rules(rows, cols, T, 1, radius, threshold, 0.3, 0.7, 0.0, 10.0, 0, 0, 0, 0, CELL_TIME, PER_EPISODE)
    tabled, computed = np.zeros((n, steps, rows * cols)), np.zeros((n, steps, rows * cols))
    training_rewards(rules, training, tabled)
    _rewards_at_each_step(rules, training, computed)
    assert np.array_equal(_bits(tabled[:, 1:]), _bits(computed[:, 1:]))
    if rows * cols > 1 and radius != RESET_RADIUS:  # (on one cell ⊕ and ⊖ always meet)
        assert np.any(computed[:, 1:] != 0.0)
