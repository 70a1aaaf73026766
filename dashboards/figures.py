"""Publication figures of a sweep dataset, as PDF (embedded TrueType fonts) and PNG.

Serif text with Computer Modern mathtext (no TeX install needed), the Okabe–Ito colour-blind-safe
palette, a 95% CI on every point (band or bar), and the random and oracle groups of the same cells
as dashed references on every panel. A factor with one level gives single points, never an error.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the backend
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from collective.analysis.learning import (EFFICIENCY_REFERENCE, held_out_learning, learning_curves,  # noqa: E402
                                         replay_curves)
from collective.analysis.tables import (K_BIN, K_MID, Dataset, add_k_bins, clustered_mean_ci,  # noqa: E402
                                       environment_ids, mean_ci)

logging.getLogger("fontTools").setLevel(logging.ERROR)  # Computer Modern's old 'head' timestamps, when subsetting
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#F0E442")  # yellow last: low contrast
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
REFERENCE_STYLE = {"random": dict(color="#7f7f7f", linestyle="--"), "oracle": dict(color="#000000", linestyle=":")}
STYLE = {
    "font.family": "serif", "font.serif": ["DejaVu Serif"], "mathtext.fontset": "cm",
    "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 7.5, "xtick.labelsize": 8,
    "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.25, "grid.linewidth": 0.5, "lines.linewidth": 1.3, "lines.markersize": 4,
    "pdf.fonttype": 42, "ps.fonttype": 42, "savefig.bbox": "tight", "savefig.dpi": 200,
}
UPSILON = r"$\Upsilon$ (mean reward $\bar{R}$)"
PANEL_WIDTH, PANEL_HEIGHT, LEGEND_WIDTH, MAX_COLUMNS = 2.9, 2.3, 1.8, 4


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


def _is_reference(groups: pd.DataFrame, behaviour: str) -> pd.Series:
    return (groups["behaviour"] == behaviour) & (groups["protocol"] == "none") & (groups["mix"] == "")


def _group_types(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per group label: behaviour, mix, protocol, whether it is a reference, its colour and marker."""
    types = rows[["group", "behaviour", "mix", "protocol"]].drop_duplicates("group")
    types = types.assign(reference=np.where(_is_reference(types, "random"), "random",
                                            np.where(_is_reference(types, "oracle"), "oracle", "")))
    order = sorted(types.itertuples(index=False), key=lambda t: (t.reference, t.protocol != "none", t.protocol, t.group))
    types = types.set_index("group").loc[[t.group for t in order]]
    series = [label for label in types.index if not types.loc[label, "reference"]]
    types["colour"] = [OKABE_ITO[series.index(g) % len(OKABE_ITO)] if g in series else "" for g in types.index]
    types["marker"] = [MARKERS[series.index(g) % len(MARKERS)] if g in series else "" for g in types.index]
    return types


def _grid(panels: int, panel_width: float = PANEL_WIDTH, legend_width: float = LEGEND_WIDTH) -> tuple[Figure, list]:
    columns = max(1, min(MAX_COLUMNS, panels))
    lines = math.ceil(panels / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(panel_width * columns + legend_width,
                                                         PANEL_HEIGHT * lines + 0.5),
                                squeeze=False, sharey=True, layout="constrained")
    flat = list(axes.flat)
    for unused in flat[panels:]:
        unused.set_visible(False)
    return figure, flat[:panels]


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


def _finish(figure: Figure, axes: list, title: str, only: tuple[str, ...] | None = None) -> None:
    """Common y label, y range within R̄'s [-1, 1], one legend for the whole figure (of the labels `only`
    when given), title."""
    for ax in axes:
        low, high = ax.get_ylim()
        ax.set_ylim(max(low, -1.05), min(high, 1.05))
    for ax in axes[::MAX_COLUMNS]:
        ax.set_ylabel(UPSILON)
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if only is None or label in only:
                handles.setdefault(label, handle)
    if handles:
        figure.legend(handles.values(), handles.keys(), loc="outside right upper", frameon=False)
    figure.suptitle(title)


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


def _series_figure(rows: pd.DataFrame, types: pd.DataFrame, x: str, xlabel: str, name: str, title: str,
                   caption: str, ticks: dict | None = None, log_x: bool = False) -> FigureSpec:
    """One panel per protocol, one curve per group type of that protocol, against factor x."""
    series = types[types["reference"] == ""]
    protocols = list(dict.fromkeys(series["protocol"])) or ["none"]
    figure, axes = _grid(len(protocols))
    for ax, protocol in zip(axes, protocols):
        labels = series.index[series["protocol"] == protocol]
        part = rows[rows["group"].isin(labels)]
        for label in labels:
            _plot_curve(ax, _curve(part[part["group"] == label], x), label, color=types.loc[label, "colour"],
                        marker=types.loc[label, "marker"])
        cells = set(part["cell"]) if len(labels) else set(rows["cell"])
        _references(ax, rows, types, cells, x)
        ax.set_title("isolated agents (no protocol)" if protocol == "none" else f"protocol: {protocol}")
        ax.set_xlabel(xlabel)
        if log_x:
            ax.set_xscale("log")
        if ticks is not None:
            levels = sorted(rows.loc[rows["cell"].isin(cells), x].unique())
            ax.set_xticks(levels, [ticks.get(level, f"{level:g}") for level in levels])
            ax.minorticks_off()
    _finish(figure, axes, title)
    return FigureSpec(name, title, caption, figure)


def _heat_maps(rows: pd.DataFrame, types: pd.DataFrame) -> FigureSpec:
    """Υ over K bins x group size, one panel per group type, annotated with Υ ± CI half-width; the colour
    bar marks the random and oracle levels."""
    series = types.index[types["reference"] == ""]
    labels = list(series) or list(types.index)
    summary = {label: rows[rows["group"] == label].groupby([K_BIN, "group_size"], observed=True)["score"]
               .apply(lambda s: mean_ci(s.to_numpy())) for label in labels}
    values = [v[1] for table in summary.values() for v in table]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    references = {r: rows[rows["group"].isin(types.index[types["reference"] == r])]["score"].mean()
                  for r in REFERENCE_STYLE}
    present = [v for v in references.values() if not math.isnan(v)]
    low, high = min([low, *present]), max([high, *present])
    figure, axes = _grid(len(labels), legend_width=0.6)
    image = None
    for ax, label in zip(axes, labels):
        table = summary[label]
        k_levels = [k for k in rows[K_BIN].cat.categories if k in table.index.get_level_values(0)]
        sizes = sorted(table.index.get_level_values(1).unique())
        grid = np.full((len(k_levels), len(sizes)), np.nan)
        for (k, size), (n, mean, lo, hi) in table.items():
            i, j = k_levels.index(k), sizes.index(size)
            grid[i, j] = mean
            half = f"\n±{(hi - lo) / 2:.2f}" if n > 1 else ""
            ax.text(j, i, f"{mean:.2f}{half}", ha="center", va="center", fontsize=6,
                    color="white" if mean < low + 0.45 * (high - low) else "black")
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="cividis", vmin=low, vmax=high)
        ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
        ax.set_yticks(range(len(k_levels)), k_levels)
        ax.grid(False)
        ax.set_title(label)
        ax.set_xlabel("group size $G$")
    for ax in axes[::MAX_COLUMNS]:
        ax.set_ylabel(r"complexity $K(\mu)$ (LZ76 phrases)")
    if image is not None:
        bar = figure.colorbar(image, ax=axes, shrink=0.9, label=UPSILON)
        for reference, level in references.items():
            if not math.isnan(level):
                bar.ax.axhline(level, color=REFERENCE_STYLE[reference]["color"], linewidth=1.5,
                               linestyle=REFERENCE_STYLE[reference]["linestyle"])
                bar.ax.text(-0.3, level, reference, transform=bar.ax.get_yaxis_transform(), ha="right", va="center",
                            fontsize=7)
    title = r"$\Upsilon$ over complexity $K$ and group size"
    figure.suptitle(title)
    return FigureSpec("heatmap_k_group_size", title,
                      "Υ per K bin and group size for each group type (cell text: Υ ± 95% CI half-width); "
                      "the colour bar marks Υ of the random and oracle groups.", figure)


def _structures(rows: pd.DataFrame, types: pd.DataFrame) -> FigureSpec:
    """Every group type side by side, one panel per group size (collective sizes when there are any)."""
    sizes = sorted(rows["group_size"].unique())
    sizes = [s for s in sizes if s > 1] or sizes
    most = max(rows[rows["group_size"] == size]["group"].nunique() for size in sizes)
    figure, axes = _grid(len(sizes), panel_width=max(PANEL_WIDTH, 0.45 * most + 0.8), legend_width=1.0)
    for ax, size in zip(axes, sizes):
        part = rows[rows["group_size"] == size]
        labels = [g for g in types.index if types.loc[g, "reference"] == "" and g in set(part["group"])]
        for position, label in enumerate(labels):
            n, mean, low, high = mean_ci(part.loc[part["group"] == label, "score"].to_numpy())
            error = [[mean - low], [high - mean]] if n > 1 else None
            ax.errorbar([position], [mean], yerr=error, fmt=types.loc[label, "marker"], capsize=3,
                        color=types.loc[label, "colour"], label=label)
        _references(ax, rows, types, set(part["cell"]), None)
        ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", fontsize=7)
        ax.set_xlim(-0.6, max(len(labels), 1) - 0.4)
        ax.set_title(f"group size $G = {size}$")
        ax.set_xlabel("organisational structure")
    title = "Organisational structures side by side"
    _finish(figure, axes, title, only=tuple(REFERENCE_STYLE))
    return FigureSpec("structures", title, "Υ with 95% CI of every group type (isolated agents and protocols) "
                      "per group size, on the same cells; random and oracle levels with their CIs.", figure)


def _learning(rows: pd.DataFrame, types: pd.DataFrame) -> FigureSpec | None:
    """Held-out learners' Υ on unseen episodes against novel training episodes when the data varies them,
    else replay learners' Υ against replay steps (collective/analysis/learning.py); None without either."""
    _, points = held_out_learning(rows)
    held_out = not points.empty
    curves = points.rename(columns={"novel_episodes": "x"}) if held_out else \
        replay_curves(rows).rename(columns={"training_steps": "x"}).assign(q_training_passes=None)
    if curves.empty:
        return None
    figure, ax = plt.subplots(figsize=(PANEL_WIDTH * 1.4, PANEL_HEIGHT * 1.2), layout="constrained")
    keys = ["group", "group_size", "q_training_passes"] + [key for key in ("grid", "iterations") if key in curves]
    for values, part in curves.groupby(keys, sort=True, dropna=False):
        label, size, passes = values[:3]
        curve = part.rename(columns={"ci95_low": "low", "ci95_high": "high"})
        task = ", ".join(f"{key} {value}" for key, value in zip(keys[3:], values[3:]))
        name = f"{label}, $G = {size}$" + (f", {passes} passes, {task}" if held_out else "")
        _plot_curve(ax, curve, name, color=types.loc[label, "colour"], marker=types.loc[label, "marker"])
    learner_cells = set(rows.loc[rows["group"].isin(curves["group"]), "cell"])
    _references(ax, rows, types, learner_cells, None)
    ax.set_xscale("log")
    ax.set_xlabel("novel training episodes per test episode" if held_out
                  else "training experience (replay agent-steps per episode)")
    title = "Held-out learning" if held_out else "Replay learning"
    _finish(figure, [ax], title)
    caption = ("Υ on unseen test episodes against the novel training episodes each came with (held-out "
               "learning; not paper 002's skill-acquisition efficiency, see the learning table)" if held_out else
               "Υ on the trained episode against q_training_passes x T replay steps (memorisation)")
    return FigureSpec("learning_curves", title, caption + "; random and oracle levels of the same cells.", figure)


def _training_curves(rows: pd.DataFrame, types: pd.DataFrame) -> FigureSpec | None:
    """Υ on unseen episodes against training episodes (the `learning_curves` table), one panel per group
    size, grid and T, with local search's Υ there as a level; None when no learner has two levels."""
    curves = learning_curves(rows)
    if curves.empty:
        return None
    task = ["group_size"] + [key for key in ("grid", "iterations") if key in curves]
    panels = list(curves.groupby(task, sort=True))
    figure, axes = _grid(len(panels))
    for ax, (values, panel) in zip(axes, panels):
        for (label, life, replays), part in panel.groupby(["group", "learner_training", "replays_per_episode"]):
            curve = part.rename(columns={"training_episodes": "x", "ci95_low": "low", "ci95_high": "high"})
            name = label + (f" ({life}, {replays:g} replays)" if (life, replays) != ("pretrained", 1) else "")
            _plot_curve(ax, curve, name, color=types.loc[label, "colour"], marker=types.loc[label, "marker"])
        level = dict(zip(task, values))
        local = rows[(rows["behaviour"] == EFFICIENCY_REFERENCE) & (rows["protocol"] == "none")
                     & (rows["mix"] == "")]
        for key, value in level.items():
            local = local[local[key] == value]
        if not local.empty:
            n, mean, low, high = _pooled_ci(local)
            ax.axhline(mean, label=EFFICIENCY_REFERENCE, color="#7f7f7f", linestyle=":", linewidth=1.0)
            if n > 1:
                ax.axhspan(low, high, color="#7f7f7f", alpha=0.12, linewidth=0)
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
        ax.set_xlabel("training episodes (each played once)")
        ax.set_title(", ".join(f"{'$G$' if key == 'group_size' else key} = {value}" for key, value in level.items()))
    title = "Learning curves"
    _finish(figure, axes, title)
    return FigureSpec("training_curves", title, "Υ with 95% CI (the learning_curves table) of learners' tables "
                      "scored greedily on unseen test episodes against the held-out training episodes they "
                      "learned from (symlog x: 0 is the untrained table); dotted: local search on the same grid, "
                      "T and group size.", figure)


def _communication(rows: pd.DataFrame, types: pd.DataFrame) -> FigureSpec | None:
    """Υ of each collective per cell against the cell's mean message entropy (the `communication_entropy`
    table's points); sham groups as open markers."""
    if "message_entropy_bits" not in rows:
        return None
    measured = rows[rows["message_entropy_bits"].notna() & (rows["protocol"] != "none")]
    if measured.empty:
        return None
    sham = set(measured.loc[measured.get("communication_control", pd.Series("real", index=measured.index))
                            == "sham", "group"])
    figure, ax = plt.subplots(figsize=(PANEL_WIDTH * 2, PANEL_HEIGHT * 1.4), layout="constrained")
    for label, part in measured.groupby("group", sort=False):
        points = []
        for _, cell in part.groupby("cell", sort=True):
            n, mean, low, high = mean_ci(cell["score"].to_numpy())
            points.append((cell["message_entropy_bits"].mean(), mean, mean - low if n > 1 else 0.0,
                           high - mean if n > 1 else 0.0))
        x, y, below, above = map(np.array, zip(*points))
        colour = types.loc[label, "colour"]
        ax.errorbar(x, y, yerr=[below, above], fmt=types.loc[label, "marker"], capsize=2, color=colour,
                    markerfacecolor="none" if label in sham else colour, label=label)
    ax.set_xlabel("message entropy (bits per message)")
    title = r"$\Upsilon$ against message entropy"
    _finish(figure, [ax], title)
    return FigureSpec("upsilon_vs_message_entropy", title, "Υ with 95% CI of each collective in each cell "
                      "against the cell's mean message entropy (empirical entropy of the messages' symbols per "
                      "episode, Miller-Madow corrected; protocols/__init__.py); open markers: sham controls.",
                      figure)


def build_figures(dataset: Dataset, k_bin_width: int = 4) -> list[FigureSpec]:
    """Every figure of the dataset (learning curves only when training experience varies)."""
    rows = add_k_bins(dataset.rows, k_bin_width)
    types = _group_types(rows)
    grids = rows.drop_duplicates("entropy_bits").set_index("entropy_bits")["grid"].to_dict()
    with plt.rc_context(STYLE):
        figures = [
            _series_figure(rows, types, K_MID, r"complexity $K(\mu)$ (bin centre)", "upsilon_vs_k",
                           r"$\Upsilon$ against algorithmic complexity $K$",
                           f"Υ with 95% CI per K bin (width {k_bin_width}), one panel per protocol, pooled over "
                           "the other factors; dashed: random and oracle of the same cells."),
            _series_figure(rows, types, "entropy_bits", r"entropy $\mathcal{H}(\mu)$ (bits; grid)",
                           "upsilon_vs_entropy", r"$\Upsilon$ against search-space entropy $\mathcal{H}$",
                           "Υ with 95% CI per grid size, H = log2(N(N-1)) bits (paper 003 §4.3); dashed: "
                           "random and oracle of the same cells.",
                           ticks={h: f"{h:.1f}\n({g})" for h, g in grids.items()}),
            _series_figure(rows, types, "group_size", "group size $G$", "upsilon_vs_group_size",
                           r"$\Upsilon$ against group size $G$",
                           "Υ with 95% CI per group size; dashed: random and oracle of the same cells.",
                           ticks={}, log_x=rows["group_size"].nunique() > 2),
            _heat_maps(rows, types),
            _structures(rows, types),
        ]
        optional = [_learning(rows, types), _communication(rows, types), _training_curves(rows, types)]
    return figures + [figure for figure in optional if figure]


def write_figures(dataset: Dataset, out: str | Path, k_bin_width: int = 4) -> list[WrittenFigure]:
    """Build every figure and write it to `out` as NAME.pdf and NAME.png."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in build_figures(dataset, k_bin_width):
        pdf, png = out / f"{spec.name}.pdf", out / f"{spec.name}.png"
        with plt.rc_context(STYLE):
            spec.figure.savefig(pdf, metadata={"CreationDate": None})
            spec.figure.savefig(png)
        plt.close(spec.figure)
        written.append(WrittenFigure(spec.name, spec.title, spec.caption, pdf, png))
    return written
