"""Replicating the 2016 C++ program (issue 13): Υ of its 13 group types under `lambdastar2016`, every
switch's paired effect, the author's committed numbers, and the 2016 claims with the switches off.

Rows are one per (environment, episode, group type) with the episode's score R̄ (paper 003 Definition
2) and the config's columns (`profile`, the `cpp_*` switches), as sweeps of
experiments/lambdastar2016*.toml write them, or `benchmarks/replication_2016.py`. A row's *variant*
is read off its switches: "none" (all on, the replication), one switch's name (that one off), "all"
(all off), or "paper" (the `paper` profile). Cells that differ only in switches share their
environments and agent streams (`Cell.seed_key`), so a switch's effect, Υ(all on) − Υ(it off), is a
paired difference over (environment, episode) with a Student-t 95% interval.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from collective.analysis.base import Table, per_distinct
from collective.analysis.inference import mean_ci, paired_statistics
from collective.config import CPP_SWITCHES

# The 13 group types of main.cpp, as the labels of csvResults.csv name them -> (behaviour, protocol)
CPP_GROUP_TYPES = {
    "Random": ("random", "none"), "Local search": ("local_search", "none"),
    "FR local search": ("local_search", "stigmergy"), "WOC local search": ("local_search", "wisdom"),
    "Bidding LS": ("local_search", "auction"), "Dictator LS": ("local_search", "dictatorship"),
    "LS binary tree": ("local_search", "hierarchy"), "Imitative LS": ("imitation", "none"),
    "Q-learning": ("q_learning", "none"), "Coop Q-learning": ("q_learning", "shared_q"),
    "SARSA": ("sarsa", "none"), "Coop SARSA": ("sarsa", "shared_q"), "Oracle": ("oracle", "none"),
}
# The author's committed results (nader-chmait/LambdaStar csvResults.csv and results.txt, 2016-06-03):
# (agents, n for an n x n grid, T, episodes) -> Υ per group type, in CPP_GROUP_TYPES order
AUTHOR_CONFIGURATIONS = ((5, 10, 50, 20), (6, 7, 20, 50), (6, 12, 30, 20))
AUTHOR_RESULTS = {
    (5, 10, 50, 20): (0.001, 0.4908, 0.5161, 0.5516, 0.4927, 0.4633, 0.468, 0.8001, 0.3539, 0.3853, 0.354,
                      0.42, 0.9584),
    (6, 7, 20, 50): (-0.00358333, 0.488167, 0.509583, 0.521333, 0.53025, 0.489667, 0.482083, 0.837417, 0.4885,
                     0.52375, 0.48225, 0.5305, 0.934917),
    (6, 12, 30, 20): (0.0136111, 0.27, 0.355833, 0.489444, 0.356111, 0.283056, 0.272222, 0.471944, 0.172222,
                      0.23375, 0.198194, 0.253333, 0.897778),
}
ABLATED = tuple(name for name in CPP_SWITCHES if name != "cpp_groups_of_one")  # off, it only refuses runs
CELL = ["grid", "group_size", "iterations"]
WITHIN_SE = 2.5  # "replicated": within this many standard errors of the author's number


VARIANTS = ("paper", "none", "all", *ABLATED, "mixed")


def _variant(profile: str, *switches) -> str:
    """The variant of a profile and the ABLATED switches' values (missing counts as on)."""
    off = [name for name, on in zip(ABLATED, switches) if not bool(on)]
    if profile == "paper":
        return "paper"
    return "none" if not off else "all" if len(off) == len(ABLATED) else off[0] if len(off) == 1 else "mixed"


def variants(rows: pd.DataFrame) -> pd.Series:
    """Each row's variant: "paper", "none" (every ablated switch on), "all" (all off), the one switch off, or
    "mixed"; decided once per distinct profile and switches (`per_distinct`), a row holding a shared name."""
    codes = per_distinct(lambda *values: VARIANTS.index(_variant(*values)), rows["profile"],
                         *(rows[name] for name in ABLATED))
    return pd.Series(np.array(VARIANTS, dtype=object)[codes.astype(int)], index=rows.index)


def _environment(rows: pd.DataFrame) -> pd.Series:
    """The environment word pairing rows: `seed_word`, or the first word of a sweep row's spawn key."""
    if "seed_word" in rows:
        return rows["seed_word"]
    return rows["spawn_key"].map(lambda key: int(key[0]))


LABELS = {types: label for label, types in CPP_GROUP_TYPES.items()}


# The columns the replication tables read besides group, variant and environment (`_with_keys`)
READ = [*CELL, "rows", "cols", "episode", "score"]


def _with_keys(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the 13 C++ group types: `group` (their C++ labels), variant, environment and the columns READ
    alone (each table copied every column, ~60, of every row)."""
    labels = pd.Series(per_distinct(lambda behaviour, protocol: LABELS.get((behaviour, protocol)), rows["behaviour"],
                                    rows["protocol"]), index=rows.index, dtype=object)
    kept = labels.notna().to_numpy()
    keyed = rows.loc[kept, [column for column in READ if column in rows]].assign(group=labels[kept])
    keyed["variant"], keyed["environment"] = variants(rows)[kept], _environment(rows)[kept]
    return keyed


def _paired(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    merged = a[["environment", "episode", "score"]].merge(b[["environment", "episode", "score"]],
                                                          on=["environment", "episode"])
    return paired_statistics(merged["score_x"].to_numpy(), merged["score_y"].to_numpy())


def switch_effects(rows: pd.DataFrame) -> pd.DataFrame:
    """Per group type, cell and switch (and "all"): Υ(all on) − Υ(off), paired by (environment, episode)."""
    rows = _with_keys(rows)
    records = []
    for (group, *cell), part in rows.groupby(["group", *CELL], sort=False):
        of = _by_variant(part)
        for name in (*ABLATED, "all"):
            if "none" in of and name in of:
                records.append(dict(group=group, **dict(zip(CELL, cell)), switch=name, **_paired(of["none"], of[name])))
    return pd.DataFrame(records)


def _by_variant(part: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The rows of each variant present in `part`, in row order (one grouping, not a mask per variant)."""
    return dict(list(part.groupby("variant", sort=False)))


def replication_table(rows: pd.DataFrame, effects: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group type and cell: Υ under `lambdastar2016` (all switches on) with its 95% CI, Υ with all
    switches off and under `paper` (other episodes: unpaired), and each switch's paired effect (`effects`:
    `switch_effects(rows)`, computed here unless given)."""
    effects = switch_effects(rows) if effects is None else effects
    rows = _with_keys(rows)
    records = []
    for (group, *cell), part in rows.groupby(["group", *CELL], sort=False):
        of = _by_variant(part)
        n, upsilon, low, high = mean_ci(of["none"]["score"].to_numpy() if "none" in of else np.array([]))
        record = dict(group=group, **dict(zip(CELL, cell)), episodes=n, upsilon_2016=upsilon, ci95_low=low,
                      ci95_high=high, **{column: of[variant]["score"].mean() if variant in of else math.nan
                                         for column, variant in (("upsilon_all_off", "all"), ("upsilon_paper", "paper"))})
        mine = effects[(effects["group"] == group) & np.logical_and.reduce(
            [effects[c] == v for c, v in zip(CELL, cell)])] if not effects.empty else effects
        for _, effect in mine.iterrows():
            record[f"effect_{effect['switch']}"] = effect["difference"]
        records.append(record)
    return pd.DataFrame(records)


def author_comparison(rows: pd.DataFrame) -> pd.DataFrame:
    """The replication (all switches on) against the author's committed Υ on his three configurations:
    z = (ours − author) / √(SE_ours² + s²/n_author), s our per-episode standard deviation (the
    author's is not published), n_author his episode count; `within` when |z| ≤ WITHIN_SE."""
    rows = _with_keys(rows)
    rows = rows[rows["variant"] == "none"]
    records = []
    for (agents, side, iterations, episodes), values in AUTHOR_RESULTS.items():
        for (label, _), author in zip(CPP_GROUP_TYPES.items(), values):
            scores = rows.loc[(rows["group"] == label) & (rows["group_size"] == agents) & (rows["rows"] == side)
                              & (rows["cols"] == side) & (rows["iterations"] == iterations), "score"].to_numpy()
            if len(scores) < 2:
                continue
            sd = float(np.std(scores, ddof=1))
            se = math.sqrt(sd ** 2 / len(scores) + sd ** 2 / episodes)
            z = (float(scores.mean()) - author) / se if se > 0 else math.nan
            records.append(dict(group=label, agents=agents, grid=f"{side}x{side}", iterations=iterations,
                                author=author, author_episodes=episodes, upsilon_2016=float(scores.mean()),
                                episodes=len(scores), sd=sd, z=z, within=abs(z) <= WITHIN_SE))
    return pd.DataFrame(records)


# The 2016 qualitative claims (Chmait et al. 2016), each a paired comparison subject − baseline > 0
CLAIMS = (
    *(("collectives beat isolated local search", label, "Local search")
      for label in ("FR local search", "WOC local search", "Bidding LS", "Dictator LS", "LS binary tree")),
    ("cooperative learners beat independent ones", "Coop Q-learning", "Q-learning"),
    ("cooperative learners beat independent ones", "Coop SARSA", "SARSA"),
    ("imitation approaches the oracle (beats local search)", "Imitative LS", "Local search"),
)


def claims(rows: pd.DataFrame) -> pd.DataFrame:
    """Each claim per cell and variant (all on, each switch off, all off): the paired difference, its
    CI and whether it holds (CI above 0); `depends_on` lists the switches whose removal alone flips
    the all-on verdict. The group-size and grid-size claims (WoC rises with group size, Υ falls with
    grid size) compare cells: per variant, Υ at the largest minus the smallest size/grid, unpaired."""
    rows = _with_keys(rows)
    records = []
    for (*cell,), part in rows.groupby(CELL, sort=False):
        for variant, same in part.groupby("variant", sort=False):
            of = dict(list(same.groupby("group", sort=False)))  # each group type's rows, in row order
            for claim, subject, baseline in CLAIMS:
                if subject not in of or baseline not in of:
                    continue
                statistics = _paired(of[subject], of[baseline])
                records.append(dict(claim=claim, subject=subject, **dict(zip(CELL, cell)), variant=variant,
                                    difference=statistics["difference"], ci95_low=statistics["ci95_low"],
                                    ci95_high=statistics["ci95_high"], holds=statistics["ci95_low"] > 0))
    records += _trend_claims(rows)
    frame = pd.DataFrame(records)
    if frame.empty:
        return frame
    keys = ["claim", "subject", *CELL]
    base = frame[frame["variant"] == "none"].set_index(keys)["holds"]
    frame["depends_on"] = ""
    for key, part in frame.groupby(keys, sort=False):
        if key not in base.index:
            continue
        flips = [v for v in part.loc[part["holds"] != base[key], "variant"] if v in ABLATED]
        frame.loc[part.index, "depends_on"] = ",".join(flips)
    return frame


def _trend_claims(rows: pd.DataFrame) -> list[dict]:
    """WoC rises with group size (at each grid and T); local search's Υ falls with grid size (at each
    group size and T): the extreme levels' Υ difference with a Welch 95% interval."""
    from scipy import stats

    records = []
    for claim, subject, factor, sign, fixed in (
            ("WoC rises with group size", "WOC local search", "group_size", 1, ["grid", "iterations"]),
            ("Υ falls with grid size", "Local search", "rows", -1, ["group_size", "iterations"])):
        part = rows[rows["group"] == subject]
        for key, same in part.groupby([*fixed, "variant"], sort=False):
            levels = sorted(same[factor].unique())
            if len(levels) < 2:
                continue
            high = same.loc[same[factor] == levels[-1], "score"].to_numpy()
            low = same.loc[same[factor] == levels[0], "score"].to_numpy()
            difference = sign * (high.mean() - low.mean())
            se = math.sqrt(high.var(ddof=1) / len(high) + low.var(ddof=1) / len(low))
            half = stats.t.ppf(0.975, min(len(high), len(low)) - 1) * se
            records.append(dict(claim=claim, subject=subject, **dict(zip(fixed, key[:-1])), variant=key[-1],
                                difference=difference, ci95_low=difference - half, ci95_high=difference + half,
                                holds=difference - half > 0))
    return records


def add_replication_tables(analysis, rows: pd.DataFrame) -> None:
    """Add the replication tables when the dataset holds `lambdastar2016` rows of the C++ group types
    (a sweep of experiments/lambdastar2016*.toml); say why when its rows predate the switches."""
    if "profile" not in rows or not (rows["profile"] == "lambdastar2016").any():
        return
    if not set(CPP_SWITCHES) <= set(rows.columns):
        analysis.skipped["replication"] = ("the dataset's lambdastar2016 rows have no cpp_* columns (swept before "
                                           "the 2016 switches existed); re-run the sweep to get them.")
        return
    pairing = "paired by (environment, episode): cells differing only in switches share their episodes"
    effects = switch_effects(rows)
    analysis.add(Table("replication", "Replication of the 2016 C++ program: Υ per group type",
                       "upsilon_2016 = Υ under lambdastar2016, every switch on, 95% CI over episodes; "
                       "upsilon_all_off and upsilon_paper from other runs (all switches off; the paper "
                       f"profile); effect_<switch> = Υ(all on) − Υ(that switch off), {pairing}.",
                       replication_table(rows, effects)))
    if not effects.empty:
        analysis.add(Table("replication_effects", "Each 2016 switch's effect on Υ",
                           f"difference = Υ(all on) − Υ(switch off; 'all': every switch off), {pairing}; "
                           "paired-t 95% CI, Cohen's d_z, paired t and Wilcoxon p.", effects))
    authors = author_comparison(rows)
    if not authors.empty:
        analysis.add(Table("replication_author", "The replication against the author's committed results",
                           "author = nader-chmait/LambdaStar csvResults.csv (2016-06-03; 20, 50, 20 episodes); "
                           "z = (Υ − author)/√(SE² + s²/n_author), s our per-episode sd; within: |z| ≤ 2.5.",
                           authors))
    verdicts = claims(rows)
    if not verdicts.empty:
        analysis.add(Table("replication_claims", "The 2016 claims with each switch off",
                           "holds: the paired difference's 95% CI lies above 0 (group-size and grid-size "
                           "trends: extreme levels, Welch CI); depends_on: switches whose removal alone flips "
                           "the all-on verdict.", verdicts))
