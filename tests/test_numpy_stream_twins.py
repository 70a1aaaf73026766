"""The compiled twins of NumPy's SeedSequence and default_rng draws (`numpy_stream_twins`) against NumPy itself:
every table they build must be bit for bit what the per-episode NumPy objects give."""
import functools
import re

import numpy as np
import pytest

from collective.environments.lambda_star import start_cell_table, start_cells
from collective.environments.landscapes import FIELD_STREAM, field_twin_agrees, landscape_field, landscape_fields
from collective.simulation.numpy_stream_twins import TWIN_MAX_CELLS, pairwise_sum
from collective.simulation.random_streams import (START_SEED, TABLE_BRANCH, TRAINING_BRANCH, episode_seed_table,
                                                  keyed_seed_states, table_training_seed_table, training_seed_table)
from collective.sweeps.plan import group_agent_seeds

EDGE_SEEDS = (0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1)


def _random_seeds(count: int, generator: np.random.Generator) -> list[int]:
    """Seeds of every word count: below 2**32, below 2**64, beyond (three words), and the edges."""
    seeds = [int(s) for s in generator.integers(0, 2**32, count // 3, dtype=np.uint64)]
    seeds += [int(s) for s in generator.integers(0, 2**64 - 1, count // 3, dtype=np.uint64, endpoint=True)]
    seeds += [int(s) << 40 | 7 for s in generator.integers(0, 2**64 - 1, count // 6, dtype=np.uint64)]
    return seeds + list(EDGE_SEEDS) + [2**64, 2**96 + 5]


def _numpy_states(entropy, prefix, tails, n_words):
    return np.array([np.random.SeedSequence(entropy, spawn_key=(*prefix, int(t))).generate_state(n_words, np.uint64)
                     for t in tails], np.uint64).reshape(len(tails), n_words)


PREFIXES = ((), (5,), (2**32,), (2**60 - 1, 3), (0, 2**64 - 1, 2**32 - 1))


@pytest.mark.parametrize("prefix", PREFIXES)
def test_episode_seed_table_is_numpys_seed_sequence(prefix):
    generator = np.random.default_rng(len(prefix))
    episodes = np.concatenate([np.arange(20), [2**32 - 1, 2**32, 2**40 + 3, np.iinfo(np.int64).max]]).astype(np.int64)
    for seed in _random_seeds(300, generator):
        assert np.array_equal(episode_seed_table(seed, episodes, prefix), _numpy_states(seed, prefix, episodes, 3))


def test_training_tables_are_numpys_seed_sequence():
    generator = np.random.default_rng(1)
    draws = np.array([4, 0, 9, 2])
    for seed in _random_seeds(300, generator):
        prefix = (int(generator.integers(0, 2**62)),)
        episode = int(generator.integers(0, 2**40))
        whole = np.random.SeedSequence([seed, TRAINING_BRANCH], spawn_key=(*prefix, episode)).generate_state(
            30, np.uint64).reshape(-1, 3)
        assert np.array_equal(training_seed_table(seed, episode, draws, prefix), whole[draws])
        passes = np.arange(6)
        assert np.array_equal(table_training_seed_table(seed, passes, prefix),
                              _numpy_states([seed, TABLE_BRANCH], prefix, passes, 3))


def test_spawn_keys_with_a_suffix_are_numpys():
    """A word after the per-episode one (a sweep group's agents: spawn key (cell, episode, group)) lands after
    the episode's one or two words."""
    generator = np.random.default_rng(2)
    episodes = np.array([0, 1, 2**32 - 1, 2**32, 2**50, 77], np.int64)
    for seed in _random_seeds(150, generator):
        cell, group = int(generator.integers(0, 2**60)), int(generator.integers(0, 2**60))
        expected = np.array([np.random.SeedSequence(seed, spawn_key=(cell, int(e), group)).generate_state(1, np.uint64)
                             for e in episodes], np.uint64)[:, 0]
        assert np.array_equal(group_agent_seeds(seed, cell, episodes, group), expected)
        suffix = (2**64 - 1, 0, 2**32)
        expected = np.array([np.random.SeedSequence([seed, 3], spawn_key=(int(e), *suffix)).generate_state(5, np.uint64)
                             for e in episodes], np.uint64)
        assert np.array_equal(keyed_seed_states([seed, 3], (), episodes, 5, suffix), expected)


def test_seed_tables_outside_the_twin_are_numpys():
    """Words the twin does not take go to NumPy: its numbers for unsigned tails, its error for negative ones."""
    tails = np.array([0, 2**63 + 1, 2**64 - 1], np.uint64)
    assert np.array_equal(episode_seed_table(3, tails), _numpy_states(3, (), tails, 3))
    assert episode_seed_table(3, np.arange(0)).shape == (0, 3)
    with pytest.raises(ValueError):
        episode_seed_table(-1, np.arange(2))
    with pytest.raises(ValueError):
        episode_seed_table(1, np.array([0, -2]))


GRIDS = ((2, 2), (3, 3), (2, 5), (5, 7), (10, 10), (17, 23), (40, 40))


def _group_sizes(n_cells: int) -> list[int]:
    if n_cells <= 40:
        return list(range(1, 2 * n_cells + 2))
    return [1, 2, 3, 10, n_cells // 2, n_cells - 1, n_cells, n_cells + 1, 2 * n_cells + 3]


@pytest.mark.parametrize("rows,cols", GRIDS)
def test_start_cell_table_is_numpys_default_rng(rows, cols):
    """Every branch (permutation, choice, integers) for group sizes 1..2n+1 against `start_cells` (NumPy)."""
    n_cells = rows * cols
    generator = np.random.default_rng(n_cells)
    seeds = np.array([s for s in _random_seeds(60, generator) if s < 2**64][:60] + list(EDGE_SEEDS), np.uint64)
    table = np.zeros((len(seeds), 3), np.uint64)
    table[:, START_SEED] = seeds
    for group_size in _group_sizes(n_cells):
        for nested in (False, True):
            expected = np.stack([start_cells(int(seed), n_cells, group_size, nested) for seed in seeds])
            twin = start_cell_table(table, n_cells, group_size, nested)
            assert twin.dtype == expected.dtype
            assert np.array_equal(twin, expected), (rows, cols, group_size, nested)


def test_start_cell_table_on_thousands_of_seeds():
    table = episode_seed_table(2016, np.arange(3000))
    for group_size, nested in ((10, False), (10, True), (100, False), (130, True)):
        expected = np.stack([start_cells(int(seed), 100, group_size, nested) for seed in table[:, START_SEED]])
        assert np.array_equal(start_cell_table(table, 100, group_size, nested), expected)


def test_start_cell_table_outside_the_twin_is_numpys():
    """Beyond TWIN_MAX_CELLS (where NumPy's choice may switch algorithm) the cells come from NumPy itself."""
    table = episode_seed_table(9, np.arange(3))
    n_cells = TWIN_MAX_CELLS + 1
    for group_size in (5, 400):
        expected = np.stack([start_cells(int(seed), n_cells, group_size) for seed in table[:, START_SEED]])
        assert np.array_equal(start_cell_table(table, n_cells, group_size), expected)
    assert start_cell_table(table[:0], 100, 4).shape == (0, 4)


def test_the_comparison_can_fail():
    """Negative control: the same check on the next seed's NumPy cells, or another episode's seeds, fails."""
    table = episode_seed_table(5, np.arange(50))
    shifted = table.copy()
    shifted[:, START_SEED] += np.uint64(1)
    assert not np.array_equal(start_cell_table(shifted, 100, 10), start_cell_table(table, 100, 10))
    assert not np.array_equal(episode_seed_table(5, np.arange(1, 51)), table)


def test_lemires_rejection_is_numpys():
    """Lemire's method rejects a draw with probability (2**32 mod n)/2**32: 9714 cells (2**32 mod 9714 = 9622)
    and 4 M draws make a few rejections, so a twin that skips or misplaces them differs from NumPy."""
    n_cells, group_size = 9714, 20_000
    assert 2**32 % n_cells == 9622
    table = episode_seed_table(11, np.arange(200))
    expected = np.stack([start_cells(int(seed), n_cells, group_size) for seed in table[:, START_SEED]])
    assert np.array_equal(start_cell_table(table, n_cells, group_size), expected)


def test_a_twin_that_parts_from_this_numpy_gives_way_to_numpy(monkeypatch):
    """NumPy does not promise its streams across versions (NEP 19): each process checks the twins once against
    the NumPy it runs with (known answer here: they agree), and a twin that parts from it (the control: start
    cells shifted by one, a seed state off by one) is not used: the tables are NumPy's own."""
    from collective.environments import lambda_star
    from collective.simulation import random_streams

    assert lambda_star.start_twin_agrees() and random_streams.seed_twin_agrees()
    real_cells, real_states = lambda_star.start_cell_rows, random_streams.seed_sequence_states
    monkeypatch.setattr(lambda_star, "start_cell_rows", lambda *args: (real_cells(*args) + 1) % args[1])
    monkeypatch.setattr(random_streams, "seed_sequence_states", lambda *args: real_states(*args) + np.uint64(1))
    # the checks afresh (each is cached once per process), now seeing the broken twins
    monkeypatch.setattr(lambda_star, "start_twin_agrees", functools.cache(lambda_star.start_twin_agrees.__wrapped__))
    monkeypatch.setattr(random_streams, "seed_twin_agrees",
                        functools.cache(random_streams.seed_twin_agrees.__wrapped__))
    assert not lambda_star.start_twin_agrees() and not random_streams.seed_twin_agrees()
    table = random_streams.episode_seed_table(3, np.arange(5), (2,))
    numpy_table = [np.random.SeedSequence(3, spawn_key=(2, e)).generate_state(3, np.uint64) for e in range(5)]
    np.testing.assert_array_equal(table, numpy_table)
    cells = lambda_star.start_cell_table(table, 100, 10, nested=True)
    np.testing.assert_array_equal(cells, [lambda_star.start_cells(int(s), 100, 10, True) for s in table[:, 1]])


def test_pairwise_sum_is_numpys_add_reduce():
    """`np.add.reduce` of float64 (and so `mean`) adds pairwise, not in order: the twin gives its sums to the
    bit on runs of every split depth (below 8, up to 128, halves cut at a multiple of 8, 20,000 terms), values
    over 16 orders of magnitude; control: the sum in order differs on most of them."""
    rng = np.random.default_rng(1)
    in_order_differs = 0
    for n in [*range(0, 300), *rng.integers(300, 20_001, 200).tolist()]:
        values = rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, size=n)
        assert pairwise_sum(values, n) == np.add.reduce(values), n
        in_order_differs += n > 8 and sum(values.tolist()) != np.add.reduce(values)
    assert in_order_differs > 300


@pytest.mark.parametrize("normalisation", ["optimum_one", "centre"])
def test_landscape_fields_are_numpys_draws(normalisation):
    """The compiled fields (`landscapes.field_rows`) against `landscape_field` with NumPy's own generator, row
    for row and bit for bit, over grids 1x1-20x20, 1-5 peaks, widths 0-2, deception and noise 0, 1 and between
    (noise draws a permutation of the other cells, none without), seeds of one and two words; a field whose
    peaks do not fit gives NumPy's error. Control: the next seed's fields differ."""
    assert field_twin_agrees()  # else landscape_fields would be NumPy's own below, and the test empty
    rng = np.random.default_rng(5 + len(normalisation))
    compared = 0
    for _ in range(150):
        rows, cols, peaks, width = (int(v) for v in (rng.integers(1, 21), rng.integers(1, 21), rng.integers(1, 6),
                                                     rng.integers(0, 3)))
        deception, noise = float(rng.choice([0.0, 1.0, rng.uniform()])), float(rng.choice([0.0, 1.0, rng.uniform()]))
        seeds = np.append(rng.integers(0, 2**64, size=3, dtype=np.uint64), np.uint64(rng.integers(0, 2**32)))
        try:
            expected = [landscape_field(np.random.default_rng([int(seed), FIELD_STREAM]), rows, cols, peaks, width,
                                        deception, noise=noise, normalisation=normalisation) for seed in seeds]
        except ValueError as error:
            with pytest.raises(ValueError, match=f"^{re.escape(str(error))}$"):
                landscape_fields(seeds, rows, cols, peaks, width, deception, noise, normalisation)
            continue
        fields, optimum = landscape_fields(seeds, rows, cols, peaks, width, deception, noise, normalisation)
        assert optimum.tolist() == [best for _, best in expected]
        assert np.array_equal(fields, np.stack([field for field, _ in expected]))
        shifted, _ = landscape_fields(seeds + np.uint64(1), rows, cols, peaks, width, deception, noise, normalisation)
        compared += rows * cols > 1 and not np.array_equal(shifted, fields)
    assert compared > 100
    with np.errstate(invalid="ignore"):  # optimum_one divides 0 by 0 on one cell: NaN
        one_cell = [landscape_field(np.random.default_rng([7, FIELD_STREAM]), 1, 1, 1, 0, 0.5, noise=0.0,
                                    normalisation=normalisation)[0]]
    assert np.array_equal(landscape_fields(np.array([7], np.uint64), 1, 1, 1, 0, 0.5, 0.0, normalisation)[0], one_cell,
                          equal_nan=True)


def test_a_field_twin_that_parts_from_this_numpy_gives_way_to_numpy(monkeypatch):
    """Control for the once-per-process check: a twin whose fields are off by a hair is found out, and the
    fields are then NumPy's own."""
    from collective.environments import landscapes

    real = landscapes.field_rows

    def off_by_a_hair(*args):
        unfit = real(*args)
        args[-2][:] = np.nextafter(args[-2], np.inf)
        return unfit

    monkeypatch.setattr(landscapes, "field_rows", off_by_a_hair)
    monkeypatch.setattr(landscapes, "field_twin_agrees", functools.cache(landscapes.field_twin_agrees.__wrapped__))
    assert not landscapes.field_twin_agrees()
    seeds = np.array([3, 2**40], np.uint64)
    fields, optimum = landscapes.landscape_fields(seeds, 6, 6, 2, 1, 0.5, 0.2, "centre")
    for row, seed in enumerate(seeds):
        field, best = landscape_field(np.random.default_rng([int(seed), FIELD_STREAM]), 6, 6, 2, 1, 0.5, noise=0.2,
                                      normalisation="centre")
        assert np.array_equal(fields[row], field) and optimum[row] == best
