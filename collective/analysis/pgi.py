"""Paper 004's Pragmatic General Intelligence index (`pgi`): accuracy between the random agent and the oracle,
resource scores (computation, demonstrations) and generalisation factors, per group type, size and training
regime.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from collective.analysis.base import per_distinct, reference_upsilon, training_experience

# PGI resource scales (paper 004, "PGI Index", Step 2). Computation: the paper's "computations performed"
# scale (0 = ZettaFLOPS, 10 = FLOPS), log-linear, counted in agent-steps (one decision of one agent a unit):
# machine-independent, unlike kernel seconds, but blind to the work inside a decision.
COMPUTATION_SCALE_STEPS = (1e21, 1.0)
# Demonstrations, the paper's related-data scale: (fewer than this many, score); none = 10, else 0 (10B+).
# "<100s" is read as fewer than 1000. Training episodes of the test's own class are related data.
DEMONSTRATION_SCORES = ((1, 10), (10, 9), (1_000, 7), (10_000, 5), (1_000_000, 3), (100_000_000, 1))


def normalised_accuracy(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (group, cell): accuracy = (Υ - Υ_random) / (Υ_oracle - Υ_random) over the cell's episodes,
    0 for the random agent and 1 for the oracle of the same cell (paper 004, Step 1); NaN where the cell
    lacks a reference or the oracle does not beat random."""
    per_cell = rows.groupby(["group", "cell"], sort=False).agg(upsilon=("score", "mean")).reset_index()
    references = reference_upsilon(rows)
    span = references["oracle"] - references["random"]
    per_cell["accuracy"] = ((per_cell["upsilon"] - per_cell["cell"].map(references["random"]))
                            / per_cell["cell"].map(span.where(span > 0)))
    return per_cell


def _members(behaviour: str, mix: str) -> list[str]:
    from collective.config import parse_mix

    return parse_mix(mix) if mix else [behaviour]


def is_privileged(behaviour: str, mix: str) -> bool:
    """True when any member sees what the test hides from agents (collective.behaviours.privileged)."""
    from collective.behaviours import privileged

    return any(privileged(name) for name in _members(behaviour, mix))


def episode_agent_steps(rows: pd.DataFrame) -> pd.Series:
    """Agent-steps per episode, a group's decisions in the scored pass (G x T) and its learners' training
    passes (learners x q_training_passes x T), as `collective.evaluate` counts them."""
    from collective.behaviours import learns as behaviour_learns

    share = per_distinct(lambda b, m: sum(map(behaviour_learns, _members(b, m))) / len(_members(b, m)),
                         rows["behaviour"], rows["mix"])
    count = share.astype(float) * rows["group_size"]
    scored = rows["group_size"] * rows["iterations"]
    return scored + count * rows["q_training_passes"] * rows["iterations"]


def demonstrations(rows: pd.DataFrame) -> pd.Series:
    """Novel training episodes per test episode: training_episodes for learners on held-out episodes, else 0.
    A replay learner's passes over the test episode are its own practice after the task is revealed, which
    paper 004 allows ("AGIs are allowed to learn what they need ... after the reveal"): not demonstrations;
    their cost is in the agent-steps."""
    flags = training_experience(rows) > 0
    held_out = rows["learning_protocol"] == "held_out" if "learning_protocol" in rows else False
    episodes = rows["training_episodes"] if "training_episodes" in rows else 0
    return pd.Series(np.where(flags & held_out, episodes, 0), index=rows.index)


def demonstration_score(count: float) -> float:
    """Paper 004's demonstration score of `count` related demonstrations (DEMONSTRATION_SCORES)."""
    return next((score for below, score in DEMONSTRATION_SCORES if count < below), 0)


def log_scale_score(value: float, zero_at: float, ten_at: float) -> float:
    """A 0..10 resource score, linear in log10(value) between the anchors (paper 004, Step 2)."""
    position = (math.log10(zero_at) - math.log10(max(value, ten_at))) / (math.log10(zero_at) - math.log10(ten_at))
    return 10 * min(1.0, max(0.0, position))


PGI_NOTE = (
    "PGII = accuracy² x Σ resources x Π generalisation (paper 004, \"PGI Index\", Steps 1-3). Accuracy: 0 = "
    "random, 1 = oracle of the same cell, the mean over Λ*'s (else the first environment class's) grids. Resources, "
    "0..10 each: computation = agent-steps per episode, scored and training (log scale, 0 = 10^21, 10 = 1: the "
    "paper's computations scale; machine-independent, kernel_seconds is shown but not scored); demonstrations = "
    "novel training episodes per test episode (held-out learners; replays of the test episode are practice, not "
    "demonstrations) on the paper's related-data scale (10 = none, 9 = <10, 7 = <1000, 5 = <10k, 3 = <1M, "
    "1 = <100M, else 0). Generalisation over grids: each grid in turn the task known in advance and every other "
    "grid a new one, the mean over these ordered pairs of min(1, accuracy on the new grid / on the known one) "
    "(the paper names no reference grid; a fixed one, such as the smallest, rewards doing badly on it); over "
    "environment classes, min(1, accuracy on the other classes / on the reference class). privileged: a member "
    "sees ⊕'s future (oracle, imitation's guide); its PGII is left blank. Not "
    "measured by the platform: energy, memory, time on a reference machine, unrelated demonstrations (priors), "
    "new modalities and tasks added over time (Step 3 asks for them; other grids and environment classes are "
    "variations of one task family, so the generalisation factors are optimistic).")


def grid_generalisation(accuracies: np.ndarray) -> float:
    """Mean over ordered pairs (known grid k, new grid n), k != n, of min(1, max(0, accuracy_n / accuracy_k));
    pairs whose known grid has no positive accuracy are left out (NaN when none is left)."""
    ratios = [min(1.0, max(0.0, new / known)) for k, known in enumerate(accuracies) if known > 0
              for n, new in enumerate(accuracies) if n != k and not math.isnan(new)]
    return float(np.mean(ratios)) if ratios else math.nan


def pgi_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The Pragmatic General Intelligence index per (group, group size), paper 004 "PGI Index" (PGI_NOTE):
    PGII = accuracy² x Σ resource scores x Π generalisation factors.

    - accuracy: normalised accuracy (see `normalised_accuracy`) on the reference class, Λ* (else the first
      environment class by name), the mean over its grids of each grid's mean, clipped at 0;
    - resources (Step 2, 0..10 each): computation = agent-steps per episode (`episode_agent_steps`) on the
      paper's computations scale, and demonstrations (`demonstrations`) on its related-data scale;
    - generalisation (Step 3): over the grids of that class, each grid in turn known in advance (Step 1:
      "tasks known in advance") and each other grid new, the mean over ordered pairs of min(1, accuracy on
      the new grid / on the known one); over the other environment classes, min(1, accuracy there /
      accuracy on the reference class), one factor each; a factor with no other level
      in the data is left out (an empty product is 1).
    One row per group type, size and training regime (training steps per agent, demonstrations); groups
    with a privileged member are flagged and get no PGII: they are references, not contestants."""
    accuracy = normalised_accuracy(rows)
    cells = rows.drop_duplicates("cell").set_index("cell")
    accuracy = accuracy.join(cells[["env", "rows", "cols", "group_size"]], on="cell")
    classes = sorted(rows["env"].unique())
    reference_env = "lambda_star" if "lambda_star" in classes else classes[0]
    steps_per_episode = episode_agent_steps(rows)
    demonstrations_per_episode = demonstrations(rows)
    # one row per training regime: sweeps that differ in passes or held-out episodes are different agents
    regime = pd.DataFrame(dict(group=rows["group"], cell=rows["cell"], training_steps=training_experience(rows),
                               demonstrations=demonstrations_per_episode)).drop_duplicates(["group", "cell"])
    accuracy = accuracy.merge(regime, on=["group", "cell"])
    records = []
    groups, names = pd.factorize(rows["group"])  # (rows,) codes: compared per level as integers, not text
    code_of, row_cells = {name: code for code, name in enumerate(names)}, rows["cell"].to_numpy()
    for (label, size, trained, shown), part in accuracy.groupby(["group", "group_size", "training_steps",
                                                                  "demonstrations"], sort=True):
        in_env = part["env"] == reference_env
        by_grid = part[in_env].groupby(["rows", "cols"])["accuracy"].mean()
        reference = by_grid.mean()
        factors = {}
        if len(by_grid) > 1:
            factors["generalisation_grid"] = grid_generalisation(by_grid.to_numpy())
        if (~in_env).any():
            ratio = part.loc[~in_env, "accuracy"].mean() / reference if reference > 0 else math.nan
            factors["generalisation_env"] = min(1.0, max(0.0, ratio)) if not math.isnan(ratio) else math.nan
        group_rows = np.flatnonzero(groups == code_of[label])
        group_rows = group_rows[np.isin(row_cells[group_rows], part["cell"].to_numpy())]  # (rows of the level,)
        first = rows.iloc[group_rows[0]]
        steps = float(steps_per_episode.iloc[group_rows].mean())
        computation_score = log_scale_score(steps, *COMPUTATION_SCALE_STEPS)
        experience_score = demonstration_score(shown)
        clipped = max(0.0, reference) if not math.isnan(reference) else math.nan
        product = math.prod(factors.values())
        privileged = is_privileged(first["behaviour"], first["mix"])
        pgi = math.nan if privileged else \
            0.0 if clipped == 0 else clipped ** 2 * (computation_score + experience_score) * product
        records.append(dict(group=label, group_size=size, privileged=privileged, accuracy=reference,
                            training_steps=trained, agent_steps=steps, computation_score=computation_score, demonstrations=shown,
                            experience_score=experience_score, resource_sum=computation_score + experience_score,
                            kernel_seconds=float(rows["kernel_seconds"].iloc[group_rows].mean()), **factors,
                            generalisation=product, pgi=pgi))
    frame = pd.DataFrame(records)
    order = ["group", "group_size", "privileged", "accuracy", "training_steps", "agent_steps", "computation_score", "demonstrations",
             "experience_score", "resource_sum", "kernel_seconds", "generalisation_grid", "generalisation_env",
             "generalisation", "pgi"]
    return frame[[column for column in order if column in frame.columns]]
