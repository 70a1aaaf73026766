"""The local searchers' scored pass (`kernel._search_pass`) against the general loop it replaces for them,
`kernel._play_pass` with a silent protocol and every window computed (no `SearchTable`), to the bit (issue 25):
the pass's summed reward, each agent's total, the recorded cells and rewards, the final cells and the streams'
states, on grids from 3x3 to 12x12,
views 1-3 (every one the grid admits, `config`), radii 0-3, Λ* and landscapes, the 2016 reset of the first
observation (in a pass that learns or not), coordination thresholds 1-3, groups of 1, 3 and 10, and a
mixed group's searchers (global ids and totals of a subset).
"""
import numpy as np
import pytest
from numba import njit

from collective.behaviours import LOCAL_SEARCH, ORACLE, Q_LEARNING
from collective.behaviours.decisions import (inline_local_best, search_table, searched_best, tabled_local_best,
                                             untabled)
from collective.environments.scene import Scene, field_ref
from collective.environments.torus import wrap
from collective.protocols import AUCTION, NONE, SHARED_Q
from collective.simulation.kernel import (EpisodePaths, Rules, Scratch, _cells_to_coordinates, _play_pass,
                                          _search_pass, cell_moves, learner_workspace, searchers_only, step_reward,
                                          talk_workspace)

T = 15


def _paths(rng, rows, cols, landscape):
    """⊕/⊖ random walks (king moves, wrapped), sometimes standing still; a random field rounded to one
    decimal (ties between cells) for a landscape, else (0,)."""
    cells = []
    for _ in range(2):
        r, c = rng.integers(rows), rng.integers(cols)
        path = []
        for _ in range(T + 1):
            path.append(r * cols + c)
            r, c = (r + rng.integers(-1, 2)) % rows, (c + rng.integers(-1, 2)) % cols
        cells.append(np.array(path, np.int64))
    arrays = [np.empty(T + 1, np.int64) for _ in range(6)]
    _cells_to_coordinates(cells[0], cells[1], rows, cols, *arrays)
    good_r, good_c, evil_r, evil_c, shift_r, shift_c = arrays
    field = np.round(rng.normal(0.0, 1.0, rows * cols if landscape else 0), 1)
    return EpisodePaths(good_r, good_c, evil_r, evil_c, field, shift_r, shift_c)


def _scratch(agents, view, rows, cols):
    side = 2 * view + 1
    return Scratch(*(np.zeros(agents, np.int64) for _ in range(4)), np.zeros(agents + 1, np.int64),
                   np.empty(max(side * side, rows * cols), np.int64), *(np.zeros(agents, np.int64) for _ in range(4)),
                   np.zeros(agents, np.float64), np.zeros((agents, 1), np.uint64))


def _play(fast, rules, paths, seed, ids, starts, group, learning, record, totals):
    """One scored pass of the searchers `ids` of a group of `group` agents, by `_search_pass` (fast) or by
    `_play_pass`: (total, records, totals, scratch)."""
    agents = ids.shape[0]
    scratch = _scratch(agents, rules.view_range, rules.rows, rules.cols)
    positions = np.full((agents if record else 0, T + 1), -7, np.int32)
    rewards = np.full((agents if record else 0, T), np.nan)
    agent_totals = np.zeros(group if totals else 0)
    if fast:
        total = _search_pass(ids, starts, rules, paths, seed, learning, scratch, record, positions, rewards,
                             agent_totals, search_table(rules.rows, rules.cols, rules.radius))
    else:
        codes = np.full(agents, LOCAL_SEARCH, np.int64)
        tables = learner_workspace(codes, rules.rows, rules.cols, T, 0, 0.0, 1)
        talk = talk_workspace(NONE, (0.0,) * 4, np.zeros(agents, bool), agents, rules.rows, rules.cols,
                              rules.view_range, T, 1)
        total = _play_pass(codes, ids, np.full(agents, -1, np.int64), starts, rules, paths, np.int64(-1), seed,
                           np.int64(0), learning, tables, scratch, talk, record, positions, rewards, agent_totals,
                           UNTABLED, cell_moves(rules.rows, rules.cols))  # every window computed: the tables' twin
    return total, positions, rewards, agent_totals, scratch


def _bits(array):
    return np.asarray(array).view(np.uint64) if np.asarray(array).dtype == np.float64 else np.asarray(array)


UNTABLED = untabled()
GRIDS = [(3, 3), (3, 12), (5, 7), (7, 7), (8, 9), (10, 10), (12, 5)]


@pytest.mark.parametrize("rows, cols, view", [(rows, cols, view) for rows, cols in GRIDS
                                               for view in (1, 2, 3) if 2 * view < min(rows, cols)])
def test_search_pass_is_play_pass(rows, cols, view):
    rng = np.random.default_rng([rows, cols, view])
    compared = 0
    for radius in range(4):
        for landscape, reset, learning in ((False, 0, False), (True, 0, False), (False, 1, False),
                                           (False, 1, True)):
            for threshold in (1, 2, 3):
                for group, subset in ((1, False), (3, False), (10, False), (10, True)):
                    ids = np.sort(rng.choice(group, 6, replace=False)) if subset else np.arange(group)
                    starts = rng.integers(0, rows * cols, ids.shape[0])
                    record, totals = bool(rng.integers(2)), subset or bool(rng.integers(2))
                    rules = Rules(rows, cols, T, view, radius, threshold, 0.3, 0.3, 0.0, 1.0, reset, 0, 0, 0)
                    paths = _paths(rng, rows, cols, landscape)
                    seed = np.uint64(rng.integers(2**63))
                    fast = _play(True, rules, paths, seed, ids, starts, group, learning, record, totals)
                    twin = _play(False, rules, paths, seed, ids, starts, group, learning, record, totals)
                    assert _bits(fast[0]) == _bits(twin[0])
                    for fast_array, twin_array in zip(fast[1:4], twin[1:4]):
                        assert np.array_equal(_bits(fast_array), _bits(twin_array))
                    for name in ("pos_r", "pos_c", "streams"):
                        assert np.array_equal(getattr(fast[4], name), getattr(twin[4], name))
                    compared += 1
    assert compared == 4 * 4 * 3 * 4


@njit
def _table_mismatches(rows, cols, radius, agents_r, agents_c, state):
    """Over every ⊕ and ⊖ cell and the agents' cells given: how often the `search_table` choice (state', action;
    and with the chosen cell's reward, `searched_best`) differs from `inline_local_best`'s, and its reward parts
    from `step_reward`'s, paid or not."""
    table = search_table(rows, cols, radius)
    no_field = field_ref(np.empty(0))
    wrong = 0
    for k in range(agents_r.shape[0]):
        r, c = agents_r[k], agents_c[k]
        for good in range(rows * cols):
            for evil in range(rows * cols):
                scene = Scene(good // cols, good % cols, evil // cols, evil % cols, no_field, 0, 0, rows, cols, radius)
                state += np.uint64(0x9E3779B97F4A7C15)
                slow_state, dr, dc, reward = inline_local_best(r, c, scene, 1, state)
                fast_state, action = tabled_local_best(r, c, good // cols, good % cols, evil // cols, evil % cols,
                                                       rows, cols, table.reach, table.keys, table.ties, table.best,
                                                       state)
                wrong += slow_state != fast_state or dr != action // 3 - 1 or dc != action % 3 - 1
                wrong += searched_best(r, c, scene, 1, state, table.reach, table.keys, table.ties, table.best,
                                       table.parts) != (slow_state, dr, dc, reward)
                lost = table.pays[wrap(evil // cols - r, rows) * cols + wrap(evil % cols - c, cols)]
                gained = table.pays[wrap(good // cols - r, rows) * cols + wrap(good % cols - c, cols)]
                wrong += step_reward(scene, r, c, True) != gained - lost or step_reward(scene, r, c, False) != -lost
    return wrong


@pytest.mark.parametrize("rows, cols", [(3, 3), (4, 7), (10, 10)])
@pytest.mark.parametrize("radius", [0, 1, 2, 3])
def test_the_search_table_chooses_as_the_searcher_does(rows, cols, radius):
    """Every placement of ⊕ and ⊖ around searchers at a corner, an edge and inside: the tabled choice is the
    computed one (state and action) and the tabled reward the computed one, to the bit. A table one offset
    short of the reach (view + radius) fails here (checked)."""
    agents_r, agents_c = np.array([0, 0, rows // 2, rows - 1]), np.array([0, cols // 2, cols // 2, cols - 1])
    assert _table_mismatches(rows, cols, radius, agents_r, agents_c, np.uint64(rows * 1000 + cols * 10 + radius)) == 0


def test_searchers_only_takes_silent_searcher_groups():
    searchers = np.full(4, LOCAL_SEARCH, np.int64)
    assert searchers_only(searchers, NONE) and searchers_only(searchers, SHARED_Q)
    assert not searchers_only(searchers, AUCTION)  # a rule may set targets, ask for choices
    assert not searchers_only(np.array([LOCAL_SEARCH, ORACLE]), NONE)
    assert not searchers_only(np.array([Q_LEARNING]), NONE)
    assert not searchers_only(np.empty(0, np.int64), NONE)
