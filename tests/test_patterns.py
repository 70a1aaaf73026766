"""Movement patterns and pairings (spec §2, paper 003 §4.2)."""
import numpy as np
import pytest

from collective.environments.complexity import lz76, lz76_phrase_count
from collective.environments.patterns import (CyclicPatternGenerator, PingPongPatternGenerator, _resolve_collisions,
                                              independent_evil, index_shift_evil, reachable_k)
from collective.simulation.random_streams import SplitMix64
from collective.simulation.reference import ReferenceWorld

SEEDS = np.random.SeedSequence(2024).generate_state(300, dtype=np.uint64)
UNBOUNDED = (0, 10**9)


def steps_are_king_moves(positions, rows, cols):
    world = ReferenceWorld(rows, cols, 1)
    return all(world.distance(int(a), int(b)) <= 1 for row in positions for a, b in zip(row[:-1], row[1:]))


@pytest.mark.parametrize("rows, cols", [(10, 10), (7, 12)])
def test_cyclic_patterns_repeat_a_short_segment_of_king_moves(rows, cols):
    T = 60
    batch = CyclicPatternGenerator().generate(SEEDS, rows, cols, T, *UNBOUNDED)
    assert batch.positions.shape == (len(SEEDS), T + 1)
    assert steps_are_king_moves(batch.positions, rows, cols)
    for row, k in zip(batch.positions, batch.k_raw):
        # moves as (dr, dc) modulo the grid; some period <= T/2 must repeat them exactly
        r, c = np.divmod(row.astype(int), cols)
        moves = list(zip(np.diff(r) % rows, np.diff(c) % cols))
        assert any(moves[p:] == moves[:-p] for p in range(1, T // 2 + 1))
        assert k == lz76_phrase_count(row[:T].astype(np.int64))


def test_paper_example_complexity_is_recorded_on_T_positions():
    """Paper 003 §4.2 example: 7,3,4,9,8 repeated to ϑ = 20; LZ76 counts 6 phrases."""
    assert lz76([7, 3, 4, 9, 8] * 4).raw == 6


@pytest.mark.parametrize("k_min, k_max", [(2, 2), (8, 8), (5, 12), (23, 23), (40, 60)])
def test_cyclic_delivers_requested_complexity(k_min, k_max):
    batch = CyclicPatternGenerator().generate(SEEDS[:40], 10, 10, 200, k_min, k_max)
    assert ((batch.k_raw >= k_min) & (batch.k_raw <= k_max)).all()
    recomputed = [lz76_phrase_count(row[:200].astype(np.int64)) for row in batch.positions]
    assert list(batch.k_raw) == recomputed


def test_cyclic_reaches_every_k_from_2_to_40_on_10x10():
    assert set(range(2, 41)) <= set(reachable_k(CyclicPatternGenerator(), 10, 10, 200).tolist())


def test_unreachable_complexity_is_an_error():
    with pytest.raises(ValueError, match="no pattern"):
        CyclicPatternGenerator().generate(SEEDS[:2], 5, 5, 4, 30, 40)


def test_ping_pong_plays_a_walk_back_and_forth():
    """Spec §2: walk of n + U{0..n-1} cells, then reversed, forward again...; K on the base walk."""
    n, T = 10, 200
    batch = PingPongPatternGenerator().generate(SEEDS, n, n, T, *UNBOUNDED)
    assert steps_are_king_moves(batch.positions, n, n)
    lengths = []
    for row, k in zip(batch.positions, batch.k_raw):
        # the walk length L is the first index where the sequence mirrors itself: row[L] == row[L-1]...
        candidates = [L for L in range(n, 2 * n) if np.array_equal(row[L:2 * L], row[:L][::-1])]
        assert candidates, "no mirrored playback found"
        L = candidates[0]
        lengths.append(L)
        assert np.array_equal(row[2 * L:3 * L], row[:L][: len(row[2 * L:3 * L])])
        assert k == lz76_phrase_count(row[:L].astype(np.int64))
    assert min(lengths) == n and max(lengths) == 2 * n - 1  # U{0..n-1} spans its range over 300 draws


def test_index_shift_pairing_keeps_k_and_antisymmetry():
    rows, cols = 10, 10
    good = CyclicPatternGenerator().generate(SEEDS[:50], rows, cols, 100, *UNBOUNDED)
    evil = index_shift_evil(good.positions, rows, cols)
    assert np.array_equal((evil - good.positions) % 100, np.full(evil.shape, 34))  # ⌊100/3⌋ + 1
    for g, e in zip(good.positions, evil):
        assert lz76(g[:100]).raw == lz76(e[:100]).raw


def test_independent_pairing_never_shares_a_cell_and_has_equal_k():
    rows, cols, T = 6, 6, 80
    generator = CyclicPatternGenerator()
    good = generator.generate(SEEDS[:60], rows, cols, T, 3, 15)
    good_positions, evil = independent_evil(generator, good, SEEDS[60:120], rows, cols, T)
    assert not (good_positions == evil).any()
    assert steps_are_king_moves(good_positions, rows, cols) and steps_are_king_moves(evil, rows, cols)
    untouched = 0
    for e in range(60):
        plan = generator.generate(SEEDS[60 + e:61 + e], rows, cols, T, int(good.k_raw[e]), int(good.k_raw[e]))
        if plan.positions[0, 0] == good.positions[e, 0]:
            continue  # independent_evil re-drew this one from another seed
        assert plan.k_raw[0] == good.k_raw[e]  # ⊖ is planned exactly as complex as ⊕ (§2)
        if np.array_equal(plan.positions[0], evil[e]) and np.array_equal(good.positions[e], good_positions[e]):
            untouched += 1
            assert lz76(evil[e, :T]).raw == lz76(good_positions[e, :T]).raw
    assert 0 < untouched < 60, "on a small grid some but not all episodes see a collision"


def _python_collisions(good: list[int], evil: list[int], rows: int, cols: int, coin: SplitMix64) -> tuple[list, list]:
    """Paper 003 §4.1.1 replayed step by step from the start, as plainly as it reads: each object tries its planned
    king move; when both would enter one cell, a still object keeps its cell and the mover waits, else a fair coin
    (0: ⊕) picks the one that waits."""
    def move(a: int, b: int, size: int) -> int:
        d = (b - a) % size
        return -1 if d == size - 1 else d

    g, e = [divmod(good[0], cols)], [divmod(evil[0], cols)]
    for t in range(1, len(good)):
        (gr, gc), (er, ec) = g[-1], e[-1]
        dg = (move(good[t - 1] // cols, good[t] // cols, rows), move(good[t - 1] % cols, good[t] % cols, cols))
        de = (move(evil[t - 1] // cols, evil[t] // cols, rows), move(evil[t - 1] % cols, evil[t] % cols, cols))
        new_g, new_e = ((gr + dg[0]) % rows, (gc + dg[1]) % cols), ((er + de[0]) % rows, (ec + de[1]) % cols)
        if new_g == new_e:
            if dg == (0, 0):
                new_e = (er, ec)
            elif de == (0, 0) or coin.uniform_int(2) == 0:
                new_g = (gr, gc)
            else:
                new_e = (er, ec)
        g.append(new_g)
        e.append(new_e)
    return [r * cols + c for r, c in g], [r * cols + c for r, c in e]


@pytest.mark.parametrize("rows, cols", [(1, 5), (2, 2), (2, 3), (3, 3), (4, 6), (6, 6)])
def test_collisions_are_the_rule_replayed_from_the_start(rows, cols):
    """`_resolve_collisions` starts its replay where the plans first meet and divides each cell out once: the
    paths must be those of the rule replayed from the first step (random king-move plans on small tori, where
    the objects meet often, wait, and meet again)."""
    rng = np.random.default_rng(rows * 100 + cols)
    episodes, length = 150, 40
    plans = np.empty((2, episodes, length), np.int32)
    for which in range(2):
        r, c = rng.integers(0, rows, episodes), rng.integers(0, cols, episodes)
        for t in range(length):
            plans[which, :, t] = r * cols + c
            r, c = (r + rng.integers(-1, 2, episodes)) % rows, (c + rng.integers(-1, 2, episodes)) % cols
    apart = plans[0, :, 0] != plans[1, :, 0]
    good, evil = plans[0][apart].copy(), plans[1][apart].copy()
    seeds = rng.integers(0, 2**63, len(good), dtype=np.uint64)
    _resolve_collisions(good, evil, rows, cols, seeds.copy())
    changed = 0
    for e in range(len(good)):
        expected = _python_collisions(plans[0][apart][e].tolist(), plans[1][apart][e].tolist(), rows, cols,
                                      SplitMix64(int(seeds[e])))
        assert good[e].tolist() == expected[0] and evil[e].tolist() == expected[1], e
        changed += not np.array_equal(good[e], plans[0][apart][e])
    assert changed > 10, "few collisions: the comparison would not cover the replay"
