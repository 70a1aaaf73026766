"""Analysis tables printed to a terminal fit its width: the columns come in panels, each repeating the
factors the table is read by; `--format wide` (and any output that is not a terminal) keeps one line a row."""
import numpy as np
import pandas as pd

from collective.analysis.base import Analysis, Table
from collective.analysis.report import column_panels, format_analysis

WIDTH = 80


def wide_analysis() -> Analysis:
    rows = 3
    frame = pd.DataFrame({"group": ["local_search", "oracle", "random"], "grid": ["10x10"] * rows,
                          "group_size": [10, 5, 1]})
    for number in range(12):  # far wider than a terminal
        frame[f"statistic_number_{number}"] = np.arange(rows) / 7 + number
    return Analysis(tables={"upsilon": Table("upsilon", "Υ by group", "a note", frame)})


def data_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith(("local_search", "oracle", "random"))]


def test_a_wide_table_comes_in_panels_that_fit_the_terminal():
    analysis = wide_analysis()
    text = format_analysis(analysis, "table", WIDTH)
    lines = text.splitlines()
    assert all(len(line) <= WIDTH for line in lines[2:]), max(map(len, lines))  # title and note are prose
    for column in analysis.tables["upsilon"].frame.columns:
        assert column in text
    panels = [line for line in lines if line.lstrip().startswith("group ")]
    assert len(panels) > 2 and all(line.split()[:3] == ["group", "grid", "group_size"] for line in panels)
    assert len(data_lines(text)) == 3 * len(panels)  # every row in every panel, led by its factors


def test_wide_and_not_a_terminal_keep_one_line_a_row():
    analysis = wide_analysis()
    wide = format_analysis(analysis, "wide", WIDTH)
    assert wide == format_analysis(analysis, "table") == format_analysis(analysis, "table", None)
    assert len(data_lines(wide)) == 3 and all(len(line) > WIDTH for line in data_lines(wide))


def test_column_panels():
    assert column_panels([5, 5, 5], None, 1) == [[0, 1, 2]]
    assert column_panels([5, 5, 5], 19, 1) == [[0, 1, 2]]  # 5 + 2 + 5 + 2 + 5 fits exactly
    assert column_panels([5, 5, 5], 18, 1) == [[0, 1], [0, 2]]
    assert column_panels([5, 5, 5, 5], 24, 2) == [[0, 1, 2], [0, 1, 3]]
    assert column_panels([5, 5, 5, 5], 23, 2) == [[0, 1, 2], [0, 3]]  # two keys (12) would take over half


def test_an_estimate_stays_beside_its_interval():
    """Issue 43 item 3: on 80 columns Υ and its CI landed in different panels, 75 rows apart."""
    assert column_panels([5, 5, 5, 5], 18, 1, attached={2, 3}) == [[0, 1, 2, 3]]  # wider than a panel: kept whole
    assert column_panels([5, 5, 5, 5], 20, 1) == [[0, 1, 2], [0, 3]]  # unattached: the bound leaves its estimate
    assert column_panels([5, 5, 5, 5], 20, 1, attached={3}) == [[0, 1], [0, 2, 3]]
    frame = pd.DataFrame({"group": ["a_rather_long_group_identifier_of_some_plug_in"] * 2, "grid": ["10x10", "20x20"],
                          "episodes": [500, 500], "k_mean": [8.0, 9.0], "upsilon": [0.5, 0.4],
                          "ci95_low": [0.45, 0.35], "ci95_high": [0.55, 0.45]})
    text = format_analysis(Analysis(tables={"upsilon": Table("upsilon", "Υ", "note", frame)}), "table", 80)
    assert any(line.split()[-3:] == ["upsilon", "ci95_low", "ci95_high"] for line in text.splitlines())


def test_groups_are_shown_by_their_labels_and_json_keeps_the_identifiers():
    frame = pd.DataFrame({"collective": ["pkg.agents:Searcher+pkg.talk:Gossip"], "isolated": ["pkg.agents:Searcher"],
                          "difference": [0.1]})
    validity = pd.DataFrame({"check": ["random_zero"], "subject": ["pkg.agents:Searcher @ 10x10"], "status": ["holds"]})
    labels = {"pkg.agents:Searcher+pkg.talk:Gossip": "gossiping searchers", "pkg.agents:Searcher": "searchers"}
    analysis = Analysis(tables={"gains": Table("gains", "Gains", "note", frame),
                                "validity": Table("validity", "Validity", "note", validity)}, labels=labels)
    text = format_analysis(analysis, "table")
    assert "gossiping searchers" in text and "searchers @ 10x10" in text and "pkg.agents" not in text
    assert "| gossiping searchers | searchers |" in format_analysis(analysis, "markdown")
    printed = __import__("json").loads(format_analysis(analysis, "json"))
    assert printed["gains"]["rows"][0]["collective"] == "pkg.agents:Searcher+pkg.talk:Gossip"
    assert printed["labels"] == labels
    csv = format_analysis(analysis, "csv")
    assert "pkg.agents:Searcher+pkg.talk:Gossip" in csv and csv.split("# labels")[1].count("searchers") == 2
