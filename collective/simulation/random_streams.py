"""Randomness: the SeedSequence tree that keys every episode, and the splitmix64 stream kernels draw from.

Every number in an evaluation comes from `numpy.random.SeedSequence(seed, spawn_key=(..., episode))`,
so results depend only on the seed and the episode's index, never on batching or worker count.
Inside compiled kernels every (agent, pass) of an episode owns a splitmix64 stream (Steele, Lea &
Flood 2014, "Fast splittable pseudorandom number generators") seeded by `derive_stream_seed`, so
one agent's draws never depend on another's, nor on the order agents are simulated in.
`SplitMix64` is the same generator in plain Python for the reference simulator.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import njit

from collective.simulation.numpy_stream_twins import is_word_source, key_words, seed_sequence_states, spawn_words

_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1

# Columns of the per-episode seed table.
ENVIRONMENT_SEED, START_SEED, AGENT_SEED = 0, 1, 2


def episode_seed_table(seed: int, episodes: np.ndarray, prefix: tuple[int, ...] = ()) -> np.ndarray:
    """Seeds for the given episode indices, shape (episodes, 3): environment, start cells, agents.

    The tree is SeedSequence(seed) -> spawn_key (*prefix, episode); `prefix` lets a sweep key
    episodes by cell as well, so episode e of cell c always sees the same numbers.
    """
    return keyed_seed_states([seed], prefix, episodes, 3)


TRAINING_BRANCH = 0x7EA1  # entropy word that sets the learners' held-out training episodes apart


def training_seed_table(seed: int, episode: int, draws: np.ndarray, prefix: tuple[int, ...] = ()) -> np.ndarray:
    """Seeds of held-out training episodes `draws` of test episode `episode`, shape (draws, 3) as
    `episode_seed_table`'s: row d of the words of SeedSequence([seed, TRAINING_BRANCH],
    spawn_key=(*prefix, episode)), which a SeedSequence yields in sequence (row d never depends on
    how many are asked). A root of its own: no training episode's seeds are ever a test episode's
    (SeedSequence(seed, ...): numpy pads the entropy to four words before the spawn key, so the
    two differ in their second or third word) nor a sweep group's agents'
    (SeedSequence(seed, spawn_key=(cell, episode, group))), and the same for any batch split."""
    draws = np.asarray(draws, np.int64)
    if not len(draws):
        return np.empty((0, 3), np.uint64)
    words = keyed_seed_states([seed, TRAINING_BRANCH], prefix, np.array([episode]), 3 * (int(draws.max()) + 1))
    return words.reshape(-1, 3)[draws]


TABLE_BRANCH = 0x7EA2  # entropy word of the episodes a kept learner table trains on (`learner_training`)


def table_training_seed_table(seed: int, passes: np.ndarray, prefix: tuple[int, ...] = (), run: int = 0) -> np.ndarray:
    """Seeds of the given training passes of training run `run` of a kept learner table (`learner_training`
    pretrained or online; `training_runs`), shape (passes, 3) as `episode_seed_table`'s: row p is
    SeedSequence([seed, TABLE_BRANCH], spawn_key=(*prefix, p)) for run 0, the one run there was before runs were
    counted (so training_runs = 1 keeps its numbers), and spawn_key=(*prefix, p, run) for run >= 1: one branch
    per run, one set per evaluation or sweep cell, the same for any batch split or worker. A root of its own,
    like `training_seed_table`'s: never a test episode's seeds."""
    return keyed_seed_states([seed, TABLE_BRANCH], prefix, passes, 3, (run,) if run else ())


@functools.cache
def seed_twin_agrees() -> bool:
    """Whether the compiled twin gives this NumPy's SeedSequence states, checked once per process (one- and
    three-word entropies, prefixes and suffixes of large words): where it would differ, `keyed_seed_states`
    asks NumPy itself."""
    for entropy, prefix, suffix in (([0], (), ()), ([2**64 - 1, 0x7EA1], (2**40 + 3,), (9,)), ([12345], (1, 2), ())):
        tails = np.array([0, 7, 2**63 - 1], np.int64)
        twin = seed_sequence_states(spawn_words(entropy, prefix), tails, key_words(suffix), 3)
        if not np.array_equal(twin, _numpy_seed_states(entropy, prefix, tails, 3, suffix)):
            return False
    return True


def _numpy_seed_states(entropy: list[int], prefix: tuple[int, ...], tails, n_words: int,
                       suffix: tuple[int, ...]) -> np.ndarray:
    """`keyed_seed_states` by NumPy itself, one SeedSequence per row."""
    return np.array([np.random.SeedSequence(entropy if len(entropy) > 1 else entropy[0],
                                            spawn_key=(*prefix, int(tail), *suffix)).generate_state(n_words, np.uint64)
                     for tail in tails], np.uint64).reshape(len(tails), n_words)


def keyed_seed_states(entropy: list[int], prefix: tuple[int, ...], tails, n_words: int,
                      suffix: tuple[int, ...] = ()) -> np.ndarray:
    """(len(tails), n_words) uint64: row r is SeedSequence(entropy, spawn_key=(*prefix, tails[r], *suffix))
    .generate_state(n_words, uint64), by the compiled twin in one call (`numpy_stream_twins`); by NumPy
    itself for a word the twin does not take (a negative integer, a non-integer: NumPy's own error)."""
    tails = np.asarray(tails)
    covered = (all(is_word_source(value) for value in (*entropy, *prefix, *suffix)) and tails.ndim == 1
               and tails.dtype.kind in "ui" and (not len(tails) or 0 <= tails.min() <= tails.max() <= 2**63 - 1)
               and seed_twin_agrees())
    if not covered:
        return _numpy_seed_states(entropy, prefix, tails, n_words, suffix)
    return seed_sequence_states(spawn_words(entropy, prefix), tails.astype(np.int64), key_words(suffix), n_words)


@njit(cache=True)
def _mix64(z):
    """splitmix64's output function: a bijective avalanche of 64 bits."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def derive_stream_seed(episode_seed, stream_id, pass_index):
    """Seed of stream `stream_id` (0: the world, i+1: agent i) in pass `pass_index` (0: the
    scored pass, p+1: training pass p) of the episode whose agents' seed is `episode_seed`."""
    z = _mix64(episode_seed + np.uint64(stream_id + 1) * _GOLDEN_GAMMA)
    return _mix64(z + np.uint64(pass_index + 1) * _GOLDEN_GAMMA)


@njit(cache=True, inline="always")
def next_u64(stream):
    """Advance a splitmix64 stream (a uint64 array of shape (1,)) and return its next output."""
    stream[0] += _GOLDEN_GAMMA
    return _mix64(stream[0])


@njit(cache=True, inline="always")
def uniform_int(stream, n):
    """Uniform integer in [0, n) by 32-bit multiply-shift (Lemire 2019), n < 2**32."""
    return np.int64(((next_u64(stream) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True)
def advance_uniform_int(state, n):
    """(state', `uniform_int`'s draw) for a stream whose state is held in a local variable: the compiler
    keeps it in a register across a loop of draws, where an array's state goes through memory each time."""
    state = state + _GOLDEN_GAMMA
    return state, np.int64(((_mix64(state) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, inline="always")
def advance_uniform_float(state):
    """(state', a uniform float in [0, 1) from the top 53 bits) for a stream whose state is held in a
    local variable (as `advance_uniform_int`)."""
    state = state + _GOLDEN_GAMMA
    return state, np.float64(_mix64(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def skipped(state, count):
    """A stream state advanced past its next `count` outputs without computing them (each output is one
    step of its counter, so this is exact)."""
    return state + np.uint64(count) * _GOLDEN_GAMMA


def _mix64_python(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


class SplitMix64:
    """The kernels' stream in plain Python, for the reference simulator and tests."""

    @classmethod
    def for_stream(cls, episode_seed: int, stream_id: int, pass_index: int) -> "SplitMix64":
        """The stream `derive_stream_seed` seeds (same ids and pass indices)."""
        z = _mix64_python((int(episode_seed) + (stream_id + 1) * 0x9E3779B97F4A7C15) & _MASK64)
        return cls(_mix64_python((z + (pass_index + 1) * 0x9E3779B97F4A7C15) & _MASK64))

    def __init__(self, seed: int):
        self.state = int(seed) & _MASK64

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        return _mix64_python(self.state)

    def uniform_int(self, n: int) -> int:
        return ((self.next_u64() >> 32) * n) >> 32

    def uniform_float(self) -> float:
        return (self.next_u64() >> 11) * (1.0 / 9007199254740992.0)


class AgentStreams:
    """The agents' splitmix64 streams as NumPy lanes, for plug-ins: one lane per (episode, agent),
    the very streams the compiled built-ins draw from (`derive_stream_seed`), so a NumPy plug-in
    that draws as a built-in does reproduces it exactly, and no draw depends on the batch size.

    `lanes` is the stepping core's (E, group agents) uint64 state, shared; `agents` selects the
    plug-in's columns. Each draw advances the selected lanes (those of `where`, if given) by one."""

    def __init__(self, lanes: np.ndarray, agents: slice | np.ndarray):
        self._lanes, self._agents = lanes, agents

    def _advance(self, where: np.ndarray | None) -> np.ndarray:
        state = self._lanes[:, self._agents]
        if where is None:
            state += _GOLDEN_GAMMA
        else:
            state[where] += _GOLDEN_GAMMA
        self._lanes[:, self._agents] = state
        z = state.copy()
        z ^= z >> np.uint64(30)
        z *= _MIX_1
        z ^= z >> np.uint64(27)
        z *= _MIX_2
        z ^= z >> np.uint64(31)
        return z

    def integers(self, n, where: np.ndarray | None = None) -> np.ndarray:
        """(E, A) int64 uniform in [0, n) (n an int or an (E, A) array of counts < 2**32, Lemire's
        multiply-shift as `uniform_int`); lanes outside `where` do not advance (their value is
        meaningless)."""
        z = self._advance(where)
        return (((z >> np.uint64(32)) * np.asarray(n, np.uint64)) >> np.uint64(32)).astype(np.int64)

    def random(self, where: np.ndarray | None = None) -> np.ndarray:
        """(E, A) float64 uniform in [0, 1) from the top 53 bits, as `advance_uniform_float`."""
        return (self._advance(where) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
