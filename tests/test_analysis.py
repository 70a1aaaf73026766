"""`collective analyze`: Υ tables, paired gains and protocol tests, regression, PGI and learning tables
from a fresh tiny sweep, and one-line errors with status 2 for bad input."""
import io
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis_data import EPISODES, GRIDS, ITERATIONS, TINY_PASSES, TRAINED_PASSES, collective, sweep
from collective.analysis.base import DatasetError
from collective.analysis.dataset import load_dataset
from collective.analysis.report import analyse


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return sweep(tmp_path_factory.getbasetemp(), "tiny")


@pytest.fixture(scope="module")
def rows(tiny):
    return pd.read_parquet(tiny / "dataset")


@pytest.fixture(scope="module")
def analysis(tiny):
    return analyse(load_dataset([tiny]), ["group", "group_size"])


def test_upsilon_table_is_the_mean_score_with_a_confidence_interval(analysis, rows):
    table = analysis.tables["upsilon"].frame
    assert set(table["group"]) == set(rows["group"])
    assert list(table.columns[:3]) == ["group", "group_size", "grid"]  # never pooled over grids (Definition 3)
    assert (table["episodes"] == EPISODES).all()
    direct = rows.groupby(["group", "group_size", "grid"])["score"].mean()
    for record in table.itertuples():
        assert record.upsilon == pytest.approx(direct[(record.group, record.group_size, record.grid)])
        assert record.ci95_low < record.upsilon < record.ci95_high
    oracle = table[table["group"] == "oracle"]["upsilon"].min()
    random = table[table["group"] == "random"]["upsilon"].max()
    assert oracle > random


def test_factor_aliases_bin_k_and_cover_every_episode(tiny, rows):
    table = analyse(load_dataset([tiny]), ["k", "H"], k_bin_width=5).tables["upsilon"].frame
    assert list(table.columns[:2]) == ["k_bin", "entropy_bits"]
    assert table["episodes"].sum() == len(rows)
    for label in table["k_bin"].astype(str):
        low, high = map(int, label.split("-"))
        assert high - low == 4 and (low - 1) % 5 == 0
    assert set(table["entropy_bits"]) == set(rows["entropy_bits"])


def test_collective_gain_is_paired_by_cell_and_episode(analysis, rows):
    gains = analysis.tables["gains"].frame
    assert set(gains["collective"]) == {"local_search+stigmergy", "local_search+wisdom"}
    assert set(gains["isolated"]) == {"local_search"} and set(gains["group_size"]) == {3}
    assert set(gains["grid"]) == set(GRIDS)  # one gain per grid
    stigmergy = gains[(gains["collective"] == "local_search+stigmergy") & (gains["grid"] == GRIDS[0])].iloc[0]
    assert stigmergy["pairs"] == EPISODES
    on_grid = rows[(rows["group_size"] == 3) & (rows["grid"] == GRIDS[0])]
    pivot = on_grid.pivot_table(index=["cell", "episode"], columns="group", values="score")
    differences = pivot["local_search+stigmergy"] - pivot["local_search"]
    assert stigmergy["difference"] == pytest.approx(differences.mean())
    assert stigmergy["cohen_dz"] == pytest.approx(differences.mean() / differences.std(ddof=1))
    assert stigmergy["ci95_low"] < stigmergy["difference"] < stigmergy["ci95_high"]
    assert (gains["p_holm"] >= gains["p_t"]).all()


def test_protocol_comparison_names_a_winner_only_when_significant(analysis):
    comparisons = analysis.tables["protocols"].frame
    assert len(comparisons) == len(GRIDS) and set(comparisons["grid"]) == set(GRIDS)  # one comparison per grid
    pair = comparisons.iloc[0]
    assert {pair["first"], pair["second"]} == {"local_search+stigmergy", "local_search+wisdom"}
    assert pair["difference"] == pytest.approx(pair["upsilon_first"] - pair["upsilon_second"])
    better = pair["first"] if pair["difference"] > 0 else pair["second"]
    assert pair["winner"] == (better if pair["p_holm"] < 0.05 else "")


def test_protocol_comparisons_pair_only_collectives_of_the_same_members():
    """Stigmergy against broadcast on local searchers compares protocols; either against shared Q-tables on
    Q-learners would compare a protocol and an agent type at once (issue 45): such pairs are not made."""
    from collective.analysis.comparisons import protocol_comparisons

    rng = np.random.default_rng(0)
    groups = {"local_search+stigmergy": ("local_search", "stigmergy"),
              "local_search+broadcast": ("local_search", "broadcast"),
              "q_learning+shared_q": ("q_learning", "shared_q")}
    rows = pd.concat([pd.DataFrame(dict(group=label, behaviour=behaviour, mix="", protocol=protocol, cell=1,
                                        grid="5x5", group_size=3, episode=np.arange(20), score=rng.normal(0.3, 0.1, 20)))
                      for label, (behaviour, protocol) in groups.items()], ignore_index=True)
    pairs = protocol_comparisons(rows, ["grid"])[["first", "second"]]
    assert pairs.values.tolist() == [["local_search+broadcast", "local_search+stigmergy"]]



def test_protocol_comparisons_name_the_collectives_left_without_a_partner():
    """Issue 45 item 2: stigmergy and broadcast on local searchers of one size are compared; shared Q-tables on
    Q-learners have no collective of the same members to compare with, nor has stigmergy at a size broadcast does
    not play. Each pair's group size is shown even where the table is read by grid only, and what is left out is
    named (group, grid and G) rather than dropped silently."""
    from collective.analysis.comparisons import protocol_comparisons, unmatched_collectives

    rng = np.random.default_rng(1)
    groups = {("local_search+stigmergy", 3): ("local_search", "stigmergy", 1),
              ("local_search+broadcast", 3): ("local_search", "broadcast", 1),
              ("q_learning+shared_q", 3): ("q_learning", "shared_q", 1),
              ("local_search+stigmergy", 5): ("local_search", "stigmergy", 2)}
    rows = pd.concat([pd.DataFrame(dict(group=label, behaviour=behaviour, mix="", protocol=protocol, cell=cell,
                                        grid="5x5", group_size=size, episode=np.arange(20),
                                        score=rng.normal(0.3, 0.1, 20)))
                      for (label, size), (behaviour, protocol, cell) in groups.items()], ignore_index=True)
    table = protocol_comparisons(rows, ["grid"])
    assert table[["first", "second", "grid", "group_size"]].values.tolist() == [
        ["local_search+broadcast", "local_search+stigmergy", "5x5", 3]]
    assert unmatched_collectives(rows) == {"local_search+stigmergy": ["5x5 G=5"], "q_learning+shared_q": ["5x5 G=3"]}


def test_a_protocol_without_a_partner_is_named_under_the_table(tmp_path_factory):
    """A real sweep (the labelled spec: one wisdom collective of local searchers) leaves the protocol table empty,
    and says why in one line under it, the group by its display label; a sweep whose collectives all have a
    partner (tiny: stigmergy and wisdom) says nothing."""
    from collective.analysis.report import format_analysis

    labelled = analyse(load_dataset([sweep(tmp_path_factory.getbasetemp(), "labelled")]), ["group"])
    table = labelled.tables["protocols"]
    assert table.frame.empty and table.title == "Protocol comparisons within grid and group size"
    label = labelled.labels["local_search+wisdom"]
    assert table.footnote == ("Not compared (no other collective of the same members and group size in its "
                              "cells; a pair differing in members or size would compare two things at once): "
                              f"{label} at 4x4 G=3")
    text = format_analysis(labelled, "table").split("Protocol comparisons")[1]
    assert " ".join(text.split("\n\n")[0].split()).endswith(" ".join(f"{label} at 4x4 G=3".split()))  # wrapped
    assert json.loads(format_analysis(labelled, "json"))["protocols"]["footnote"] == table.footnote
    tiny = analyse(load_dataset([sweep(tmp_path_factory.getbasetemp(), "tiny")]), ["group"])
    assert tiny.tables["protocols"].footnote == "" and set(tiny.tables["protocols"].frame["group_size"]) == {3}

def test_regression_fits_each_grid_and_blanks_errors_without_spare_cells(analysis, rows):
    """2 grids x 2 group sizes: each grid has its intercept, K, G and K x G (and still where some of its episodes
    have a still ⊕, still x G where they do at two sizes), one fit per grid; a grid's 2 cells leave its intercept
    and G no cell-level df, so their errors are blank, as are K's where a grid's 2 cells (the clusters) leave none.
    Still episodes are counted."""
    coefficients = analysis.tables["regression"].frame
    fits = analysis.tables["regression_fit"].frame.set_index("group")
    local = coefficients[coefficients["group"] == "local_search"].set_index(["grid", "term"])
    local_rows = rows[rows["group"] == "local_search"]
    still = local_rows.groupby("grid")["good_displacement_per_iteration"].apply(
        lambda values: 0 < (values == 0).sum() < len(values))
    still_slope = local_rows[local_rows["good_displacement_per_iteration"] == 0].groupby("grid")[
        "group_size"].nunique().reindex(GRIDS, fill_value=0) > 1  # still episodes at 2+ group sizes: their G slope
    assert set(local.index) == {(grid, term) for grid in GRIDS for term in ("Intercept", "K", "G", "K x G")} | {
        (grid, "still") for grid in GRIDS if still[grid]} | {(grid, "still x G") for grid in GRIDS if still_slope[grid]}
    assert list(local.index.get_level_values("grid")) == sorted(local.index.get_level_values("grid"))  # grids together
    assert fits.loc["local_search", "cells"] == 4 and fits.loc["local_search", "cell_df"] == 0
    assert fits.loc["local_search", "still"] == "indicator" and fits.loc["local_search", "slopes"] == "per_grid"
    assert fits.loc["local_search", "still_episodes"] == (
        rows.loc[rows["group"] == "local_search", "good_displacement_per_iteration"] == 0).sum()
    assert local.loc[[(grid, term) for grid in GRIDS for term in ("Intercept", "G")], "std_error"].isna().all()
    assert set(local["level"]) == {"cell", "episode"} and local["errors"].str.startswith("CR2 clustered by cell").all()
    protocol = set(coefficients[coefficients["group"] == "local_search+stigmergy"]["term"])
    assert protocol <= {"Intercept", "K", "still"}  # one group size: G constant in each grid
    assert fits["r_squared"].between(0, 1).all()
    assert fits["lack_of_fit_p"].isna().all() and (fits["lack_of_fit_df1"] == 0).all()  # two grids only



def test_the_still_option_reaches_the_regression_and_is_recorded(tiny):
    """`collective analyze --still excluded` leaves still episodes out of the regression and says so in the fit table
    (the treatment and the count); the CLI's choices are the regression's, the default first."""
    from collective.analysis.regression import STILL, STILL_TREATMENTS
    from collective.dashboards.commands import STILL_TREATMENTS as CLI_CHOICES

    assert CLI_CHOICES == STILL_TREATMENTS and STILL_TREATMENTS[0] == STILL
    result = collective("analyze", tiny, "--tables", "regression_fit", "--format", "json", "--still", "excluded")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    fits = pd.DataFrame(json.loads(result.stdout)["regression_fit"]["rows"]).set_index("group")
    rows = pd.read_parquet(tiny / "dataset", columns=["group", "good_displacement_per_iteration"])
    still = (rows["good_displacement_per_iteration"] == 0).groupby(rows["group"]).sum()
    assert (fits["still"] == "excluded").all() and (fits["still_episodes"] == still[fits.index]).all()
    assert (fits["episodes"] == rows["group"].value_counts()[fits.index] - still[fits.index]).all()

def test_pgi_accuracy_is_zero_for_random_and_one_for_oracle(analysis):
    pgi = analysis.tables["pgi"].frame.set_index(["group", "group_size"])
    assert pgi.loc[("random", 1), "accuracy"] == pytest.approx(0) and pgi.loc[("random", 1), "pgi"] == 0
    oracle = pgi.loc[("oracle", 1)]
    assert oracle["accuracy"] == pytest.approx(1)
    assert oracle["privileged"] and np.isnan(oracle["pgi"])  # a reference, not a contestant
    assert not pgi.loc[("local_search", 1), "privileged"]
    assert pgi.loc[("q_learning", 1), "agent_steps"] == ITERATIONS * (1 + TINY_PASSES)
    assert pgi.loc[("local_search", 1), "agent_steps"] == ITERATIONS
    # replays of the test episode are the learner's own practice, not demonstrations
    assert pgi.loc[("q_learning", 1), "experience_score"] == 10 == pgi.loc[("local_search", 1), "experience_score"]
    assert pgi["generalisation_grid"].dropna().between(0, 1).all()
    bound = pgi["accuracy"].clip(lower=0) ** 2 * 20  # two resources of at most 10, factors at most 1
    assert (pgi["pgi"].dropna() <= bound[pgi["pgi"].notna()] + 1e-12).all()


def test_replay_learning_curves_need_varied_training_experience(tmp_path_factory, tiny, analysis):
    assert "replay_learning" not in analysis.tables and "learning" not in analysis.tables
    trained = sweep(tmp_path_factory.getbasetemp(), "trained")
    with pytest.raises(DatasetError, match="differ in q_training_passes .*--pool"):
        load_dataset([tiny, trained / "dataset"])
    both = analyse(load_dataset([tiny, trained / "dataset"], pool=True), ["group"])
    assert "learning" not in both.tables  # replay learners: no held-out slope
    curves = both.tables["replay_learning"].frame
    single = curves[(curves["group"] == "q_learning") & (curves["group_size"] == 1)]
    assert list(single["training_steps"]) == [TINY_PASSES * ITERATIONS, TRAINED_PASSES * ITERATIONS]
    gains = single["gain_per_1000_replay_steps"]
    assert np.isnan(gains.iloc[0]) and not np.isnan(gains.iloc[1])
    # each level's accuracy is its own, though both sweeps number their cells alike
    assert single["accuracy"].iloc[0] != single["accuracy"].iloc[1]


def test_cli_formats(tiny):
    as_json = collective("analyze", tiny, "--format", "json", "--tables", "upsilon,gains")
    assert as_json.returncode == 0, as_json.stderr
    tables = json.loads(as_json.stdout)
    assert set(tables) == {"upsilon", "gains"} and tables["upsilon"]["rows"][0]["ci95_low"] is not None
    as_csv = collective("analyze", tiny / "dataset", "--format", "csv", "--by", "protocol", "--tables", "upsilon")
    assert as_csv.stdout.startswith("# upsilon:")
    frame = pd.read_csv(io.StringIO(as_csv.stdout), comment="#")
    assert set(frame["protocol"]) == {"none", "stigmergy", "wisdom"}
    as_text = collective("analyze", tiny)
    for title in ("Accuracy against the ceiling by group, grid, group_size", "Υ by group, grid, group_size",
                  "Gain of collectives", "Validity suite", "Protocol comparisons", "Regression", "PGI"):
        assert title in as_text.stdout
    markdown = collective("analyze", tiny, "--format", "markdown", "--tables", "pgi").stdout
    assert "### PGI index" in markdown and "| group | group_size |" in markdown


def test_table_notes_are_wrapped_and_cite_what_a_user_can_read(tiny):
    """Issue 43 point 8: each table opened with a 300-900-character line, some citing "spec §N" or an issue of
    this project's tracker; notes now come in lines of at most 100 characters (a file's tables stay whole)."""
    text = collective("analyze", tiny).stdout
    titles = [line for line in text.splitlines() if line.startswith(("Accuracy against", "Υ by", "Gain of"))]
    assert len(titles) == 3
    lines = text.splitlines()
    for title in titles:
        note = lines[lines.index(title) + 1:lines.index(title) + 3]
        assert len(note[0]) <= 100 and len(note[1]) <= 100 and note[1] and not note[1].startswith(" ")
    assert not re.search(r"spec §|\bissue \d+", text)


def test_a_reader_that_leaves_early_ends_analyze_quietly(tiny):
    """`collective analyze RUN | head`: exit 141 (128 + SIGPIPE) and nothing on stderr."""
    process = subprocess.Popen([sys.executable, "-m", "collective", "analyze", str(tiny)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # the reader leaves before the first line (loading takes seconds)
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == 141 and stderr == "", stderr


@pytest.mark.parametrize("args, message", [
    (["analyze", "{tmp}"], "is not a sweep dataset"),
    (["analyze", "{tmp}/missing"], "no such directory"),
    (["analyze", "{tiny}", "--by", "nope"], "'nope' is not a column"),
    (["analyze", "{tiny}", "--format", "xml"], "argument --format"),
    (["analyze", "{tiny}", "--k-bin-width", "0"], "--k-bin-width"),
    (["analyze", "{tiny}", "--still", "sideways"], "argument --still"),
    (["figures", "{tmp}", "--out", "{tmp}/figures"], "is not a sweep dataset"),
    (["dashboard", "{tiny}", "--by", "K,nope", "--out", "{tmp}/r.html"], "'nope' is not a column"),
])
def test_bad_input_exits_2_with_one_line(tiny, tmp_path, args, message):
    result = collective(*[a.format(tmp=tmp_path, tiny=tiny) for a in args])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_accuracy_table_is_per_grid_with_random_at_zero_and_the_oracle_near_one(tiny, analysis):
    table = analysis.tables["accuracy"].frame.set_index(["group", "group_size", "grid"])
    assert list(analysis.tables)[0] == "accuracy"  # the headline
    assert set(table.index.get_level_values("grid")) == set(GRIDS)
    assert (table.loc["oracle", "accuracy"] > 0.9).all()
    # Each level is measured against its own grid's random agents and ceilings, recomputed here from the rows:
    # a reference pooled over grids, or another grid's, gives other numbers (the grids' random means differ)
    rows = load_dataset([tiny]).rows
    random_means = rows[rows["group"] == "random"].groupby("grid")["score"].mean()
    assert random_means[GRIDS[0]] != pytest.approx(random_means[GRIDS[1]], abs=1e-6)
    for grid in GRIDS:
        searchers = rows[(rows["group"] == "local_search") & (rows["group_size"] == 1) & (rows["grid"] == grid)]
        expected = ((searchers["score"].mean() - random_means[grid])
                    / (searchers["upsilon_best"].mean() - random_means[grid]))
        record = table.loc[("local_search", 1, grid)]
        assert record["upsilon_random"] == pytest.approx(random_means[grid], rel=1e-12)
        assert record["accuracy"] == pytest.approx(expected, rel=1e-12)


def test_ceiling_accuracy_interval_covers_the_true_ratio():
    """score ~ N(0.4, 0.2) beside a ceiling 0.8 + N(0, 0.05), random ~ N(0, 0.1): accuracy 0.5; the delta-method
    95% CI covers it about 95% of the time over 400 seeded samples of 60 episodes."""
    from collective.analysis.inference import ceiling_accuracy

    rng = np.random.default_rng(9)
    covered = 0
    for _ in range(400):
        ceiling = 0.8 + rng.normal(0, 0.05, 60)
        accuracy, low, high = ceiling_accuracy(0.4 + 0.5 * (ceiling - 0.8) + rng.normal(0, 0.2, 60), ceiling,
                                               rng.normal(0, 0.1, 60))
        covered += low <= 0.5 <= high
    assert 0.92 <= covered / 400 <= 0.98
    assert ceiling_accuracy(np.array([0.5, 0.5]), np.ones(2), np.zeros(2))[0] == 0.5


def test_per_distinct_calls_once_per_combination_and_keeps_missing_values_apart():
    """`per_distinct` gives each row function(*its values), calling it once per distinct combination; a missing
    value is one of its own, passed as the row has it (a mix column is empty or missing for homogeneous groups)."""
    from collective.analysis.base import per_distinct

    behaviours = pd.Series(["a", "b", "a", "a", "b", "c"])
    mixes = pd.Series(["", "x", "", None, "x", None], dtype=object)
    calls = []

    def label(behaviour, mix):
        calls.append((behaviour, mix))
        return f"{behaviour}|{mix}"

    expected = [f"{b}|{m}" for b, m in zip(behaviours, mixes)]
    assert list(per_distinct(label, behaviours, mixes)) == expected
    assert len(calls) == len(set(expected)) == 4 and ("a", None) in calls
    assert len(per_distinct(label, behaviours[:0], mixes[:0])) == 0
