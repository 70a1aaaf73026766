"""The ceiling of R̄ (issue 12 point 8): dynamic programming against brute force, and the oracle under it."""
import itertools

import numpy as np
import pytest

from collective.config import EvaluationConfig
from collective.environments.ceiling import best_totals, upsilon_best
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments, with_ceiling
from collective.evaluation.play import play
from collective.simulation.reference import ACTION_MOVES, ReferenceWorld


def random_walks(rng, episodes, rows, cols, iterations):
    """(episodes, T+1) king-move walks from uniform cells: any paths will do for the DP."""
    cells = np.empty((episodes, iterations + 1), np.int32)
    r, c = rng.integers(0, rows, episodes), rng.integers(0, cols, episodes)
    for t in range(iterations + 1):
        cells[:, t] = r * cols + c
        move = rng.integers(0, 9, episodes)
        r, c = (r + move // 3 - 1) % rows, (c + move % 3 - 1) % cols
    return cells


def brute_force_best(world: ReferenceWorld, good, evil, start: int) -> float:
    """The best total reward over every one of the 9^T move sequences, paid as the kernel pays:
    decide at t, move, receive R of the new cell from ⊕/⊖ at t+1 (spec §1)."""
    payoffs = [world.payoffs(list(good), list(evil), t) for t in range(world.iterations + 1)]
    best = -np.inf
    for moves in itertools.product(ACTION_MOVES, repeat=world.iterations):
        cell, total = start, 0.0
        for t, (dr, dc) in enumerate(moves):
            cell = world.moved(cell, dr, dc)
            total += payoffs[t + 1](cell)
        best = max(best, total)
    return best


@pytest.mark.parametrize("rows, cols, iterations, radius, landscape",
                         [(3, 3, 4, 1, False), (4, 4, 3, 1, False), (4, 4, 4, 0, False), (3, 4, 3, 2, False),
                          (4, 4, 4, 1, True), (3, 3, 3, 1, True)])
def test_dynamic_programme_equals_brute_force_over_every_move_sequence(rows, cols, iterations, radius, landscape):
    rng = np.random.default_rng(rows * 100 + iterations * 10 + radius + landscape)
    episodes, agents = 3, 2
    good, evil = random_walks(rng, episodes, rows, cols, iterations), random_walks(rng, episodes, rows, cols, iterations)
    fields = rng.uniform(-1, 1, (episodes, rows * cols)) if landscape else None
    if landscape:
        evil = good.copy()  # a landscape has no ⊖: its path is the optimum's, as the generator gives it
    starts = np.stack([rng.choice(rows * cols, agents, replace=False) for _ in range(episodes)]).astype(np.int32)
    batch = EnvironmentBatch(good, evil, starts, np.zeros(episodes, np.uint64), np.zeros(episodes, np.int32),
                             np.zeros(episodes), landscapes=fields)
    got = upsilon_best(batch, rows, cols, iterations, radius)
    for e in range(episodes):
        world = ReferenceWorld(rows, cols, iterations, reward_radius=radius,
                               landscape=tuple(fields[e]) if landscape else None)
        expected = np.mean([brute_force_best(world, good[e], evil[e], int(s)) for s in starts[e]]) / iterations
        assert got[e] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("profile", ["paper", "sound"])
def test_oracle_never_beats_the_ceiling_and_comes_close(profile):
    """The oracle intercepts ⊕ and follows it, ignoring ⊖: a lower bound of the optimum that is
    tight once ⊕ is reached. No agent may score above the exact optimum, episode by episode."""
    config = EvaluationConfig.from_profile(profile, behaviour="oracle", group_size=3, rows=10, cols=10,
                                           iterations=100, episodes=300, seed=4)
    environments = with_ceiling(config, generate_environments(config, np.arange(config.episodes)))
    oracle = play(config, environments).mean_rewards
    random = play(config.with_changes(behaviour="random"), environments).mean_rewards
    assert (oracle <= environments.upsilon_best + 1e-12).all() and (random <= environments.upsilon_best + 1e-12).all()
    gap = environments.upsilon_best - oracle  # measured: mean < 0.001, at most ~0.013 (10x10, T = 100)
    assert gap.mean() < 0.005 and gap.max() < 0.05


def test_ceiling_bounds_a_coordinated_group_from_above():
    """Above a coordination threshold of 1 the optimum is an upper bound (paper 003 §6.1)."""
    config = EvaluationConfig.from_profile("paper", behaviour="oracle", group_size=3, coordination_threshold=2,
                                           rows=8, cols=8, iterations=60, episodes=200, seed=9)
    environments = with_ceiling(config, generate_environments(config, np.arange(config.episodes)))
    assert (play(config, environments).mean_rewards <= environments.upsilon_best + 1e-12).all()


def test_evaluate_records_the_mean_ceiling():
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", rows=6, cols=6, iterations=40,
                                           episodes=50, seed=2)
    record = evaluate(config, batch_size=20).as_record()
    environments = with_ceiling(config, generate_environments(config, np.arange(config.episodes)))
    assert record["upsilon_best"] == pytest.approx(environments.upsilon_best.mean(), abs=1e-12)
    assert record["upsilon"] <= record["upsilon_best"]



@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 6), (5, 1), (2, 2), (3, 7), (8, 5), (12, 12)])
def test_a_landscapes_ceiling_is_the_plain_dynamic_programme_to_the_bit(rows, cols):
    """The field moved with ⊕ paid row by row in two runs (`ceiling._pay_field`) against the same DP written
    plainly, each cell paid R of `ReferenceWorld` (the field read at the cell shifted back): identical floats,
    on grids where the shifts wrap in rows, columns, both or neither."""
    rng = np.random.default_rng(rows * 31 + cols)
    episodes, iterations = 4, 9
    good = random_walks(rng, episodes, rows, cols, iterations)
    fields = rng.uniform(-1, 1, (episodes, rows * cols))
    starts = rng.integers(0, rows * cols, (episodes, 3)).astype(np.int32)
    totals = np.empty(starts.shape)
    best_totals(good, good.copy(), fields, starts, rows, cols, iterations, 1, totals)
    for e in range(episodes):
        world = ReferenceWorld(rows, cols, iterations, reward_radius=1, landscape=tuple(fields[e]))
        value = [0.0] * (rows * cols)
        for t in range(iterations - 1, -1, -1):
            pays = world.payoffs(list(good[e]), list(good[e]), t + 1)
            value = [value[cell] + pays(cell) for cell in range(rows * cols)]
            value = [max(value[world.moved(cell, dr, dc)] for dr, dc in ACTION_MOVES) for cell in range(rows * cols)]
        assert totals[e].tolist() == [value[s] for s in starts[e]]


def _max3(a: float, b: float, c: float) -> float:
    larger = a if a > b else b
    return larger if larger > c else c


def _separable_programme(world: ReferenceWorld, good, evil, iterations: int) -> list[float]:
    """V_0 of every cell by the DP written plainly: each cell paid R of `ReferenceWorld`, then the 3x3 maximum as
    a row pass (left, cell, right) then a column pass (above, cell, below), the order that decides which NaN
    comes out where a field holds NaN."""
    rows, cols = world.rows, world.cols
    value = [0.0] * (rows * cols)
    for t in range(iterations - 1, -1, -1):
        pays = world.payoffs(list(good), list(evil), t + 1)
        value = [value[cell] + pays(cell) for cell in range(rows * cols)]
        across = [_max3(value[world.moved(cell, 0, -1)], value[cell], value[world.moved(cell, 0, 1)])
                  for cell in range(rows * cols)]
        value = [_max3(across[world.moved(cell, -1, 0)], across[cell], across[world.moved(cell, 1, 0)])
                 for cell in range(rows * cols)]
    return value


@pytest.mark.parametrize("rows, cols, radius, field", [
    (1, 1, 1, "none"), (1, 7, 1, "none"), (6, 1, 2, "none"), (2, 2, 1, "none"), (2, 3, 0, "none"), (3, 7, 1, "none"),
    (8, 5, 2, "none"), (10, 10, 1, "none"), (9, 11, 3, "none"), (4, 4, 9, "none"), (5, 12, 6, "none"),
    (7, 6, 1, "uniform"), (1, 5, 1, "uniform"), (6, 6, 1, "inf_nan"), (3, 8, 1, "inf_nan")])
def test_the_ceiling_is_the_plain_separable_programme_to_the_bit(rows, cols, radius, field):
    """`best_totals` (episodes side by side in lanes, reward zones from tables of f by axis distance, the king-move
    maximum on a grid with a halo) against the DP written plainly, V_0 at every cell of every episode: the same
    floats, Λ* over radii that cover a zone, wrap it onto itself or span the grid, landscapes with ±inf and NaN.
    11 episodes: a whole group of lanes and a part of one."""
    rng = np.random.default_rng(rows * 1000 + cols * 10 + radius)
    episodes, iterations = 11, 9
    good, evil = (random_walks(rng, episodes, rows, cols, iterations) for _ in range(2))
    fields = None
    if field != "none":
        fields = rng.uniform(-1, 1, (episodes, rows * cols))
        if field == "inf_nan":
            fields[rng.random(fields.shape) < 0.06] = np.inf
            fields[rng.random(fields.shape) < 0.06] = -np.inf
            fields[rng.random(fields.shape) < 0.04] = np.nan
        evil = good.copy()
    starts = np.tile(np.arange(rows * cols, dtype=np.int32), (episodes, 1))  # every cell a start
    totals = np.empty(starts.shape)
    best_totals(good, evil, np.empty((episodes, 0)) if fields is None else fields, starts, rows, cols, iterations,
                radius, totals)
    for e in range(episodes):
        world = ReferenceWorld(rows, cols, iterations, reward_radius=radius,
                               landscape=None if fields is None else tuple(map(float, fields[e])))
        np.testing.assert_array_equal(totals[e], _separable_programme(world, good[e], evil[e], iterations))
