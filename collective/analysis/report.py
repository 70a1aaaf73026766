"""The report of a dataset: every table in display order (`analyse`: Υ, comparisons, communication, focal,
regression, replication, the 2016 claims, PGI, learning and validity, each family from its own module), and the tables as
aligned text, CSV, JSON or Markdown (`format_analysis`).
"""
from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pandas as pd

from collective.analysis.base import GROUP_COLUMNS, Analysis, DatasetError, Table, labelled
from collective.analysis.claims_2016 import add_claims_2016_table
from collective.analysis.communication import add_communication_tables
from collective.analysis.comparisons import collective_gains, protocol_comparisons, unmatched_collectives
from collective.analysis.dataset import Dataset, display_labels
from collective.analysis.factors import add_k_bins, resolve_factors, strata_of, with_grid
from collective.analysis.focal import add_focal_table
from collective.analysis.learning import add_learning_tables
from collective.analysis.pgi import PGI_NOTE, pgi_table
from collective.analysis.regression import STILL, add_regression_tables
from collective.analysis.replication import add_replication_tables
from collective.analysis.upsilon import (ACCURACY_NOTE, LEGG_HUTTER_NOTE, accuracy_table, legg_hutter_table,
                                         upsilon_table)
from collective.analysis.validity import VALIDITY_NOTE, validate


def analyse(dataset: Dataset, by: list[str], k_bin_width: int = 4, labels: dict[str, str] | None = None,
            still: str = STILL, tables: list[str] | None = None) -> Analysis:
    """Every table for `dataset` (or those named in `tables`: the others are not computed), grouped by the factors
    `by` (names or aliases) and always by grid; groups shown by the spec's display labels, then `labels`
    (identifier -> text, e.g. --label); the regression treats still episodes as `still` says
    (`regression.STILL_TREATMENTS`)."""
    def wanted(*names: str) -> bool:  # a family of tables is computed when any of its tables is asked for
        return tables is None or any(name in tables for name in names)

    rows = add_k_bins(dataset.rows, k_bin_width)
    by = with_grid(resolve_factors(rows, by, dataset.columns))
    strata = strata_of(by)
    analysis = Analysis(labels=display_labels(dataset, labels))
    shown = ", ".join(by)
    if wanted("accuracy"):
        analysis.add(Table("accuracy", f"Accuracy against the ceiling by {shown}", ACCURACY_NOTE,
                           accuracy_table(rows, by)))
    if wanted("upsilon"):
        analysis.add(Table("upsilon", f"Υ by {shown}",
                           "Υ = mean episode score R̄ (paper 003 Definitions 2-3); 95% CI clustered by environment "
                           "(seed, cell, episode: groups of a cell share it), Student-t on environments - 1 df "
                           "(Cameron & Miller 2015); with one group per level, the CI over episodes. centralised: a "
                           "behaviour of the level declared that its agents act on each other's observations.",
                           upsilon_table(rows, by)))
    if wanted("legg_hutter"):
        try:
            analysis.add(Table("legg_hutter", f"2^-K-weighted Υ (Legg-Hutter form; see estimand) by {shown}",
                               LEGG_HUTTER_NOTE, legg_hutter_table(rows, by)))
        except DatasetError as error:
            analysis.skipped["legg_hutter"] = str(error)
    in_strata = f" within {', '.join(strata)}" if strata else ""
    if wanted("gains"):
        analysis.add(Table("gains", f"Gain of collectives over isolated agents{in_strata}",
                           "difference = Υ(collective) - Υ(isolated, same behaviour, protocol none), paired by "
                           "(cell, episode); paired-t CI, Cohen's d_z = mean/sd of differences, paired t and "
                           "Wilcoxon signed-rank p, each Holm-corrected over the table (p_holm, p_wilcoxon_holm).",
                           collective_gains(rows, strata)))
    if wanted("protocols"):
        unmatched = unmatched_collectives(rows)
        and_size = "" if "group_size" in strata else " and group size"
        analysis.add(Table("protocols", f"Protocol comparisons{in_strata}{and_size}",
                           "difference = Υ(first) - Υ(second), collectives of the same members (behaviour or mix) "
                           "and group size that differ in protocol, on the same environments, paired by (cell, "
                           "episode); paired t and Wilcoxon signed-rank p, each Holm-corrected over the table "
                           "(p_holm, p_wilcoxon_holm); winner where Holm-corrected paired-t p < 0.05.",
                           protocol_comparisons(rows, strata),
                           "Not compared (no other collective of the same members and group size in its cells; a "
                           "pair differing in members or size would compare two things at once): " + "; ".join(
                               f"{labelled(group, analysis.labels)} at {', '.join(where)}"
                               for group, where in unmatched.items()) if unmatched else ""))
    if wanted("communication", "communication_entropy", "sham"):
        add_communication_tables(analysis, rows, strata)
    if wanted("focal"):
        add_focal_table(analysis, rows)
    if wanted("regression", "regression_fit"):
        add_regression_tables(analysis, rows, still)
    if wanted("replication", "replication_effects", "replication_author", "replication_claims"):
        add_replication_tables(analysis, rows)
    if wanted("claims_2016"):
        add_claims_2016_table(analysis, rows)
    if wanted("pgi"):
        analysis.add(Table("pgi", "PGI index (paper 004)", PGI_NOTE, pgi_table(rows)))
    if wanted("learning", "replay_learning", "learning_curves", "sample_efficiency", "sharing"):
        add_learning_tables(analysis, rows)
    if wanted("validity"):
        analysis.add(Table("validity", "Validity suite: negative controls and known answers", VALIDITY_NOTE,
                           validate(rows, dataset.descriptions)))
    if tables is not None:  # a family computed for one of its tables keeps that one alone
        analysis.tables = {name: table for name, table in analysis.tables.items() if name in tables}
        analysis.skipped = {name: why for name, why in analysis.skipped.items() if name in tables}
    return analysis


NOTE_WIDTH = 100  # characters of a table's note per line in aligned text


def _number(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else f"{value:.4g}" if abs(value) < 1e-3 or abs(value) >= 1e5 else f"{value:.4f}"
    return str(value)


def _text_cells(frame: pd.DataFrame, labels: dict[str, str]) -> list[list[str]]:
    """Each cell as text; in the columns that hold a group identifier (GROUP_COLUMNS, a validity subject), its label."""
    named = [labels and (column in GROUP_COLUMNS or column == "subject") for column in frame.columns]
    return [[labelled(str(value), labels) if name and isinstance(value, str) else _number(value)
             for name, value in zip(named, row)] for row in frame.itertuples(index=False)]


def column_panels(widths: list[int], width: int | None, leading: int, attached: set[int] = frozenset()) -> list[list[int]]:
    """The columns (by their `widths`) of an aligned table in panels that each fit `width` characters
    (None: one panel), each panel repeating the first column and up to `leading - 1` more (the factors a
    table is read by) while they take at most half the width. A column in `attached` (a CI bound) stays in the
    panel of the column before it (its estimate), so Υ is read beside its interval."""
    def span(columns: list[int]) -> int:
        return sum(widths[i] for i in columns) + 2 * (len(columns) - 1)

    if width is None or span(list(range(len(widths)))) <= width:
        return [list(range(len(widths)))]
    keys = [0]
    while len(keys) < min(leading, len(widths) - 1) and span(keys + [len(keys)]) <= width // 2:
        keys.append(len(keys))
    units: list[list[int]] = []
    for column in range(len(keys), len(widths)):
        if column in attached and units:
            units[-1].append(column)
        else:
            units.append([column])
    panels, panel = [], list(keys)
    for unit in units:
        if len(panel) > len(keys) and span(panel + unit) > width:
            panels.append(panel)
            panel = list(keys)
        panel.extend(unit)
    return panels + [panel]


def format_analysis(analysis: Analysis, fmt: str, width: int | None = None) -> str:
    """The tables as aligned text, CSV sections ("# name" lines), one JSON object or Markdown; then a line
    per skipped table (in JSON, {"skipped": reason} under its name). Aligned text ("table") wider than
    `width` comes in panels of columns that fit it (`column_panels`); "wide" is never split. A table's note and
    footnote are wrapped to `width`, at most NOTE_WIDTH, in both."""
    labels = {group: label for group, label in analysis.labels.items() if label != group}
    if fmt == "json":  # identifiers in the tables, their labels beside them
        return json.dumps({**{name: dict(title=table.title, note=table.note,
                                         rows=json.loads(table.frame.to_json(orient="records")),
                                         **({"footnote": table.footnote} if table.footnote else {}))
                              for name, table in analysis.tables.items()},
                           **{name: dict(skipped=reason) for name, reason in analysis.skipped.items()},
                           **({"labels": labels} if labels else {})},
                          ensure_ascii=False, indent=1)
    blocks = []
    for name, table in analysis.tables.items():
        header = [str(c) for c in table.frame.columns]
        cells = _text_cells(table.frame, {} if fmt == "csv" else labels)
        if fmt == "csv":
            blocks.append(f"# {name}: {table.title}\n" + table.frame.to_csv(index=False)
                          + (f"# {table.footnote}\n" if table.footnote else ""))
        elif fmt == "markdown":
            lines = [f"### {table.title}", "", table.note, "", "| " + " | ".join(header) + " |",
                     "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in cells]
            lines += ["", table.footnote] if table.footnote else []
            blocks.append("\n".join(lines) + "\n")
        else:
            widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(header)]

            def wrapped(text: str) -> str:
                return textwrap.fill(text, min(width or NOTE_WIDTH, NOTE_WIDTH), break_long_words=False,
                                     break_on_hyphens=False)

            lines = [table.title, wrapped(table.note)]
            floats = [pd.api.types.is_float_dtype(dtype) for dtype in table.frame.dtypes]
            leading = floats.index(True) if True in floats else len(floats)  # the factors come first
            attached = {i for i, h in enumerate(header) if h.endswith(("ci95_low", "ci95_high"))}
            for number, panel in enumerate(column_panels(widths, width if fmt == "table" else None, leading,
                                                         attached)):
                lines += [""] if number else []
                lines += ["  ".join(header[i].rjust(widths[i]) for i in panel),
                          "  ".join("-" * widths[i] for i in panel)]
                lines += ["  ".join(row[i].rjust(widths[i]) for i in panel) for row in cells]
            if not cells:
                lines.append("(no rows: the dataset has nothing to compare here)")
            lines += [wrapped(table.footnote)] if table.footnote else []
            blocks.append("\n".join(lines) + "\n")
    if fmt == "csv" and labels:
        blocks.append("# labels: the groups' display labels\n" + pd.DataFrame(
            {"group": list(labels), "label": list(labels.values())}).to_csv(index=False))
    prefix = "# " if fmt == "csv" else ""
    skipped = [f"{prefix}Table {name} skipped: {reason}" for name, reason in analysis.skipped.items()]
    return "\n".join(blocks + skipped)
