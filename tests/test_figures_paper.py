"""`collective figures` for a paper: the README's byo_agent study and a 12-group spec render at one- and
two-column widths with no matplotlib warning and every text at least 7 pt at that width, no panel title
or axis label overlapping another text, styles distinct beyond 8 groups, every panel one grid (paper 003
Definition 3), display labels from the spec and the command line, the gain-with-CI figure, cells named
in the message-entropy scatter, and PDF, PNG and SVG files of the chosen width, the same on every run."""
import html
import json
import subprocess
import sys
import warnings
from itertools import combinations
from pathlib import Path

import matplotlib.image
import matplotlib.pyplot as plt
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from analysis_data import collective, sweep
from collective.analysis.dataset import load_dataset
from collective.sweeps.spec import SpecError, load_spec, parse_spec
from collective.dashboards.figures import (FIGURE_NAMES, MIN_FONT_POINTS, OKABE_ITO, STYLE, WIDTHS,
                                          FigureOptionError, FigureOptions, _tag_points, build_figures, series_style)

ROOT = Path(__file__).resolve().parent.parent
TWELVE = """
name = "twelve"
seed = 7
profile = "paper"
episodes = 3
iterations = 15
[factors]
grid = ["4x4", "6x6"]
group_size = [3]
complexity = ["2:8", "9:16"]
[groups]
behaviours = ["random", "oracle", "local_search", "imitation", "sarsa", "q_learning"]
protocols = [
    { name = "none" },
    { name = "broadcast", behaviours = ["local_search"], controls = ["real", "sham"] },
    { name = "stigmergy", behaviours = ["local_search"] },
    { name = "auction", behaviours = ["local_search"] },
    { name = "wisdom", behaviours = ["local_search"] },
    { name = "dictatorship", behaviours = ["local_search"] },
    { name = "hierarchy", behaviours = ["local_search"] },
    { name = "shared_q", behaviours = ["q_learning"] },
]
"""


def run_sweep(directory: Path, name: str, source: str) -> Path:
    spec = directory / f"{name}.toml"
    spec.write_text(source)
    done = subprocess.run([sys.executable, "-m", "collective", "sweep", str(spec), "--out", str(directory / name),
                           "--executor", "serial", "--yes"], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return directory / name


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """The README's experiments/byo_agent.toml at a test's size (its plug-ins imported from the project root)
    and a spec of 12 group types besides random and oracle."""
    directory = tmp_path_factory.mktemp("paper_figures")
    byo = (ROOT / "experiments" / "byo_agent.toml").read_text()
    byo = byo.replace("episodes = 300", "episodes = 3").replace("iterations = 100", "iterations = 20")
    return {"byo_agent": run_sweep(directory, "byo", byo), "twelve": run_sweep(directory, "twelve", TWELVE)}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(figure):
    return [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("width", ["single", "double"])
@pytest.mark.parametrize("name", ["byo_agent", "twelve"])
def test_renders_at_paper_width_without_warnings_and_every_text_at_least_7pt(datasets, name, width):
    inches = WIDTHS[width]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        specs = build_figures(load_dataset([datasets[name]]), options=FigureOptions(width=inches))
        for spec in specs:
            spec.figure.draw_without_rendering()  # constrained layout runs (and warns) here
    assert {"upsilon_vs_k", "structures", "gains", "upsilon_vs_message_entropy"} <= {s.name for s in specs}
    for spec in specs:
        figure = spec.figure
        scale = min(1.0, inches / figure.get_figwidth())  # a wider figure is shrunk to the column
        assert figure.get_figwidth() == pytest.approx(inches), spec.name
        small = [(t.get_text(), t.get_fontsize() * scale) for t in texts(figure)
                 if t.get_fontsize() * scale < MIN_FONT_POINTS]
        assert not small, (spec.name, small[:3])
        assert not figure.texts or spec.name != "upsilon_vs_k"  # no built-in title unless asked


def test_no_panel_title_or_axis_label_overlaps_another_text(datasets):
    """The issue's broken layout: titles overwriting each other, the legend over a title, axis labels
    running together; at one column, the tighter of the two widths."""
    for spec in build_figures(load_dataset([datasets["byo_agent"]]), options=FigureOptions(width=WIDTHS["single"])):
        figure = spec.figure
        figure.draw_without_rendering()
        renderer = figure.canvas.get_renderer()
        axes = [ax for ax in figure.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        boxes = [(f"{spec.name}: {text.get_text()!r}", text.get_window_extent(renderer)) for ax in axes
                 for text in (ax.title, ax.xaxis.label, ax.yaxis.label) if text.get_text()]
        boxes += [(f"{spec.name}: legend", legend.get_window_extent(renderer)) for legend in figure.legends]
        overlapping = [(a, b) for (a, box_a), (b, box_b) in combinations(boxes, 2) if box_a.overlaps(box_b)]
        for ax in axes:  # tick labels of categories (the gains figure's protocols) running together
            ticks = [label.get_window_extent(renderer) for label in ax.get_xticklabels() if label.get_text()]
            overlapping += [(spec.name, "x tick labels") for a, b in zip(ticks, ticks[1:]) if a.overlaps(b)]
        assert not overlapping, overlapping[:2]


def test_styles_stay_distinct_beyond_eight_groups(datasets):
    assert [series_style(i)[0] for i in range(8)] == list(OKABE_ITO)
    assert len({(colour, linestyle) for colour, _, linestyle in map(series_style, range(32))}) == 32
    spec = next(s for s in build_figures(load_dataset([datasets["twelve"]])) if s.name == "upsilon_vs_k")
    handles = spec.figure.legends[0].legend_handles
    looks = [(h.get_color(), h.get_marker(), str(h.get_linestyle())) for h in handles]
    assert len(looks) == 12 + 2 and len(set(looks)) == len(looks)  # 12 group types, random, oracle


def test_every_panel_is_one_grid_and_its_curves_are_that_grid_s_means(datasets):
    """Paper 003 Definition 3 (one H per Υ): no panel pools grids. A group's point in a grid's panel is its
    mean score over that grid's rows only."""
    dataset = load_dataset([datasets["twelve"]])
    rows = dataset.rows
    specs = {s.name: s.figure for s in build_figures(dataset)}
    for name in ("upsilon_vs_k", "upsilon_vs_group_size", "structures", "gains", "upsilon_vs_message_entropy",
                 "heatmap_k_group_size"):
        titles = [ax.get_title() for ax in specs[name].axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        assert titles and all(sum(t.startswith(grid) for grid in ("4x4", "6x6")) == 1 for t in titles), name
    for ax in [ax for ax in specs["upsilon_vs_group_size"].axes if ax.get_visible()]:
        grid = ax.get_title().split(":")[0]
        for line in ax.get_lines():
            part = rows[(rows["grid"] == grid) & (rows["group"] == line.get_label())]
            if not part.empty:
                assert line.get_ydata()[0] == pytest.approx(part["score"].mean())


def test_gain_figure_is_collective_minus_isolated_per_grid_with_its_ci(datasets):
    dataset = load_dataset([datasets["twelve"]])
    rows = dataset.rows
    figure = next(s for s in build_figures(dataset, options=FigureOptions(figures=("gains",)))).figure
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["4x4", "6x6"]
    for ax in axes:
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 8  # the collectives of local search and Q-learning, sham included
        for bar in bars:
            label = bar.get_label()
            collective_rows = rows[(rows["grid"] == ax.get_title()) & (rows["group"] == label)]
            behaviour = collective_rows["behaviour"].iloc[0]
            isolated = rows[(rows["grid"] == ax.get_title()) & (rows["group"] == behaviour)]
            paired = collective_rows.merge(isolated, on=["cell", "episode"], suffixes=("", "_isolated"))
            gain = (paired["score"] - paired["score_isolated"]).mean()
            assert bar.lines[0].get_ydata()[0] == pytest.approx(gain)
            (_, low), (_, high) = bar.lines[2][0].get_segments()[0]
            assert low < gain < high


def test_display_labels_from_the_spec_and_the_command_line_and_group_selection(datasets):
    dataset = load_dataset([datasets["byo_agent"]])
    gossip = "examples.byo_agent.agents:MemorySearcher+examples.byo_agent.talk:Gossip(margin=0.1)"
    options = FigureOptions(labels={"local_search": "LS"}, groups=(gossip, "local_search"), figures=("structures",))
    figure, = [s.figure for s in build_figures(dataset, options=options)]
    legend = {t.get_text() for t in figure.legends[0].get_texts()}
    assert legend == {"memory searcher, gossip", "LS", "random"}  # the spec's label, the option's; a reference
    with pytest.raises(FigureOptionError, match="--groups: unknown group 'local search'"):
        build_figures(dataset, options=FigureOptions(groups=("local search",)))


def test_spec_labels_enter_no_key_and_bad_labels_are_refused():
    source = {"seed": 0, "profile": "paper", "episodes": 2, "iterations": 5,
              "factors": {"grid": ["5x5"], "group_size": [3]},
              "groups": {"behaviours": ["local_search"], "protocols": [{"name": "broadcast"}]}}
    plain = parse_spec(source).groups[0]
    source["groups"] = {"behaviours": [{"name": "local_search", "label": "searchers"}],
                        "protocols": [{"name": "broadcast", "label": "talk"}]}
    labelled = parse_spec(source).groups[0]
    assert (labelled.key, labelled.label, labelled.display) == (plain.key, plain.label, "searchers, talk")
    assert plain.display == ""
    source["groups"]["protocols"][0]["label"] = " "
    with pytest.raises(SpecError, match=r"groups.protocols\[0\].label: must be a non-empty string"):
        parse_spec(source)
    source["groups"] = {"behaviours": [{"name": "local_search", "colour": "red"}]}
    with pytest.raises(SpecError, match=r"groups.behaviours\[0\]"):
        parse_spec(source)
    byo = load_spec(ROOT / "experiments" / "byo_agent.toml")
    assert max(len(g.display or g.label) for g in byo.groups) <= 30


def test_a_label_two_groups_would_share_is_refused():
    """Issue 46 item 5: two groups shown alike could not be told apart in a figure; the refusal names the label
    and both groups, also when a label is another group's identifier."""
    source = {"seed": 0, "profile": "paper", "episodes": 2, "iterations": 5,
              "factors": {"grid": ["5x5"], "group_size": [3]},
              "groups": {"behaviours": [{"name": "local_search", "label": "searchers"},
                                        {"name": "q_learning", "label": "searchers"}]}}
    with pytest.raises(SpecError, match=r"^groups.behaviours\[1\].label: groups 'local_search' and 'q_learning' "
                                        r"would both be shown as 'searchers'; give them distinct labels$"):
        parse_spec(source)
    source["groups"] = {"behaviours": [{"name": "q_learning", "label": "local_search"}, "local_search"]}
    with pytest.raises(SpecError, match=r"^groups.behaviours\[0\].label: groups 'q_learning' and 'local_search' "):
        parse_spec(source)
    source["groups"] = {"behaviours": ["local_search"], "protocols": [{"name": "none", "label": "talk"},
                                                                      {"name": "broadcast", "label": "talk"}]}
    with pytest.raises(SpecError, match=r"^groups.protocols\[1\].label: groups 'local_search' and "
                                        r"'local_search\+broadcast' would both be shown as 'local_search, talk'"):
        parse_spec(source)


def test_message_entropy_points_are_named_by_their_cells(datasets):
    figure = next(s.figure for s in build_figures(load_dataset([datasets["twelve"]]))
                  if s.name == "upsilon_vs_message_entropy")
    for ax in [ax for ax in figure.axes if ax.get_visible()]:
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        names = [t.get_text() for t in ax.texts]
        assert len(names) == sum(len(bar.lines[0].get_xdata()) for bar in bars)  # a name per point
        assert set(names) == {"K 2-8", "K 9-16"}  # the factor that varies among the grid's cells


def test_point_names_cover_no_other_point():
    """Issue 43 point 8: a point's name was kept clear of other names only, so in the quickstart's 10x10 panel
    wisdom's "G 10" and "G 5" sat on each other's markers. Two collectives two cells each, as there: every name
    clear of every marker and error bar."""
    figure, ax = plt.subplots(figsize=(2.4, 1.75), layout="constrained")
    points = [(2.68, 0.52, "G 5"), (2.82, 0.527, "G 10"), (5.87, 0.545, "G 10"), (6.05, 0.539, "G 5")]
    for x, y, _ in points:
        ax.errorbar([x], [y], yerr=[[0.01], [0.01]], fmt="o", capsize=2)
    ax.set_xlim(2.5, 6.2)
    ax.set_ylim(0.2, 0.56)
    _tag_points(figure, [(ax, x, y, name, "k") for x, y, name in points], [(ax, x, y - 0.01, y + 0.01)
                                                                           for x, y, _ in points])
    renderer = figure.canvas.get_renderer()
    radius = STYLE["lines.markersize"] / 2 * figure.dpi / 72
    marks = [Bbox.from_extents(*(ax.transData.transform((x, y - 0.01)) - radius),
                               *(ax.transData.transform((x, y + 0.01)) + radius)) for x, y, _ in points]
    names = [Text.get_window_extent(text, renderer) for text in ax.texts]  # the name, not its leader line
    assert len(names) == 4
    assert not [(i, j) for i, name in enumerate(names) for j, mark in enumerate(marks) if name.overlaps(mark)]


def test_cli_writes_pdf_png_svg_of_the_chosen_width_the_same_every_time(datasets, tmp_path):
    paths = {}
    for run in ("a", "b"):
        done = collective("figures", datasets["byo_agent"], "--out", tmp_path / run, "--width", "single",
                          "--figures", "gains,structures", "--label", "local_search=LS", "--title")
        assert done.returncode == 0, done.stderr
        paths[run] = done.stdout.split()
    assert sorted(Path(p).name for p in paths["a"]) == sorted(f"{n}.{f}" for n in ("gains", "structures")
                                                               for f in ("pdf", "png", "svg"))
    for a, b in zip(paths["a"], paths["b"]):
        assert Path(a).read_bytes() == Path(b).read_bytes(), a  # deterministic output
        if a.endswith(".png"):
            assert matplotlib.image.imread(a).shape[1] == round(WIDTHS["single"] * 300)
        if a.endswith(".pdf"):
            assert b"/FontFile2" in Path(a).read_bytes()  # TrueType fonts embedded
        if a.endswith(".svg"):
            assert b"<svg" in Path(a).read_bytes()[:400]


@pytest.mark.parametrize("option, value, message", [
    ("--width", "1", "argument --width: expected single (3.5 in), double (7.16 in) or inches 2.5..20"),
    ("--figures", "gain", "argument --figures: unknown figure 'gain'; allowed: " + ", ".join(FIGURE_NAMES)),
    ("--label", "local_search", "argument --label: expected GROUP=TEXT"),
    ("--groups", "nobody", "error: --groups: unknown group 'nobody'; allowed: "),
])
def test_bad_figure_options_fail_with_one_line(tmp_path_factory, tmp_path, option, value, message):
    done = collective("figures", sweep(tmp_path_factory.getbasetemp(), "tiny"), "--out", tmp_path, option, value)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


def test_the_dashboard_names_groups_by_the_specs_display_labels(datasets):
    """The interactive figures and the group selection show the spec's labels; the selection's values and each
    trace's `meta` keep the group identifiers the tables and the address use."""
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse
    from collective.dashboards.explore import figures_html, selection_html
    from collective.analysis.dataset import display_labels

    dataset = load_dataset([datasets["byo_agent"]])
    analysis, labels = analyse(dataset, list(DEFAULT_BY)), display_labels(dataset)
    gossip = "examples.byo_agent.agents:MemorySearcher+examples.byo_agent.talk:Gossip(margin=0.1)"
    assert labels[gossip] == "memory searcher, gossip"
    figures = figures_html(analysis, {}, labels)
    assert '"name":"memory searcher, gossip' in figures and f'"group":"{gossip}"' in figures
    assert f'"name":"{gossip}' not in figures
    selection = selection_html(analysis, {}, labels)
    assert f'value="{gossip}" checked> memory searcher, gossip</label>' in selection


def test_analyze_validate_and_the_dashboards_tables_name_groups_by_their_labels(datasets):
    """Issue 43 item 3: the byo_agent spec's labels name its groups in analyze's and validate's tables (not the
    630-character import paths), `--label` over them; --format json keeps the identifiers, with the labels beside
    them; the dashboard's tables show the label with the identifier as the cell's tooltip."""
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse
    from collective.dashboards.explore import analysis_tables_html

    gossip = "examples.byo_agent.agents:MemorySearcher+examples.byo_agent.talk:Gossip(margin=0.1)"
    run = str(datasets["byo_agent"])
    table = collective("analyze", run, "--tables", "upsilon,gains", "--label", "random=coin flips")
    assert table.returncode == 0, table.stderr
    assert "memory searcher, gossip" in table.stdout and "coin flips" in table.stdout
    assert "examples.byo_agent" not in table.stdout
    printed = json.loads(collective("analyze", run, "--tables", "upsilon", "--format", "json").stdout)
    assert gossip in {row["group"] for row in printed["upsilon"]["rows"]}
    assert printed["labels"][gossip] == "memory searcher, gossip"
    checks = collective("validate", run, "--label", "random=coin flips").stdout
    assert "coin flips @ " in checks and "random @ " not in checks
    analysis = analyse(load_dataset([datasets["byo_agent"]]), list(DEFAULT_BY))
    tables = analysis_tables_html(analysis, {})
    assert f'title="{html.escape(gossip)}" data-order="memory searcher, gossip">memory searcher, gossip</td>' in tables


def test_a_group_has_one_colour_in_the_paper_figures_and_the_dashboard(datasets):
    """Issue 43 item 8: the dashboard coloured series by their order in each table, the paper figures by group."""
    from matplotlib.colors import to_hex

    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse
    from collective.dashboards.explore import interactive_figure
    from collective.dashboards.figures import build_figures, group_colours

    dataset = load_dataset([datasets["twelve"]])
    analysis = analyse(dataset, list(DEFAULT_BY))
    drawn = {}
    for spec in build_figures(dataset, options=FigureOptions(figures=("upsilon_vs_group_size",))):
        for line in spec.figure.findobj(lambda artist: hasattr(artist, "get_label") and hasattr(artist, "get_color")):
            if not str(line.get_label()).startswith("_"):
                drawn[str(line.get_label())] = to_hex(line.get_color())
    figure = interactive_figure(analysis.tables["upsilon"], "upsilon", "Υ", "Υ", {}, {},
                                group_colours(dataset.rows))
    dashboard = {trace.meta["group"]: to_hex(trace.marker.color) for trace in figure.data}
    shared = set(drawn) & set(dashboard)
    assert len(shared) >= 10, (sorted(drawn), sorted(dashboard))
    assert {group: dashboard[group] for group in shared} == {group: drawn[group] for group in shared}


def test_a_label_is_not_read_as_a_hover_placeholder():
    """A label holding %{y} stays as written in the hover (the template names the trace, not the label's text)."""
    import pandas as pd

    from collective.analysis.base import Table
    from collective.dashboards.explore import interactive_figure

    frame = pd.DataFrame({"group": ["a"], "grid": ["5x5"], "group_size": [1], "episodes": [10], "upsilon": [0.5],
                          "ci95_low": [0.4], "ci95_high": [0.6]})
    figure = interactive_figure(Table("upsilon", "Υ", "", frame), "upsilon", "Υ", "Υ", {}, {"a": "odd %{y} name"})
    trace, = figure.data
    assert trace.name == "odd %{y} name" and "odd" not in trace.hovertemplate
