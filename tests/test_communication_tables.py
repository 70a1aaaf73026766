"""The communication tables (issue 14 points 3-4) on hand-built datasets with known effects: the gain per bit
and its delta-method interval, Υ against message entropy, and the gain over the sham control."""
import math

import numpy as np
import pandas as pd
import pytest

from collective.analysis.communication import communication_entropy_table, communication_table, sham_table
from collective.analysis.base import Analysis
from collective.analysis.dataset import Dataset
from collective.analysis.report import analyse

CELLS = (11, 22, 33)


def rows_of(groups: dict, episodes: int = 40, seed: int = 0, traffic=None) -> pd.DataFrame:
    """Rows of `groups` (label -> (protocol, control, score(cell index, rng, n) -> scores)) in CELLS, paired
    by (cell, episode); `traffic(label, cell index, rng, n)` gives (bits, entropy) per row."""
    rng = np.random.default_rng(seed)
    frames = []
    for c, cell in enumerate(CELLS):
        for label, (protocol, control, score) in groups.items():
            bits, entropy = traffic(label, c, rng, episodes) if traffic else \
                (np.zeros(episodes), np.full(episodes, np.nan))
            frames.append(pd.DataFrame(dict(
                group=label, cell=cell, episode=np.arange(episodes), score=score(c, rng, episodes),
                behaviour="local_search", mix="", protocol=protocol, protocol_params="{}",
                communication_control=control, communication_accounting="reads_and_writes",
                messages_per_iteration=np.where(bits > 0, 10.0, 0.0), bits_per_iteration=bits,
                message_entropy_bits=entropy, information_bits_per_iteration=entropy * 10)))
    return pd.concat(frames, ignore_index=True)


def noise(scale):
    return lambda c, rng, n: rng.normal(0, scale, n)


def test_gain_per_bit_is_the_gain_over_the_mean_bits():
    """Fixed bits per cell (1000, 2000, 3000): the ratio is the stratified mean gain over 2000 bits, and its
    delta-method interval is the gain's interval over the same 2000 (the bits have no variance)."""
    gains = (0.1, 0.2, 0.3)
    groups = {"alone": ("none", "real", lambda c, rng, n: np.zeros(n)),
              "talk": ("broadcast", "real", lambda c, rng, n: gains[c] + rng.normal(0, 0.05, n))}
    rows = rows_of(groups, traffic=lambda label, c, rng, n: (np.full(n, 1000.0 * (c + 1) * (label == "talk")),
                                                            np.full(n, 2.0)))
    table = communication_table(rows, [])
    row = table.set_index("collective").loc["talk"]
    per_cell = rows[rows.group == "talk"].groupby("cell")["score"].mean()
    assert row["gain"] == pytest.approx(per_cell.mean(), abs=1e-12)
    assert row["gain_per_kbit"] == pytest.approx(row["gain"] / 2000 * 1000, abs=1e-12)
    assert row["gain_per_kbit_ci95_low"] == pytest.approx(row["gain_ci95_low"] / 2, abs=1e-12)
    assert row["gain_per_information_bit"] == pytest.approx(row["gain"] / 20, abs=1e-12)
    assert (row["cells"], row["pairs"], row["bits_per_iteration"]) == (3, 120, 2000)


def test_delta_method_interval_covers_the_ratio():
    """Bits and gains that vary by episode and are correlated: the 95% interval of the gain per bit covers
    the true ratio about 95% of the time (250 simulated datasets)."""
    covered = 0
    for seed in range(250):
        groups = {"alone": ("none", "real", noise(0.2)), "talk": ("broadcast", "real", noise(0.2))}

        def traffic(label, c, rng, n):
            bits = rng.uniform(500, 1500, n) * (label == "talk")
            return bits, np.full(n, 1.0)
        rows = rows_of(groups, episodes=30, seed=seed, traffic=traffic)
        talk = rows.group == "talk"
        rows.loc[talk, "score"] += 1e-4 * rows.loc[talk, "bits_per_iteration"]  # true gain per kbit: 0.1
        row = communication_table(rows, []).set_index("collective").loc["talk"]
        covered += row["gain_per_kbit_ci95_low"] <= 0.1 <= row["gain_per_kbit_ci95_high"]
    assert 0.91 <= covered / 250 <= 0.985


def test_entropy_slope_within_cells_recovers_a_known_effect():
    """score = cell effect + 0.05 x entropy + noise, entropies spread within each cell: the within-cell slope
    finds 0.05; the across-cells slope is confounded by the cell effects (which rise as entropy falls)."""
    rng = np.random.default_rng(1)
    frames = []
    for c, cell in enumerate(CELLS):
        entropy = rng.uniform(1 + c, 3 + c, 60)
        frames.append(pd.DataFrame(dict(group="talk", cell=cell, episode=np.arange(60), behaviour="local_search",
                                        mix="", protocol="broadcast", protocol_params="{}",
                                        communication_control="real", communication_accounting="reads_and_writes",
                                        message_entropy_bits=entropy,
                                        score=-0.3 * c + 0.05 * entropy + rng.normal(0, 0.01, 60))))
    row = communication_entropy_table(pd.concat(frames, ignore_index=True)).iloc[0]
    assert row["within_ci95_low"] < 0.05 < row["within_ci95_high"] and row["within_p"] < 1e-3
    assert row["slope_across_cells"] < 0  # the between-cell association has the opposite sign
    assert row["cells"] == 3 and row["episodes"] == 180


def test_entropy_that_only_follows_k_has_no_slope_within_cells_and_k():
    """Known answer (issue 22 point 6): K uniform on 2..23, Υ high only at K = 2 (stationary objects), the
    message entropy rising with K plus noise of its own, and no effect of the entropy on Υ. Within cells the
    slope is negative (K confounds it); within cells and K it is 0: its 95% interval covers 0 and lies within
    ±0.015 per bit, well clear of the confounded slope."""
    rng = np.random.default_rng(4)
    frames = []
    for cell in range(10):
        k = rng.integers(2, 24, 600)
        entropy = 2.1 + 5 * (k - 2) / 21 + rng.normal(0, 0.3, 600)
        score = 0.05 * cell + np.where(k == 2, 0.6, 0.35) - 0.005 * k + rng.normal(0, 0.1, 600)
        frames.append(pd.DataFrame(dict(group="talk", cell=cell, episode=np.arange(600), behaviour="local_search",
                                        mix="", protocol="wisdom", protocol_params="{}", communication_control="real",
                                        communication_accounting="reads_and_writes", k_raw=k,
                                        message_entropy_bits=entropy, score=score)))
    row = communication_entropy_table(pd.concat(frames, ignore_index=True)).iloc[0]
    assert row["within_ci95_high"] < -0.02  # K, not the entropy
    assert row["within_k_ci95_low"] < 0 < row["within_k_ci95_high"]
    assert -0.015 < row["within_k_ci95_low"] and row["within_k_ci95_high"] < 0.015


def test_sham_table_names_each_reading_for_what_it_measures():
    """Issue 45 item 4: the gain over isolated agents (real 0.2 above them), the information value (real - sham,
    0.3) and the reliance (isolated - sham, 0.1: what following uninformative reports costs), each its own
    column."""
    groups = {"alone": ("none", "real", noise(0.05)),
              "talk": ("broadcast", "real", lambda c, rng, n: 0.2 + rng.normal(0, 0.05, n)),
              "talk[sham]": ("broadcast", "sham", lambda c, rng, n: -0.1 + rng.normal(0, 0.05, n))}
    rows = rows_of(groups, traffic=lambda label, c, rng, n: (np.full(n, 500.0 * (label != "alone")),
                                                            rng.uniform(2, 3, n)))
    rows = rows.drop(rows[(rows.group == "talk[sham]") & (rows.episode == 0)].index)  # unpaired episodes drop out
    table = sham_table(rows, [])
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["real"], row["sham"], row["isolated"], row["pairs"]) == ("talk", "talk[sham]", "alone", 117)
    assert row["gain_over_isolated_ci95_low"] < 0.2 < row["gain_over_isolated_ci95_high"]
    assert row["information_value_ci95_low"] < 0.3 < row["information_value_ci95_high"]
    assert row["reliance_ci95_low"] < 0.1 < row["reliance_ci95_high"]
    assert row["information_value"] == pytest.approx(row["gain_over_isolated"] + row["reliance"])
    assert row["p_holm"] < 1e-6
    assert row["bits_per_iteration_real"] == row["bits_per_iteration_sham"] == 500


def test_the_content_free_control_is_the_information_baseline_when_present():
    """Issue 45 item 4: with a content-free group, information_value = real - content_free (0.15) and mechanics =
    content_free - isolated (0.05, what the protocol's mechanics buy with nothing said); the sham still gives the
    reliance (0.1); information_baseline names the baseline, the sham's where no content-free group played."""
    shifted = {"alone": 0.0, "talk": 0.2, "talk[sham]": -0.1, "talk[content_free]": 0.05}
    groups = {label: (protocol, control, lambda c, rng, n, label=label: shifted[label] + rng.normal(0, 0.05, n))
              for label, protocol, control in (("alone", "none", "real"), ("talk", "broadcast", "real"),
                                               ("talk[sham]", "broadcast", "sham"),
                                               ("talk[content_free]", "broadcast", "content_free"))}
    rows = rows_of(groups, traffic=lambda label, c, rng, n: (np.full(n, 0.0 if label == "alone" else
                                                                     100.0 if "content_free" in label else 500.0),
                                                            rng.uniform(2, 3, n)))
    row = sham_table(rows, []).iloc[0]
    assert (row["real"], row["sham"], row["content_free"], row["information_baseline"]) == \
        ("talk", "talk[sham]", "talk[content_free]", "content_free")
    for reading, value in (("information_value", 0.15), ("mechanics", 0.05), ("reliance", 0.1)):
        assert row[reading] == pytest.approx(value, abs=0.02)
        assert 0 < row[f"{reading}_ci95_low"] < row[reading] < row[f"{reading}_ci95_high"]
    assert row["information_value"] + row["mechanics"] == pytest.approx(row["gain_over_isolated"])
    assert (row["bits_per_iteration_sham"], row["bits_per_iteration_content_free"]) == (500, 100)
    without = sham_table(rows[rows.group != "talk[content_free]"], []).iloc[0]
    assert without["information_baseline"] == "sham" and "content_free" not in without
    assert without["information_value"] == pytest.approx(without["gain_over_isolated"] + without["reliance"])
    assert math.isnan(without["mechanics"])
    alone = sham_table(rows[rows.group != "talk[sham]"], []).iloc[0]  # a content-free control needs no sham
    assert alone["information_baseline"] == "content_free" and math.isnan(alone["reliance"])


def test_analyse_adds_the_tables_it_can():
    groups = {"alone": ("none", "real", noise(0.05)), "talk": ("broadcast", "real", noise(0.05)),
              "talk[sham]": ("broadcast", "sham", noise(0.05))}
    rows = rows_of(groups, traffic=lambda label, c, rng, n: (np.full(n, 100.0), np.full(n, 1.0)))
    rows = rows.assign(k_raw=3, entropy_bits=6.6, group_size=3, env="lambda_star", grid="10x10", rows=10, cols=10,
                       iterations=20, q_training_passes=0, kernel_seconds=1e-3)
    analysis = analyse(Dataset(rows, []), ["group"])
    assert {"communication", "communication_entropy", "sham"} <= set(analysis.tables)
    old = analyse(Dataset(rows.drop(columns=["message_entropy_bits", "information_bits_per_iteration",
                                             "communication_control", "communication_accounting"])
                          .query("group != 'talk[sham]'"), []), ["group"])
    assert "communication" in old.tables and "sham" not in old.tables
    assert "no message_entropy_bits column" in old.skipped["communication_entropy"]
    assert math.isnan(old.tables["communication"].frame["gain_per_information_bit"].iloc[0])
    assert isinstance(analysis, Analysis)


def test_learners_readings_carry_their_training_runs_luck():
    """Issue 45 item 3 for the controls' readings: learners' kept tables are trained in runs (episode e plays run
    e mod 5) and each run's tables have their own luck, shared by every episode that plays them. With no
    information in what the learners hear (real and noise alike but for that luck), information_value's 95%
    interval must cover 0 about 95% of the time; intervals over episodes alone (cell-stratified) cover it far
    less often (measured: 0.935 of 200 worlds with runs, 0.60 on the code before)."""
    runs, worlds, covered = 5, 200, 0
    for world in range(worlds):
        rng = np.random.default_rng(world)
        luck = {label: rng.normal(0, 0.05, (len(CELLS), runs)) for label in ("talk", "talk[noise]")}
        groups = {label: ("broadcast", control,
                          lambda c, rng, n, label=label: luck[label][c, np.arange(n) % runs] + rng.normal(0, 0.05, n))
                  for label, control in (("talk", "real"), ("talk[noise]", "noise"))}
        rows = rows_of(groups, episodes=40, seed=world).assign(behaviour="q_learning", seed=1)
        rows["training_run"] = rows["episode"] % runs
        row = sham_table(rows, []).iloc[0]
        assert row["information_baseline"] == "noise"
        covered += row["information_value_ci95_low"] <= 0 <= row["information_value_ci95_high"]
    assert covered / worlds >= 0.9, covered / worlds


def test_pairs_without_kept_tables_keep_their_own_spread_beside_learners_runs():
    """A part that mixes cells whose learners keep tables (runs 0-4) with cells that keep none (training_run -1,
    per-episode tables) clusters only the former by run: the untrained pairs are runs of their own, so their
    spread stays in the interval (review: pooled as one run -1, it cancelled out and a null read p ~ 1e-14).
    With noise as the baseline no `mechanics` is read (noise - isolated would be the table's split, not the
    protocol's mechanics)."""
    scale = {0: 0.001, 1: 1.0, 2: 1.0}  # cell 11: tables kept, tiny differences; cells 22, 33: none, wide
    groups = {label: ("broadcast", control, lambda c, rng, n: rng.normal(0, scale[c], n))
              for label, control in (("talk", "real"), ("talk[noise]", "noise"))}
    groups["alone"] = ("none", "real", lambda c, rng, n: rng.normal(0, 1, n))
    rows = rows_of(groups, episodes=60).assign(behaviour="q_learning", seed=1)
    rows["training_run"] = np.where(rows["cell"] == CELLS[0], rows["episode"] % 5, -1)
    row = sham_table(rows, []).iloc[0]
    plain = sham_table(rows.drop(columns="training_run"), []).iloc[0]
    width = row["information_value_ci95_high"] - row["information_value_ci95_low"]
    assert width > 0.5 * (plain["information_value_ci95_high"] - plain["information_value_ci95_low"]), (row, plain)
    assert math.isnan(row["mechanics"])


def test_the_communication_tables_gain_carries_the_learners_runs_as_the_sham_tables_does():
    """One gain, one interval: the `communication` table's gain of learners over isolated learners is clustered
    by training run as the `sham` table's gain_over_isolated is (review: it was over episodes alone, 0.058-0.076
    beside 0.028-0.105 for the same +0.067)."""
    rng = np.random.default_rng(3)
    luck = rng.normal(0, 0.05, (len(CELLS), 5))
    groups = {"talk": ("broadcast", "real", lambda c, rng, n: luck[c, np.arange(n) % 5] + rng.normal(0, 0.05, n)),
              "talk[noise]": ("broadcast", "noise", lambda c, rng, n: rng.normal(0, 0.05, n)),
              "alone": ("none", "real", lambda c, rng, n: rng.normal(0, 0.05, n))}
    rows = rows_of(groups, traffic=lambda label, c, rng, n: (np.full(n, 100.0), np.full(n, 1.0)))
    rows = rows.assign(behaviour="q_learning", seed=1, training_run=rows["episode"] % 5)
    gain = communication_table(rows, []).iloc[0]
    sham = sham_table(rows, []).iloc[0]
    assert (gain["gain_ci95_low"], gain["gain_ci95_high"]) == pytest.approx(
        (sham["gain_over_isolated_ci95_low"], sham["gain_over_isolated_ci95_high"]))
