"""Publication figures of a sweep dataset, as PDF (embedded TrueType fonts), PNG and SVG, sized for a paper.

A figure is exactly `FigureOptions.width` inches wide (a one-column 3.5 in or two-column 7.16 in layout, or
any width) and every text in it is at least MIN_FONT_POINTS at that width, so it goes into a paper unscaled.
Serif text with Computer Modern mathtext (no TeX install needed), the Okabe–Ito colour-blind-safe palette
for the first 8 group types and then marker and line-style combinations, a 95% CI on every point (band or
bar), and the random and oracle groups of the same cells as dashed references. No built-in title unless
asked (a paper puts it in the caption). Every figure is faceted by grid: Υ is defined for one search-space
entropy H (paper 003 Definition 3), so grids are never pooled. Groups are shown by their display labels
(the spec's `label`s, else their identifiers) and can be relabelled and selected. A factor with one level
gives single points, never an error.
"""
from __future__ import annotations

import logging
import math
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the backend
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from collective.analysis.base import DatasetError, environment_ids, is_reference  # noqa: E402
from collective.analysis.comparisons import collective_gains  # noqa: E402
from collective.analysis.dataset import Dataset, display_labels  # noqa: E402
from collective.analysis.factors import K_BIN, K_MID, add_k_bins  # noqa: E402
from collective.analysis.inference import clustered_mean_ci, mean_ci  # noqa: E402
from collective.analysis.learning import (EFFICIENCY_REFERENCE, curve_task, held_out_learning,  # noqa: E402
                                         learning_curves, replay_curves)
from collective.output_files import replacing  # noqa: E402

logging.getLogger("fontTools").setLevel(logging.ERROR)  # Computer Modern's old 'head' timestamps, when subsetting
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#F0E442")  # yellow last: low contrast
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
LINESTYLES = ("-", (0, (4, 1.5)), (0, (1.5, 1)), (0, (4, 1, 1, 1)))  # solid, then one per further 8 groups
REFERENCE_STYLE = {"random": dict(color="#7f7f7f", linestyle="--"), "oracle": dict(color="#000000", linestyle=":")}
MIN_FONT_POINTS = 7  # the smallest text a paper prints (ACM, IEEE and Springer captions are 8-9 pt)
STYLE = {
    "font.family": "serif", "font.serif": ["DejaVu Serif"], "mathtext.fontset": "cm",
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": MIN_FONT_POINTS,
    "xtick.labelsize": MIN_FONT_POINTS, "ytick.labelsize": MIN_FONT_POINTS, "figure.titlesize": 9,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.25, "grid.linewidth": 0.5, "lines.linewidth": 1.2, "lines.markersize": 3.5,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none", "svg.hashsalt": "collective", "savefig.bbox": "standard",
    "savefig.dpi": 300, "figure.constrained_layout.h_pad": 0.03, "figure.constrained_layout.w_pad": 0.03,
}
UPSILON = r"$\Upsilon$ (mean reward $\bar{R}$)"
WIDTHS = {"single": 3.5, "double": 7.16}  # inches: one and two columns of a two-column paper (IEEE, ACM)
MIN_WIDTH, MAX_WIDTH = 2.5, 20.0
PANEL_MIN_WIDTH, PANEL_HEIGHT = 1.7, 1.75  # inches
# The heat maps fit a page: at most a two-column paper's text height (ACM's 9 in), in panels narrowed to 1.3 in
# (a few group sizes each) when the usual ones would not fit, each at least its title's lines and 0.95 in (K rows,
# the x axis) tall.
PAGE_HEIGHT, HEAT_PANEL_MIN_WIDTH, HEAT_PANEL_BODY = 9.0, 1.3, 0.95
TITLE_LINE = STYLE["axes.titlesize"] * 1.25 / 72  # inches
HEAT_TITLE_MARGIN = 0.45  # inches of a heat map's width its title leaves to the K labels beside it
CHARACTER_WIDTH = 0.62 / 72  # inches per point of font size: DejaVu Serif's widest common advances
FIGURE_NAMES = ("upsilon_vs_k", "upsilon_vs_entropy", "upsilon_vs_group_size", "heatmap_k_group_size", "structures",
                "gains", "learning_curves", "upsilon_vs_message_entropy", "training_curves")
FORMATS = ("pdf", "png", "svg")
MAX_GROUPS = len(OKABE_ITO) * len(LINESTYLES)  # group types a figure tells apart (`series_style`)
MAX_LISTED = 20  # names an option's refusal lists as allowed


class FigureOptionError(DatasetError):
    """A figure option naming a group the dataset lacks; the message names the option and the allowed values."""


@dataclass(frozen=True)
class FigureOptions:
    """How figures are drawn: width in inches, a title or none, display labels by group identifier (over the
    spec's), the groups shown (None: all; random and oracle stay as references) and the figures built."""

    width: float = WIDTHS["double"]
    title: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    groups: tuple[str, ...] | None = None
    figures: tuple[str, ...] | None = None


def parse_width(text: str) -> float:
    """`single`, `double` or a width in inches, MIN_WIDTH..MAX_WIDTH; ValueError naming the allowed values."""
    if text in WIDTHS:
        return WIDTHS[text]
    try:
        inches = float(text)
    except ValueError:
        inches = math.nan
    if not MIN_WIDTH <= inches <= MAX_WIDTH:
        raise ValueError(f"expected single ({WIDTHS['single']} in), double ({WIDTHS['double']} in) or inches "
                         f"{MIN_WIDTH:g}..{MAX_WIDTH:g} (got {text!r})")
    return inches


@dataclass
class FigureSpec:
    """A built figure with its file name stem and caption."""

    name: str
    title: str
    caption: str
    figure: Figure


@dataclass
class WrittenFigure:
    name: str
    title: str
    caption: str
    pdf: Path
    png: Path
    svg: Path


def plain(text: str) -> str:
    """`text` for a matplotlib text drawn as written: each `$` escaped, so that none starts mathtext."""
    return str(text).replace("$", r"\$")


def _allowed(names: list[str]) -> str:
    """The allowed names an option's refusal lists: all, or the first MAX_LISTED and how many there are."""
    if len(names) <= MAX_LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:MAX_LISTED])}, ... ({len(names):,} in all: collective analyze --tables upsilon)"


def check_options(dataset: Dataset, options: FigureOptions) -> None:
    """FigureOptionError naming the option when `options` names a group the dataset lacks, more than MAX_GROUPS
    groups or an unknown figure, or its width is out of range."""
    known = sorted(dataset.rows["group"].unique())
    for option, names in (("--groups", options.groups or ()), ("--label", options.labels)):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise FigureOptionError(f"{option}: unknown group {unknown[0]!r}; allowed: {_allowed(known)}")
    chosen = _series(dataset.rows[dataset.rows["group"].isin(options.groups or ())])
    if len(chosen) > MAX_GROUPS:
        raise FigureOptionError(f"--groups: {len(chosen)} groups besides random and oracle, more than the "
                                f"{MAX_GROUPS} a figure tells apart")
    unknown = [name for name in options.figures or () if name not in FIGURE_NAMES]
    if unknown:
        raise FigureOptionError(f"--figures: unknown figure {unknown[0]!r}; allowed: {', '.join(FIGURE_NAMES)}")
    if not MIN_WIDTH <= options.width <= MAX_WIDTH:
        raise FigureOptionError(f"--width: must be {MIN_WIDTH:g}..{MAX_WIDTH:g} inches (got {options.width!r})")


def limit_groups(dataset: Dataset, options: FigureOptions) -> tuple[FigureOptions, str]:
    """`options`, choosing the first MAX_GROUPS group types (in the figures' order) when the dataset has more
    and `options.groups` chooses none, with a notice saying so (else empty)."""
    series = _series(dataset.rows)
    if options.groups is not None or len(series) <= MAX_GROUPS:
        return options, ""
    return replace(options, groups=tuple(series[:MAX_GROUPS])), (
        f"the figures show the first {MAX_GROUPS} of {len(series):,} group types besides random and oracle (the "
        f"most a figure tells apart); choose others with collective figures --groups G1,G2")


def series_style(index: int) -> tuple[str, str, object]:
    """Colour, marker and line style of the index-th group type: the 8 Okabe–Ito colours with solid lines
    first, then each further 8 with the next line style and shifted markers, so no two types look alike."""
    return (OKABE_ITO[index % len(OKABE_ITO)], MARKERS[(index + index // len(OKABE_ITO)) % len(MARKERS)],
            LINESTYLES[(index // len(OKABE_ITO)) % len(LINESTYLES)])


def _series(rows: pd.DataFrame) -> list[str]:
    """The group types of `rows` that are not random or oracle, in the figures' order."""
    types = _group_types(rows, {})
    return list(types.index[types["reference"] == ""])


def _group_types(rows: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """One row per group identifier: behaviour, mix, protocol, whether it is a reference, its display label
    (matplotlib text, `plain`), colour, marker and line style."""
    types = rows[["group", "behaviour", "mix", "protocol"]].drop_duplicates("group")
    types = types.assign(reference=np.where(is_reference(types, "random"), "random",
                                            np.where(is_reference(types, "oracle"), "oracle", "")))
    order = sorted(types.itertuples(index=False), key=lambda t: (t.reference, t.protocol != "none", t.protocol, t.group))
    types = types.set_index("group").loc[[t.group for t in order]]
    types["display"] = [plain(labels.get(g, g)) for g in types.index]
    series = [label for label in types.index if not types.loc[label, "reference"]]
    styles = {label: series_style(i) for i, label in enumerate(series)}
    types["colour"] = [styles[g][0] if g in styles else "" for g in types.index]
    types["marker"] = [styles[g][1] if g in styles else "" for g in types.index]
    types["linestyle"] = pd.Series([styles[g][2] if g in styles else "-" for g in types.index], index=types.index,
                                   dtype=object)
    return types


def group_colours(rows: pd.DataFrame) -> dict[str, str]:
    """The colour each group type is drawn in (random and oracle in their reference colours): the paper figures'
    and, through it, the dashboard's, so a group looks the same in both."""
    types = _group_types(rows, {})
    return {group: REFERENCE_STYLE[kind]["color"] if kind else colour
            for group, kind, colour in zip(types.index, types["reference"], types["colour"])}


def _style(types: pd.DataFrame, label: str) -> dict:
    return dict(color=types.loc[label, "colour"], marker=types.loc[label, "marker"],
                linestyle=types.loc[label, "linestyle"])


def _grids(rows: pd.DataFrame) -> list[str]:
    """The grids in order of their entropy H."""
    return rows.drop_duplicates("grid").sort_values(["entropy_bits", "grid"])["grid"].tolist()


def _short(protocol: str) -> str:
    """A protocol's name without its plug-in module path, as matplotlib text (`plain`)."""
    return plain(protocol.rsplit(":", 1)[-1] if ":" in protocol else protocol)


def _wrap(text: str, inches: float, points: float) -> str:
    """Text wrapped to lines of at most `inches` at `points` size; an escaped `$` is never split."""
    breakable = text.replace(r"\$", "\0").replace("+", "+\1 ")  # a group's name may break after its "+"
    lines = textwrap.fill(breakable, max(8, int(inches / (points * CHARACTER_WIDTH))), break_long_words=True)
    return lines.replace("\1 ", "").replace("\1", "").replace("\0", r"\$")


def _columns(panels: int, width: float, panel_width: float = PANEL_MIN_WIDTH) -> int:
    """How many panels of at least `panel_width` inches a line `width` inches wide holds (at least one, at most
    `panels`): `_grid`'s layout, which the heat maps plan their pages on."""
    return max(1, min(panels, int(width // panel_width)))


def _grid(panels: int, width: float, sharey: bool = True, panel_width: float = PANEL_MIN_WIDTH,
          height: float | None = None, least: float = PANEL_HEIGHT) -> tuple[Figure, list, int]:
    """A figure `width` inches wide with as many panels of at least `panel_width` per line as fit, PANEL_HEIGHT
    tall, or (`height`) sharing that many inches, each at least `least` tall; the figure, its visible axes and
    the number of columns."""
    columns = _columns(panels, width, panel_width)
    lines = math.ceil(panels / columns)
    panel_height = PANEL_HEIGHT if height is None else min(PANEL_HEIGHT, max(least, height / lines))
    figure, axes = plt.subplots(lines, columns, figsize=(width, panel_height * lines + 0.1), squeeze=False,
                                sharey=sharey, layout="constrained")
    flat = list(axes.flat)
    for unused in flat[panels:]:
        unused.set_visible(False)
    return figure, flat[:panels], columns


def _panel_title(ax, text: str, columns: int, beside: float = 0.0, margin: float = 0.3) -> None:
    """The panel's title wrapped to its share of the figure's width less `beside` inches (a colour bar's), less
    `margin` (its axis' labels)."""
    ax.set_title(_wrap(text, (ax.figure.get_figwidth() - beside) / columns - margin, STYLE["axes.titlesize"]))


def _pooled_ci(rows: pd.DataFrame) -> tuple[int, float, float, float]:
    """Υ with its CI clustered by environment, as in the `upsilon` table (rows of several groups may share one)."""
    return clustered_mean_ci(rows["score"].to_numpy(), environment_ids(rows))


def _curve(rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """Υ with CI per level of x."""
    records = [dict(zip(("n", "upsilon", "low", "high"), _pooled_ci(part)), x=level)
               for level, part in rows.groupby(x, sort=True, observed=True)]
    return pd.DataFrame(records, columns=["x", "n", "upsilon", "low", "high"])


def _plot_curve(ax, curve: pd.DataFrame, label: str, **style) -> None:
    """Line with markers and a shaded 95% CI band (an error bar too, so a single point shows its CI)."""
    low, high = curve["low"].fillna(curve["upsilon"]), curve["high"].fillna(curve["upsilon"])
    line, = ax.plot(curve["x"], curve["upsilon"], label=label, **style)
    ax.fill_between(curve["x"], low, high, color=line.get_color(), alpha=0.18, linewidth=0)
    if len(curve) == 1:  # a band needs two points: show the single point's CI as a bar
        ax.errorbar(curve["x"], curve["upsilon"], yerr=[curve["upsilon"] - low, high - curve["upsilon"]],
                    fmt="none", ecolor=line.get_color(), elinewidth=0.8, capsize=2)


def _finish(figure: Figure, axes: list, columns: int, title: str, options: FigureOptions,
            only: tuple[str, ...] | None = None, ylabel: str = UPSILON, clamp: bool = True) -> None:
    """Common y label, y range within R̄'s [-1, 1] (`clamp`), one legend below the panels (of the labels
    `only` when given) in as many columns as fit the width, and the title when asked for; the figure grows
    in height to hold them."""
    if clamp:
        for ax in axes:
            low, high = ax.get_ylim()
            ax.set_ylim(max(low, -1.05), min(high, 1.05))
    for ax in axes[::columns]:
        ax.set_ylabel(ylabel)
    for ax in axes:
        ax.set_xlabel(_wrap(ax.get_xlabel(), figure.get_figwidth() / columns - 0.35, STYLE["axes.labelsize"]))
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if only is None or label in only:
                handles.setdefault(label, handle)
    width, points = figure.get_figwidth(), STYLE["legend.fontsize"]
    if handles:
        labels = [_wrap(label, width - 0.6, points) for label in handles]
        longest = max(len(line) for label in labels for line in label.split("\n"))
        ncol = max(1, min(len(labels), int(width // (longest * points * CHARACTER_WIDTH + 0.5))))
        lines = sum(max(label.count("\n") + 1 for label in labels[i:i + ncol]) for i in range(0, len(labels), ncol))
        figure.set_figheight(figure.get_figheight() + lines * points * 1.5 / 72 + 0.12)
        figure.legend(handles.values(), labels, loc="outside lower center", ncol=ncol, frameon=False)
    if options.title:
        figure.set_figheight(figure.get_figheight() + 0.25)
        figure.suptitle(_wrap(title, width - 0.2, STYLE["figure.titlesize"]))


def _references(ax, rows: pd.DataFrame, types: pd.DataFrame, cells: set, x: str | None) -> None:
    """Random and oracle of the panel's cells: a dashed curve against x, or a level line when x is None."""
    for reference, style in REFERENCE_STYLE.items():
        labels = types.index[types["reference"] == reference]
        part = rows[rows["group"].isin(labels) & rows["cell"].isin(cells)]
        if part.empty:
            continue
        if x is None:
            n, mean, low, high = _pooled_ci(part)
            ax.axhline(mean, label=reference, linewidth=1.0, **style)
            if n > 1:
                ax.axhspan(low, high, color=style["color"], alpha=0.12, linewidth=0)
        else:
            _plot_curve(ax, _curve(part, x), reference, marker="", linewidth=1.0, **style)


def _series_figure(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions, x: str, xlabel: str,
                   name: str, title: str, caption: str, by_grid: bool = True, ticks: dict | None = None,
                   log_x: bool = False) -> FigureSpec:
    """One panel per grid and protocol (per protocol when x is the grid), one curve per group type of that
    protocol, against factor x."""
    series = types[types["reference"] == ""]
    protocols = list(dict.fromkeys(series["protocol"])) or ["none"]
    panels = [(grid, protocol) for grid in (_grids(rows) if by_grid else [None]) for protocol in protocols
              if grid is None or not series.index[series["protocol"] == protocol].empty
              or protocol == "none"]
    figure, axes, columns = _grid(len(panels), options.width)
    levels = set()
    for ax, (grid, protocol) in zip(axes, panels):
        local = rows if grid is None else rows[rows["grid"] == grid]
        present = set(local["group"].unique())  # once (a comprehension's condition runs per element), distinct first
        labels = [label for label in series.index[series["protocol"] == protocol] if label in present]
        part = local[local["group"].isin(labels)]
        for label in labels:
            _plot_curve(ax, _curve(part[part["group"] == label], x), types.loc[label, "display"],
                        **_style(types, label))
        cells = set((part if len(labels) else local)["cell"].unique())
        _references(ax, local, types, cells, x)
        shown = "isolated agents" if protocol == "none" else _short(protocol)
        _panel_title(ax, shown if grid is None else f"{grid}: {shown}", columns)
        ax.set_xlabel(xlabel)
        if log_x:
            ax.set_xscale("log")
        levels.update(local.loc[local["cell"].isin(cells), x].unique())
    shown = sorted(levels)
    for ax in axes if ticks is not None else ():
        ax.set_xticks(shown, [ticks.get(level, f"{level:g}") for level in shown])
        ax.minorticks_off()
    span = min(ax.get_xlim()[0] for ax in axes), max(ax.get_xlim()[1] for ax in axes)
    for ax in axes:  # one x range for every panel, so that panels read against each other
        ax.set_xlim(*span)
    _finish(figure, axes, columns, title, options)
    return FigureSpec(name, title, caption, figure)


def _cell_text(cell_width: float, cell_height: float) -> str:
    """What a heat-map cell of that size (inches) can hold at MIN_FONT_POINTS: "mean±ci", "mean" or ""."""
    line = MIN_FONT_POINTS * 1.3 / 72
    if cell_width >= 5.5 * MIN_FONT_POINTS * CHARACTER_WIDTH and cell_height >= 2.2 * line:
        return "mean±ci"
    return "mean" if cell_width >= 4.5 * MIN_FONT_POINTS * CHARACTER_WIDTH and cell_height >= 1.1 * line else ""


def _heat_maps(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions) -> list[FigureSpec]:
    """Υ over K bins x group size, one panel per grid and group type, annotated with Υ (± CI half-width)
    where the cells are large enough for MIN_FONT_POINTS text; the colour bar marks each grid's random
    and oracle levels. Every page at most PAGE_HEIGHT tall: panels narrow to HEAT_PANEL_MIN_WIDTH when the usual
    ones would not fit one page, and panels that do not fit one page at their least height (their title's
    lines and HEAT_PANEL_BODY) go on further pages, NAME-2, NAME-3, ..., each caption naming its panels; every
    page on one colour scale, the same K rows, panel size and cell text, so the pages read as one figure."""
    series = types.index[types["reference"] == ""]
    labels = list(series) or list(types.index)
    panels = [(grid, label) for grid in _grids(rows) for label in labels
              if ((rows["grid"] == grid) & (rows["group"] == label)).any()]
    summary = {panel: rows[(rows["grid"] == panel[0]) & (rows["group"] == panel[1])]
               .groupby([K_BIN, "group_size"], observed=True)["score"].apply(lambda s: mean_ci(s.to_numpy()))
               for panel in panels}
    values = [v[1] for table in summary.values() for v in table]
    references = {(r, grid): part["score"].mean() for r in REFERENCE_STYLE for grid in _grids(rows)
                  if not (part := rows[rows["group"].isin(types.index[types["reference"] == r])
                                       & (rows["grid"] == grid)]).empty}
    levels = values + list(references.values())
    scale = (min(levels), max(levels)) if levels else (0.0, 1.0)
    page, width = PAGE_HEIGHT - 0.1 - 0.25 * options.title, options.width - 0.6  # 0.6 in: the colour bar
    wide = math.ceil(len(panels) / _columns(len(panels), width)) * PANEL_HEIGHT <= page
    panel_width = PANEL_MIN_WIDTH if wide else HEAT_PANEL_MIN_WIDTH
    columns = _columns(len(panels), width, panel_width)
    title_lines = max((_wrap(f"{grid}: {types.loc[label, 'display']}", width / columns - HEAT_TITLE_MARGIN,
                             STYLE["axes.titlesize"]).count("\n") + 1 for grid, label in panels), default=1)
    least = HEAT_PANEL_BODY + title_lines * TITLE_LINE
    lines = math.ceil(len(panels) / columns)
    pages = math.ceil(lines / max(1, int(page // least)))
    page_lines = math.ceil(lines / pages)  # the first lines % pages pages take one line more than the others
    edges = [columns * (number * (lines // pages) + min(number, lines % pages)) for number in range(pages + 1)]
    panel_height = min(PANEL_HEIGHT, max(least, page / page_lines))
    # every panel on the same K rows (named in the first column only) and with the same cell text, which the
    # panel with the most group sizes decides
    present = {k for table in summary.values() for k in table.index.get_level_values(0)}
    k_levels = [k for k in rows[K_BIN].cat.categories if k in present]
    most_sizes = max((table.index.get_level_values(1).nunique() for table in summary.values()), default=1)
    text = _cell_text((width / columns - 0.55) / most_sizes, (panel_height - 0.6) / max(len(k_levels), 1))
    shown = {"mean±ci": "Υ ± 95% CI half-width", "mean": "Υ", "": ""}[text]
    ylabel = r"$K(\mu)$" if panel_height < PANEL_HEIGHT else r"$K(\mu)$ (LZ76 phrases)"  # short: in the caption
    title = r"$\Upsilon$ over complexity $K$ and group size"
    caption = ("Υ per K bin (K(μ) in LZ76 phrases) and group size for each grid and group type"
               + (f" (cell text: {shown})" if shown else "")
               + "; the colour bar marks Υ of each grid's random and oracle groups.")
    specs = []
    for number, (start, end) in enumerate(zip(edges, edges[1:]), 1):
        chunk = panels[start:end]
        figure, axes, page_columns = _grid(len(chunk), width, sharey=False, panel_width=panel_width,
                                           height=panel_height * math.ceil(len(chunk) / columns), least=least)
        figure.set_figwidth(options.width)
        _heat_page(figure, axes, page_columns, chunk, summary, types, k_levels, text, scale, references, ylabel)
        suffix = f" (page {number} of {pages})" if pages > 1 else ""
        if options.title:
            figure.set_figheight(figure.get_figheight() + 0.25)
            figure.suptitle(_wrap(title + suffix, options.width - 0.2, STYLE["figure.titlesize"]))
        where = f" Page {number} of {pages}: {_page_contents(chunk, panels)}." if pages > 1 else ""
        specs.append(FigureSpec("heatmap_k_group_size" + (f"-{number}" if number > 1 else ""), title + suffix,
                                caption + where, figure))
    return specs


def _page_contents(chunk: list[tuple[str, str]], panels: list[tuple[str, str]]) -> str:
    """The panels of a heat-map page by grid: "4x4" where the page holds all of the grid's, else "4x4 (group
    types 3-12 of 33)", numbered in the legend's order."""
    parts = []
    for grid in dict.fromkeys(grid for grid, _ in chunk):
        mine = [label for g, label in panels if g == grid]
        here = [mine.index(label) + 1 for g, label in chunk if g == grid]
        parts.append(grid if len(here) == len(mine) else
                     f"{grid} (group types {here[0]}-{here[-1]} of {len(mine)})")
    return ", ".join(parts)


def _heat_page(figure: Figure, axes: list, columns: int, chunk: list[tuple[str, str]], summary: dict,
               types: pd.DataFrame, k_levels: list, text: str, scale: tuple[float, float], references: dict,
               ylabel: str) -> None:
    """Draw one heat-map page: a panel per (grid, group type) of `chunk` on the rows `k_levels`, cell text as `text`
    says, the colours on `scale` with the random and oracle `references` marked on the colour bar."""
    low, high = scale
    image = None
    for number, (ax, panel) in enumerate(zip(axes, chunk)):
        table = summary[panel]
        sizes = sorted(table.index.get_level_values(1).unique())
        grid = np.full((len(k_levels), len(sizes)), np.nan)
        for (k, size), (n, mean, lo, hi) in table.items():
            i, j = k_levels.index(k), sizes.index(size)
            grid[i, j] = mean
            if text:
                half = f"\n±{(hi - lo) / 2:.2f}" if n > 1 and text == "mean±ci" else ""
                ax.text(j, i, f"{mean:.2f}{half}", ha="center", va="center", fontsize=MIN_FONT_POINTS,
                        color="white" if mean < low + 0.45 * (high - low) else "black")
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="cividis", vmin=low, vmax=high)
        ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
        ax.set_yticks(range(len(k_levels)), k_levels if number % columns == 0 else [])
        ax.grid(False)
        _panel_title(ax, f"{panel[0]}: {types.loc[panel[1], 'display']}", columns, beside=0.6, margin=HEAT_TITLE_MARGIN)
        ax.set_xlabel("group size $G$")
    for ax in axes[::columns]:
        ax.set_ylabel(ylabel)
    if image is not None:
        bar = figure.colorbar(image, ax=axes, shrink=0.9, label=r"$\Upsilon$")
        for reference in REFERENCE_STYLE:
            grid_levels = [level for (r, _), level in references.items() if r == reference]
            for level in grid_levels:
                bar.ax.axhline(level, color=REFERENCE_STYLE[reference]["color"], linewidth=1.2,
                               linestyle=REFERENCE_STYLE[reference]["linestyle"])
            if grid_levels:
                bar.ax.text(-0.3, float(np.mean(grid_levels)), reference, transform=bar.ax.get_yaxis_transform(),
                            ha="right", va="center", fontsize=MIN_FONT_POINTS)


def _structures(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions) -> FigureSpec:
    """Every group type side by side (a marker per type, named in the legend), the types of a protocol together
    above its name on the x axis, one panel per grid and group size (collective sizes when there are any)."""
    sizes = sorted(rows["group_size"].unique())
    sizes = [s for s in sizes if s > 1] or sizes
    panels = [(grid, size) for grid in _grids(rows) for size in sizes
              if ((rows["grid"] == grid) & (rows["group_size"] == size)).any()]
    series = [g for g in types.index if types.loc[g, "reference"] == "" and g in set(rows["group"].unique())]
    protocols = list(dict.fromkeys(types.loc[series, "protocol"])) or ["none"]
    figure, axes, columns = _grid(len(panels), options.width)
    for ax, (grid, size) in zip(axes, panels):
        part = rows[(rows["grid"] == grid) & (rows["group_size"] == size)]
        present = set(part["group"].unique())
        for p, protocol in enumerate(protocols):
            members = [g for g in series if types.loc[g, "protocol"] == protocol and g in present]
            for m, label in enumerate(members):
                n, mean, low, high = mean_ci(part.loc[part["group"] == label, "score"].to_numpy())
                error = [[mean - low], [high - mean]] if n > 1 else None
                ax.errorbar([_dodged(p, m, len(members))], [mean], yerr=error, fmt=types.loc[label, "marker"],
                            capsize=2, color=types.loc[label, "colour"], label=types.loc[label, "display"])
        _references(ax, part, types, set(part["cell"].unique()), None)
        _category_ticks(ax, ["isolated" if p == "none" else _short(p) for p in protocols], columns)
        _panel_title(ax, f"{grid}: $G = {size}$", columns)
    title = "Organisational structures side by side"
    _finish(figure, axes, columns, title, options)
    return FigureSpec("structures", title, "Υ with 95% CI of every group type (isolated agents and protocols) "
                      "per grid and group size, on the same cells, the group types of a protocol side by side "
                      "above its name; random and oracle levels with their CIs.", figure)


def _dodged(category: int, member: int, members: int) -> float:
    """The x of the member-th of `members` points that share the category-th place on a categorical axis."""
    return category + (member - (members - 1) / 2) * min(0.7 / max(members, 1), 0.2)


def _category_ticks(ax, names: list[str], columns: int) -> None:
    """Category names under a panel's places 0..n-1, slanted when they would run together at its width, upright
    when even slanted they would."""
    room = ax.figure.get_figwidth() / columns - 0.5
    length = sum(len(name) + 2 for name in names) * MIN_FONT_POINTS * CHARACTER_WIDTH
    rotation = 0 if length <= room else 30 if length * math.cos(math.radians(30)) <= room else 90
    ax.set_xticks(range(len(names)), names, rotation=rotation, ha="right" if rotation else "center",
                  rotation_mode="anchor", va="center" if rotation == 90 else "top")
    ax.set_xlim(-0.6, len(names) - 0.4)


def _gains(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions) -> FigureSpec | None:
    """Each collective's gain over the isolated agents of its behaviour or mix (the `gains` table's paired
    difference with its 95% CI), one panel per grid, the collectives of a protocol side by side."""
    gains = collective_gains(rows, ["grid"])
    if gains.empty:
        return None
    gain_grids, gain_collectives = set(gains["grid"]), set(gains["collective"])
    grids = [grid for grid in _grids(rows) if grid in gain_grids]
    collectives = [label for label in types.index if label in gain_collectives]
    protocols = list(dict.fromkeys(types.loc[collectives, "protocol"]))
    figure, axes, columns = _grid(len(grids), options.width)
    for ax, grid in zip(axes, grids):
        part = gains[gains["grid"] == grid]
        for p, protocol in enumerate(protocols):
            shown = set(part["collective"])
            members = [label for label in collectives if types.loc[label, "protocol"] == protocol and label in shown]
            for m, label in enumerate(members):
                row = part[part["collective"] == label].iloc[0]
                x = _dodged(p, m, len(members))
                below, above = (row["difference"] - row["ci95_low"], row["ci95_high"] - row["difference"])
                error = None if math.isnan(below) or math.isnan(above) else [[below], [above]]
                ax.errorbar([x], [row["difference"]], yerr=error, fmt=types.loc[label, "marker"], capsize=2,
                            color=types.loc[label, "colour"], label=types.loc[label, "display"])
        ax.axhline(0.0, color=REFERENCE_STYLE["random"]["color"], linewidth=0.8)
        _category_ticks(ax, [_short(p) for p in protocols], columns)
        _panel_title(ax, grid, columns)
    title = "Gain of collectives over isolated agents"
    _finish(figure, axes, columns, title, options, ylabel=r"$\Delta\Upsilon$ (collective $-$ isolated)", clamp=False)
    return FigureSpec("gains", title, "Υ of each collective minus Υ of the isolated agents of the same behaviour "
                      "or mix, paired by cell and episode (the gains table), with its 95% CI; one panel per grid "
                      "(paper 003 Definition 3: one H per Υ); 0 = no gain.", figure)


def _learning(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions) -> FigureSpec | None:
    """Held-out learners' Υ on unseen episodes against novel training episodes when the data varies them,
    else replay learners' Υ against replay steps (collective/analysis/learning.py), one panel per grid (paper
    003 Definition 3) with that grid's random and oracle; None without either."""
    _, points = held_out_learning(rows)
    held_out = not points.empty
    curves = points.rename(columns={"novel_episodes": "x"}) if held_out else \
        replay_curves(rows).rename(columns={"training_steps": "x"}).assign(q_training_passes=None)
    if curves.empty:
        return None
    curve_grids = set(curves["grid"])
    grids = [grid for grid in _grids(rows) if grid in curve_grids]
    figure, axes, columns = _grid(len(grids), options.width)
    keys = ["group", "group_size", "q_training_passes"] + [key for key in ("iterations",) if key in curves]
    for ax, grid in zip(axes, grids):
        for values, part in curves[curves["grid"] == grid].groupby(keys, sort=True, dropna=False):
            label, size, passes = values[:3]
            curve = part.rename(columns={"ci95_low": "low", "ci95_high": "high"})
            task = ", ".join(f"{key} {value}" for key, value in zip(keys[3:], values[3:]))
            name = f"{types.loc[label, 'display']}, $G = {size}$" + (f", {passes} passes, {task}" if held_out else "")
            _plot_curve(ax, curve, name, **_style(types, label))
        learner_cells = set(rows.loc[rows["group"].isin(curves["group"]) & (rows["grid"] == grid), "cell"].unique())
        _references(ax, rows, types, learner_cells, None)
        ax.set_xscale("log")
        ax.set_xlabel("novel training episodes per test episode" if held_out
                      else "training experience (replay agent-steps per episode)")
        _panel_title(ax, grid, columns)
    title = "Held-out learning" if held_out else "Replay learning"
    _finish(figure, axes, columns, title, options)
    caption = ("Υ on unseen test episodes against the novel training episodes each came with (held-out "
               "learning; not paper 002's skill-acquisition efficiency, see the learning table)" if held_out else
               "Υ on the trained episode against q_training_passes x T replay steps (memorisation)")
    return FigureSpec("learning_curves", title, caption + ", one panel per grid; random and oracle levels of the "
                      "grid's learner cells.", figure)


def _training_curves(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions) -> FigureSpec | None:
    """Υ on unseen episodes against training episodes (the `learning_curves` table), one panel per group
    size, grid and T, with local search's Υ there as a level; None when no learner has two levels."""
    curves = learning_curves(rows)
    if curves.empty:
        return None
    task = ["group_size"] + curve_task(rows)
    panels = list(curves.groupby(task, sort=True))
    figure, axes, columns = _grid(len(panels), options.width)
    for ax, (values, panel) in zip(axes, panels):
        for (label, life, replays), part in panel.groupby(["group", "learner_training", "replays_per_episode"]):
            curve = part.rename(columns={"training_episodes": "x", "ci95_low": "low", "ci95_high": "high"})
            name = types.loc[label, "display"] + (f" ({life}, {replays:g} replays)"
                                                  if (life, replays) != ("pretrained", 1) else "")
            _plot_curve(ax, curve, name, **_style(types, label))
        level = dict(zip(task, values))
        local = rows[is_reference(rows, EFFICIENCY_REFERENCE)]
        for key, value in level.items():
            local = local[local[key] == value]
        if not local.empty:
            n, mean, low, high = _pooled_ci(local)
            ax.axhline(mean, label=EFFICIENCY_REFERENCE, color="#7f7f7f", linestyle=":", linewidth=1.0)
            if n > 1:
                ax.axhspan(low, high, color="#7f7f7f", alpha=0.12, linewidth=0)
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
        ax.set_xlabel("training episodes")
        _panel_title(ax, ", ".join(f"{'$G$' if key == 'group_size' else key} = {value}"
                                   for key, value in level.items()), columns)
    title = "Learning curves"
    _finish(figure, axes, columns, title, options)
    return FigureSpec("training_curves", title, "Υ with 95% CI (the learning_curves table) of learners' tables "
                      "scored greedily on unseen test episodes against the held-out training episodes they "
                      "learned from, each played once (symlog x: 0 is the untrained table); dotted: local search "
                      "on the same grid, T and group size.", figure)


def _cell_tags(rows: pd.DataFrame) -> dict[int, str]:
    """A short name per cell from the factors that vary among `rows`' cells (K range, group size, observation
    range); empty names when they do not vary."""
    cells = rows.drop_duplicates("cell").set_index("cell")
    parts = {}
    if {"k_min", "k_max"} <= set(cells) and (cells["k_min"].nunique() > 1 or cells["k_max"].nunique() > 1):
        parts["K"] = [f"K {a}-{b}" if a != b else f"K {a}" for a, b in zip(cells["k_min"], cells["k_max"])]
    for column, name in (("group_size", "G"), ("observation_range", "r")):
        if column in cells and cells[column].nunique() > 1:
            parts[name] = [f"{name} {value}" for value in cells[column]]
    return {cell: ", ".join(tags[i] for tags in parts.values()) for i, cell in enumerate(cells.index)}


def _tag_points(figure: Figure, tags: list[tuple], bars: list[tuple]) -> None:
    """Name each point (ax, x, y, text, colour) beside it, at the first of a few offsets where the name stays
    inside its panel and covers neither a name placed before nor a point with its error bar (`bars`: ax, x,
    low, high); when none is free, the offset that covers the fewest."""
    if not tags:
        return
    figure.draw_without_rendering()  # the final layout, so that names are placed where they will be drawn
    renderer = figure.canvas.get_renderer()
    pad = STYLE["lines.markersize"] * figure.dpi / 72  # a marker's radius and a little more, in pixels
    marks = [Bbox.from_extents(*(ax.transData.transform((x, low)) - pad), *(ax.transData.transform((x, high)) + pad))
             for ax, x, low, high in bars]
    right = ((4, 2), (4, -8), (4, 9), (4, -15), (4, 16))
    left = tuple((-dx, dy) for dx, dy in right)
    placed = []
    for ax, x, y, text, colour in tags:
        on_the_right = ax.transAxes.inverted().transform(ax.transData.transform((x, y)))[0] > 0.6
        offsets = left + right if on_the_right else right + left
        candidates = []
        for dx, dy in offsets:
            note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", color=colour,
                               fontsize=MIN_FONT_POINTS, ha="left" if dx > 0 else "right", annotation_clip=False)
            note.set_in_layout(False)
            box = note.get_window_extent(renderer)
            note.remove()
            within = ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1)
            covered = sum(box.overlaps(other) for other in placed) + sum(box.overlaps(mark) for mark in marks)
            candidates.append((not within, covered, dx, dy, box))
        _, _, dx, dy, box = min(candidates, key=lambda c: c[:2])  # stable: the first of the best
        leader = dict(arrowprops=dict(arrowstyle="-", linewidth=0.4, color=colour, shrinkA=0, shrinkB=2)) \
            if abs(dy) > 9 else {}  # a name set off from its point is tied to it by a thin line
        note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", color=colour,
                           fontsize=MIN_FONT_POINTS, ha="left" if dx > 0 else "right", annotation_clip=False,
                           **leader)
        note.set_in_layout(False)
        placed.append(box)


def _communication(rows: pd.DataFrame, types: pd.DataFrame, options: FigureOptions) -> FigureSpec | None:
    """Υ of each collective per cell against the cell's mean message entropy (the `communication_entropy`
    table's points), one panel per grid, each point named by its cell's factors; the controls (sham, content-free,
    deaf, noise: `communication_control` other than real) as open markers."""
    if "message_entropy_bits" not in rows:
        return None
    measured = rows[rows["message_entropy_bits"].notna() & (rows["protocol"] != "none")]
    if measured.empty:
        return None
    controls = set(measured.loc[measured.get("communication_control", pd.Series("real", index=measured.index))
                                != "real", "group"])
    measured_grids = set(measured["grid"].unique())
    grids = [grid for grid in _grids(rows) if grid in measured_grids]
    figure, axes, columns = _grid(len(grids), options.width)
    tags, bars = [], []
    for ax, grid in zip(axes, grids):
        local = measured[measured["grid"] == grid]
        cell_names = _cell_tags(local)
        present = set(local["group"].unique())
        for label in [label for label in types.index if label in present]:
            points = []
            for cell, part in local[local["group"] == label].groupby("cell", sort=True):
                n, mean, low, high = mean_ci(part["score"].to_numpy())
                points.append((part["message_entropy_bits"].mean(), mean, mean - low if n > 1 else 0.0,
                               high - mean if n > 1 else 0.0, cell_names.get(cell, "")))
            x, y, below, above, names = map(list, zip(*points))
            colour = types.loc[label, "colour"]
            ax.errorbar(x, y, yerr=[below, above], fmt=types.loc[label, "marker"], capsize=2, color=colour,
                        markerfacecolor="none" if label in controls else colour, label=types.loc[label, "display"])
            tags += [(ax, px, py, name, colour) for px, py, name in zip(x, y, names) if name]
            bars += [(ax, px, py - b, py + a) for px, py, b, a in zip(x, y, below, above)]
        _panel_title(ax, grid, columns)
        ax.set_xlabel("message entropy (bits/message)")
    title = r"$\Upsilon$ against message entropy"
    _finish(figure, axes, columns, title, options)
    _tag_points(figure, tags, bars)
    return FigureSpec("upsilon_vs_message_entropy", title, "Υ with 95% CI of each collective in each cell (named by "
                      "its factors) against the cell's mean message entropy (empirical entropy of the messages' "
                      "symbols per episode, Miller-Madow corrected; protocols/__init__.py), one panel per grid; "
                      "open markers: controls (sham, content-free, deaf, noise).", figure)


def build_figures(dataset: Dataset, k_bin_width: int = 4, options: FigureOptions | None = None) -> list[FigureSpec]:
    """The figures of the dataset that `options.figures` asks for (all by default; learning curves only when
    training experience varies, gains only with collectives, message entropy only when measured), of at most
    MAX_GROUPS group types (`limit_groups`). FigureOptionError naming the option when it names a group the
    dataset lacks."""
    options = options or FigureOptions()
    check_options(dataset, options)
    options, _ = limit_groups(dataset, options)
    rows = add_k_bins(dataset.rows, k_bin_width, midpoints=True)
    if options.groups is not None:
        rows = rows[rows["group"].isin(options.groups) | is_reference(rows, "random") | is_reference(rows, "oracle")]
    types = _group_types(rows, display_labels(dataset, options.labels))
    grids = rows.drop_duplicates("entropy_bits").set_index("entropy_bits")["grid"].to_dict()
    builders = {
        "upsilon_vs_k": lambda: _series_figure(
            rows, types, options, K_MID, r"$K$ (bin centre)", "upsilon_vs_k",
            r"$\Upsilon$ against algorithmic complexity $K$",
            f"Υ with 95% CI per K bin (width {k_bin_width}), one panel per grid and protocol, pooled over the "
            "other factors; dashed: random and oracle of the same cells."),
        "upsilon_vs_entropy": lambda: _series_figure(
            rows, types, options, "entropy_bits", r"$\mathcal{H}(\mu)$ (bits; grid)", "upsilon_vs_entropy",
            r"$\Upsilon$ against search-space entropy $\mathcal{H}$",
            "Υ with 95% CI per grid size, H = log2(N(N-1)) bits (paper 003 §4.3), one panel per protocol; "
            "dashed: random and oracle of the same cells.",
            by_grid=False, ticks={h: f"{h:.1f}\n({g})" for h, g in grids.items()}),
        "upsilon_vs_group_size": lambda: _series_figure(
            rows, types, options, "group_size", "group size $G$", "upsilon_vs_group_size",
            r"$\Upsilon$ against group size $G$",
            "Υ with 95% CI per group size, one panel per grid and protocol; dashed: random and oracle of the "
            "same cells.", ticks={}, log_x=rows["group_size"].nunique() > 2),
        "heatmap_k_group_size": lambda: _heat_maps(rows, types, options),
        "structures": lambda: _structures(rows, types, options),
        "gains": lambda: _gains(rows, types, options),
        "learning_curves": lambda: _learning(rows, types, options),
        "upsilon_vs_message_entropy": lambda: _communication(rows, types, options),
        "training_curves": lambda: _training_curves(rows, types, options),
    }
    with plt.rc_context(STYLE):
        built = [builders[name]() for name in FIGURE_NAMES if options.figures is None or name in options.figures]
    return [spec for item in built for spec in (item if isinstance(item, list) else [item]) if spec]  # pages


def write_figures(dataset: Dataset, out: str | Path, k_bin_width: int = 4,
                  options: FigureOptions | None = None) -> list[WrittenFigure]:
    """Build the figures and write each to `out` as NAME.pdf, NAME.png and NAME.svg (no dates: the same
    data give the same files; a previous file replaced only once the new one is whole; an earlier run's pages
    beyond a figure's pages now removed)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    metadata = {"pdf": {"CreationDate": None}, "png": {}, "svg": {"Date": None}}
    for spec in build_figures(dataset, k_bin_width, options):
        paths = {fmt: out / f"{spec.name}.{fmt}" for fmt in FORMATS}
        with plt.rc_context(STYLE):
            for fmt, path in paths.items():
                with replacing(path) as handle:
                    spec.figure.savefig(handle, format=fmt, metadata=metadata[fmt])
                # The layout, solved for the first file, placed the same in the others: constrained layout's
                # solve is a third of a figure's drawing, and a format would only move it by rounding.
                spec.figure.set_layout_engine("none")
        plt.close(spec.figure)
        written.append(WrittenFigure(spec.name, spec.title, spec.caption, **paths))
    _remove_stale_pages(out, {figure.name for figure in written})
    return written


def _remove_stale_pages(out: Path, names: set[str]) -> None:
    """Remove the pages NAME-N.pdf|png|svg an earlier run wrote beyond those of a figure NAME written now (it has
    fewer pages: fewer group types, another width), so that `out` shows the figure as it now is."""
    for name in names:
        for path in out.glob(f"{name}-*"):
            if path.stem[len(name) + 1:].isdigit() and path.suffix[1:] in FORMATS and path.stem not in names:
                path.unlink()
