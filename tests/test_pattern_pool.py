"""Pooled draws (`patterns.pooled_patterns`, config `pattern_pool`): a block of episodes shares its draws among
its K targets. Known answers: given K a pooled pattern has the generator's exact law (the enumerated
distribution of tests/test_pattern_probability.py), K stays uniform, pooled ⊕/⊖ pairs are distributed as lone
ones, and an episode's environment depends on its block alone (any batch split, any order)."""
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from collective.config import ConfigError, EvaluationConfig
from collective.environments.complexity import lz76_phrase_count
from collective.environments.pattern_probability import cyclic_pattern_log2_probability
from collective.environments import patterns
from collective.environments.patterns import (CyclicPatternGenerator, StratifiedComplexity,
                                              independent_pair_on_played_paths, pooled_patterns)
from collective.evaluate import evaluate
from collective.evaluation.batches import batch_episodes, batch_indices
from collective.evaluation.compiled_code import load_generator
from collective.evaluation.environments import generate_environments, pool_blocks
from test_pattern_probability import COLS, ROWS, enumerated_distribution

SOUND_DRAWS = StratifiedComplexity(CyclicPatternGenerator("half_T", lazy_shuffle=True))
ROWS_PAIR = COLS_PAIR = 5  # the grid of the pair test


def _k_of(rows: np.ndarray, iterations: int) -> np.ndarray:
    return np.array([lz76_phrase_count(row[:iterations].astype(np.int64)) for row in rows])


def _shape(row: tuple[int, ...], iterations: int) -> tuple[int, int, bool]:
    """A trajectory's smallest period in cells (T + 1: none, a drifting one), its distinct cells and whether ⊕
    stays put on its first move."""
    period = next((p for p in range(1, iterations + 1) if all(row[t] == row[t - p] for t in range(p, iterations + 1))),
                  iterations + 1)
    return period, len(set(row[:iterations])), row[0] == row[1]


def _p_given_k(positions: np.ndarray, k: int, iterations: int, max_segment: int) -> float:
    """Chi-square p of the trajectories of K = k against the generator's exact law restricted to K = k, in
    classes of `_shape`; 0 when one of them has probability 0 given K."""
    support = np.array(list(enumerated_distribution(iterations, max_segment)))
    support = support[_k_of(support, iterations) == k]
    p = 2.0 ** cyclic_pattern_log2_probability(support, ROWS, COLS, max_segment)
    if not set(map(tuple, positions)) <= set(map(tuple, support)):
        return 0.0
    expected, observed = defaultdict(float), defaultdict(int)
    for row, mass in zip(map(tuple, support), p / p.sum()):
        expected[_shape(row, iterations)] += mass * len(positions)
    for row in map(tuple, positions):
        observed[_shape(row, iterations)] += 1
    shapes = list(expected)
    expected, counts = np.array([expected[s] for s in shapes]), np.array([observed[s] for s in shapes], float)
    small = expected < 5
    if small.any():
        expected = np.append(expected[~small], expected[small].sum())
        counts = np.append(counts[~small], counts[small].sum())
    if len(expected) < 2:  # one class (K = 2 here: ⊕ stands still): the support check is the whole test
        return 1.0
    return float(stats.chisquare(counts, expected).pvalue)


@pytest.mark.parametrize("block", [64, 1024])  # 1024: 256 episodes per K, queues full (POOL_QUEUE) and dropping
def test_a_pooled_pattern_has_the_generators_law_given_its_k(block):
    """3x3, T = 8, K 2..5 (per draw 17%, 17%, 27%, 11%), 60,000 episodes in blocks: K uniform, and per K the
    trajectories stay in the support and their classes (`_shape`) have the frequencies of the enumerated law of
    the generator's draws of that K. Controls, each
    rejected: the K = 3 samples against the law a lone episode draws with segments capped at its K (segment_cap
    "k_max", the law pooling would get wrong, so it refuses that cap), and the K = 4 samples with a third of
    those whose ⊕ stays put on its first move left out (a pool whose choice leaned on a pattern's moves)."""
    iterations, episodes = 8, 60_416
    seeds = np.random.SeedSequence(20261126).generate_state(episodes, np.uint64)
    pattern, evil = pooled_patterns(SOUND_DRAWS, seeds, block, ROWS, COLS, iterations, 2, 5)
    assert evil is None
    assert (_k_of(pattern.positions, iterations) == pattern.k_raw).all()
    assert stats.chisquare(np.bincount(pattern.k_raw, minlength=6)[2:]).pvalue > 1e-3
    for k in range(2, 6):
        rows = pattern.positions[pattern.k_raw == k]
        assert _p_given_k(rows, k, iterations, iterations // 2) > 1e-3, k
    assert _p_given_k(pattern.positions[pattern.k_raw == 3], 3, iterations, 3) < 1e-6
    fours = pattern.positions[pattern.k_raw == 4]
    stays = np.flatnonzero(fours[:, 0] == fours[:, 1])
    leaning = np.delete(fours, stays[::3], axis=0)
    assert _p_given_k(leaning, 4, iterations, iterations // 2) < 1e-6


def _pair_statistics(good: np.ndarray, evil: np.ndarray, iterations: int) -> list[np.ndarray]:
    """Per episode: ⊕'s distinct cells, ⊖'s, the Chebyshev distance of their start cells, the steps on which
    they stand side by side, ⊕'s first move."""
    def distinct(rows):
        return np.array([len(np.unique(row[:iterations])) for row in rows])

    gr, gc = np.divmod(good.astype(np.int64), COLS_PAIR)
    er, ec = np.divmod(evil.astype(np.int64), COLS_PAIR)
    dr, dc = np.abs(gr - er), np.abs(gc - ec)
    apart = np.maximum(np.minimum(dr, ROWS_PAIR - dr), np.minimum(dc, COLS_PAIR - dc))
    first = ((gr[:, 1] - gr[:, 0] + 1) % ROWS_PAIR) * 3 + (gc[:, 1] - gc[:, 0] + 1) % COLS_PAIR
    return [distinct(good), distinct(evil), apart[:, 0], (apart <= 1).sum(axis=1), first]


def _homogeneity_p(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square test of homogeneity of two samples of a discrete statistic, sparse bins merged."""
    values = np.unique(np.concatenate([a, b]))
    table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    merged, current = [], np.zeros(2)
    for column in table.T:
        current = current + column
        if current.sum() >= 20:
            merged.append(current)
            current = np.zeros(2)
    if current.sum():
        merged[-1] = merged[-1] + current
    return float(stats.chi2_contingency(np.array(merged).T).pvalue)


@pytest.mark.parametrize("block", [64, EvaluationConfig.from_profile("sound").pattern_pool])
def test_pooled_pairs_are_distributed_as_lone_pairs(block):
    """5x5, T = 20, K 2..8, ⊕/⊖ pairs kept when both played paths keep K: 4,096 pooled episodes (blocks of 64,
    and of the default profile's pool) against 4,096 drawn alone (`independent_pair_on_played_paths`), per K
    target, on five statistics (Bonferroni over 5). Control: the lone pairs without the played-path condition
    (⊖ drawn once, collisions left to change K) differ from the pooled ones in the steps spent side by side."""
    iterations, episodes, k_min, k_max = 20, 4_096, 2, 8
    seeds = np.random.SeedSequence(7).generate_state(2 * episodes, np.uint64)
    pooled, pooled_evil = pooled_patterns(SOUND_DRAWS, seeds[:episodes], block, ROWS_PAIR, COLS_PAIR, iterations,
                                          k_min, k_max, seeds[:episodes] ^ np.uint64(0xE71))
    assert (_k_of(pooled.positions, iterations) == pooled.k_raw).all()
    assert (_k_of(pooled_evil, iterations) == pooled.k_raw).all()
    lone_seeds = seeds[episodes:]
    lone = SOUND_DRAWS.generate(lone_seeds, ROWS_PAIR, COLS_PAIR, iterations, k_min, k_max)
    lone_good, lone_evil = independent_pair_on_played_paths(SOUND_DRAWS, lone, lone_seeds ^ np.uint64(0xE71),
                                                           ROWS_PAIR, COLS_PAIR, iterations)
    assert abs(np.mean(pooled.k_raw) - np.mean(lone.k_raw)) < 0.15
    p_values = [_homogeneity_p(a, b) for a, b in zip(_pair_statistics(pooled.positions, pooled_evil, iterations),
                                                     _pair_statistics(lone_good, lone_evil, iterations))]
    assert min(p_values) > 1e-3 / 5, p_values
    # control: ⊖ drawn once at ⊕'s K, no condition on the played paths
    unconditioned_evil = SOUND_DRAWS.generate(lone_seeds ^ np.uint64(0x51), ROWS_PAIR, COLS_PAIR, iterations,
                                              lone.k_raw, lone.k_raw).positions
    side_by_side = _pair_statistics(pooled.positions, pooled_evil, iterations)[3]
    control = _pair_statistics(lone.positions, unconditioned_evil, iterations)[3]
    assert _homogeneity_p(side_by_side, control) < 1e-6


def test_an_episode_depends_on_its_block_alone():
    """Episodes generated in one batch, split at a block boundary and inside one, one at a time, in any order:
    the same patterns, start cells and seeds."""
    config = EvaluationConfig.from_profile("sound", rows=6, cols=6, iterations=30, group_size=3, episodes=150,
                                           pattern_pool=16)
    whole = generate_environments(config, np.arange(150))
    for episodes in (np.arange(16, 48), np.arange(5, 21), np.array([149, 3, 77, 3 + 16]), np.array([64])):
        part = generate_environments(config, episodes)
        for name in ("good", "evil", "starts", "agent_seeds", "k_raw", "k_evil"):
            np.testing.assert_array_equal(getattr(part, name), getattr(whole, name)[episodes], err_msg=name)
        np.testing.assert_array_equal(part.episode_index, episodes)


def test_pool_blocks_rows():
    blocks, keep = pool_blocks(np.array([70, 3, 64, 5]), 32)
    np.testing.assert_array_equal(blocks, np.r_[np.arange(0, 32), np.arange(64, 96)])
    np.testing.assert_array_equal(blocks[keep], [70, 3, 64, 5])


@pytest.mark.parametrize("overrides, field", [
    (dict(pattern_pool=-1), "pattern_pool"),
    (dict(pattern_pool=4097), "pattern_pool"),
    (dict(pattern_pool=8, segment_cap="k_max"), "pattern_pool"),
    (dict(pattern_pool=8, k_sampling="generator"), "pattern_pool"),
    (dict(pattern_pool=8, pattern_generator="ping_pong", k_on_played_paths=False), "pattern_pool"),
])
def test_a_pool_the_draws_cannot_serve_is_refused(overrides, field):
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("sound", **overrides)
    assert error.value.field == field


@pytest.mark.parametrize("generator", [CyclicPatternGenerator("half_T"),
                                       StratifiedComplexity(CyclicPatternGenerator("k_max"))])
def test_pooled_draws_refuse_a_generator_whose_law_depends_on_the_k_wanted(generator):
    seeds = np.arange(64, dtype=np.uint64)
    with pytest.raises(ValueError, match="half_T"):
        pooled_patterns(generator, seeds, 64, 5, 5, 20, 2, 6)


def test_a_profiles_pool_gives_way_where_its_draws_cannot_be_pooled():
    """sound pools its draws; asked for draws that cannot be pooled (segments capped at K, K as drawn) it draws
    each episode alone and says so in its rows (pattern_pool 0), where an explicit pool is refused above."""
    assert EvaluationConfig.from_profile("sound").pattern_pool == 512
    assert EvaluationConfig.from_profile("sound", segment_cap="k_max").pattern_pool == 0
    assert EvaluationConfig.from_profile("sound", k_sampling="generator").pattern_pool == 0
    assert EvaluationConfig.from_profile("paper").pattern_pool == 0


def blocks_drawn(monkeypatch) -> list[int]:
    """From now on in the test, the episodes of each pooled block drawn (its length), with no block kept
    from before."""
    drawn = []
    real = patterns._pooled_block_patterns

    def counted(*args, **kwargs):
        drawn.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(patterns, "_pooled_block_patterns", counted)
    monkeypatch.setattr(patterns, "_RECENT", patterns.OrderedDict())
    return drawn


def test_one_episode_at_a_time_draws_each_block_once(monkeypatch):
    """An adapter's resets ask for episodes one by one: the block is drawn once and kept, and what each call
    gets is the batch's row (`test_an_episode_depends_on_its_block_alone`)."""
    config = EvaluationConfig.from_profile("sound", rows=6, cols=6, iterations=30, group_size=3, pattern_pool=16)
    whole = generate_environments(config, np.arange(32))
    drawn = blocks_drawn(monkeypatch)
    for episode in range(20):
        one = generate_environments(config, np.array([episode]))
        np.testing.assert_array_equal(one.good[0], whole.good[episode])
        np.testing.assert_array_equal(one.evil[0], whole.evil[episode])
    assert drawn == [16, 16]


def test_an_evaluations_batches_hold_whole_blocks(monkeypatch):
    """A block cut by a batch edge would be drawn whole by both batches (`pool_blocks`): an evaluation's batches,
    the ramped first ones included, end on block edges, so it draws each block once."""
    config = EvaluationConfig.from_profile("sound", rows=6, cols=6, iterations=30, group_size=3, episodes=6000)
    monkeypatch.setattr("collective.evaluation.batches.TARGET_AGENT_STEPS_PER_BATCH",
                        3 * 30 * 2000)  # ~2,000 episodes a batch
    batches = batch_indices(config.episodes, batch_episodes(config), True, config.pattern_pool)
    assert len(batches) > 4 and len(batches[0]) < len(batches[3]), "no ramp to check"
    assert all(batch[0] % config.pattern_pool == 0 for batch in batches)
    drawn = blocks_drawn(monkeypatch)
    evaluate(config)
    assert drawn[0] == 1  # loading the generator (`load_generator`)
    assert sum(drawn[1:]) == -(-config.episodes // config.pattern_pool) * config.pattern_pool


def test_loading_the_generator_keeps_no_block_of_the_run(monkeypatch):
    """`load_generator` compiles the pooled draws on a block of one episode: a block of the run's own would be
    drawn before the run's timing starts and kept for it, so that the run's wall would miss its draw."""
    config = EvaluationConfig.from_profile("sound", rows=6, cols=6, iterations=30, group_size=3, pattern_pool=16)
    drawn = blocks_drawn(monkeypatch)
    load_generator(config)
    generate_environments(config, np.arange(16))
    assert drawn == [1, 16]
