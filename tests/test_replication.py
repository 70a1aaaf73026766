"""The 2016 replication tables (collective.analysis.replication) on hand-built rows whose answers are
known: variants read off the switches, paired switch effects, the author comparison and the claims."""
import math

import numpy as np
import pandas as pd
import pytest

from collective.analysis.replication import (ABLATED, AUTHOR_RESULTS, CPP_GROUP_TYPES, author_comparison, claims,
                                             switch_effects, variants)
from collective.config import CPP_SWITCHES


def rows_of(label, scores, off=(), profile="lambdastar2016", agents=5, side=10, iterations=50, environment=1):
    """One row per score of group type `label`, episodes 0.., with the switches `off` off ("all": all)."""
    behaviour, protocol = CPP_GROUP_TYPES[label]
    switched_off = CPP_SWITCHES if off == "all" else off
    frame = pd.DataFrame({"behaviour": behaviour, "protocol": protocol, "score": np.asarray(scores, float),
                          "episode": np.arange(len(scores)), "profile": profile, "group_size": agents,
                          "rows": side, "cols": side, "grid": f"{side}x{side}", "iterations": iterations,
                          "seed_word": environment})
    for name in CPP_SWITCHES:
        frame[name] = profile != "paper" and name not in switched_off
    return frame


def test_variants_are_read_off_the_switches():
    rows = pd.concat([rows_of("Oracle", [0.9]), rows_of("Oracle", [0.9], off=("cpp_oracle",)),
                      rows_of("Oracle", [0.9], off="all"), rows_of("Oracle", [0.9], profile="paper"),
                      rows_of("Oracle", [0.9], off=("cpp_oracle", "cpp_auction"))], ignore_index=True)
    assert variants(rows).tolist() == ["none", "cpp_oracle", "all", "paper", "mixed"]
    assert "cpp_groups_of_one" not in ABLATED


def test_switch_effect_is_the_paired_difference():
    on = [0.5, 0.7, 0.2, 0.9]
    off = [0.4, 0.5, 0.25, 0.6]  # differences 0.1, 0.2, -0.05, 0.3
    rows = pd.concat([rows_of("Local search", on), rows_of("Local search", off, off=("cpp_first_observation",)),
                      rows_of("Local search", [0.0] * 4, environment=2)], ignore_index=True)  # other episodes
    effect = switch_effects(rows).set_index("switch").loc["cpp_first_observation"]
    differences = np.array(on) - np.array(off)
    assert effect["pairs"] == 4 and effect["difference"] == pytest.approx(differences.mean())
    half = 3.182446305284263 * differences.std(ddof=1) / 2  # t(0.975, 3) · s / √4
    assert effect["ci95_low"] == pytest.approx(differences.mean() - half)


def test_author_comparison_z():
    """Our scores s ± a constant around the author's 0.4908 (local search, 5 agents, 10x10, T = 50, 20
    episodes): z = (mean − author) / √(s²/n + s²/20)."""
    author = AUTHOR_RESULTS[(5, 10, 50, 20)][1]
    scores = author + 0.03 + np.array([-0.1, 0.1] * 50)
    table = author_comparison(rows_of("Local search", scores)).set_index("group").loc["Local search"]
    sd = np.std(scores, ddof=1)
    assert table["z"] == pytest.approx(0.03 / math.sqrt(sd ** 2 / 100 + sd ** 2 / 20))
    assert table["within"]


def test_claims_and_the_switch_they_depend_on():
    """Bidding beats local search with every switch on (and with the oracle's off) but not with the
    auction's off: the claim depends on cpp_auction."""
    base = [0.3, 0.5, 0.4, 0.6, 0.2]
    better = [b + 0.1 + 0.01 * i for i, b in enumerate(base)]
    worse = [b - 0.1 for b in base]
    rows = pd.concat([rows_of("Local search", base), rows_of("Bidding LS", better),
                      rows_of("Local search", base, off=("cpp_auction",)),
                      rows_of("Bidding LS", worse, off=("cpp_auction",)),
                      rows_of("Local search", base, off=("cpp_oracle",)),
                      rows_of("Bidding LS", better, off=("cpp_oracle",))], ignore_index=True)
    verdicts = claims(rows).set_index(["subject", "variant"])
    assert verdicts.loc[("Bidding LS", "none"), "holds"]
    assert not verdicts.loc[("Bidding LS", "cpp_auction"), "holds"]
    assert verdicts.loc[("Bidding LS", "cpp_oracle"), "holds"]
    assert verdicts.loc[("Bidding LS", "none"), "depends_on"] == "cpp_auction"
