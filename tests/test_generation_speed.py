"""The fast pattern generation (issue 25 point 2) draws exactly what the plain generator draws: the
cyclic draw that rejects early and draws a drifting segment's moves lazily against a plain Python
twin of paper 003 §4.2's draw, and the compiled ⊕/⊖ pair rounds against the batched rounds."""
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from collective.config import EvaluationConfig
from collective.environments.complexity import lz76_periodic_at_most, lz76_phrase_count, lz76_phrase_count_at_most
from collective.environments.patterns import CyclicPatternGenerator, StratifiedComplexity, _pair_rounds
from collective.environments.torus import wrap
from collective.evaluate import (batch_episodes, batch_indices, batches_ahead, evaluate, generate_environments,
                                 prepared_environments, ramps, with_ceiling)
from collective.simulation.random_streams import SplitMix64


def plain_cyclic_draw(stream: SplitMix64, rows: int, cols: int, iterations: int, max_segment: int):
    """Paper 003 §4.2, eagerly: every random number of the draw first, then the whole walk, then
    K on its T positions."""
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


def plain_generate(seed: int, rows: int, cols: int, iterations: int, k_low: int, k_high: int, max_segment: int):
    stream = SplitMix64(seed)
    while True:
        path, k = plain_cyclic_draw(stream, rows, cols, iterations, max_segment)
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


@dataclass(frozen=True)
class OpaqueCyclic:
    """The cyclic generator behind an object the compiled pair rounds do not recognise, so that
    `_pair_rounds` plays its batched rounds."""

    inner: CyclicPatternGenerator
    name: ClassVar[str] = "opaque"
    k_on_positions: ClassVar[bool] = True

    def generate(self, *args):
        return self.inner.generate(*args)


@pytest.mark.parametrize("side, iterations, cap", [(5, 50, "half_T"), (4, 40, "k_max")])
def test_compiled_pair_rounds_are_the_batched_rounds(side, iterations, cap):
    generator = CyclicPatternGenerator(cap)
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
    generation is never hidden behind play), and the ramp changes no number."""
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=3, rows=6, cols=6,
                                           iterations=30, episodes=1000)
    monkeypatch.setattr("collective.evaluate.TARGET_AGENT_STEPS_PER_BATCH", 3 * 30 * 400)  # batches of 400
    size = batch_episodes(config)
    assert size < config.episodes, "one batch: nothing to ramp"
    prepared = []

    def recording(config, episodes):
        prepared.append(len(episodes))
        return prepared_environments(config, episodes)

    monkeypatch.setattr("collective.evaluate.prepared_environments", recording)
    ramped = evaluate(config)
    assert prepared[0] <= size // 8 and sum(prepared) == config.episodes
    assert prepared == [len(batch) for batch in batch_indices(config.episodes, size, ramp=True)]
    fixed = evaluate(config, batch_size=size)
    assert ramped.estimate.upsilon == pytest.approx(fixed.estimate.upsilon, abs=1e-12)
    assert ramped.upsilon_best == pytest.approx(fixed.upsilon_best, abs=1e-12)


def test_online_learners_and_plugin_batches_keep_full_batches():
    online = EvaluationConfig.from_profile("sound", behaviour="q_learning", group_size=2, learner_training="online")
    assert ramps(EvaluationConfig.from_profile("sound", behaviour="q_learning", group_size=2))
    assert not ramps(online)
    assert [len(b) for b in batch_indices(10, 4)] == [4, 4, 2]
    assert [len(b) for b in batch_indices(100, 32, ramp=True)] == [4, 8, 16, 32, 32, 8]
