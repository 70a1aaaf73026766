"""One self-contained HTML report of a sweep dataset that opens offline: a headline of the main results with
their CIs, a selection of groups, grids and protocols, interactive figures and sortable, filterable tables
(dashboards/explore.py: Plotly and DataTables, each embedded once), the static paper figures (inline base64 PNG),
provenance and data size. Nothing is fetched from a network.

A small inline script marks every image with `data-loaded` ("true" when it decoded) and fills
`#image-check` with the counts, so a headless browser can confirm that every figure rendered.
"""
from __future__ import annotations

import base64
import html
import io
import json
from datetime import datetime, timezone
from pathlib import Path

import matplotlib.pyplot as plt

from collective.analysis.base import Analysis
from collective.analysis.dataset import Dataset, provenance
from collective.dashboards.explore import SCRIPT, analysis_tables_html, figures_html, group_protocols, headline_html, \
    libraries_html, selection_html
from collective.dashboards.figures import STYLE, FigureOptions, build_figures, group_colours, limit_groups
from collective.output_files import replacing

PNG_DPI = 130
CSS = """
body { font-family: Georgia, 'DejaVu Serif', serif; margin: 2em auto; max-width: 1280px; padding: 0 1em;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
nav a { margin-right: 1em; } figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #444; } .note { font-size: 0.85em; color: #555; }
table.data { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0 1.5em; }
table.data th, table.data td { padding: 2px 8px; border-bottom: 1px solid #e4e4e4; text-align: right; }
table.data th { background: #f4f4f4; position: sticky; top: 0; }
.scroll { max-height: 32em; overflow: auto; } pre { background: #f7f7f7; padding: 0.8em; overflow: auto;
font-size: 0.8em; } dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; } dd { margin: 0; }
table.data { font-family: system-ui, sans-serif; font-variant-numeric: tabular-nums; }
table.data td { white-space: nowrap; } table.data .text { text-align: left; }
table.data td.long { white-space: normal; min-width: 24em; } section.table, .headline { margin-bottom: 2em; }
#selection-bar { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid #ccc;
                 font-family: system-ui, sans-serif; font-size: 0.85em; }
#selection { display: flex; gap: 0.6em; flex-wrap: wrap; max-height: 28vh; overflow: auto; }
#selection fieldset { border: 1px solid #ddd; margin: 0; padding: 0.2em 0.6em; max-height: 9em; overflow: auto; }
#selection label { display: inline-block; margin-right: 0.8em; white-space: nowrap; }
#selection button { font-size: 0.8em; margin-left: 0.4em; }
.verdict { font-size: 1.1em; font-weight: bold; } .verdict.holds { color: #1a7f37; } .verdict.fails { color: #b00020; }
figure.plot { border: 1px solid #eee; padding: 0.3em; }
"""
IMAGE_CHECK = """
window.addEventListener('load', function () {
  var images = document.querySelectorAll('img'), loaded = 0;
  images.forEach(function (img) {
    var ok = img.complete && img.naturalWidth > 0;
    img.setAttribute('data-loaded', ok ? 'true' : 'false');
    if (ok) { loaded += 1; }
  });
  var check = document.getElementById('image-check');
  check.setAttribute('data-total', images.length);
  check.setAttribute('data-loaded', loaded);
  check.textContent = loaded + ' of ' + images.length + ' figures rendered';
});
"""


def _size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return ""


def _duration(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{int(hours)} h {int(minutes)} min" if hours else f"{int(minutes)} min {rest:.0f} s" if minutes \
        else f"{rest:.2f} s"


def _definitions(items: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in items) + "</dl>"


def _provenance_html(dataset: Dataset) -> str:
    facts = provenance(dataset)
    parts = [_definitions([
        ("rows", f"{facts['rows']:,} (one per cell, episode and group)"), ("columns", str(facts["columns"])),
        ("cells", str(facts["cells"])), ("group types", str(facts["group_types"])),
        ("episodes per cell", str(facts["episodes_per_cell"])),
        ("size on disk", f"{_size(facts['bytes'])} in {sum(s['files'] for s in facts['sweeps'])} Parquet files"),
        ("seeds", ", ".join(map(str, facts["seeds"]))), ("collective version", ", ".join(facts["versions"])),
        ("compute time", f"{_duration(facts['wall_seconds'])} wall, {_duration(facts['kernel_seconds'])} in the "
                         f"kernel (sums over groups of their batch times)"),
        ("report built on", facts["report_machine"]),
        ("report built at", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
    ])]
    for sweep in facts["sweeps"]:
        parts.append(f"<h3>{html.escape(str(sweep['sweep_id'] or sweep['dataset']))}</h3>")
        parts.append(_definitions([("dataset", sweep["dataset"]), ("description", str(sweep["description"] or "")),
                                   ("seed", str(sweep["seed"])), ("version", str(sweep["version"])),
                                   ("plan", json.dumps(sweep["plan"]) if sweep["plan"] else "(no sweep.json)")]))
        if sweep["spec"]:
            parts.append(f"<details><summary>full spec</summary><pre>"
                         f"{html.escape(json.dumps(sweep['spec'], indent=2))}</pre></details>")
    return "\n".join(parts)


def _figure_html(spec) -> str:
    buffer = io.BytesIO()
    with plt.rc_context(STYLE):
        spec.figure.savefig(buffer, format="png", dpi=PNG_DPI)
    plt.close(spec.figure)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (f'<figure id="figure-{spec.name}"><img alt="{html.escape(spec.title)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(spec.caption)}</figcaption></figure>')


def render_report(dataset: Dataset, analysis: Analysis, k_bin_width: int = 4) -> str:
    """The report as one HTML string."""
    present = set(map(str, dataset.rows["group"].unique()))  # a spec's labels may name groups the rows lack
    options, notice = limit_groups(dataset, FigureOptions(labels={group: label for group, label in
                                                                  analysis.labels.items() if group in present}))
    figures = build_figures(dataset, k_bin_width, options)
    shown = html.escape(f" {notice[:1].upper()}{notice[1:]}.") if notice else ""
    names = sorted({s.description.get("name") or "" for s in dataset.sources if s.description}) or ["sweep"]
    title = f"collective: {', '.join(names)}"
    protocols = group_protocols(dataset.rows)
    labels = analysis.labels
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{CSS}</style>
{libraries_html()}</head>
<body data-ready="false">
<h1>{html.escape(title)}</h1>
<p class="note">Collective intelligence Υ (paper 003 Definition 3) from a sweep dataset.
<span id="image-check" data-total="" data-loaded="">figures not checked (scripts off)</span></p>
<nav><a href="#headline">Headline</a><a href="#figures">Figures</a><a href="#tables">Tables</a>
<a href="#paper-figures">Paper figures</a><a href="#provenance">Provenance</a></nav>
<details id="selection-bar" open><summary>Show groups, grids and protocols (applies to the headline, figures
and tables; kept in the address as #groups=…&amp;grids=…&amp;protocols=…)</summary>
{selection_html(analysis, protocols, labels)}</details>
<h2 id="headline">Headline</h2>
<div class="headline">{headline_html(analysis, protocols)}</div>
<h2 id="figures">Figures</h2>
{figures_html(analysis, protocols, labels, group_colours(dataset.rows))}
<h2 id="tables">Tables</h2>
<p class="note">Click a header to sort (shift-click for a second key); type in Filter to keep matching rows. Hover
a header for its column name in <code>collective analyze</code> output.</p>
{analysis_tables_html(analysis, protocols)}
<h2 id="paper-figures">Paper figures</h2>
<p class="note" id="paper-figures-note">The static figures of <code>collective figures</code>.{shown}</p>
{"".join(_figure_html(spec) for spec in figures)}
<h2 id="provenance">Provenance and data</h2>
{_provenance_html(dataset)}
<script>{IMAGE_CHECK}</script>
<script>{SCRIPT}</script>
</body></html>
"""


def write_report(dataset: Dataset, analysis: Analysis, out: str | Path, k_bin_width: int = 4) -> Path:
    """Write the report to `out` (parent directories created; a previous report replaced only once the new one is
    whole); returns its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = render_report(dataset, analysis, k_bin_width).encode("utf-8")
    with replacing(out) as handle:
        handle.write(report)
    return out.resolve()
