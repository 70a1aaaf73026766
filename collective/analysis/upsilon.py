"""Υ per level of the factors: the mean score with an interval clustered by environment (`upsilon`), the
2^-K-weighted Legg-Hutter form (`legg_hutter`), and the accuracy against the episodes' ceiling (`accuracy`,
the headline).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from collective.analysis.base import (ENVIRONMENT_CLASS_COLUMNS, DatasetError, environment_ids, levels,
                                      random_references, reference_keys, run_ids)
from collective.analysis.inference import ceiling_accuracy, clustered_mean_ci


def upsilon_table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Υ (mean R̄ over episodes, paper 003 Definition 3) with a 95% CI for every level of `by`; the CI is
    clustered by environment, so groups pooled in one level count a shared environment once, and where the rows
    carry the learners' training runs by run too (`base.run_ids`, `inference.two_way_variance`): a learner's
    episodes share its table's luck, so its Υ is replicated by runs, not episodes (issue 45 item 3)."""
    runs = run_ids(rows)
    rows = rows.assign(_environment=environment_ids(rows), _run=-1 if runs is None else runs)
    labelled = "centralised" in rows.columns  # datasets before issue 24 lack it
    records = []
    for key, part in levels(rows, by, columns=["score", "_environment", "_run", "centralised"], observed=True,
                            sort=True, dropna=False):
        environments, mean, low, high = clustered_mean_ci(part["score"].to_numpy(), part["_environment"].to_numpy(),
                                                          None if runs is None else part["_run"].to_numpy())
        records.append(dict(zip(by, key), episodes=len(part), environments=environments, upsilon=mean,
                            ci95_low=low, ci95_high=high))
        if labelled:  # a behaviour that declared its agents act on each other's observations (issue 24 point 4)
            records[-1]["centralised"] = bool(part["centralised"].fillna(False).any())
    return pd.DataFrame(records, columns=[*by, "episodes", "environments", "upsilon", "ci95_low", "ci95_high",
                                          *(["centralised"] if labelled else [])])


PATTERN_PROBABILITY = "pattern_log2_probability"  # per row: log2 p_gen of ⊕'s pattern (pattern_probability.py)
# Per row, log2 of a K-dependent selection factor of the episode sampler, when it is not plain rejection into
# the K range: under k_sampling = "stratified" (target K uniform over the range's n_K values, then rejection to
# exactly that K), -log2(n_K) - log2 P_gen(K = k); the sampling probability is then p_gen(μ) · 2^this.
K_SELECTION = "k_log2_selection"
# What each legg_hutter_estimator computes, shown beside its estimate (issue 22 point 7).
LEGG_HUTTER_ESTIMANDS = {
    "importance_bits": "paper 001's Σ 2^-K V / Σ 2^-K over the generator's patterns (K in bits)",
    "sampled_phrases": "2^-K-weighted mean of R̄ over the sampled episodes (K in phrases): a weighted stratum "
                       "mean, not paper 001's Σ 2^-K V over distinct environments",
}
LEGG_HUTTER_NOTE = (
    "A 2^-K-weighted Υ in paper 001's form; what it estimates depends on the rows' legg_hutter_estimator "
    "(column estimand), and only importance_bits targets paper 001's Σ_μ 2^-K(μ) V(μ) over distinct "
    "environments (normalised). importance_bits: K = c (log2 c + log2 N) bits for c LZ76 phrases over the N cells "
    "(Lempel-Ziv code length: Ziv & Lempel 1978; Cover & Thomas 2006 §13.4.2, §13.5.2), each episode weighted by "
    "2^-K / q(μ), q the generator's probability of its ⊕ pattern (pattern_log2_probability, exact; a K range's "
    "rejection constant cancels), so Σ w R̄ / Σ w targets Σ 2^-K V / Σ 2^-K over the patterns the generator can "
    "draw (self-normalised importance sampling, Owen 2013 §9.2). sampled_phrases: today's Σ 2^-c R̄ / Σ 2^-c "
    "over the sampled episodes, c in phrases; it weights patterns by 2^-c times their sampling probability and "
    "estimates neither quantity: with K drawn uniformly (sound), it is the per-K mean Υ weighted by 2^-K, half its "
    "weight on K = 2 (still patterns), three quarters on K <= 3. Both: Kish effective episodes (Σw)²/Σw² and a delta-method 95% CI, "
    "t on ESS - 1 df (undercovers when the ESS is small). Estimated within one environment class (grid, T, "
    "K range, generator ...), whose rejection constants differ; upsilon = the plain mean for comparison.")


def sampling_log2_probability(rows: pd.DataFrame) -> np.ndarray:
    """(rows,) log2 of the probability that the episode sampler drew each row's ⊕ pattern, up to a constant
    per environment class: pattern_log2_probability, plus k_log2_selection where the sampler selects by K.
    Raises DatasetError when a row's probability is not known."""
    if PATTERN_PROBABILITY not in rows:
        raise DatasetError(f"the dataset has no {PATTERN_PROBABILITY} column (swept before it was recorded); "
                           "re-run the sweep")
    log2_probability = rows[PATTERN_PROBABILITY].to_numpy(float)
    if "k_sampling" in rows and (rows["k_sampling"] == "stratified").any():
        if K_SELECTION not in rows or rows.loc[rows["k_sampling"] == "stratified", K_SELECTION].isna().any():
            raise DatasetError(f"rows sampled with k_sampling = stratified need {K_SELECTION} (-log2 of the number "
                               "of K values - log2 P_gen(K)) to be weighted")
    if K_SELECTION in rows:
        log2_probability = log2_probability + rows[K_SELECTION].fillna(0.0).to_numpy(float)
    if not np.isfinite(log2_probability).all():
        classes = rows.loc[~np.isfinite(log2_probability), ["pattern_generator", "evil_pairing"]].drop_duplicates()
        raise DatasetError("the pattern probability is unknown for rows of "
                           + "; ".join(f"pattern_generator {g}, evil_pairing {e}" for g, e in classes.itertuples(index=False))
                           + " (known for the cyclic generator with index_shift pairing)")
    return log2_probability


def legg_hutter_table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Legg-Hutter Υ per level of `by` and environment class (LEGG_HUTTER_NOTE); raises DatasetError when
    the rows' estimator cannot weight them."""
    from collective.analysis.scores import legg_hutter_log2_weights, weighted_estimate

    rows = rows.assign(legg_hutter_estimator=rows["legg_hutter_estimator"] if "legg_hutter_estimator" in rows
                       else "sampled_phrases")
    classes = [c for c in ENVIRONMENT_CLASS_COLUMNS if c in rows and c not in by and rows[c].nunique(dropna=False) > 1]
    keys = [*by, *classes]
    records = []
    read = ["legg_hutter_estimator", "grid", "k_raw", "score", PATTERN_PROBABILITY, K_SELECTION, "k_sampling",
            "pattern_generator", "evil_pairing"]  # what a level's weights read (sampling_log2_probability)
    for key, part in levels(rows, keys, columns=read, observed=True, sort=True, dropna=False):
        method = part["legg_hutter_estimator"].iloc[0]
        cells = math.prod(map(int, part["grid"].iloc[0].split("x")))  # the alphabet: one grid per class
        probability = sampling_log2_probability(part) if method == "importance_bits" else None
        try:
            log2_weights = legg_hutter_log2_weights(method, part["k_raw"].to_numpy(), cells, probability)
        except ValueError as error:
            raise DatasetError(str(error)) from None
        estimate = weighted_estimate(part["score"].to_numpy(), log2_weights)
        records.append(dict(zip(keys, key if isinstance(key, tuple) else (key,)), method=method, episodes=len(part),
                            estimand=LEGG_HUTTER_ESTIMANDS.get(method, method),
                            upsilon=float(part["score"].mean()), upsilon_legg_hutter=estimate.estimate,
                            ci95_low=estimate.ci95_low, ci95_high=estimate.ci95_high,
                            effective_episodes=estimate.effective_episodes,
                            effective_fraction=estimate.effective_episodes / len(part)))
    return pd.DataFrame(records, columns=[*keys, "method", "estimand", "episodes", "upsilon", "upsilon_legg_hutter", "ci95_low",
                                          "ci95_high", "effective_episodes", "effective_fraction"])


ACCURACY_NOTE = (
    "accuracy = (Υ - Υ_random) / (Υ_best - Υ_random): 0 for the random agent, 1 at the ceiling (paper 004 "
    "Step 1 with the ceiling in place of the oracle). Υ_best = the mean ceiling of R̄ of the level's "
    "episodes (upsilon_best: the best each agent could earn from its start, by dynamic programming over the known "
    "⊕/⊖ paths; an upper bound when coordination_threshold > 1); Υ_random = the random group's Υ on the same "
    "grid (and environment class), over all its group sizes (its expectation does not depend on G). Always per "
    "grid: Υ is defined for one H (paper 003 Definition 3). 95% CI: delta method for a ratio of means (Cochran "
    "1977, Sampling Techniques §6.3), Var = [Var(mean(R̄ - A·best)) + (A - 1)² Var(Υ_random)] / (Υ_best - "
    "Υ_random)², the random group's mean an independent sample; Student-t on episodes - 1 df. Where the rows carry "
    "the learners' training runs, Var(mean(R̄ - A·best)) is clustered by environment and run (Cameron, Gelbach & "
    "Miller 2011), on min(environments, runs) - 1 df. Blank without a random group on the "
    "grid, or a ceiling not above Υ_random.")


def accuracy_table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Accuracy against the ceiling (ACCURACY_NOTE) with Υ, Υ_random and Υ_best for every level of `by`
    and of the grid (and varying environment-class columns), which are added to `by` when missing."""
    reference = reference_keys(rows)
    keys = [*by, *[c for c in reference if c not in by]]
    references = random_references(rows)
    ceilings = rows["upsilon_best"] if "upsilon_best" in rows else pd.Series(math.nan, index=rows.index)
    runs = run_ids(rows)  # the learners' training runs: the level's term clustered by environment and run
    rows = rows.assign(_best=ceilings, _run=-1 if runs is None else runs,
                       _environment=-1 if runs is None else environment_ids(rows))
    records = []
    for key, part in levels(rows, keys, columns=["score", "_best", "_environment", "_run"], observed=True, sort=True,
                            dropna=False):
        level = dict(zip(keys, key))
        random = references.get(tuple(level[c] for c in reference), np.empty(0))
        accuracy, low, high = ceiling_accuracy(part["score"].to_numpy(float), part["_best"].to_numpy(float), random,
                                               *((part["_environment"].to_numpy(), part["_run"].to_numpy())
                                                 if runs is not None else ()))
        records.append(dict(level, episodes=len(part), upsilon=float(part["score"].mean()),
                            upsilon_random=float(random.mean()) if len(random) else math.nan,
                            upsilon_best=float(part["_best"].mean()), accuracy=accuracy, ci95_low=low, ci95_high=high))
    return pd.DataFrame(records, columns=[*keys, "episodes", "upsilon", "upsilon_random", "upsilon_best", "accuracy",
                                          "ci95_low", "ci95_high"])
