"""The 2016 C++ program's behaviours (issue 13; collective.config.CPP_SWITCHES): one hand-built
scenario per switch pins its exact semantics, read off LambdaStar's main.cpp and src/, against
the same scenario with the switch off. Cells (row, col) -> row*cols + col; the C++ numbers them
from 1, so its cell 1 is cell 0 here."""
import numpy as np
import pytest

from collective.config import CPP_SWITCHES, PROFILES, ConfigError, EvaluationConfig
from collective.behaviours.decisions import search_table
from collective.environments.lambda_star import EnvironmentBatch
from collective.environments.scene import FieldRef, reset_scene, scene_reward
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
from collective.simulation.kernel import (EpisodePaths, Rules, Scratch, _play_pass, cell_moves, learner_workspace,
                                          talk_workspace)
from collective.simulation.random_streams import SplitMix64
from collective.simulation.reference import ReferenceWorld
from collective.protocols import NONE

COLS = 7


def cell(r, c, cols=COLS):
    return r * cols + c


def rc(position, cols=COLS):
    return divmod(int(position), cols)


def scenario(behaviour, starts, good, evil=cell(6, 6), iterations=1, seeds=range(40), rows=7, cols=COLS,
             first_episode=False, **settings):
    """Play `len(seeds)` copies of one hand-built episode (⊕ path `good`, ⊖ path or cell `evil`,
    agents at `starts`) differing only in the agents' random streams; episode indices start at 0
    when `first_episode`, else at 1 (the evaluation's episode 0 is special under cpp_imitation)."""
    config = EvaluationConfig.from_profile("paper", behaviour=behaviour, group_size=len(starts), rows=rows,
                                           cols=cols, iterations=iterations, **settings)
    n = len(seeds)

    def path(p):
        return np.tile(np.array(p if isinstance(p, list) else [p] * (iterations + 1), np.int32), (n, 1))
    env = EnvironmentBatch(path(good), path(evil), np.tile(np.array(starts, np.int32), (n, 1)),
                           np.array(list(seeds), np.uint64), np.ones(n, np.int32), np.ones(n),
                           episode_index=np.arange(n) + (0 if first_episode else 1))
    return play(config, env, record=True)


def test_profiles_set_every_switch():
    """All on in lambdastar2016; off (the dataclass default, today's behaviour) in paper and sound."""
    for name in CPP_SWITCHES:
        assert PROFILES["lambdastar2016"][name] is True
        assert getattr(EvaluationConfig.from_profile("paper"), name) is False
        assert getattr(EvaluationConfig.from_profile("sound"), name) is False
        assert EvaluationConfig.from_profile("lambdastar2016").as_record()[name] is True
    with pytest.raises(ConfigError, match="cpp_oracle: must be true or false"):
        EvaluationConfig(cpp_oracle="yes")


# ---- 1. the first scored observation sees the reset field ----

def test_reset_field_is_minus_half_on_cell_zero():
    """Environment::updateCellRewards(1, 1): +0.5 then -0.5 on cell 1, +0.5 and -0.5 over the
    shared neighbourhood: -0.5 on the C++'s cell 1 (our 0), 0 elsewhere."""
    scene = reset_scene(FieldRef(0, 0), 5, 6)
    values = np.array([[scene_reward(scene, r, c) for c in range(6)] for r in range(5)])
    expected = np.zeros((5, 6))
    expected[0, 0] = -0.5
    assert np.array_equal(values, expected)


def test_first_observation_sees_the_reset_field_then_the_real_one():
    """A searcher at (0,1) next to ⊕ at (1,2): with the real field it always steps onto ⊕. Seeing
    the reset field, it picks uniformly among its window's 0 cells, never (0,0) (-0.5). Its reward
    is still the real one, and from the second iteration on it decides on the real field."""
    world = ReferenceWorld(7, 7, 2)
    good, evil = cell(1, 2), cell(4, 5)
    real = scenario("local_search", [cell(0, 1)], good, evil, iterations=2)
    assert all(int(p) == good for p in real.positions[:, 1, 0])
    reset = scenario("local_search", [cell(0, 1)], good, evil, iterations=2, cpp_first_observation=True)
    first = {int(p) for p in reset.positions[:, 1, 0]}
    assert cell(0, 0) not in first and len(first) > 3
    pays = world.payoffs([good] * 3, [evil] * 3, 1)
    for e in range(len(reset.positions)):
        here = int(reset.positions[e, 1, 0])
        assert reset.rewards[e, 0, 0] == pays(here)  # paid from the real field
        observed = [(pays(c), c) for c, _, _ in world.window(here)]
        best = max(v for v, _ in observed)
        assert int(reset.positions[e, 2, 0]) in {world.step_toward(here, c) for v, c in observed if v == best}


# ---- 2. the auction: `>=`, the later agent wins ties, the best bid kept for the episode ----

def auction(starts, good, evil, iterations=1, cpp=True, **kwargs):
    return scenario("local_search", starts, good, evil, iterations=iterations, protocol="auction",
                    protocol_params=(("sticky", "true"),), cpp_auction=cpp, **kwargs)


def test_auction_ties_go_to_the_later_bidder():
    """A at (0,0) and B at (2,2) both see only zeros (⊕ and ⊖ far away) and bid 0. Strictly (`>`),
    A, the first, wins and everyone heads for A's random pick; in the C++ (`>=`) B bids after A and
    wins: the target is B's local-search step, a cell of B's window, so A steps toward it, always
    onto (1,1)."""
    far_good, far_evil = cell(4, 5), cell(5, 4)
    cpp = auction([cell(0, 0), cell(2, 2)], far_good, far_evil)
    assert all(int(p) == cell(1, 1) for p in cpp.positions[:, 1, 0])
    b_window = {c for c, _, _ in ReferenceWorld(7, 7, 1).window(cell(2, 2))}
    assert {int(p) for p in cpp.positions[:, 1, 1]} <= b_window
    strict = auction([cell(0, 0), cell(2, 2)], far_good, far_evil, cpp=False)
    assert len({int(p) for p in strict.positions[:, 1, 0]}) > 2  # A heads for its own random pick


def test_auction_keeps_the_best_bid_for_the_episode_only():
    """t=0: A at (3,2) bids 1 for ⊕'s cell (3,3); t=1: ⊕ has jumped out of sight, every bid is 0 <
    1 and the target stays (3,3). Each episode starts again from -1: in a second episode where
    nobody sees ⊕, a bid of 0 sets the target."""
    path = [cell(3, 3), cell(6, 0), cell(6, 0)]
    run = auction([cell(3, 2), cell(0, 6)], path, cell(0, 0), iterations=2)
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 2, 0])
    assert all(int(p) == cell(2, 4) for p in run.positions[:, 2, 1])
    blind = auction([cell(0, 0), cell(2, 2)], cell(4, 5), cell(5, 4), seeds=range(40, 80))
    assert all(int(p) == cell(1, 1) for p in blind.positions[:, 1, 0])  # not a stale (3,3)


# ---- 3. imitation: the hidden oracle steps before each imitator, from the last agent's start ----

IMITATORS = [cell(3, 4), cell(3, 2)]  # A, B
STILL_GOOD, FAR_EVIL = cell(3, 5), cell(0, 0)


def test_hidden_oracle_steps_before_each_imitator_from_the_last_start():
    """Imitators A at (3,4) and B at (3,2); ⊕ still at (3,5), ⊖ far. The hidden oracle starts on B's
    (the last agent's) cell, steps to (3,3) before A acts: A sees it next to it and follows, always
    onto (3,3) (not onto ⊕, which it also sees); it steps again to (3,4) before B acts, two cells
    from B, who searches instead (a blind window: its pick is random). With one step after everyone
    acted (switch off) the oracle starts on a random cell, and A mostly steps onto ⊕."""
    run = scenario("imitation", IMITATORS, STILL_GOOD, FAR_EVIL, cpp_imitation=True)
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 1, 0])
    assert len({int(p) for p in run.positions[:, 1, 1]}) > 2
    drawn = scenario("imitation", IMITATORS, STILL_GOOD, FAR_EVIL)
    assert not all(int(p) == cell(3, 3) for p in drawn.positions[:, 1, 0])


def test_episode_zero_keeps_a_random_hidden_start():
    """main.cpp places the hidden oracle on a random cell (the world stream's draw) before the first
    episode only: in the evaluation's episode 0, A follows it only if its first step lands next to A."""
    world = ReferenceWorld(7, 7, 1)
    run = scenario("imitation", IMITATORS, STILL_GOOD, FAR_EVIL, cpp_imitation=True, first_episode=True)
    hidden = SplitMix64.for_stream(0, stream_id=0, pass_index=0).uniform_int(49)
    oracle = world.step_toward(hidden, STILL_GOOD)
    expected = world.step_toward(IMITATORS[0], oracle) if world.distance(oracle, IMITATORS[0]) <= 1 else STILL_GOOD
    assert int(run.positions[0, 1, 0]) == expected
    assert all(int(p) == cell(3, 3) for p in run.positions[1:, 1, 0])
    config = EvaluationConfig.from_profile("paper", behaviour="imitation", group_size=2, cpp_imitation=True)
    assert generate_environments(config, np.arange(3)).episode_index.tolist() == [0, 1, 2]


# ---- 4. learners: what they bootstrap from ----

ROWS5 = 5


def one_training_pass(code, switched, q_values):
    """One training pass of a lone learner (code) on a 5x5 grid, T = 2, α = γ = 0.3, rewards x10:
    start (2,0), ⊕ still at (2,2), ⊖ still at (0,3); Q preset by q_values {(cell, t, action): value},
    2 elsewhere. Returns the table (T, cells, 9) and the cells visited."""
    rows = cols = ROWS5
    iterations = 2
    codes = np.array([code], np.int64)
    tables = learner_workspace(codes, rows, cols, iterations, 1, 2.0, 1)
    q = tables.q.reshape(iterations, rows * cols, 9)
    for (where, t, action), value in q_values.items():
        q[t, where, action] = value
    rules = Rules(rows, cols, iterations, 1, 1, 1, 0.3, 0.3, 0.0, 10.0, 0, 0, int(switched), 0)
    good = np.full(iterations + 1, 2, np.int64)
    evil_r, evil_c = np.zeros(iterations + 1, np.int64), np.full(iterations + 1, 3, np.int64)
    zeros = np.zeros(iterations + 1, np.int64)
    paths = EpisodePaths(good, good.copy(), evil_r, evil_c, np.zeros(0), zeros, zeros.copy())
    side = 3
    scratch = Scratch(*(np.zeros(1, np.int64) for _ in range(4)), np.zeros(2, np.int64),
                      np.empty(side * side + 4 * side, np.int64), *(np.zeros(1, np.int64) for _ in range(4)),
                      np.zeros(1, np.float64), np.empty((1, 1), np.uint64))
    talk = talk_workspace(NONE, (0.0,) * 4, np.zeros(1, bool), 1, rows, cols, 1, iterations, 1)
    positions = np.zeros((1, iterations + 1), np.int32)
    _play_pass(codes, np.arange(1), np.zeros(1, np.int64), np.array([cell(2, 0, cols)]), rules, paths, -1,
               np.uint64(5), 1, True, tables, scratch, talk, False, positions, np.zeros((1, iterations)), np.zeros(0),
               search_table(rules.rows, cols, rules.radius), cell_moves(rows, cols))
    return q, scratch


RIGHT, UP_LEFT, STAY = 5, 0, 4
START, NEXT, GOOD = cell(2, 0, 5), cell(2, 1, 5), cell(2, 2, 5)
# right from the start at t=0 (3); at (2,1): Q(t=0) peaks at 7 (up-left), Q(t=1) at 4 (right); at ⊕'s
# cell (2,2): Q(t=1) peaks at 9 (stay), Q(t=0) is all 2
PRESET = {(START, 0, RIGHT): 3.0, (NEXT, 0, UP_LEFT): 7.0, (NEXT, 1, RIGHT): 4.0, (GOOD, 1, STAY): 9.0}


@pytest.mark.parametrize("code", ["q_learning", "sarsa"])
def test_learners_bootstrap_as_the_cpp_does(code):
    """The pass moves right twice: (2,0) -> (2,1), reward 0.5 (x10 = 5), then (2,1) -> (2,2) onto ⊕,
    reward 1 (x10 = 10). Textbook (switch off): Q(s0, right) = 3 + 0.3·(5 + 0.3·max Q((2,1), t=1)
    - 3) = 3.96 and the last step is terminal: 4 + 0.3·(10 - 4) = 5.8. Q-learning in the C++
    bootstraps from (c', t=0): 3 + 0.3·(5 + 0.3·7 - 3) = 4.23 and 4 + 0.3·(10 + 0.3·2 - 4) = 5.98;
    SARSA picks a' greedily at (c', t) and discards it: at t=0 a' = up-left at ((2,1), 0) (7),
    4.23, yet it then moves right by Q((2,1), 1); at t=1 a' = stay at ((2,2), 1) (9):
    4 + 0.3·(10 + 0.3·9 - 4) = 6.61."""
    from collective.behaviours import Q_LEARNING, SARSA
    kernel_code = Q_LEARNING if code == "q_learning" else SARSA
    textbook, _ = one_training_pass(kernel_code, False, PRESET)
    assert textbook[0, START, RIGHT] == pytest.approx(3.96) and textbook[1, NEXT, RIGHT] == pytest.approx(5.8)
    cpp, _ = one_training_pass(kernel_code, True, PRESET)
    assert cpp[0, START, RIGHT] == pytest.approx(4.23)
    assert cpp[1, NEXT, RIGHT] == pytest.approx(5.98 if code == "q_learning" else 6.61)
    assert cpp[0, NEXT, UP_LEFT] == 7.0  # a' was never taken, nor written


# ---- 5. the oracle: one approach step toward ⊕'s next cell ----

def test_cpp_oracle_approaches_the_next_cell_instead_of_intercepting():
    """⊕ runs right along row 3 from (3,2), one cell per iteration; the oracle at (3,0) cannot catch
    it that way. Interception (paper) heads left round the torus to meet it at (3,5) at τ = 3: it
    lands on (3,6). The C++ oracle steps toward ⊕'s next cell (3,3): it lands on (3,1)."""
    path = [cell(3, 2 + t) for t in range(5)]
    intercept = scenario("oracle", [cell(3, 0)], path, cell(0, 0), iterations=4)
    assert all(int(p) == cell(3, 6) for p in intercept.positions[:, 1, 0])
    cpp = scenario("oracle", [cell(3, 0)], path, cell(0, 0), iterations=4, cpp_oracle=True)
    assert all(int(p) == cell(3, 1) for p in cpp.positions[:, 1, 0])


# ---- 8. approachPosition's half-way tie ----

def test_cpp_approach_position_goes_the_way_that_does_not_wrap_at_half_way():
    """src/General.cpp, approachPosition(target, source, columns): rows and columns from 1
    (findCoordinates: x = ⌈cell/columns⌉, y = cell − columns·(x − 1)), midDistance = ⌊columns/2⌋; per
    axis, source < target moves +1 (down, right) when |source − target| <= midDistance and −1 otherwise,
    source > target moves −1 (up, left) when |source − target| <= midDistance and +1 otherwise; the two
    axis moves combine into one king move. On 10x10 from (7,7) toward (2,2) (the C++'s cells 78 and 23)
    both axes are 5 = midDistance apart with source > target: action 1, up-left, onto (6,6). Spec §5
    steps forward at half-way: down-right onto (8,8). From (2,2) toward (7,7) both go down-right."""
    from collective.environments.torus import axis_step_toward
    assert [axis_step_toward(7, 2, 10, direct) for direct in (0, 1)] == [1, -1]
    assert [axis_step_toward(2, 7, 10, direct) for direct in (0, 1)] == [1, 1]
    assert [axis_step_toward(7, 1, 10, direct) for direct in (0, 1)] == [1, 1]  # 6 > 5 apart: round, both
    assert [axis_step_toward(3, 1, 5, direct) for direct in (0, 1)] == [-1, -1]  # odd side: no tie
    for direct in (False, True):  # the reference's step agrees
        world = ReferenceWorld(10, 10, 1, direct_ties=direct)
        assert world.step_toward(cell(7, 7, 10), cell(2, 2, 10)) == (cell(6, 6, 10) if direct else cell(8, 8, 10))
    path = [cell(2, 2, 10)] * 2
    spec = scenario("oracle", [cell(7, 7, 10)], path, cell(0, 5, 10), rows=10, cols=10, cpp_oracle=True)
    assert all(int(p) == cell(8, 8, 10) for p in spec.positions[:, 1, 0])
    cpp = scenario("oracle", [cell(7, 7, 10)], path, cell(0, 5, 10), rows=10, cols=10, cpp_oracle=True,
                   cpp_approach_position=True)
    assert all(int(p) == cell(6, 6, 10) for p in cpp.positions[:, 1, 0])


def test_cpp_approach_position_steers_the_followers_of_a_dictator():
    """A dictator at (0,0) picks ⊕'s cell (1,1) next to it; its follower at (6,6) of 10x10 is 5 rows and
    5 columns from (1,1): DictatorshipLocalSearchAgent::performAction is approachPosition(onlyTarget, ...),
    so it moves up-left onto (5,5); spec §5 moves it down-right onto (7,7) (round the torus)."""
    starts, good, evil = [cell(0, 0, 10), cell(6, 6, 10)], cell(1, 1, 10), cell(9, 5, 10)
    spec = scenario("local_search", starts, good, evil, rows=10, cols=10, protocol="dictatorship")
    assert all(int(p) == cell(7, 7, 10) for p in spec.positions[:, 1, 1])
    cpp = scenario("local_search", starts, good, evil, rows=10, cols=10, protocol="dictatorship",
                   cpp_approach_position=True)
    assert all(int(p) == cell(5, 5, 10) for p in cpp.positions[:, 1, 1])


# ---- 6. the binary tree is plain local search ----

def test_cpp_binary_tree_is_plain_local_search():
    """Ranks 1, 2, 3 = agents 0, 1, 2; agent 2 at (3,2) sees ⊕ at (3,3). In the tree agent 0 (its
    parent, at (0,0)) heads for (3,3) and always lands on (1,1); in the C++ it searches its own
    window, as a lone local searcher with its stream does, and the reports are still counted."""
    starts = [cell(0, 0), cell(6, 4), cell(3, 2)]
    tree = scenario("local_search", starts, cell(3, 3), cell(6, 0), protocol="hierarchy")
    assert all(int(p) == cell(1, 1) for p in tree.positions[:, 1, 0])
    plain = scenario("local_search", starts, cell(3, 3), cell(6, 0), protocol="hierarchy", cpp_binary_tree=True)
    alone = scenario("local_search", starts, cell(3, 3), cell(6, 0))
    assert np.array_equal(plain.positions, alone.positions) and np.array_equal(plain.rewards, alone.rewards)
    assert plain.messages == tree.messages == 40 * 2


# ---- 7. groups of one ----

@pytest.mark.parametrize("protocol", ["auction", "wisdom", "dictatorship", "hierarchy", "stigmergy", "broadcast"])
def test_groups_of_one_are_refused_unless_switched(protocol):
    params = (("sticky", "true"),) if protocol == "auction" else ()
    with pytest.raises(ConfigError, match="protocol: protocol .* needs at least 2"):
        EvaluationConfig.from_profile("paper", behaviour="local_search", protocol=protocol, protocol_params=params)
    EvaluationConfig.from_profile("paper", behaviour="local_search", protocol=protocol, protocol_params=params,
                                  cpp_groups_of_one=True)
    EvaluationConfig.from_profile("lambdastar2016", behaviour="local_search", protocol=protocol)


@pytest.mark.parametrize("protocol", ["dictatorship", "hierarchy"])
def test_a_lone_dictator_or_tree_root_is_a_local_searcher(protocol):
    """One member: it dictates to itself / has no children, so it heads for its own pick, drawing
    as a lone local searcher draws: the same trajectories, no messages (what the C++ runs for n = 1)."""
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", protocol=protocol, iterations=30,
                                           cpp_groups_of_one=True)
    environments = generate_environments(config, np.arange(20))
    run = play(config, environments, record=True)
    alone = play(config.with_changes(protocol="none", protocol_params=()), environments, record=True)
    assert np.array_equal(run.positions, alone.positions) and run.messages == 0


def test_a_lone_cpp_bidder_keeps_heading_for_its_stale_best():
    """One C++ bidder at (3,2) bids 1 for ⊕'s cell (3,3) at t=0; ⊕ then jumps out of sight and its
    bids of 0 never reach 1 again: it stays on (3,3), where a local searcher would wander."""
    path = [cell(3, 3), cell(6, 0), cell(6, 0), cell(6, 0)]
    run = auction([cell(3, 2)], path, cell(0, 5), iterations=3, cpp_groups_of_one=True)
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 3, 0])


def test_switch_refusals():
    with pytest.raises(ConfigError, match="cpp_first_observation: .* no landscapes"):
        EvaluationConfig.from_profile("lambdastar2016", env="landscape")
    with pytest.raises(ConfigError, match="cpp_auction: .* sticky=true"):
        EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=2, protocol="auction",
                                      cpp_auction=True)


def test_rows_record_cpp_approach_position(tmp_path):
    """A sweep's rows (Parquet) carry every switch, this one on under the profile and off where the ablation turns
    it off alone."""
    from sweep_support import collective, rows, write_spec
    spec = write_spec(tmp_path, """
name = "approach"
seed = 1
profile = "lambdastar2016"
episodes = 3
iterations = 6

[factors]
grid = ["6x6"]
group_size = [2]
cpp_switch_off = ["none", "cpp_approach_position"]

[groups]
behaviours = ["oracle"]
""")
    result = collective("sweep", str(spec), "--out", str(tmp_path / "sweep"), "--executor", "serial")
    assert result.returncode == 0, result.stderr
    table = rows(tmp_path / "sweep" / "dataset")
    assert table.groupby("cpp_approach_position").size().to_dict() == {False: 3, True: 3}
    on = table[table["cpp_approach_position"]]
    assert on[list(CPP_SWITCHES)].all().all()
