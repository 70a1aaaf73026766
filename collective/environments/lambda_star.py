"""The Λ* environment class (spec §1-3, paper 003 §4.1-4.3): geometry, ⊕/⊖ trajectories and
agent start cells for a batch of episodes, ready for the simulator."""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np

from collective.environments.complexity import lz76_rows, search_space_entropy_bits
from collective.environments.patterns import (PatternGenerator, independent_evil, independent_pair_on_played_paths,
                                              index_shift_evil, pooled_patterns)
from collective.simulation.numpy_stream_twins import TWIN_MAX_CELLS, start_cell_rows
from collective.simulation.random_streams import AGENT_SEED, ENVIRONMENT_SEED, START_SEED

EVIL_PAIRINGS = ("index_shift", "independent")
# How H is recorded: "paper", log2 N(N-1) whatever the pairing (paper 003 §4.3); "pairing", the
# uncertainty the pairing leaves: log2 N when ⊖ is a function of ⊕ (index_shift), log2 N(N-1)
# when ⊖ is placed independently (issue 12 point 1).
ENTROPY_RULES = ("paper", "pairing")


@dataclass(frozen=True)
class LambdaStar:
    """One Λ* environment class: an m×n torus, its pattern generator and ⊖ pairing, a K range.
    With `k_on_played_paths`, an independent pair is kept only when both played paths (after
    collisions) have the target K (`independent_pair_on_played_paths`)."""

    rows: int
    cols: int
    iterations: int
    generator: PatternGenerator
    evil_pairing: str = "index_shift"
    k_min: int = 0
    k_max: int = np.iinfo(np.int32).max
    entropy_rule: str = "paper"
    k_on_played_paths: bool = False
    nested_starts: bool = False  # `start_cells`: a smaller group's start cells are a larger one's first
    pattern_pool: int = 0  # episodes per block whose draws are pooled (`generate` with `keep`); 0: each its own

    def __post_init__(self) -> None:
        if self.k_on_played_paths and not self.generator.k_on_positions:
            raise ValueError(f"the {self.generator.name} generator measures K off the positions it plays; "
                             "K on played paths needs the cyclic generator")

    @property
    def entropy_bits(self) -> float:
        """H(μ) in bits (paper 003 §4.3), by `entropy_rule` (see ENTROPY_RULES)."""
        determined = self.entropy_rule == "pairing" and self.evil_pairing == "index_shift"
        return search_space_entropy_bits(self.rows, self.cols, evil_determined=determined)

    def generate(self, seed_table: np.ndarray, group_size: int, keep: np.ndarray | None = None) -> "EnvironmentBatch":
        """Episodes for the rows of `seed_table` (see `random_streams.episode_seed_table`), each drawn from its
        own seeds; with `keep`, `seed_table` holds whole blocks of `pattern_pool` block-aligned episodes whose
        pattern draws are pooled (`patterns.pooled_patterns`), and the batch holds its rows `keep` only."""
        pooled = keep is not None and self.pattern_pool > 0
        if keep is not None and not pooled:
            seed_table, keep = seed_table[keep], None
        seeds = seed_table[:, ENVIRONMENT_SEED]
        pair_seeds = seeds ^ np.uint64(0xE71)
        played_pairs = self.evil_pairing == "independent" and self.k_on_played_paths
        evil_positions = None
        if pooled:
            good, evil_positions = pooled_patterns(self.generator, seeds, self.pattern_pool, self.rows, self.cols,
                                                   self.iterations, self.k_min, self.k_max,
                                                   pair_seeds if played_pairs else None, keep)
            seed_table, pair_seeds = seed_table[keep], pair_seeds[keep]
        else:
            good = self.generator.generate(seeds, self.rows, self.cols, self.iterations, self.k_min, self.k_max)
        if self.evil_pairing == "index_shift":  # no collisions: ⊕ plays as drawn
            good_positions, evil_positions = good.positions, index_shift_evil(good.positions, self.rows, self.cols)
        elif evil_positions is not None:  # pooled pairs whose played paths both have exactly good.k_raw
            good_positions = good.positions
        elif played_pairs:  # both played paths have exactly good.k_raw
            good_positions, evil_positions = independent_pair_on_played_paths(
                self.generator, good, pair_seeds, self.rows, self.cols, self.iterations)
        else:
            good_positions, evil_positions = independent_evil(
                self.generator, good, pair_seeds, self.rows, self.cols, self.iterations)
        return EnvironmentBatch(good_positions, evil_positions,
                                start_cell_table(seed_table, self.rows * self.cols, group_size, self.nested_starts),
                                seed_table[:, AGENT_SEED].copy(), good.k_raw, good.k_normalised,
                                k_evil=lz76_rows(evil_positions, self.iterations))


def start_cell_table(seed_table: np.ndarray, n_cells: int, group_size: int, nested: bool = False) -> np.ndarray:
    """(episodes, agents) start cells, one row per row of `seed_table`: `start_cells` of each start seed, by its
    compiled twin in one call (`numpy_stream_twins.start_cell_rows`, the same numbers) up to TWIN_MAX_CELLS."""
    seeds = seed_table[:, START_SEED]
    unsigned = seeds.dtype.kind == "u" or (seeds.dtype.kind == "i" and (seeds >= 0).all())
    if unsigned and 1 <= n_cells <= TWIN_MAX_CELLS and group_size >= 0 and start_twin_agrees():
        return start_cell_rows(seeds.astype(np.uint64), int(n_cells), int(group_size), bool(nested))
    rows = [start_cells(int(seed), n_cells, group_size, nested) for seed in seeds]
    return np.stack(rows) if rows else np.empty((0, group_size), np.int32)


@functools.cache
def start_twin_agrees() -> bool:
    """Whether the compiled twin gives this NumPy's start cells, checked once per process on each of
    `start_cells`' draws (permutation, choice, integers; Lemire's rejection at 9,714 cells): NumPy does not
    promise its Generator's streams across versions (NEP 19), and where the twin would differ
    `start_cell_table` asks NumPy itself."""
    seeds = np.array([0, 1, 2**32 + 7, 2**63 + 5, 2**64 - 1], np.uint64)
    for n_cells, group_size, nested in ((100, 10, True), (100, 10, False), (9, 12, False), (9714, 3, True)):
        twin = start_cell_rows(seeds, n_cells, group_size, nested)
        if any((twin[row] != start_cells(int(seed), n_cells, group_size, nested)).any()
               for row, seed in enumerate(seeds)):
            return False
    return True


def start_cells(seed: int, n_cells: int, group_size: int, nested: bool = False) -> np.ndarray:
    """Distinct uniform start cells when the group fits on the grid, else uniform (spec §1). `nested`
    (`paired_group_sizes`): the first cells of one uniform permutation of the grid, so that with the same
    seed agent i starts on the same cell in a group of any size (a paired group-size contrast)."""
    rng = np.random.default_rng(seed)
    if nested and group_size <= n_cells:
        return rng.permutation(n_cells)[:group_size].astype(np.int32)
    if group_size <= n_cells:
        return rng.choice(n_cells, size=group_size, replace=False).astype(np.int32)
    return rng.integers(0, n_cells, size=group_size).astype(np.int32)


@dataclass(frozen=True)
class EnvironmentBatch:
    """Everything the simulator needs for a batch of episodes."""

    good: np.ndarray  # (episodes, T+1) int32 ⊕ cells
    evil: np.ndarray  # (episodes, T+1) int32 ⊖ cells
    starts: np.ndarray  # (episodes, agents) int32 start cells
    agent_seeds: np.ndarray  # (episodes,) uint64 seeds of the agents' random streams
    k_raw: np.ndarray  # (episodes,) int32 LZ76 phrase count of ⊕'s pattern, as its generator measures it
    # (episodes,) float64 c·log2(L)/L (`evaluation.environments.generate_environments` rescales it)
    k_normalised: np.ndarray
    # Fitness landscapes only (collective.environments.landscapes); None for Λ*:
    landscapes: np.ndarray | None = None  # (episodes, cells) base fitness fields; ⊕ = the global optimum
    local_optima: np.ndarray | None = None  # (episodes,) strict local maxima of each field
    correlation_length: np.ndarray | None = None  # (episodes,) autocorrelation length, cells
    # Λ* only: (episodes,) int32 LZ76 phrase count of ⊖'s played path (its T positions, after collisions)
    k_evil: np.ndarray | None = None
    # (episodes,) float64 the ceiling of R̄ (`collective.environments.ceiling`); None until computed
    upsilon_best: np.ndarray | None = None
    # Learners' held-out training episodes (`learning_protocol` "held_out"), rows episode-major:
    # row e·n + j is training episode j of episode e; None when the learners replay the episode
    training: EnvironmentBatch | None = None
    # (episodes,) int64 the evaluation's episode indices (`evaluation.environments.generate_environments`); None
    # when unknown
    episode_index: np.ndarray | None = None
    # the seed prefix the batch was generated under (a sweep's cell): keys a kept learner table's training
    seed_prefix: tuple[int, ...] = ()

    def __len__(self) -> int:
        return self.good.shape[0]

    def episodes(self, start: int, stop: int) -> "EnvironmentBatch":
        """Rows [start, stop) with their training episodes, copied: arrays from Ray's object store are
        read-only, and read-only arrays would make numba compile (for ~30 s) a second simulator."""
        return self.take(np.arange(start, stop))

    def take(self, rows: np.ndarray) -> "EnvironmentBatch":
        """The given rows, in that order (repeats allowed), with their training episodes, copied (`episodes`)."""
        count = self.training_episodes

        def taken(name: str, values):
            if values is None or name == "seed_prefix":
                return values
            if name == "training":
                return values.take((rows[:, None] * count + np.arange(count)).ravel())
            return values[rows]  # a fancy index copies

        return EnvironmentBatch(**{field.name: taken(field.name, getattr(self, field.name)) for field in fields(self)})

    def view(self, start: int, stop: int) -> "EnvironmentBatch":
        """Rows [start, stop) with their training episodes, as views (`episodes` copies): a run of a
        C-contiguous array's rows is C-contiguous, so the kernel takes them as they are."""
        count = self.training_episodes

        def viewed(name: str, values):
            if values is None or name == "seed_prefix":
                return values
            if name == "training":
                return values.view(start * count, stop * count)
            return values[start:stop]

        return EnvironmentBatch(**{field.name: viewed(field.name, getattr(self, field.name)) for field in fields(self)})

    def split(self, parts: int) -> list["EnvironmentBatch"]:
        """The batch as `parts` runs of consecutive episodes (`view`s), their sizes differing by at most one."""
        edges = np.linspace(0, len(self), parts + 1).round().astype(np.int64)
        return [self.view(start, stop) for start, stop in zip(edges[:-1], edges[1:])]

    @property
    def training_episodes(self) -> int:
        """Held-out training episodes per episode (0: none)."""
        return len(self.training) // len(self) if self.training is not None and len(self) else 0

    def fields(self) -> np.ndarray:
        """The kernel's view: (episodes, cells) landscapes, or (episodes, 0) for Λ*, C-contiguous float64
        (a scene reads its field by address, `collective.environments.scene.FieldRef`; no copy when it is so)."""
        if self.landscapes is None:
            return np.empty((len(self), 0))
        return np.ascontiguousarray(self.landscapes, np.float64)
