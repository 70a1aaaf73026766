"""The explorable parts of the dashboard: readable headers and one number format for every Analysis table,
sortable and filterable tables (DataTables, shipped in the itables wheel), interactive figures (Plotly, shipped
in the plotly wheel), a headline of the main results with their CIs, and the group/grid/protocol selection that
drives tables and figures alike. Both libraries are embedded once per report; nothing is fetched.

The selection lives in the URL hash (`#grids=5x5,10x10&groups=oracle&protocols=none`), so a link (or a test)
opens the page with a selection applied; `data-ready` on <body> says the page finished initialising and
`data-errors` counts script errors.
"""
from __future__ import annotations

import base64
import gzip
import html
import json
import math
import re
from importlib import resources

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from collective.analysis.base import GROUP_COLUMNS, Analysis, Table, labelled
from collective.analysis.validity import FAILS, HOLDS, NOT_APPLICABLE, REPORT

# Columns naming a group type: a row (and a figure's series) belongs to the group in the first present, e.g. a
# gain's collective, not its isolated baseline; the grid column; readable headers.
GRID_COLUMN = "grid"
COUNT_COLUMNS = ("episodes", "pairs", "environments", "cells")  # a table's counts: its hover shows the first
HEADERS = {
    "group": "Group", "grid": "Grid (rows×cols)", "group_size": "Group size (agents)", "episodes": "Episodes",
    "environments": "Environments", "pairs": "Pairs (cell, episode)", "upsilon": "Υ (mean score, −1…1)",
    "upsilon_random": "Υ random (−1…1)", "upsilon_best": "Υ ceiling (−1…1)", "accuracy": "Accuracy vs ceiling (0…1)",
    "ci95_low": "95% CI low", "ci95_high": "95% CI high", "difference": "Difference in Υ",
    "cohen_dz": "Cohen's dz", "p_t": "p (paired t)", "p_wilcoxon": "p (Wilcoxon)", "p_holm": "p (paired t, Holm)",
    "p_wilcoxon_holm": "p (Wilcoxon, Holm)", "collective": "Collective", "isolated": "Isolated agents",
    "first": "First", "second": "Second", "winner": "Winner", "check": "Check", "subject": "Subject",
    "status": "Verdict", "figure": "Figure", "criterion": "Criterion", "entropy_bits": "H (bits)",
    "k": "K (LZ76 phrases)", "protocol": "Protocol", "behaviour": "Behaviour", "real": "Protocol (real)",
    "sham": "Sham control", "content_free": "Content-free control",
    "information_value": "Information value: Υ(real) − Υ(baseline)", "information_baseline": "Baseline",
    "mechanics": "Mechanics: Υ(content-free) − Υ(isolated)",
    "gain_over_isolated": "Gain over isolated: Υ(real) − Υ(isolated)", "reliance": "Reliance: Υ(isolated) − Υ(sham)",
    "noise": "Noise control", "deaf": "Deaf control", "heading": "Heading search",
    "gain_over_heading": "Gain over heading search: Υ(real) − Υ(heading_search)",
    "dilution": "Dilution: Υ(deaf) − Υ(noise)",
}
UNIT_SUFFIXES = (("_bits", "bits"), ("_seconds", "s"), ("_steps", "agent-steps"), ("_episodes", "episodes"))
FLOAT_DECIMALS = 3  # non-integer numbers: 3 decimals (a column of tiny numbers: 3 significant digits); p-values
LONG_TEXT = 40  # a text column with longer cells wraps them
SCIENTIFIC_BELOW = 1e-2  # a column whose largest size is below this is shown in scientific notation
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#882255", "#44AA99", "#999933", "#AA4499")  # Okabe-Ito then Tol's muted: colour-blind safe
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross")
# (table, value column, y-axis title, figure title): the interactive figures, when the table has the columns.
FIGURES = (
    ("accuracy", "accuracy", "accuracy against the ceiling", "Accuracy against the ceiling (random 0, ceiling 1)"),
    ("upsilon", "upsilon", "Υ (mean episode score)", "Υ by group size"),
    ("gains", "difference", "Υ(collective) − Υ(isolated)", "Gain of collectives over isolated agents"),
    ("sham", "information_value", "Υ(real) − Υ(baseline)",
     "Information value of the messages (real − content-free control, else real − sham)"),
)


def header(column: str) -> str:
    """A readable header with its unit for a column name (the raw name stays in the header's tooltip)."""
    if column in HEADERS:
        return HEADERS[column]
    for suffix, unit in UNIT_SUFFIXES:
        if column.endswith(suffix) and len(column) > len(suffix):
            return f"{_words(column[:-len(suffix)])} ({unit})"
    text = re.sub(r"^upsilon_?", "Υ ", column)
    text = re.sub(r"_?ci95_(low|high)$", r" 95% CI \1", text)
    return _words(text)


def _words(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _is_p_value(column: str) -> bool:
    return column.startswith("p_") or column.endswith(("_p", "_p_holm")) or column == "p"


def format_number(value: object, column: str = "", scientific: bool = False) -> str:
    """The one number format of the report: integers with thousands separators, p-values with 3 significant
    digits (1 below 0.001), other numbers with FLOAT_DECIMALS decimals or, for a `scientific` column (see
    `is_scientific`) and a nonzero number the decimals would show as 0 (a K x G slope beside intercepts), 3
    significant digits in scientific notation; NaN empty."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if _is_p_value(column):
            return f"{value:.3g}" if value == 0 or value >= 1e-3 else f"{value:.1e}"
        if scientific or 0 < abs(value) < 0.5 * 10.0 ** -FLOAT_DECIMALS:
            return f"{value:.2e}".replace("-", "−")
        return f"{value:,.{FLOAT_DECIMALS}f}".replace("-", "−")
    return "" if value is None else str(value)


def is_scientific(values: pd.Series) -> bool:
    """True for a float column whose nonzero values are all smaller in size than SCIENTIFIC_BELOW."""
    if not pd.api.types.is_float_dtype(values):
        return False
    sizes = values.abs().replace([np.inf], np.nan).dropna()
    return bool((sizes > 0).any() and sizes.max() < SCIENTIFIC_BELOW)


def grid_order(grid: object) -> tuple:
    """Sort key of a grid label: "RxC" by its number of cells, then rows; anything else after, by its text."""
    match = re.fullmatch(r"(\d+)x(\d+)", str(grid))
    return (0, int(match[1]) * int(match[2]), int(match[1]), "") if match else (1, 0, 0, str(grid))


def _order_key(value: object, column: str) -> str:
    """What DataTables sorts a cell by: the number itself (NaN last), a grid by its size, else its text."""
    if column == GRID_COLUMN:
        return "{}-{:012d}-{:012d}-{}".format(*grid_order(value))
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (int, np.integer, float, np.floating)):
        return "" if math.isnan(float(value)) else repr(float(value))
    return str(value)


def group_protocols(rows: pd.DataFrame) -> dict[str, str]:
    """Each group type's protocol (from the dataset's rows)."""
    if "protocol" not in rows:
        return {}
    return dict(rows.drop_duplicates("group").set_index("group")["protocol"].astype(str))


def key_columns(frame: pd.DataFrame) -> list[str]:
    """The columns that name a row's level (group types, grid, group size, environment class...): those before
    the first count or Υ column."""
    keys = []
    for column in map(str, frame.columns):
        if column in COUNT_COLUMNS or column.startswith("upsilon"):
            break
        keys.append(column)
    return keys


def _row_attributes(record: dict, protocols: dict[str, str]) -> str:
    groups = [record[c] for c in GROUP_COLUMNS if isinstance(record.get(c), str) and record[c]][:1]
    grids = [str(record[GRID_COLUMN])] if GRID_COLUMN in record else []
    attributes = {"data-groups": groups, "data-grids": grids,
                  "data-protocols": sorted({protocols[g] for g in groups if g in protocols})}
    return "".join(f' {name}="{html.escape(json.dumps(values))}"' for name, values in attributes.items() if values)


def table_html(table_id: str, frame: pd.DataFrame, protocols: dict[str, str], shown: list | None = None,
               cells: dict | None = None, labels: dict[str, str] | None = None) -> str:
    """A DataTables-ready <table> of the `shown` columns (default all): readable headers (raw name in the
    tooltip), formatted cells sorted by their value, groups by their display `labels` (the identifier in the
    tooltip), and each row's groups, grid and protocols as data attributes for the selection. `cells` maps a
    column to (header, function rendering a row's cell)."""
    if frame.empty:
        return '<p class="note">No rows: the dataset has nothing to compare here.</p>'
    shown, cells = list(frame.columns) if shown is None else shown, cells or {}
    scientific = {c: is_scientific(frame[c]) for c in shown}
    kind = {c: "number" if pd.api.types.is_numeric_dtype(frame[c]) else
            "text long" if frame[c].astype(str).str.len().max() > LONG_TEXT else "text" for c in shown}
    head = "".join(f'<th class="{kind[c]}" title="{html.escape(str(c))}">'
                   f'{html.escape(cells[c][0] if c in cells else header(str(c)))}</th>' for c in shown)
    named = {c for c in shown if labels and (c in GROUP_COLUMNS or c == "subject")}

    def td(record: dict, c) -> str:
        value = record[c]
        if c in named and isinstance(value, str) and labelled(value, labels) != value:
            return (f'<td class="{kind[c]}" title="{html.escape(value)}" '
                    f'data-order="{html.escape(labelled(value, labels))}">'
                    f'{html.escape(labelled(value, labels))}</td>')
        return (f'<td class="{kind[c]}" data-order="{html.escape(_order_key(value, str(c)))}">'
                f'{html.escape(cells[c][1](record) if c in cells else format_number(value, str(c), scientific[c]))}'
                f'</td>')

    body = []
    for record in frame.to_dict(orient="records"):
        tds = "".join(td(record, c) for c in shown)
        body.append(f"<tr{_row_attributes(record, protocols)}>{tds}</tr>")
    return (f'<table id="{table_id}" class="data display compact"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(body)}</tbody></table>')


def analysis_tables_html(analysis: Analysis, protocols: dict[str, str]) -> str:
    """Every table of the Analysis, in its order (its footnote under its rows), then the skipped ones with their
    reason."""
    parts = [f'<section class="table" id="table-{name}"><h3>{html.escape(table.title)}</h3><p class="note">'
             f'{html.escape(table.note)}</p>'
             f'{table_html(f"data-{name}", table.frame, protocols, labels=analysis.labels)}'
             + (f'<p class="note footnote" id="footnote-{name}">{html.escape(table.footnote)}</p>' if table.footnote else "")
             + '</section>' for name, table in analysis.tables.items()]
    parts += [f'<section class="table" id="table-{name}"><h3>Table {name} skipped</h3><p class="note">'
              f'{html.escape(reason)}</p></section>' for name, reason in analysis.skipped.items()]
    return "\n".join(parts)


def _with_ci(record: dict, value: str, low: str, high: str, scientific: bool) -> str:
    return (f"{format_number(record[value], value, scientific)} [{format_number(record[low], low, scientific)}, "
            f"{format_number(record[high], high, scientific)}]")


def headline_html(analysis: Analysis, protocols: dict[str, str]) -> str:
    """The main results with their 95% CIs: accuracy against the ceiling per group and grid, gains over isolated
    agents and over the sham control, and the validity suite's verdicts (each from its Analysis table)."""
    tables = analysis.tables
    parts = []
    validity = tables.get("validity")
    if validity is not None and not validity.frame.empty:
        status = validity.frame["status"].value_counts()
        holds, failing = int(status.get(HOLDS, 0)), validity.frame[validity.frame["status"] == FAILS]
        verdict = f"{len(failing)} of {holds + len(failing)} checks FAIL" if len(failing) else f"all {holds} checks hold"
        aside = [f"{int(status.get(kind, 0))} {words}" for kind, words in
                 ((NOT_APPLICABLE, "not applicable"), (REPORT, "figures reported without a verdict")) if status.get(kind, 0)]
        parts.append(f'<p class="verdict {"fails" if len(failing) else "holds"}" id="validity-verdict">'
                     f'Validity suite: {html.escape(verdict)}' + (f" ({'; '.join(aside)})" if aside else "")
                     + ' <a href="#table-validity">(the checks)</a></p>')
        if len(failing):
            parts.append(table_html("headline-failing", failing, protocols, ["check", "subject", "figure"],
                                    labels=analysis.labels))
    for name, value, title, keep in (
            ("accuracy", "accuracy", "Accuracy against the ceiling (95% CI)", ()),
            ("gains", "difference", "Gain over isolated agents, Υ difference (95% CI)",
             ("collective", "isolated", "p_holm")),
            ("sham", "information_value", "Information value (real − content-free, else − sham), Υ difference "
                                          "(95% CI)", ("p_holm",))):
        table = tables.get(name)
        if table is None or table.frame.empty or value not in table.frame:
            continue
        frame = table.frame
        low, high = (f"{value}_ci95_low", f"{value}_ci95_high") if f"{value}_ci95_low" in frame else (
            "ci95_low", "ci95_high")
        ids = [c for c in key_columns(frame) if c != value]
        extra = [c for c in keep if c in frame.columns and c not in ids]
        parts.append(f'<h3>{html.escape(title)}</h3>' + table_html(
            f"headline-{name}", frame, protocols, [*ids, *extra, value],
            {value: (f"{header(value)} [95% CI]", lambda record, v=value, lo=low, hi=high,
                     sci=is_scientific(frame[value]): _with_ci(record, v, lo, hi, sci))}, analysis.labels))
    return "\n".join(parts) or '<p class="note">No headline: the dataset has no accuracy or gain table.</p>'


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def plotly_text(text: str) -> str:
    """`text` for a Plotly name, tick or hover label, shown as written: Plotly reads its own HTML (<a href>,
    <b>, <br>) in them and decodes only a few entities (&amp; &lt; &gt;, not &quot;)."""
    return html.escape(text, quote=False)


def interactive_figure(table: Table, value: str, y_title: str, title: str, protocols: dict[str, str],
                       labels: dict[str, str] | None = None, colours: dict[str, str] | None = None) -> go.Figure:
    """The value with its 95% CI bars, one panel per grid and one colour and marker per series (a group, and the
    table's other varying levels such as a K range): against group size when it varies, else a forest plot (one
    row per series). Series are named by the groups' display labels (`labels`, from the spec) where given, as
    text (`plotly_text`). Hover shows the value, CI and count (customdata: CI low, CI high, count); each trace
    carries its group identifier, grid and protocol in `meta` for the selection. A group is drawn in its colour of
    the paper figures (`colours`, `figures.group_colours`) where given."""
    labels, colours = labels or {}, colours or {}
    frame = table.frame
    low, high = (f"{value}_ci95_low", f"{value}_ci95_high") if f"{value}_ci95_low" in frame else (
        "ci95_low", "ci95_high")
    group = next(c for c in GROUP_COLUMNS if c in frame)
    grids = sorted(set(frame[GRID_COLUMN]), key=grid_order) if GRID_COLUMN in frame else [""]
    count = next((c for c in COUNT_COLUMNS if c in frame), None)
    forest = "group_size" not in frame or frame["group_size"].nunique() < 2
    extra = [c for c in key_columns(frame) if c not in (*GROUP_COLUMNS, GRID_COLUMN, "group_size")
             and frame[c].nunique() > 1]
    figure = make_subplots(rows=1, cols=len(grids), shared_yaxes=True, horizontal_spacing=0.03,
                           subplot_titles=[f"grid {g}" for g in grids] if grids != [""] else None)
    series = list(frame.groupby([group, *extra], sort=False))
    for index, (key, part) in enumerate(series):
        label = plotly_text(labels.get(str(key[0]), str(key[0])) + "".join(
            f" · {header(c).lower()} {format_number(v, c)}" for c, v in zip(extra, key[1:])))
        shown, colour = False, colours.get(str(key[0])) or _color(index)
        for column, grid in enumerate(grids, start=1):
            cut = part[part[GRID_COLUMN] == grid] if grid != "" else part
            if cut.empty:
                continue
            values, lows, highs = (cut[c].to_numpy(float) for c in (value, low, high))
            bars = dict(type="data", array=highs - values, arrayminus=values - lows, thickness=1, width=3)
            position = dict(x=values, y=[label] * len(cut), error_x=bars) if forest else dict(
                x=cut["group_size"], y=values, error_y=bars)
            where = f"grid {grid}" + ("" if forest else f", {header('group_size').lower()} %{{x}}")
            figure.add_trace(go.Scatter(
                **position, customdata=np.column_stack([lows, highs, cut[count].to_numpy(float) if count
                                                        else np.full(len(cut), np.nan)]),
                name=label, legendgroup=label, showlegend=not shown and not forest,
                mode="markers" if forest else "lines+markers",
                marker=dict(color=colour, symbol=SYMBOLS[index // len(PALETTE) % len(SYMBOLS)], size=8),
                line=dict(color=colour, width=1.5),
                meta=dict(group=str(key[0]), grid=str(grid), protocol=protocols.get(str(key[0]), "")),
                hovertemplate=("<b>%{fullData.name}</b>"  # the name, not the label in the template: no %{...} of
                               f"<br>{where}<br>{y_title}: "  # a label is read as a placeholder
                               f"%{{{'x' if forest else 'y'}:.3f}}<br>95% CI [%{{customdata[0]:.3f}}, "
                               f"%{{customdata[1]:.3f}}]"
                               + (f"<br>{header(count).lower()}: %{{customdata[2]:,.0f}}" if count else "")
                               + "<extra></extra>")), row=1, col=column)
            shown = True
    if forest:
        if value != "accuracy":
            figure.add_vline(x=0, line=dict(color="#888", width=1, dash="dot"))
        figure.update_xaxes(title_text=y_title)
        figure.update_yaxes(type="category", autorange="reversed", automargin=True)
        height = max(300, 24 * len(series) + 160)
    else:
        if value != "accuracy":
            figure.add_hline(y=0, line=dict(color="#888", width=1, dash="dot"))
        figure.update_xaxes(title_text=header("group_size"), tickvals=sorted(frame["group_size"].unique()))
        figure.update_yaxes(title_text=y_title, row=1, col=1)
        height = 430
    figure.update_layout(title=dict(text=title, font=dict(size=15)), height=height,
                         margin=dict(l=60, r=20, t=70, b=50), template="simple_white", legend=dict(font=dict(size=11)),
                         hoverlabel=dict(align="left"))
    return figure


def figure_html(name: str, table: Table, value: str, y_title: str, title: str, protocols: dict[str, str],
                labels: dict[str, str] | None = None, colours: dict[str, str] | None = None) -> str:
    """One interactive figure (`interactive_figure`) with its caption, as HTML without the Plotly library."""
    figure = interactive_figure(table, value, y_title, title, protocols, labels, colours)
    spec = figure.to_json().replace("<", "\\u003c")  # JSON that no "</script>" in a label can end early
    return (f'<figure class="plot" id="figure-{name}"><div id="plot-{name}" class="plot-pending"></div>'
            f'<script type="application/json" class="plot-spec" data-plot="plot-{name}">{spec}</script>'
            + f'<figcaption>{html.escape(title)}: from table <a href="#table-{table.name}">{html.escape(table.name)}'
              f'</a>; bars are 95% CIs (the table\'s method). Hover a point for its value, CI and count; click a '
              f'legend entry to hide a group.</figcaption></figure>')


def figures_html(analysis: Analysis, protocols: dict[str, str], labels: dict[str, str] | None = None,
                 colours: dict[str, str] | None = None) -> str:
    """The interactive figures whose table is present with its columns; groups named by `labels` and drawn in
    `colours` where given."""
    parts = []
    for name, value, y_title, title in FIGURES:
        table = analysis.tables.get(name)
        if table is None or table.frame.empty or value not in table.frame:
            continue
        if not any(c in table.frame for c in GROUP_COLUMNS):
            continue
        parts.append(figure_html(name, table, value, y_title, title, protocols, labels, colours))
    return "\n".join(parts)


def selection_html(analysis: Analysis, protocols: dict[str, str], labels: dict[str, str] | None = None) -> str:
    """Checkbox lists of every group, grid and protocol named in the tables (all ticked); a group's box shows
    its display label (`labels`) where the spec gives one, its value stays the identifier."""
    labels = labels or {}
    groups, grids = {}, {}
    for table in analysis.tables.values():
        for column in GROUP_COLUMNS:
            if column in table.frame:
                groups.update(dict.fromkeys(v for v in table.frame[column] if isinstance(v, str) and v))
        if GRID_COLUMN in table.frame:
            grids.update(dict.fromkeys(map(str, table.frame[GRID_COLUMN])))
    choices = {"groups": sorted(groups), "grids": sorted(grids, key=grid_order),
               "protocols": sorted({protocols[g] for g in groups if g in protocols})}
    boxes = []
    for kind, values in choices.items():
        items = "".join(f'<label><input type="checkbox" name="{kind}" value="{html.escape(v)}" checked> '
                        f'{html.escape(labels.get(v, v) if kind == "groups" else v)}</label>' for v in values)
        boxes.append(f'<fieldset id="select-{kind}"><legend>{kind} <button type="button" data-all="{kind}">all'
                     f'</button><button type="button" data-none="{kind}">none</button></legend>{items}</fieldset>')
    return f'<div id="selection">{"".join(boxes)}</div>'


def _packed(script: bytes) -> str:
    """A script gzipped and in base64: Plotly's 4.8 MB take 1.9 MB of the report, DataTables' 0.6 MB 0.2 MB."""
    return base64.b64encode(gzip.compress(script, compresslevel=9, mtime=0)).decode("ascii")


def libraries_html() -> str:
    """Plotly's and DataTables' scripts and styles, once, each gzipped and unpacked by the browser
    (DecompressionStream) into a blob URL, which is not a network request: Plotly run as a classic script
    (`window.plotlyReady`, its figures drawn then), the DataTables bundle of the itables wheel imported as an
    ES module (`window.dataTablesModule`)."""
    bundle = resources.files("itables") / "html"
    plotly = _packed(get_plotlyjs().encode("utf-8"))
    tables = _packed((bundle / "dt_bundle.js").read_bytes())
    return (f'<style>{(bundle / "dt_bundle.css").read_text(encoding="utf-8")}</style>\n'
            f'<script>{UNPACK}\n'
            f'window.plotlyReady = unpacked("{plotly}").then(function (url) {{\n'
            f'  return new Promise(function (resolve, reject) {{\n'
            f'    var script = document.createElement("script");\n'
            f'    script.onload = resolve; script.onerror = reject; script.src = url; document.head.append(script);\n'
            f'  }});\n'
            f'}}).then(domReady).then(drawPlots);\n'
            f'window.dataTablesModule = unpacked("{tables}").then(function (url) {{ return import(url); }});'
            f'</script>')


# Unpack a gzipped, base64 script into a blob URL; draw each pending figure from its JSON once Plotly runs.
UNPACK = """
function domReady() {  // the figures' JSON is in the body: the parser must have reached all of it
  return new Promise(function (resolve) {
    if (document.readyState !== 'loading') { resolve(); } else { document.addEventListener('DOMContentLoaded', resolve); }
  });
}
function unpacked(packed) {
  if (!window.DecompressionStream) {  // Chrome 80+, Firefox 113+, Safari 16.4+
    domReady().then(function () {
      var note = document.createElement('p');
      note.textContent = 'This browser cannot unpack the figures and tables of this report (it lacks DecompressionStream); '
        + 'open the report in a current Chrome, Firefox or Safari.';
      document.body.prepend(note);
    });
    return Promise.reject(new Error('no DecompressionStream'));
  }
  var bytes = Uint8Array.from(atob(packed), function (c) { return c.charCodeAt(0); });
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).blob().then(function (blob) {
    return URL.createObjectURL(new Blob([blob], {type: 'text/javascript'}));
  });
}
function drawPlots() {
  return Promise.all(Array.prototype.map.call(document.querySelectorAll('script.plot-spec'), function (spec) {
    var figure = JSON.parse(spec.textContent), plot = document.getElementById(spec.dataset.plot);
    plot.classList.remove('plot-pending');
    return Plotly.newPlot(plot, figure.data, figure.layout, {displaylogo: false, responsive: true});
  }));
}
"""


SCRIPT = """
(function () {
  var body = document.body;
  body.dataset.errors = '0';
  window.addEventListener('error', function () { body.dataset.errors = String(+body.dataset.errors + 1); });
  window.addEventListener('unhandledrejection', function () { body.dataset.errors = String(+body.dataset.errors + 1); });
  var kinds = ['groups', 'grids', 'protocols'];
  function chosen() {
    var state = {};
    kinds.forEach(function (kind) {
      var boxes = document.querySelectorAll('input[name="' + kind + '"]');
      state[kind] = new Set(Array.prototype.filter.call(boxes, function (b) { return b.checked; })
        .map(function (b) { return b.value; }));
    });
    return state;
  }
  // The address: kind=value,value&kind=... with each value percent-encoded where it must be. Not
  // URLSearchParams, whose form encoding reads '+' as a space: a group such as local_search+stigmergy
  // would match nothing.
  function decoded(text) {
    try { return decodeURIComponent(text); } catch (error) { return text; }  // a stray '%' is itself
  }
  function hashParams(hash) {
    var params = {};
    hash.replace(/^#/, '').split('&').forEach(function (pair) {
      var at = pair.indexOf('=');
      if (at > 0) { params[decoded(pair.slice(0, at))] = pair.slice(at + 1).split(',').filter(Boolean).map(decoded); }
    });
    return params;
  }
  function hashValue(value) {  // readable where the address allows it: a group's + : = ( ) stay as typed
    return encodeURIComponent(value).replace(/%2B/g, '+').replace(/%3A/g, ':').replace(/%3D/g, '=');
  }
  function readHash() {
    var params = hashParams(location.hash);
    kinds.forEach(function (kind) {
      if (!(kind in params)) { return; }
      var wanted = new Set(params[kind]);
      document.querySelectorAll('input[name="' + kind + '"]').forEach(function (b) { b.checked = wanted.has(b.value); });
    });
  }
  function writeHash(state) {
    var parts = [];
    kinds.forEach(function (kind) {
      var all = document.querySelectorAll('input[name="' + kind + '"]').length;
      if (state[kind].size < all) { parts.push(kind + '=' + Array.from(state[kind]).map(hashValue).join(',')); }
    });
    history.replaceState(null, '', parts.length ? '#' + parts.join('&') : location.pathname);
  }
  function keeps(state, attributes) {
    function any(kind, values) { return !values || values.some(function (v) { return state[kind].has(v); }); }
    return any('groups', attributes.groups) && any('grids', attributes.grids) && any('protocols', attributes.protocols);
  }
  function rowKeeps(state, row) {
    var parse = function (text) { return text ? JSON.parse(text) : null; };
    return keeps(state, {groups: parse(row.dataset.groups), grids: parse(row.dataset.grids),
                         protocols: parse(row.dataset.protocols)});
  }
  var tables = [];
  function apply() {
    var state = chosen();
    writeHash(state);
    document.querySelectorAll('.js-plotly-plot').forEach(function (plot) {
      var visible = plot.data.map(function (trace) {
        var meta = trace.meta || {};
        return keeps(state, {groups: meta.group ? [meta.group] : null, grids: meta.grid ? [meta.grid] : null,
                             protocols: meta.protocol ? [meta.protocol] : null});
      });
      Plotly.restyle(plot, {visible: visible});
    });
    tables.forEach(function (table) { table.draw(); });
  }
  Promise.all([window.dataTablesModule, window.plotlyReady]).then(function (loaded) {
    var DataTable = loaded[0].default;
    DataTable.ext.search.push(function (settings, data, index) {
      return rowKeeps(chosen(), settings.aoData[index].nTr);
    });
    document.querySelectorAll('table.data').forEach(function (table) {
      tables.push(new DataTable(table, {paging: false, scrollX: true, scrollY: '24em', scrollCollapse: true,
                                        order: [], autoWidth: false,
                                        language: {search: 'Filter:', info: '_TOTAL_ of _MAX_ rows',
                                                   infoFiltered: '', infoEmpty: '0 of _MAX_ rows'}}));
    });
    readHash();
    document.querySelectorAll('#selection input').forEach(function (box) { box.addEventListener('change', apply); });
    document.querySelectorAll('#selection button').forEach(function (button) {
      button.addEventListener('click', function () {
        var kind = button.dataset.all || button.dataset.none;
        document.querySelectorAll('input[name="' + kind + '"]').forEach(function (b) { b.checked = !!button.dataset.all; });
        apply();
      });
    });
    window.addEventListener('hashchange', function () { readHash(); apply(); });
    apply();
    body.dataset.ready = 'true';
  });
})();
"""
