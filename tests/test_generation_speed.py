"""The fast pattern generation (issue 25 point 2) draws exactly what the plain generator draws: the
cyclic draw that rejects early and draws a drifting segment's moves lazily against a plain Python
twin of paper 003 §4.2's draw, and the compiled ⊕/⊖ pair rounds against the batched rounds."""
import math
import threading
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from collective.config import EvaluationConfig
from collective.environments.complexity import lz76_periodic_at_most, lz76_phrase_count, lz76_phrase_count_at_most
from collective.environments.patterns import (LAZY_SHUFFLE_ABOVE, CyclicPatternGenerator, StratifiedComplexity,
                                              _pair_rounds)
from collective.environments.torus import wrap
from collective.evaluate import evaluate
from collective.evaluation.batches import batch_episodes, batch_indices, batches_ahead, ramps
from collective.evaluation.environments import generate_environments, prepared_environments, with_ceiling
from collective.simulation.random_streams import SplitMix64


def plain_cyclic_draw(stream: SplitMix64, rows: int, cols: int, iterations: int, max_segment: int,
                      lazy: bool = False):
    """Paper 003 §4.2, eagerly: every random number of the draw first, then the whole walk, then
    K on its T positions. With `lazy`, a closed segment of more than LAZY_SHUFFLE_ABOVE moves is
    shuffled from its start (Fisher-Yates forward), from the same draws."""
    segment = 1 + stream.uniform_int(max_segment)
    if stream.uniform_int(2) == 0:
        moves = [stream.uniform_int(9) for _ in range(segment)]
    else:
        moves = []
        for _ in range(segment // 2):
            move = stream.uniform_int(9)
            moves += [move, 8 - move]
        if segment % 2:
            moves.append(4)
        if lazy and segment > LAZY_SHUFFLE_ABOVE:
            for t in range(segment - 1):
                j = t + stream.uniform_int(segment - t)
                moves[t], moves[j] = moves[j], moves[t]
        else:
            for i in range(segment - 1, 0, -1):
                j = stream.uniform_int(i + 1)
                moves[i], moves[j] = moves[j], moves[i]
    cell = stream.uniform_int(rows * cols)
    r, c = divmod(cell, cols)
    path = [cell]
    for t in range(iterations):
        action = moves[t % segment]
        r, c = wrap(r + action // 3 - 1, rows), wrap(c + action % 3 - 1, cols)
        path.append(r * cols + c)
    return path, int(lz76_phrase_count(np.array(path[:iterations], np.int64)))


def plain_generate(seed: int, rows: int, cols: int, iterations: int, k_low: int, k_high: int, max_segment: int,
                   lazy: bool = False):
    stream = SplitMix64(seed)
    while True:
        path, k = plain_cyclic_draw(stream, rows, cols, iterations, max_segment, lazy)
        if k_low <= k <= k_high:
            return path, k


@pytest.mark.parametrize("rows, cols, iterations, k_low, k_high, cap", [
    (7, 9, 60, 3, 15, "k_max"), (7, 9, 60, 3, 15, "half_T"), (10, 10, 200, 5, 5, "half_T"),
    (10, 10, 200, 20, 20, "half_T")])
def test_cyclic_draws_are_the_plain_generators_draws(rows, cols, iterations, k_low, k_high, cap):
    seeds = np.random.SeedSequence(25).generate_state(6, dtype=np.uint64)
    batch = CyclicPatternGenerator(cap).generate(seeds, rows, cols, iterations, k_low, k_high)
    max_segment = max(1, min(iterations // 2, k_high) if cap == "k_max" else iterations // 2)
    for e, seed in enumerate(seeds):
        path, k = plain_generate(int(seed), rows, cols, iterations, k_low, k_high, max_segment)
        assert batch.positions[e].tolist() == path
        assert batch.k_raw[e] == k


@pytest.mark.parametrize("rows, cols, iterations, k_low, k_high", [(4, 5, 300, 2, 60), (3, 3, 280, 2, 12)])
def test_lazily_shuffled_draws_are_the_plain_forward_shuffles(rows, cols, iterations, k_low, k_high):
    seeds = np.random.SeedSequence(2526).generate_state(5, dtype=np.uint64)
    batch = CyclicPatternGenerator("half_T", lazy_shuffle=True).generate(seeds, rows, cols, iterations, k_low, k_high)
    for e, seed in enumerate(seeds):
        path, k = plain_generate(int(seed), rows, cols, iterations, k_low, k_high, iterations // 2, lazy=True)
        assert batch.positions[e].tolist() == path
        assert batch.k_raw[e] == k


def test_the_lazy_shuffle_draws_nothing_new_up_to_its_threshold():
    """Segments of at most LAZY_SHUFFLE_ABOVE moves are shuffled whole either way: at T = 200 the
    patterns are the default's, bit for bit."""
    seeds = np.random.SeedSequence(2527).generate_state(40, dtype=np.uint64)
    whole, lazy = (CyclicPatternGenerator("half_T", flag).generate(seeds, 10, 10, 2 * LAZY_SHUFFLE_ABOVE + 1, 2, 23)
                   for flag in (False, True))
    assert np.array_equal(whole.positions, lazy.positions)


PERIOD_ROWS = PERIOD_COLS = 5
PERIOD_T = 300


def _long_closed_loops(positions: np.ndarray) -> np.ndarray:
    """The trajectories (rows of T+1 cells) whose smallest period lies in LAZY_SHUFFLE_ABOVE+1..T/2:
    mostly closed segments of that many moves, the ones the lazy shuffle draws (and a few drifting
    segments of a fifth of it, which drift back to their start after 5 segments on the 5x5 torus)."""
    cells = positions[:, :PERIOD_T]

    def periodic(rows: np.ndarray, periods: range) -> np.ndarray:
        return np.any([(rows[:, p:] == rows[:, :-p]).all(axis=1) for p in periods], axis=0)

    long = periodic(cells, range(LAZY_SHUFFLE_ABOVE + 1, PERIOD_T // 2 + 1))
    long[long] = ~periodic(cells[long], range(1, LAZY_SHUFFLE_ABOVE + 1))
    return positions[long]


def _loop_statistics(paths: np.ndarray) -> list[np.ndarray]:
    """Per trajectory: its K on T positions, its distinct cells, and its first move (0..8)."""
    k = np.array([lz76_phrase_count(row[:PERIOD_T].astype(np.int64)) for row in paths])
    distinct = np.array([len(np.unique(row[:PERIOD_T])) for row in paths])
    r, c = np.divmod(paths[:, :2].astype(np.int64), PERIOD_COLS)
    first = ((r[:, 1] - r[:, 0] + 1) % PERIOD_ROWS) * 3 + (c[:, 1] - c[:, 0] + 1) % PERIOD_COLS
    return [k, distinct, first]


def _same_distribution_p(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest p value over the statistics of `_loop_statistics` of a chi-square test of homogeneity
    (bins of the pooled values, sparse ones merged until each expects >= 5 per sample)."""
    p_values = []
    for x, y in zip(_loop_statistics(a), _loop_statistics(b)):
        values, counts = np.unique(np.concatenate([x, y]), return_counts=True)
        edges, total = [values[0]], 0
        for value, count in zip(values, counts):
            total += count
            if total >= 10 * len(np.concatenate([x, y])) / min(len(x), len(y)):
                edges.append(value + 1)
                total = 0
        edges[-1] = values[-1] + 1
        table = np.array([np.histogram(x, edges)[0], np.histogram(y, edges)[0]])
        table = table[:, table.sum(axis=0) > 0]
        p_values.append(stats.chi2_contingency(table).pvalue)
    return min(p_values)


def _python_long_loops(draws: int, window: int | None, seed: int) -> np.ndarray:
    """`_long_closed_loops` of `draws` cyclic draws (paper 003 §4.2, segments of 1..T/2 moves) on the 5x5
    torus in plain Python, closed segments shuffled forward over every later position (window None:
    uniform) or only the next `window` ones (a local shuffle, deliberately biased: moves stay near
    their opposites). A path's period is a multiple of its segment's (the segment's, or 5 times it
    when the segment does not come back to its start, on the 5x5 torus): draws whose period cannot
    lie in the range are not walked."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(draws):
        segment = int(rng.integers(1, PERIOD_T // 2 + 1))
        if rng.integers(0, 2) == 0:
            moves = [int(move) for move in rng.integers(0, 9, segment)]
        else:
            moves = []
            for move in rng.integers(0, 9, segment // 2):
                moves += [int(move), 8 - int(move)]
            moves += [4] * (segment % 2)
            if segment > LAZY_SHUFFLE_ABOVE:
                for t, u in enumerate(rng.random(segment - 1)):
                    j = t + int(u * (segment - t if window is None else min(window, segment - t)))
                    moves[t], moves[j] = moves[j], moves[t]
        start = int(rng.integers(0, PERIOD_ROWS * PERIOD_COLS))
        back = sum(m // 3 - 1 for m in moves) % PERIOD_ROWS == 0 and sum(m % 3 - 1 for m in moves) % PERIOD_COLS == 0
        if not LAZY_SHUFFLE_ABOVE < segment * (1 if back else 5) <= PERIOD_T // 2:  # 5 segments: back on 5x5
            continue
        r, c = divmod(start, PERIOD_COLS)
        path = [start]
        for t in range(PERIOD_T):
            move = moves[t % segment]
            r, c = (r + move // 3 - 1) % PERIOD_ROWS, (c + move % 3 - 1) % PERIOD_COLS
            path.append(r * PERIOD_COLS + c)
        rows.append(path)
    return _long_closed_loops(np.array(rows))


def test_the_lazy_shuffle_draws_the_distribution_of_the_whole_shuffle():
    """The lazily shuffled long closed loops against the default whole shuffle's, from the same
    generator (no K range), on disjoint seeds so that the two samples are independent (from the same seeds
    they would share segment lengths and start cells, which makes the test conservative): K, distinct cells
    and first move agree (chi-square, p > 0.001), as do a plain uniform forward shuffle's; a deliberately
    biased shuffle (each move swapped with one of the next 2 only) is told apart (p < 1e-9): the test can fail."""
    whole, lazy = (_long_closed_loops(CyclicPatternGenerator("half_T", flag).generate(
        np.random.SeedSequence(entropy).generate_state(60_000, dtype=np.uint64), PERIOD_ROWS, PERIOD_COLS,
        PERIOD_T, 0, np.iinfo(np.int32).max).positions) for entropy, flag in ((2528, False), (2529, True)))
    assert min(len(whole), len(lazy)) > 2000
    assert not np.array_equal(whole[:100], lazy[:100]), "the lazy shuffle drew the same patterns: nothing tested"
    assert _same_distribution_p(whole, lazy) > 1e-3
    assert _same_distribution_p(whole, _python_long_loops(30_000, None, 1)) > 1e-3
    assert _same_distribution_p(whole, _python_long_loops(30_000, 2, 2)) < 1e-9


@dataclass(frozen=True)
class OpaqueCyclic:
    """The cyclic generator behind an object the compiled pair rounds do not recognise, so that
    `_pair_rounds` plays its batched rounds."""

    inner: CyclicPatternGenerator
    name: ClassVar[str] = "opaque"
    k_on_positions: ClassVar[bool] = True

    def generate(self, *args):
        return self.inner.generate(*args)


@pytest.mark.parametrize("side, iterations, cap, lazy", [(5, 50, "half_T", False), (4, 40, "k_max", False),
                                                        (5, 300, "half_T", True)])
def test_compiled_pair_rounds_are_the_batched_rounds(side, iterations, cap, lazy):
    generator = CyclicPatternGenerator(cap, lazy)
    target = np.repeat(np.arange(3, 15), 4).astype(np.int64)
    seeds = np.random.SeedSequence(2025).generate_state(len(target), dtype=np.uint64)
    first = generator.generate(seeds, side, side, iterations, target, target).positions
    compiled = _pair_rounds(StratifiedComplexity(generator), first, target, seeds, side, side, iterations, 2)
    batched = _pair_rounds(OpaqueCyclic(generator), first, target, seeds, side, side, iterations, 2)
    assert len(batched[2]) > 0, "no episode left unpaired: the comparison would not cover that case"
    assert np.array_equal(compiled[2], batched[2])
    paired = np.setdiff1d(np.arange(len(target)), batched[2])
    assert np.array_equal(compiled[0][paired], batched[0][paired])
    assert np.array_equal(compiled[1][paired], batched[1][paired])


def test_phrase_count_is_at_least_the_distinct_symbols():
    """What the early rejection rests on: each first occurrence of a symbol ends an LZ76 phrase."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        sequence = rng.integers(0, rng.integers(2, 60), size=rng.integers(1, 120))
        assert lz76_phrase_count(sequence.astype(np.int64)) >= len(np.unique(sequence))


def test_batches_generated_ahead_are_the_batches_in_turn():
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=3, rows=6, cols=6,
                                           iterations=30, episodes=50)
    batches = list(batches_ahead(config, 16))
    assert [episodes.tolist() for episodes, _, _ in batches] == [list(range(f, min(f + 16, 50)))
                                                               for f in range(0, 50, 16)]
    for episodes, environments, waited in batches:
        alone = with_ceiling(config, generate_environments(config, episodes))
        assert waited >= 0
        for name in ("good", "evil", "starts", "agent_seeds", "k_raw", "upsilon_best"):
            assert np.array_equal(getattr(environments, name), getattr(alone, name)), name


def test_closing_the_batches_ahead_waits_for_the_threads_still_preparing():
    """A preparing thread alive when the interpreter finalises can abort the process (SIGABRT) as it comes back
    from compiled code for the GIL: a caller that stops early (an error, Ctrl-C) leaves none behind."""
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=10, rows=10, cols=10,
                                           iterations=200, episodes=40_000)
    batches = batches_ahead(config, 8_000)  # ~0.2-0.5 s to prepare each of the batches ahead
    next(batches)
    batches.close()
    assert not [thread for thread in threading.enumerate() if thread.name == "collective-generation"]


def test_an_evaluation_played_a_batch_ahead_does_not_depend_on_the_batch_size():
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=3, rows=6, cols=6,
                                           iterations=30, episodes=60)
    whole, split = evaluate(config, batch_size=60), evaluate(config, batch_size=13)
    assert split.estimate.upsilon == pytest.approx(whole.estimate.upsilon, abs=1e-12)
    assert split.upsilon_best == pytest.approx(whole.upsilon_best, abs=1e-12)
    assert split.k_evil_mean == whole.k_evil_mean


def test_periodic_phrase_count_is_the_phrase_count_of_the_whole_sequence():
    """`lz76_periodic_at_most` reads two periods of a periodic sequence and must count exactly what
    `lz76_phrase_count_at_most` counts on all of it, at every limit: periods 1..40 over few and many
    symbols, lengths just above a period to 200 (a cyclic pattern back at its start is such a sequence)."""
    rng = np.random.default_rng(2511)
    for _ in range(3000):
        period = int(rng.integers(1, 41))
        length = int(rng.integers(period + 1, 201))
        first = rng.integers(0, rng.integers(1, 12), size=period)
        whole = np.resize(first, length).astype(np.int64)
        limit = int(rng.integers(1, 30))
        two_periods = np.full(length + 1, -1, np.int64)  # what lies beyond two periods must not be read
        two_periods[:min(length, 2 * period)] = whole[:2 * period]
        assert lz76_periodic_at_most(two_periods, period, length, limit) == lz76_phrase_count_at_most(whole, limit)


def test_an_evaluation_starts_with_a_small_batch_and_plays_the_same_episodes(monkeypatch):
    """Play starts after the generation of 1/8 of a batch, not of a whole one (the first batch's
    generation is never hidden behind play), and the ramp changes no number, to the last bit (every
    float the result reports is summed exactly; a plain per-batch sum differs in its last bits)."""
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=3, rows=6, cols=6,
                                           iterations=30, episodes=6000, protocol="wisdom")
    monkeypatch.setattr("collective.evaluation.batches.TARGET_AGENT_STEPS_PER_BATCH",
                        3 * 30 * 4200)  # 8 pool blocks a batch
    size = batch_episodes(config)
    assert size < config.episodes, "one batch: nothing to ramp"
    prepared = []

    def recording(config, episodes, *stopping):
        prepared.append(len(episodes))
        return prepared_environments(config, episodes, *stopping)

    monkeypatch.setattr("collective.evaluation.batches.prepared_environments", recording)
    ramped = evaluate(config)
    assert prepared[0] <= size // 8 and sum(prepared) == config.episodes
    assert prepared == [len(batch) for batch in batch_indices(config.episodes, size, True, config.pattern_pool)]
    fixed = evaluate(config, batch_size=size)
    timings = {"wall_seconds", "kernel_seconds", "compile_seconds", "generation_wait_seconds"}
    for field in fields(ramped):
        if field.name not in timings:
            assert getattr(ramped, field.name) == getattr(fixed, field.name), field.name
    assert not math.isnan(ramped.message_entropy_bits)  # the communication sums are compared too


def test_online_learners_and_plugins_keep_full_batches():
    """A plug-in protocol's messages are counted per call (per batch), a persistent plug-in learns from
    batch to batch: the stepping core keeps full batches."""
    online = EvaluationConfig.from_profile("sound", behaviour="q_learning", group_size=2, learner_training="online")
    persistent = EvaluationConfig.from_profile("sound", behaviour="examples.numpy_window_q:WindowQ", group_size=2)
    assert ramps(EvaluationConfig.from_profile("sound", behaviour="q_learning", group_size=2))
    assert not ramps(online) and not ramps(persistent)
    assert not ramps(EvaluationConfig.from_profile("sound", behaviour="examples.numpy_local_search:LocalSearch"))
    assert [len(b) for b in batch_indices(10, 4)] == [4, 4, 2]
    assert [len(b) for b in batch_indices(100, 32, ramp=True)] == [4, 8, 16, 32, 32, 8]


def test_a_ramp_goes_in_whole_pool_blocks():
    """With pool blocks of 16 episodes dividing the batch size, the ramp starts at one whole block (1/8 of a
    batch would cut one) and every edge is a block edge; a granule that does not divide the size is ignored."""
    assert [len(b) for b in batch_indices(300, 96, True, 16)] == [16, 32, 64, 96, 92]
    assert [len(b) for b in batch_indices(300, 256, True, 16)] == [32, 64, 128, 76]
    assert [len(b) for b in batch_indices(100, 30, True, 16)] == [3, 6, 12, 24, 30, 25]
