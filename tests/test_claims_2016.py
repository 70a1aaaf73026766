"""The 2016 study's claims table (collective.analysis.claims_2016): known answers on hand-built rows where each
claim is true, false or undecidable, and the table from a tiny lambdastar2016-shaped sweep through the CLI."""
import json
import math

import numpy as np
import pandas as pd
import pytest

from collective.analysis.claims_2016 import CLAIMED_RANKING, GRID, RANKING, WISDOM, claims_2016
from collective.analysis.replication import CPP_GROUP_TYPES
from collective.config import CPP_SWITCHES
from sweep_support import collective, write_spec

SIDES = (5, 7, 10)
SIZES = (1, 2, 3, 4, 5)
SIX_SIDES = (4, 5, 6, 7, 8, 10)  # the grid claim's errors are clustered by grid: a type's slope needs several
STRUCTURE_LABELS = {"wisdom": "WOC local search", "stigmergy": "FR local search", "auction": "Bidding LS",
                    "hierarchy": "LS binary tree", "dictatorship": "Dictator LS"}


def rows_of(upsilon, sides=SIDES, sizes=SIZES, episodes=40, noise=0.05, seed=0):
    """lambdastar2016 rows (every switch on) of the 13 C++ group types: score = upsilon(label, side, G, H) plus
    Gaussian noise; one cell per (side, G), the types of a cell on its episodes."""
    generator = np.random.default_rng(seed)
    frames = []
    for cell, (side, size) in enumerate((side, size) for side in sides for size in sizes):
        bits = math.log2(side * side * (side * side - 1))
        for label, (behaviour, protocol) in CPP_GROUP_TYPES.items():
            scores = upsilon(label, side, size, bits) + noise * generator.standard_normal(episodes)
            frames.append(pd.DataFrame({"behaviour": behaviour, "protocol": protocol, "mix": "", "score": scores,
                                        "episode": np.arange(episodes), "cell": cell, "seed": 2016,
                                        "group_size": size, "grid": f"{side}x{side}", "rows": side, "cols": side,
                                        "entropy_bits": bits, "profile": "lambdastar2016",
                                        **{name: True for name in CPP_SWITCHES}}))
    return pd.concat(frames, ignore_index=True)


def ranked(order, step=0.05):
    """Υ offsets that rank the structures in `order`, best first."""
    return {STRUCTURE_LABELS[protocol]: step * (len(order) - i) for i, protocol in enumerate(order)}


def world(wisdom_slope, bits_slope, structure_offsets):
    def upsilon(label, side, size, bits):
        if label == "Random":
            return 0.0
        crowd = wisdom_slope * (size - 3) if label == "WOC local search" else 0.0
        return 0.6 + crowd + bits_slope * bits + structure_offsets.get(label, 0.0)
    return upsilon


def headline(table, claim):
    return table[(table["claim"] == claim)].iloc[0]


def test_true_claims_are_supported():
    table = claims_2016(rows_of(world(0.03, -0.02, ranked(CLAIMED_RANKING)), sides=SIX_SIDES))
    for claim in (WISDOM, GRID, RANKING):
        assert headline(table, claim)["verdict"] == "supported", claim
    wisdom = headline(table, WISDOM)
    assert wisdom["ci95_low"] < 0.03 < wisdom["ci95_high"]
    grid = table[table["claim"] == GRID]
    assert set(grid["scope"]) == {"all", *(label for label in CPP_GROUP_TYPES if label != "Random")}
    assert (grid["verdict"] == "supported").all()
    pairs = table[(table["claim"] == RANKING)].iloc[1:]
    assert len(pairs) == 10 and (pairs["verdict"] == "supported").all() and (pairs["p_holm"] >= pairs["p"]).all()


def test_false_claims_are_contradicted():
    table = claims_2016(rows_of(world(-0.03, 0.02, ranked(CLAIMED_RANKING[::-1])), sides=SIX_SIDES))
    for claim in (WISDOM, GRID, RANKING):
        assert headline(table, claim)["verdict"] == "contradicted", claim
    assert headline(table, WISDOM)["estimate"] == pytest.approx(-0.03, abs=0.01)


def test_claims_without_the_data_to_decide_them_are_undecided():
    """One grid and one group size: no slope on either, and structures that score alike."""
    table = claims_2016(rows_of(world(0.03, -0.02, {}), sides=(7,), sizes=(3,), episodes=30))
    for claim in (WISDOM, GRID):
        row = headline(table, claim)
        assert row["verdict"] == "undecided" and math.isnan(row["estimate"]), claim
    assert headline(table, RANKING)["verdict"] == "undecided"


def test_null_effects_are_undecided():
    """No trend and no ranking, only noise: nothing is decided either way."""
    table = claims_2016(rows_of(world(0.0, 0.0, {}), seed=3))
    assert set(table["verdict"]) == {"undecided"}


def test_grids_that_depart_from_a_line_do_not_decide_the_grid_claim():
    """Review of issue 45 item 5: H varies by grid, so each grid's departure from a straight line in H (here an
    offset drawn per grid, and no trend) is shared by all its cells; clustered by cell, the claim came out decided
    in about 70% of such worlds. Clustered by grid, it is decided at about the nominal rate."""
    decided = 0
    for seed in range(20):
        offsets = dict(zip((4, 5, 6, 7, 8, 10), np.random.default_rng(100 + seed).normal(0, 0.05, 6)))
        base = world(0.0, 0.0, {})
        rows = rows_of(lambda label, side, size, bits: base(label, side, size, bits) + offsets[side] * (label != "Random"),
                       sides=tuple(offsets), sizes=tuple(range(1, 11)), episodes=4, seed=seed)
        decided += headline(claims_2016(rows), GRID)["verdict"] != "undecided"
    assert decided <= 3  # 5% of 20 is 1; main: 14 of 20


def test_a_reversed_pair_contradicts_the_ranking():
    """The claimed order but its last two swapped: the ranking is contradicted by that one pair."""
    order = (*CLAIMED_RANKING[:3], CLAIMED_RANKING[4], CLAIMED_RANKING[3])
    table = claims_2016(rows_of(world(0.0, 0.0, ranked(order))))
    ranking = table[table["claim"] == RANKING].set_index("scope")
    assert ranking.iloc[0]["verdict"] == "contradicted"
    assert ranking.loc[f"{CLAIMED_RANKING[3]} > {CLAIMED_RANKING[4]}", "verdict"] == "contradicted"
    assert (ranking.iloc[1:]["verdict"] == "supported").sum() == 9


TINY_2016 = """
name = "tiny2016"
seed = 2016
profile = "lambdastar2016"
episodes = 6
iterations = 12

[factors]
grid = ["5x5", "6x6"]
group_size = [1, 2, 3]

[groups]
behaviours = ["random", "local_search"]
protocols = [
    { name = "none" },
    { name = "stigmergy", behaviours = ["local_search"] },
    { name = "wisdom", behaviours = ["local_search"] },
    { name = "auction", behaviours = ["local_search"] },
    { name = "dictatorship", behaviours = ["local_search"] },
    { name = "hierarchy", behaviours = ["local_search"] },
]
"""


def test_a_lambdastar2016_sweep_gets_the_claims_table(tmp_path):
    """A tiny sweep shaped as experiments/lambdastar2016.toml, its Parquet rows read back by `collective analyze`:
    the table, in JSON, decides each claim (or says it cannot) and cites its source."""
    spec = write_spec(tmp_path, TINY_2016)
    out = tmp_path / "sweep"
    result = collective("sweep", str(spec), "--out", str(out), "--executor", "serial")
    assert result.returncode == 0, result.stderr
    result = collective("analyze", str(out), "--tables", "claims_2016", "--format", "json")
    assert result.returncode == 0, result.stderr
    table = pd.DataFrame(json.loads(result.stdout)["claims_2016"]["rows"])
    assert set(table["verdict"]) <= {"supported", "contradicted", "undecided"}
    assert table.loc[table["source"] != "", "claim"].tolist() == [WISDOM, GRID, RANKING]
    assert table["source"].str.contains("paper 003 §").sum() == 3
    assert set(table.loc[table["claim"] == WISDOM, "scope"]) == {"all", "5x5", "6x6"}
    text = collective("analyze", str(out), "--tables", "claims_2016")
    assert text.returncode == 0 and "The 2016 study's claims, decided" in text.stdout
