"""The report of a dataset: every table in display order (`analyse`: Υ, comparisons, communication, focal,
regression, replication, PGI, learning and validity, each family from its own module), and the tables as
aligned text, CSV, JSON or Markdown (`format_analysis`).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from collective.analysis.base import Analysis, DatasetError, Table
from collective.analysis.communication import add_communication_tables
from collective.analysis.comparisons import collective_gains, protocol_comparisons
from collective.analysis.dataset import Dataset
from collective.analysis.factors import add_k_bins, resolve_factors, strata_of, with_grid
from collective.analysis.focal import add_focal_table
from collective.analysis.learning import add_learning_tables
from collective.analysis.pgi import PGI_NOTE, pgi_table
from collective.analysis.regression import add_regression_tables
from collective.analysis.replication import add_replication_tables
from collective.analysis.upsilon import (ACCURACY_NOTE, LEGG_HUTTER_NOTE, accuracy_table, legg_hutter_table,
                                         upsilon_table)
from collective.analysis.validity import VALIDITY_NOTE, validate


def analyse(dataset: Dataset, by: list[str], k_bin_width: int = 4) -> Analysis:
    """Every table for `dataset`, grouped by the factors `by` (names or aliases) and always by grid."""
    rows = add_k_bins(dataset.rows, k_bin_width)
    by = with_grid(resolve_factors(rows, by, dataset.columns))
    strata = strata_of(by)
    analysis = Analysis()
    shown = ", ".join(by)
    analysis.add(Table("accuracy", f"Accuracy against the ceiling by {shown}", ACCURACY_NOTE, accuracy_table(rows, by)))
    analysis.add(Table("upsilon", f"Υ by {shown}",
                       "Υ = mean episode score R̄ (paper 003 Definitions 2-3); 95% CI clustered by environment "
                       "(seed, cell, episode: groups of a cell share it), Student-t on environments - 1 df "
                       "(Cameron & Miller 2015); with one group per level, the CI over episodes. centralised: a "
                       "behaviour of the level declared that its agents act on each other's observations.",
                       upsilon_table(rows, by)))
    try:
        analysis.add(Table("legg_hutter", f"2^-K-weighted Υ (Legg-Hutter form; see estimand) by {shown}",
                           LEGG_HUTTER_NOTE, legg_hutter_table(rows, by)))
    except DatasetError as error:
        analysis.skipped["legg_hutter"] = str(error)
    in_strata = f" within {', '.join(strata)}" if strata else ""
    analysis.add(Table("gains", f"Gain of collectives over isolated agents{in_strata}",
                       "difference = Υ(collective) - Υ(isolated, same behaviour, protocol none), paired by "
                       "(cell, episode); paired-t CI, Cohen's d_z = mean/sd of differences, paired t and "
                       "Wilcoxon signed-rank p, each Holm-corrected over the table (p_holm, p_wilcoxon_holm).",
                       collective_gains(rows, strata)))
    analysis.add(Table("protocols", f"Protocol comparisons{in_strata}",
                       "difference = Υ(first) - Υ(second), collectives of the same members (behaviour or mix) "
                       "that differ in protocol, on the same environments, paired by (cell, episode); "
                       "paired t and Wilcoxon signed-rank p, each Holm-corrected over the table (p_holm, "
                       "p_wilcoxon_holm); winner where Holm-corrected paired-t p < 0.05.",
                       protocol_comparisons(rows, strata)))
    add_communication_tables(analysis, rows, strata)
    add_focal_table(analysis, rows)
    add_regression_tables(analysis, rows)
    add_replication_tables(analysis, rows)
    analysis.add(Table("pgi", "PGI index (paper 004)", PGI_NOTE, pgi_table(rows)))
    add_learning_tables(analysis, rows)
    analysis.add(Table("validity", "Validity suite: negative controls and known answers", VALIDITY_NOTE,
                       validate(rows, analysis.tables["regression"].frame,
                                [source.description for source in dataset.sources if source.description])))
    return analysis


def _number(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else f"{value:.4g}" if abs(value) < 1e-3 or abs(value) >= 1e5 else f"{value:.4f}"
    return str(value)


def _text_cells(frame: pd.DataFrame) -> list[list[str]]:
    return [[_number(value) for value in row] for row in frame.itertuples(index=False)]


def column_panels(widths: list[int], width: int | None, leading: int) -> list[list[int]]:
    """The columns (by their `widths`) of an aligned table in panels that each fit `width` characters
    (None: one panel), each panel repeating the first column and up to `leading - 1` more (the factors a
    table is read by) while they take at most half the width."""
    def span(columns: list[int]) -> int:
        return sum(widths[i] for i in columns) + 2 * (len(columns) - 1)

    if width is None or span(list(range(len(widths)))) <= width:
        return [list(range(len(widths)))]
    keys = [0]
    while len(keys) < min(leading, len(widths) - 1) and span(keys + [len(keys)]) <= width // 2:
        keys.append(len(keys))
    panels, panel = [], list(keys)
    for column in range(len(keys), len(widths)):
        if len(panel) > len(keys) and span(panel + [column]) > width:
            panels.append(panel)
            panel = list(keys)
        panel.append(column)
    return panels + [panel]


def format_analysis(analysis: Analysis, fmt: str, width: int | None = None) -> str:
    """The tables as aligned text, CSV sections ("# name" lines), one JSON object or Markdown; then a line
    per skipped table (in JSON, {"skipped": reason} under its name). Aligned text ("table") wider than
    `width` comes in panels of columns that fit it (`column_panels`); "wide" is never split."""
    if fmt == "json":
        return json.dumps({**{name: dict(title=table.title, note=table.note,
                                         rows=json.loads(table.frame.to_json(orient="records")))
                              for name, table in analysis.tables.items()},
                           **{name: dict(skipped=reason) for name, reason in analysis.skipped.items()}},
                          ensure_ascii=False, indent=1)
    blocks = []
    for name, table in analysis.tables.items():
        header, cells = [str(c) for c in table.frame.columns], _text_cells(table.frame)
        if fmt == "csv":
            blocks.append(f"# {name}: {table.title}\n" + table.frame.to_csv(index=False))
        elif fmt == "markdown":
            lines = [f"### {table.title}", "", table.note, "", "| " + " | ".join(header) + " |",
                     "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in cells]
            blocks.append("\n".join(lines) + "\n")
        else:
            widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(header)]
            lines = [table.title, table.note]
            floats = [pd.api.types.is_float_dtype(dtype) for dtype in table.frame.dtypes]
            leading = floats.index(True) if True in floats else len(floats)  # the factors come first
            for number, panel in enumerate(column_panels(widths, width if fmt == "table" else None, leading)):
                lines += [""] if number else []
                lines += ["  ".join(header[i].rjust(widths[i]) for i in panel),
                          "  ".join("-" * widths[i] for i in panel)]
                lines += ["  ".join(row[i].rjust(widths[i]) for i in panel) for row in cells]
            if not cells:
                lines.append("(no rows: the dataset has nothing to compare here)")
            blocks.append("\n".join(lines) + "\n")
    prefix = "# " if fmt == "csv" else ""
    skipped = [f"{prefix}Table {name} skipped: {reason}" for name, reason in analysis.skipped.items()]
    return "\n".join(blocks + skipped)
