"""The cyclic generator's exact pattern probability: against a brute-force enumeration of every draw the
generator can make, and against the real generator's frequencies (chi-square) with and without a K range."""
import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from collective.config import EvaluationConfig
from collective.environments.complexity import lz76_phrase_count
from collective.environments.pattern_probability import (cyclic_max_segment, cyclic_pattern_log2_probability,
                                                         pattern_log2_probabilities, trajectory_moves)
from collective.environments.patterns import CyclicPatternGenerator
from collective.evaluation.environments import generate_environments

ROWS = COLS = 3


def _walk(start: int, segment: tuple[int, ...], iterations: int) -> tuple[int, ...]:
    r, c = divmod(start, COLS)
    cells = [start]
    for t in range(iterations):
        move = segment[t % len(segment)]
        r, c = (r + move // 3 - 1) % ROWS, (c + move % 3 - 1) % COLS
        cells.append(r * COLS + c)
    return tuple(cells)


def enumerated_distribution(iterations: int, max_segment: int) -> dict[tuple[int, ...], float]:
    """Every outcome of the generator's draws, spelled out: segment length, coin, moves (open) or pair
    moves and a shuffle (closed), start cell; probability mass per trajectory."""
    mass: dict[tuple[int, ...], float] = defaultdict(float)
    cells = ROWS * COLS
    for s in range(1, max_segment + 1):
        outcomes = []
        for segment in itertools.product(range(9), repeat=s):  # open loop
            outcomes.append((segment, 0.5 * 9.0 ** -s))
        for firsts in itertools.product(range(9), repeat=s // 2):  # closed loop
            pre = [m for a in firsts for m in (a, 8 - a)] + ([4] if s % 2 else [])
            for order in itertools.permutations(range(s)):
                outcomes.append((tuple(pre[i] for i in order), 0.5 * 9.0 ** -(s // 2) / math.factorial(s)))
        for segment, p in outcomes:
            for start in range(cells):
                mass[_walk(start, segment, iterations)] += p / max_segment / cells
    return dict(mass)


@pytest.mark.parametrize("iterations, k_max", [(4, 99), (6, 99), (7, 2), (1, 99)])
def test_probability_equals_brute_force_enumeration(iterations, k_max):
    max_segment = cyclic_max_segment(iterations, k_max)
    reference = enumerated_distribution(iterations, max_segment)
    assert sum(reference.values()) == pytest.approx(1.0, abs=1e-12)
    trajectories = np.array(list(reference))
    computed = 2.0 ** cyclic_pattern_log2_probability(trajectories, ROWS, COLS, max_segment)
    np.testing.assert_allclose(computed, list(reference.values()), rtol=1e-10)


def test_impossible_trajectories_have_probability_zero():
    aperiodic = np.array([[0, 1, 2, 5, 8]])  # moves right, right, down, down: no period <= 2
    jump = np.array([[0, 0, 0, 0, 0, 0, 0]])
    assert cyclic_pattern_log2_probability(aperiodic, ROWS, COLS, 2)[0] == -np.inf
    assert trajectory_moves(np.array([[0, 12]]), 5, 5)[0, 0] == -1  # not neighbours on 5x5
    assert np.isfinite(cyclic_pattern_log2_probability(jump, ROWS, COLS, 3)[0])


def _chi_square(draws: np.ndarray, probabilities: dict) -> float:
    """p value of the observed trajectory counts against n·p, expected counts below 5 pooled."""
    observed = defaultdict(int)
    for row in map(tuple, draws):
        observed[row] += 1
    assert set(observed) <= set(probabilities), "the generator drew a trajectory of probability 0"
    keys = list(probabilities)
    expected = np.array([probabilities[k] for k in keys]) * len(draws)
    counts = np.array([observed.get(k, 0) for k in keys], float)
    small = expected < 5
    if small.any():
        expected = np.append(expected[~small], expected[small].sum())
        counts = np.append(counts[~small], counts[small].sum())
    return float(stats.chisquare(counts, expected).pvalue)


@pytest.mark.parametrize("iterations, k_range", [(4, None), (6, None), (6, (2, 3))])
def test_real_generator_frequencies_match(iterations, k_range):
    """10^6 draws of the real (compiled) generator on a 3x3 torus. With a K range the accepted patterns
    follow p restricted to the range (the rejection constant cancels after normalising)."""
    k_min, k_max = k_range or (0, np.iinfo(np.int32).max)
    draws = 1_000_000
    seeds = np.random.SeedSequence(20240514 + iterations).generate_state(draws, np.uint64)
    batch = CyclicPatternGenerator().generate(seeds, ROWS, COLS, iterations, k_min, k_max)
    max_segment = cyclic_max_segment(iterations, k_max)
    support = np.array(list(enumerated_distribution(iterations, max_segment)))
    k = np.array([lz76_phrase_count(row[:iterations].astype(np.int64)) for row in support])
    kept = support[(k >= k_min) & (k <= k_max)]
    p = 2.0 ** cyclic_pattern_log2_probability(kept, ROWS, COLS, max_segment)
    p /= p.sum()
    assert _chi_square(batch.positions, dict(zip(map(tuple, kept), p))) > 1e-3


def test_rows_get_the_probability_of_their_configuration():
    config = EvaluationConfig(rows=7, cols=7, iterations=12, episodes=20, k_min=1, k_max=5)
    environments = generate_environments(config, np.arange(20))
    direct = cyclic_pattern_log2_probability(environments.good, 7, 7, cyclic_max_segment(12, 5))
    np.testing.assert_array_equal(pattern_log2_probabilities(config, environments), direct)
    assert np.isfinite(direct).all() and (direct < 0).all()
    ping_pong = config.with_changes(pattern_generator="ping_pong", k_min=None, k_max=None)
    assert np.isnan(pattern_log2_probabilities(ping_pong, generate_environments(ping_pong, np.arange(3)))).all()
    moved = config.with_changes(env="landscape", landscape_peaks=2)  # the optimum's path: the pattern moved, same moves
    landscape = generate_environments(moved, np.arange(20))
    np.testing.assert_allclose(pattern_log2_probabilities(moved, landscape), direct)
