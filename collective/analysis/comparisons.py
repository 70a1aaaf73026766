"""Paired comparisons of group types on the same environments, paired by (cell, episode): each collective
against the isolated agents of its behaviour (`gains`) and every two collectives of the same members that played
the same cells (`protocols`), with paired t and Wilcoxon p Holm-corrected over each table.
"""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd

from collective.analysis.base import environment_ids, run_ids
from collective.analysis.inference import holm, paired_statistics


def _group_types(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[["group", "behaviour", "mix", "protocol"]].drop_duplicates("group").set_index("group")


def _paired(rows: pd.DataFrame, first: str, second: str, strata: list[str]) -> pd.DataFrame:
    """Scores of two groups on the same environments: columns cell, episode, first, second, + strata."""
    runs = ["_run"] if "_run" in rows else []  # with the learners' training runs and environments (`_compare`)
    a = rows.loc[rows["group"] == first, list(dict.fromkeys(["cell", "episode", "score", *runs,
                                                            *(["_environment"] if runs else []), *strata]))]
    b = rows.loc[rows["group"] == second, ["cell", "episode", "score", *runs]]
    return a.merge(b, on=["cell", "episode"], suffixes=("_first", "_second"))


def _compare(rows: pd.DataFrame, pairs: list[tuple[str, str]], strata: list[str], names: tuple[str, str]) -> pd.DataFrame:
    """The pairs' tables; where the rows carry the learners' training runs, each pair's interval and t are
    clustered by environment and by the two groups' runs (`inference.paired_statistics`; issue 45 item 3)."""
    runs = run_ids(rows)
    rows = rows if runs is None else rows.assign(_run=runs, _environment=environment_ids(rows))
    records = []
    for first, second in pairs:
        paired = _paired(rows, first, second, strata)
        for key, part in (paired.groupby(strata, observed=True, sort=True) if strata else [((), paired)]):
            key = key if isinstance(key, tuple) else (key,)
            record = {names[0]: first, names[1]: second, **dict(zip(strata, key)),
                      f"upsilon_{names[0]}": part["score_first"].mean(),
                      f"upsilon_{names[1]}": part["score_second"].mean()}
            clusters = () if runs is None else (part["_environment"].to_numpy(), np.unique(
                part[["_run_first", "_run_second"]].to_numpy(), axis=0, return_inverse=True)[1].ravel())
            record.update(paired_statistics(part["score_first"].to_numpy(), part["score_second"].to_numpy(),
                                            *clusters))
            records.append(record)
    columns = [*names, *strata, f"upsilon_{names[0]}", f"upsilon_{names[1]}", "pairs", "difference", "ci95_low",
               "ci95_high", "cohen_dz", "p_t", "p_wilcoxon"]
    return holm(pd.DataFrame(records, columns=columns))


def collective_gains(rows: pd.DataFrame, strata: list[str]) -> pd.DataFrame:
    """Each collective (a group with a protocol) against the isolated agents of the same behaviour or mix
    (protocol none) in the same cells, paired by (cell, episode); difference = collective - isolated."""
    types = _group_types(rows)
    isolated = types[types["protocol"] == "none"]
    pairs = []
    for label, group in types[types["protocol"] != "none"].iterrows():
        match = isolated[(isolated["behaviour"] == group["behaviour"]) & (isolated["mix"] == group["mix"])]
        pairs += [(label, baseline) for baseline in match.index]
    return _compare(rows, pairs, strata, ("collective", "isolated"))


def protocol_comparisons(rows: pd.DataFrame, strata: list[str]) -> pd.DataFrame:
    """Every pair of collectives (groups with a protocol) of the same members (behaviour or mix) that played the
    same cells, paired by (cell, episode), so of the same group size, grid and environment class: only the protocol
    (or its parameters, or the sham control) differs, one thing at a time (issue 45 item 2). Within each level of
    `strata` and of group size, whether or not `strata` names it (a pair's G is shown); difference = first -
    second; `winner` is the better one where Holm p < 0.05."""
    strata = [*strata, *(["group_size"] if "group_size" not in strata else [])]
    types = _group_types(rows).query("protocol != 'none'")
    members = {label: (group["behaviour"], group["mix"]) for label, group in types.iterrows()}
    cells = rows.groupby("group", observed=True)["cell"].agg(set)
    pairs = [(a, b) for a, b in combinations(sorted(types.index), 2)
             if members[a] == members[b] and cells[a] & cells[b]]
    frame = _compare(rows, pairs, strata, ("first", "second"))
    significant = frame["p_holm"] < 0.05
    frame["winner"] = np.where(significant, np.where(frame["difference"] > 0, frame["first"], frame["second"]), "")
    return frame


def unmatched_collectives(rows: pd.DataFrame) -> dict[str, list[str]]:
    """Collectives with a cell where no other collective of the same members plays (so no protocol comparison
    there): group -> the grids (with G) of those cells. A pair that would differ in members or group size
    compares two things at once and is not made; this names what is left out rather than dropping it silently."""
    collectives = rows.loc[rows["protocol"] != "none", ["group", "behaviour", "mix", "cell", "grid", "group_size"]]
    present = collectives.drop_duplicates(["group", "cell"]).astype({"behaviour": str, "mix": str})
    partners = present.groupby(["cell", "behaviour", "mix"], observed=True)["group"].transform("size")
    alone = present[partners.to_numpy() < 2]
    area = lambda grid: math.prod(map(int, str(grid).split("x")))  # noqa: E731
    return {str(group): [f"{grid} G={size}" for _, grid, size in
                         sorted({(area(grid), str(grid), int(size))
                                 for grid, size in zip(part["grid"], part["group_size"])})]
            for group, part in alone.groupby("group", observed=True, sort=True)}
