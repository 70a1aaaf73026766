"""`collective figures`: content of every figure (panels, one per grid; axis labels, series, CI bands,
references), files written as PDF with embedded fonts and PNG, graceful output when a factor has one
level, labels drawn as written and thousands of groups. Paper sizes, labels, selection and the gain figure:
test_figures_paper.py."""
import io
import subprocess
import sys

import matplotlib.image
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.image import AxesImage

from analysis_data import GRIDS, collective, many_groups, sweep
from collective.analysis.dataset import Dataset, load_dataset
from collective.dashboards.figures import MAX_GROUPS, PAGE_HEIGHT, STYLE, FigureOptions, build_figures

SERIES = {"none": {"local_search", "q_learning"}, "stigmergy": {"local_search+stigmergy"},
          "wisdom": {"local_search+wisdom"}}
REFERENCES = {"random", "oracle"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return sweep(tmp_path_factory.getbasetemp(), "tiny")


@pytest.fixture(scope="module")
def figures(tiny):
    return {spec.name: spec.figure for spec in build_figures(load_dataset([tiny]))}


def visible_axes(figure):
    return [ax for ax in figure.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def labelled_lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


@pytest.mark.parametrize("name, x_symbol, grids", [("upsilon_vs_k", "K", GRIDS),
                                                   ("upsilon_vs_entropy", r"\mathcal{H}", ("",)),
                                                   ("upsilon_vs_group_size", "G", GRIDS)])
def test_series_figures_have_one_panel_per_grid_and_protocol_with_ci_bands_and_references(figures, name, x_symbol,
                                                                                          grids):
    """Against H the grid is the x axis: one panel per protocol; against K and G one per grid and protocol."""
    axes = visible_axes(figures[name])
    panels = [(grid, protocol, series) for grid in grids for protocol, series in SERIES.items()]
    assert len(axes) == len(panels)
    assert "Upsilon" in axes[0].get_ylabel()
    for ax, (grid, protocol, series) in zip(axes, panels):
        assert ax.get_title().startswith(grid)
        assert protocol in ax.get_title() or (protocol == "none" and "isolated" in ax.get_title())
        assert x_symbol in ax.get_xlabel()
        lines = labelled_lines(ax)
        assert {line.get_label() for line in lines} == series | REFERENCES
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) == len(lines)  # a CI band per curve, references included


def test_panels_of_a_figure_share_one_x_range(figures):
    """Issue 43 point 8: isolated agents at G 1 and 3 beside collectives at G 3 only drew the collectives' panels
    over another x range, so a row of panels did not read across."""
    for name in ("upsilon_vs_k", "upsilon_vs_group_size"):
        axes = visible_axes(figures[name])
        assert len({ax.get_xlim() for ax in axes}) == 1, name
        assert len({tuple(ax.get_xticks()) for ax in axes}) == 1, name


def test_entropy_figure_has_a_point_per_grid(figures):
    for ax in visible_axes(figures["upsilon_vs_entropy"]):
        for line in labelled_lines(ax):
            assert len(line.get_xdata()) == len(GRIDS)
        assert any(grid in label.get_text() for label in ax.get_xticklabels() for grid in GRIDS)


def test_heat_map_per_group_type_with_references_on_the_colour_bar(figures):
    figure = figures["heatmap_k_group_size"]
    panels = [ax for ax in visible_axes(figure) if any(isinstance(i, AxesImage) for i in ax.get_images())]
    unwrapped = sorted(ax.get_title().replace("\n", "").replace(" ", "") for ax in panels)
    assert unwrapped == sorted(f"{grid}:{label}" for grid in GRIDS for label in set().union(*SERIES.values()))
    assert all("group size" in ax.get_xlabel() for ax in panels)
    colour_bar = [ax for ax in figure.axes if ax.get_label() == "<colorbar>"]
    assert len(colour_bar) == 1 and {t.get_text() for t in colour_bar[0].texts} == REFERENCES
    for ax in panels:
        assert all("±" in text.get_text() for text in ax.texts if "\n" in text.get_text())


def test_structures_side_by_side_with_error_bars(figures):
    axes = visible_axes(figures["structures"])
    assert [ax.get_title() for ax in axes] == [f"{grid}: $G = 3$" for grid in GRIDS]  # the collective group size
    for ax in axes:  # the x axis names where each protocol's group types stand (issue 43 point 8: it was bare)
        assert [label.get_text() for label in ax.get_xticklabels()] == ["isolated", "stigmergy", "wisdom"]
        for bar in (c for c in ax.containers if isinstance(c, ErrorbarContainer)):
            protocol = bar.get_label().partition("+")[2] or "isolated"
            x, = bar.lines[0].get_xdata()
            assert round(x) == ["isolated", "stigmergy", "wisdom"].index(protocol), bar.get_label()
    for ax in axes:
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert sorted(bar.get_label() for bar in bars) == sorted(set().union(*SERIES.values()))
        assert {line.get_label() for line in labelled_lines(ax)} == REFERENCES
    legend = {text.get_text() for text in figures["structures"].legends[0].get_texts()}
    assert legend == set().union(*SERIES.values()) | REFERENCES


def test_upsilon_against_message_entropy_has_a_point_per_collective_and_cell(figures):
    """Each collective (stigmergy, wisdom) at group size 3, a panel per grid: one point with a CI bar per cell
    (here one cell per grid, so the points need no names)."""
    axes = visible_axes(figures["upsilon_vs_message_entropy"])
    assert [ax.get_title() for ax in axes] == list(GRIDS)
    for ax in axes:
        assert "message entropy" in ax.get_xlabel() and not ax.texts
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert sorted(bar.get_label() for bar in bars) == sorted(SERIES["stigmergy"] | SERIES["wisdom"])
        assert all(len(bar.lines[0].get_xdata()) == 1 for bar in bars)


def test_one_level_factors_degrade_to_single_points(tiny):
    dataset = load_dataset([tiny])
    one_grid = dataset.rows[(dataset.rows["grid"] == GRIDS[0]) & (dataset.rows["group_size"] == 3)]
    specs = {s.name: s.figure for s in build_figures(Dataset(rows=one_grid, sources=dataset.sources))}
    for ax in visible_axes(specs["upsilon_vs_entropy"]):
        assert all(len(line.get_xdata()) == 1 for line in labelled_lines(ax))
        assert len([c for c in ax.containers if isinstance(c, ErrorbarContainer)]) == len(labelled_lines(ax))


def test_heat_maps_of_many_groups_fit_a_page(tiny, tmp_path):
    """Issue 43 point 8: a panel per grid and group type, 1.75 in each, three to a line, made the quickstart's heat
    map 12.35 in tall; it now fits a two-column paper's text height, every panel on the same K rows."""
    many = many_groups(tiny, tmp_path / "many", 8)  # 12 group types on 2 grids: 24 panels, the quickstart's 21
    figure, = [s.figure for s in build_figures(load_dataset([many]),
                                               options=FigureOptions(figures=("heatmap_k_group_size",)))]
    panels = [ax for ax in visible_axes(figure) if ax.get_images()]
    assert len(panels) == 24 and figure.get_figheight() <= PAGE_HEIGHT
    assert len({tuple(ax.get_yticks()) for ax in panels}) == 1
    plt.close(figure)


def test_heat_maps_of_more_panels_than_a_page_holds_go_on_pages_each_at_most_a_page(tiny, tmp_path):
    """Review finding 7: 64 panels (32 group types on 2 grids, the most a figure shows) made one heat map 17.9 in
    tall, past the page it is capped at. They now go on pages NAME, NAME-2, ..., each at most PAGE_HEIGHT tall
    (at both widths, with a title too), every panel once, on one colour scale and the same K rows, each caption
    naming its panels; the CLI writes and lists every page and removes an earlier run's pages beyond them."""
    many = many_groups(tiny, tmp_path / "many", 29)  # 33 group types besides random and oracle: 32 shown
    dataset = load_dataset([many])
    for options in (FigureOptions(figures=("heatmap_k_group_size",)),
                    FigureOptions(width=3.5, title=True, figures=("heatmap_k_group_size",))):
        specs = build_figures(dataset, options=options)
        heights = [spec.figure.get_figheight() for spec in specs]
        assert max(heights) <= PAGE_HEIGHT, heights
        pages = len(specs)
        assert pages > 1 and [s.name for s in specs] == ["heatmap_k_group_size", *(
            f"heatmap_k_group_size-{n}" for n in range(2, pages + 1))]
        panels = [ax for spec in specs for ax in visible_axes(spec.figure) if ax.get_images()]
        titles = [ax.get_title().replace("\n", "").replace(" ", "") for ax in panels]
        assert len(titles) == 64 == len(set(titles))
        assert len({ax.get_images()[0].get_clim() for ax in panels}) == 1
        assert len({tuple(ax.get_yticks()) for ax in panels}) == 1
        assert [spec.caption.split(" Page ")[1].split(":")[0] for spec in specs] == [
            f"{n} of {pages}" for n in range(1, pages + 1)]
        assert specs[0].caption.endswith(f"{GRIDS[0]}.") or f"{GRIDS[0]} (group types 1-" in specs[0].caption
        for spec in specs:
            plt.close(spec.figure)
    (tmp_path / "figures").mkdir()
    for stale in ("heatmap_k_group_size-9.pdf", "heatmap_k_group_size-9.png", "heatmap_k_group_size-notes.txt"):
        (tmp_path / "figures" / stale).write_text("an earlier run's")  # its last page, and a file not ours
    result = collective("figures", many, "--out", tmp_path / "figures", "--figures", "heatmap_k_group_size")
    assert result.returncode == 0, result.stderr
    written = {path.rsplit("/", 1)[1] for path in result.stdout.split()}
    assert {"heatmap_k_group_size.pdf", "heatmap_k_group_size-2.svg"} <= written
    assert written | {"heatmap_k_group_size-notes.txt"} == {path.name for path in (tmp_path / "figures").iterdir()}


def test_svg_text_stays_text(tiny, tmp_path):
    """Issue 43 point 8: the SVG drew every letter as a path, so no text could be searched or edited."""
    result = collective("figures", tiny, "--out", tmp_path / "figures", "--figures", "structures")
    assert result.returncode == 0, result.stderr
    svg = (tmp_path / "figures" / "structures.svg").read_text()
    assert ">isolated</text>" in svg and ">stigmergy</text>" in svg


def test_cli_writes_pdf_with_embedded_fonts_and_png(tiny, tmp_path):
    result = collective("figures", tiny, "--out", tmp_path / "figures")
    assert result.returncode == 0, result.stderr
    paths = result.stdout.split()
    assert {p.rsplit("/", 1)[1] for p in paths} >= {"upsilon_vs_k.pdf", "upsilon_vs_k.png", "upsilon_vs_k.svg",
                                                   "structures.pdf"}
    for path in paths:
        data = open(path, "rb").read()
        if path.endswith(".pdf"):
            assert data.startswith(b"%PDF") and b"/FontFile2" in data  # TrueType fonts embedded
        elif path.endswith(".png"):
            height, width = matplotlib.image.imread(path).shape[:2]
            assert height > 300 and width > 300


def test_learning_curve_figure_when_training_experience_varies(tmp_path_factory, tiny):
    trained = sweep(tmp_path_factory.getbasetemp(), "trained")
    specs = {s.name: s.figure for s in build_figures(load_dataset([tiny, trained], pool=True))}
    ax, = visible_axes(specs["learning_curves"])
    assert "training experience" in ax.get_xlabel() and ax.get_xscale() == "log"
    curves = {line.get_label(): line for line in labelled_lines(ax)}
    assert REFERENCES <= set(curves) and len(curves["q_learning, $G = 1$"].get_xdata()) == 2


def test_labels_are_drawn_as_written(tmp_path_factory):
    """Issue 46 item 5: a label is text, never mathtext: "$x$" keeps its dollars, and "$\\frac{" (twice in the
    wisdom collective's label) is no parse error. The SVG of every figure, its text kept as text, shows them."""
    labelled = sweep(tmp_path_factory.getbasetemp(), "labelled")
    drawn = ""
    for spec in build_figures(load_dataset([labelled])):
        buffer = io.StringIO()
        with plt.rc_context({**STYLE, "svg.fonttype": "none"}):
            spec.figure.savefig(buffer, format="svg")
        plt.close(spec.figure)
        drawn += buffer.getvalue()
    assert ">$x$<" in drawn and r">$\frac{, $\frac{ &lt;a href=" in drawn


def test_groups_shown_by_one_label_are_told_apart(tiny):
    """Issue 46 item 5: a label two groups share (--label twice, datasets merged by hand) is followed by each
    group's identifier, so that neither hides the other in the legend."""
    options = FigureOptions(labels={"local_search": "searchers", "q_learning": "searchers"}, figures=("structures",))
    figure, = [spec.figure for spec in build_figures(load_dataset([tiny]), options=options)]
    legend = [text.get_text() for text in figure.legends[0].get_texts()]
    assert {"searchers (local_search)", "searchers (q_learning)"} <= set(legend)
    plt.close(figure)


def test_thousands_of_groups_show_the_first_that_a_figure_tells_apart(tiny, tmp_path):
    """Issue 46 item 5: 2,400 group types (and the 4 of the sweep) are drawn in seconds, the first MAX_GROUPS of
    them, with a notice saying how to choose others; --groups naming more is refused, and an unknown group's
    refusal lists a few of the allowed names, not thousands."""
    many = many_groups(tiny, tmp_path / "many", 2400)
    done = subprocess.run([sys.executable, "-m", "collective", "figures", str(many), "--out", str(tmp_path / "out"),
                           "--figures", "structures"], capture_output=True, text=True, timeout=120)  # main: still running then
    assert done.returncode == 0
    assert done.stderr.splitlines() == [f"collective figures: notice: the figures show the first {MAX_GROUPS} of "
                                        "2,404 group types besides random and oracle (the most a figure tells "
                                        "apart); choose others with collective figures --groups G1,G2"]
    figure, = [s.figure for s in build_figures(load_dataset([many]), options=FigureOptions(figures=("structures",)))]
    assert len(figure.legends[0].get_texts()) == MAX_GROUPS + 2  # and random and oracle
    plt.close(figure)
    agents = ",".join(f"agent_{i}" for i in range(MAX_GROUPS + 1))
    done = collective("figures", many, "--out", tmp_path / "out", "--groups", agents)
    assert done.returncode == 2 and done.stderr == (f"collective figures: error: --groups: {MAX_GROUPS + 1} groups "
                                                    f"besides random and oracle, more than the {MAX_GROUPS} a figure "
                                                    "tells apart\n")
    done = collective("figures", many, "--out", tmp_path / "out", "--groups", "nobody")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and len(done.stderr) < 1000
    assert "(2,406 in all: collective analyze --tables upsilon)" in done.stderr


def test_every_control_is_an_open_marker_against_message_entropy(tiny):
    """A content-free (or deaf, noise) control is drawn as the sham is, an open marker beside its real group's
    filled one (they read alike in a legend otherwise; on the code before, only sham groups were open)."""
    rows = load_dataset([tiny]).rows
    real = rows[rows["group"] == "local_search+wisdom"]
    control = real.assign(group="local_search+wisdom[content_free]", communication_control="content_free")
    both = pd.concat([rows, control], ignore_index=True)
    both["group"] = both["group"].astype("category")
    figure = {s.name: s.figure for s in build_figures(Dataset(rows=both, sources=[]))}["upsilon_vs_message_entropy"]
    faces = {bar.get_label(): bar.lines[0].get_markerfacecolor()
             for ax in visible_axes(figure) for bar in ax.containers if isinstance(bar, ErrorbarContainer)}
    assert faces["local_search+wisdom[content_free]"] == "none" and faces["local_search+wisdom"] != "none"
