"""The statistics: how many episodes, from which seed, how Υ is estimated from them, and whether group sizes are
compared on paired episodes; the fields and their validation."""
from __future__ import annotations

from dataclasses import dataclass

from collective.analysis.scores import LEGG_HUTTER_ESTIMATORS
from collective.config.checks import ConfigError, require_bool, require_choice, require_int
from collective.environments.pattern_probability import pattern_probability_unavailable

SEED_MAX = 2**63 - 1


@dataclass(frozen=True)
class StatisticsSection:
    """The sample the scores are estimated from, and the estimator."""
    episodes: int = 1000
    seed: int = 0
    # Legg-Hutter Υ (paper 001; `collective.analysis.scores`): "sampled_phrases" = Σ 2^-c R̄ / Σ 2^-c over the
    # sampled episodes, c in LZ76 phrases (spec §4 literally; not an estimator of paper 001's sum);
    # "importance_bits" = K in Lempel-Ziv code bits, episodes weighted by 2^-K / the pattern's probability
    legg_hutter_estimator: str = "sampled_phrases"
    # Group-size contrasts paired (issue 22 point 8): start cells are the first cells of one permutation of
    # the grid, so with the same seed agent i starts on the same cell in a group of any size
    # (`lambda_star.start_cells`), and in sweeps cells that differ only in group size share their seed word
    # (`Cell.seed_key`): the same ⊕ and ⊖ paths, and agent i the same start cell and stream, paired by (seed
    # word, episode). False (`paper`, `lambdastar2016`): start cells drawn for each size and a seed word per
    # cell, as before issue 22
    paired_group_sizes: bool = False


def validate_statistics_fields(c: StatisticsSection) -> None:
    """A positive number of episodes, a seed NumPy can take, pairing on or off."""
    require_bool(c, "paired_group_sizes")
    require_int(c, "episodes", 1)
    require_int(c, "seed", 0, f" in 0..2**63-1 = 0..{SEED_MAX}")
    if c.seed > SEED_MAX:
        raise ConfigError("seed", f"must be an integer in 0..2**63-1 = 0..{SEED_MAX} (got {c.seed})")


def validate_legg_hutter(c: StatisticsSection) -> None:
    """The importance-weighted estimator needs the probability of every pattern the configuration draws."""
    require_choice(c, "legg_hutter_estimator", LEGG_HUTTER_ESTIMATORS)
    if c.legg_hutter_estimator == "importance_bits":
        reason = pattern_probability_unavailable(c)
        if reason:
            raise ConfigError("legg_hutter_estimator", f"importance_bits cannot weight these episodes: {reason}; "
                              "use sampled_phrases")
