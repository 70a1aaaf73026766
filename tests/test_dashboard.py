"""`collective dashboard`: one self-contained HTML report that a real browser (headless Chromium)
renders with every figure loaded; tables and provenance included."""
import html
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis_data import EPISODES, HOSTILE_HTML, HOSTILE_LINK, collective, many_groups, sweep
from collective.dashboards.figures import MAX_GROUPS

FIGURES = ("upsilon_vs_k", "upsilon_vs_entropy", "upsilon_vs_group_size", "heatmap_k_group_size", "structures", "gains",
           "upsilon_vs_message_entropy")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.getbasetemp()
    tiny = sweep(root, "tiny")
    out = root / "report" / "report.html"
    result = collective("dashboard", tiny, "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out)
    return out


def test_report_is_self_contained_with_figures_tables_and_provenance(report):
    text = report.read_text()
    markup = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", text, flags=re.S)  # the embedded libraries aside
    sources = re.findall(r'(?:src|href)="([^"]*)"', markup)
    assert sources and all(s.startswith(("data:", "#")) for s in sources)  # nothing fetched
    assert "<link" not in markup and "@import" not in markup
    assert text.count('unpacked("') == 2  # each library once, gzipped
    assert len(text.encode()) < 3_500_000  # issue 43 point 8: 7 MB with the libraries as they are
    assert markup.count("<img") == len(FIGURES)
    for name in FIGURES:
        assert f'id="figure-{name}"' in text
    for table in ("accuracy", "upsilon", "legg_hutter", "gains", "protocols", "regression", "regression_fit", "pgi",
                  "validity"):
        assert f'id="table-{table}"' in text
    for method in ("CR2 clustered by cell", "lack_of_fit_p", "p_wilcoxon_holm", "effective_episodes",
                   "clustered by environment"):
        assert method in text  # the new statistics and their methods are shown
    for fact in ("tiny-", "seed", "collective version", "report built on", "Parquet files", "compute time"):
        assert fact in text
    assert f"<dt>episodes per cell</dt><dd>{EPISODES}</dd>" in text


def test_every_figure_loads_in_headless_chromium(report, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail("chromium is not installed: `make test` installs it (apt-get install chromium)")
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path}",
         "--virtual-time-budget=5000", "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    check = re.search(r'id="image-check" data-total="(\d+)" data-loaded="(\d+)"', dom)
    assert check, "the report's image check did not run"
    assert int(check.group(1)) == int(check.group(2)) == len(FIGURES)
    images = re.findall(r"<img[^>]*>", dom)
    assert len(images) == len(FIGURES) and all('data-loaded="true"' in image for image in images)


def test_communication_and_sham_tables_are_in_the_report(tmp_path_factory):
    """Issue 14 points 3-4: the dashboard shows the gain per bit, Υ against message entropy and each
    protocol's gain over its sham control."""
    root = tmp_path_factory.getbasetemp()
    out = root / "sham-report" / "report.html"
    result = collective("dashboard", sweep(root, "sham"), "--out", out)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    for table in ("communication", "communication_entropy", "sham"):
        assert f'id="table-{table}"' in text and f"Table {table} skipped" not in text
    assert "local_search+broadcast[sham]" in text


def _chromium(url: str, profile, *flags: str) -> subprocess.CompletedProcess:
    """Headless Chromium's DOM of `url` after its scripts ran (stdout), with its console on stderr."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail("chromium is not installed: `make test` installs it (apt-get install chromium)")
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", *flags, "--dump-dom", url],
        capture_output=True, text=True, timeout=180)


def _requests(netlog) -> list[str]:
    """The URLs the page (a file:// page, unlike Chromium's own background services) asked for, in Chromium's
    net log; its own file and blob: and data: URLs aside."""
    events = json.loads(netlog.read_text())["events"]
    urls = {event["params"]["url"] for event in events if "url" in event.get("params", {})
            and "file://" in str(event["params"].get("network_isolation_key", ""))}
    return sorted(url for url in urls if not url.startswith(("file:", "blob:", "data:")))


def _loaded(dom: str) -> tuple[str, str]:
    body = re.search(r"<body([^>]*)>", dom).group(1)
    return re.search(r'data-ready="(\w+)"', body).group(1), re.search(r'data-errors="(\d+)"', body).group(1)


def test_report_opens_offline_with_no_script_error_and_no_request(report, tmp_path):
    """Issue 24 point 2: the page initialises (Plotly and DataTables embedded) with no script error and no
    network request. Controls: a copy with a remote image is caught by the net log, one with a throwing script
    by the error count."""
    result = _chromium(report.as_uri(), tmp_path / "profile", f"--log-net-log={tmp_path / 'net.json'}")
    assert _loaded(result.stdout) == ("true", "0")
    assert "Uncaught" not in result.stderr
    assert _requests(tmp_path / "net.json") == []
    assert result.stdout.count('class="dataTables_wrapper') + result.stdout.count('class="dt-container') >= 9
    text = report.read_text()
    remote = tmp_path / "remote.html"
    remote.write_text(text.replace("<h1>", '<img src="http://collective.invalid/x.png"><h1>', 1))
    result = _chromium(remote.as_uri(), tmp_path / "profile2", f"--log-net-log={tmp_path / 'net2.json'}")
    assert _requests(tmp_path / "net2.json") == ["http://collective.invalid/x.png"]
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace("</body>", "<script>null.oops();</script></body>"))
    assert _loaded(_chromium(broken.as_uri(), tmp_path / "profile3").stdout)[1] == "1"


def _body_rows(dom: str, table: str) -> list[str]:
    """The rows a DataTables table shows (its body), as HTML."""
    part = dom[dom.index(f'id="{table}"'):]
    body = part[part.index("<tbody"):part.index("</tbody>")]
    return re.findall(r"<tr[^>]*>.*?</tr>", body)


def _drawn_traces(dom: str, plot: str) -> int:
    part = dom[dom.index(f'id="{plot}"'):]
    part = part[:part.index("</figure>")]
    return len(re.findall(r'<g class="trace scatter', part))


def test_selection_in_the_address_filters_tables_and_figures(report, tmp_path):
    """Issue 24 point 2: a selection of grids or groups (read from the address) changes what the tables and
    figures show: only the chosen rows and traces, and all of them again without a selection."""
    text = report.read_text()
    accuracy = re.findall(r'<tr data-groups="([^"]*)" data-grids="([^"]*)"', text[text.index('id="data-accuracy"'):
                                                                                 text.index('id="table-upsilon"')])
    grids = {json.loads(html.unescape(g))[0] for _, g in accuracy}
    assert grids == {"4x4", "6x6"}
    whole = _chromium(report.as_uri(), tmp_path / "p0").stdout
    assert len(_body_rows(whole, "data-accuracy")) == len(accuracy)
    traces = _drawn_traces(whole, "plot-accuracy")
    assert traces > 0
    one_grid = _chromium(report.as_uri() + "#grids=4x4", tmp_path / "p1").stdout
    rows = _body_rows(one_grid, "data-accuracy")
    assert len(rows) == sum(g == html.escape('["4x4"]', quote=True) for _, g in accuracy) < len(accuracy)
    assert all("6x6" not in row for row in rows)
    assert 0 < _drawn_traces(one_grid, "plot-accuracy") < traces
    oracle = _chromium(report.as_uri() + "#groups=oracle", tmp_path / "p2").stdout
    rows = _body_rows(oracle, "data-accuracy")
    assert rows and all(">oracle<" in row for row in rows)
    assert _drawn_traces(oracle, "plot-accuracy") == len(grids)  # one oracle trace per grid panel


# Appended to a copy of the report: once the page is ready, its address (as the page rewrote it) in the DOM.
HASH_PROBE = """<script>(function wait() {
  if (document.body.dataset.ready === 'true') { document.body.dataset.hash = location.hash; } else { setTimeout(wait, 50); }
})();</script>"""


def _shown_groups(dom: str) -> set[str]:
    rows = _body_rows(dom, "data-accuracy")
    return {group for row in rows for group in json.loads(html.unescape(re.search(r'data-groups="([^"]*)"', row)[1]))}


def test_the_documented_link_to_a_collective_keeps_the_collective(report, tmp_path):
    """docs/dashboard.md's `#groups=oracle,local_search+stigmergy`: the '+' is part of the collective's name (a
    form decoder such as URLSearchParams reads it as a space, and the collective was silently dropped), and the
    address the page writes back reads the same (no %2B)."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "dashboard.md").read_text()
    link = re.search(r"^report\.html(#groups=\S*\+\S*)$", page, re.M)[1]
    assert link == "#groups=oracle,local_search+stigmergy"
    probe = report.parent / "probe.html"
    probe.write_text(report.read_text().replace("</body>", HASH_PROBE + "</body>"))
    dom = _chromium(probe.as_uri() + link, tmp_path / "p0").stdout
    assert _shown_groups(dom) == {"oracle", "local_search+stigmergy"}
    written = re.search(r'<body[^>]*data-hash="([^"]*)"', dom)[1]  # in the order of the page's boxes
    assert written.startswith("#groups=") and set(written[8:].split(",")) == {"oracle", "local_search+stigmergy"}
    encoded = _chromium(probe.as_uri() + "#groups=oracle,local_search%2Bstigmergy", tmp_path / "p1").stdout
    assert _shown_groups(encoded) == {"oracle", "local_search+stigmergy"}  # what URLSearchParams used to write


def test_labels_reach_the_report_as_text(tmp_path_factory, tmp_path):
    """Issue 46 item 5: the labels' HTML (a link, a script's end tag and a script) is shown as written and never
    taken as HTML: nowhere unescaped in the file, and in headless Chromium no link made of it (Plotly reads <a
    href> in a trace's name and a category), no script of it run, and the legends reading as written."""
    out = tmp_path / "report.html"
    result = collective("dashboard", sweep(tmp_path_factory.getbasetemp(), "labelled"), "--out", out)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert HOSTILE_HTML not in out.read_text()
    dom = _chromium(out.as_uri(), tmp_path / "profile").stdout
    assert _loaded(dom) == ("true", "0") and "<title>collective: labelled</title>" in dom
    assert not [tag for tag in re.findall(r"<a\b[^>]*>", dom) if HOSTILE_LINK in tag]
    legends = re.findall(r'<text[^>]*class="legendtext"[^>]*>([^<]*)<', dom)
    assert html.escape(f"$\\frac{{, $\\frac{{ {HOSTILE_HTML}", quote=False) in legends



def test_a_protocol_without_a_partner_is_named_under_its_table(tmp_path_factory, tmp_path):
    """Issue 45 item 2: the labelled sweep's one wisdom collective has no collective of the same members and size to
    be compared with; the report's protocol table says so in a line under it, the group by its label (as text)."""
    out = tmp_path / "report.html"
    result = collective("dashboard", sweep(tmp_path_factory.getbasetemp(), "labelled"), "--out", out)
    assert result.returncode == 0, result.stderr
    section = out.read_text().split('id="table-protocols"')[1].split("</section>")[0]
    footnote = re.search(r'<p class="note footnote" id="footnote-protocols">([^<]*)</p>', section)
    label = html.escape(f"$\\frac{{, $\\frac{{ {HOSTILE_HTML}")
    assert footnote and footnote.group(1).startswith("Not compared") and footnote.group(1).endswith(f"{label} at 4x4 G=3")

def test_paper_figures_of_many_groups_show_the_first_with_a_note(tmp_path_factory, tmp_path):
    """Issue 46 item 5: with more group types than a figure tells apart, the report's paper figures show the first
    MAX_GROUPS and say so."""
    many = many_groups(sweep(tmp_path_factory.getbasetemp(), "tiny"), tmp_path / "many", MAX_GROUPS - 3)  # and 4
    result = collective("dashboard", many, "--out", tmp_path / "report.html")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    note = re.search(r'<p class="note" id="paper-figures-note">(.*?)</p>', (tmp_path / "report.html").read_text())
    assert note and note[1].endswith(f"The figures show the first {MAX_GROUPS} of {MAX_GROUPS + 1} group types "
                                     "besides random and oracle (the most a figure tells apart); choose others with "
                                     "collective figures --groups G1,G2.")


def test_every_analysis_table_is_shown_with_readable_headers(report):
    """Issue 24 point 2: every table of the Analysis object (whatever tables exist) is in the page, with a
    human header for every column (its raw name in the tooltip) and one number format."""
    from collective.analysis.dataset import load_dataset
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse

    analysis = analyse(load_dataset([report.parent.parent / "tiny"]), list(DEFAULT_BY))
    text = report.read_text()
    for name, table in analysis.tables.items():
        section = text[text.index(f'id="table-{name}"'):]
        section = section[:section.index("</section>")]
        headers = re.findall(r'<th class="[^"]*" title="([^"]*)">([^<]*)</th>', section)
        assert [html.unescape(raw) for raw, _ in headers] == [str(c) for c in table.frame.columns] or table.frame.empty
        assert all("_" not in html.unescape(shown) for _, shown in headers), headers
    upsilon = text[text.index('id="data-upsilon"'):]
    cells = re.findall(r'<td class="number" data-order="(-?[0-9.e+-]+)">([^<]*)</td>', upsilon[:upsilon.index("</table>")])
    decimals = {len(shown.split(".")[1]) for order, shown in cells if "." in shown and "e" not in shown}
    assert decimals == {3}


def test_headline_shows_accuracy_gains_and_verdicts_with_cis(report):
    from collective.analysis.dataset import load_dataset
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse
    from collective.dashboards.explore import format_number

    analysis = analyse(load_dataset([report.parent.parent / "tiny"]), list(DEFAULT_BY))
    text = report.read_text()
    headline = text[text.index('id="headline"'):text.index('id="figures"')]
    first = analysis.tables["accuracy"].frame.dropna(subset=["accuracy"]).iloc[0]
    assert (f"{format_number(first['accuracy'])} [{format_number(first['ci95_low'])}, "
            f"{format_number(first['ci95_high'])}]") in headline
    gain = analysis.tables["gains"].frame.iloc[0]
    assert f"{format_number(gain['difference'])} [{format_number(gain['ci95_low'])}, " in headline
    holds = int((analysis.tables["validity"].frame["status"] == "holds").sum())
    assert re.search(rf"Validity suite: (all {holds} checks hold|\d+ of \d+ checks FAIL)", headline)


def test_figure_hover_carries_the_tables_ci_and_episodes(report):
    """The hover data of the accuracy figure are the accuracy table's CI and episodes, row for row."""
    from collective.analysis.dataset import load_dataset
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse
    from collective.dashboards.explore import interactive_figure

    analysis = analyse(load_dataset([report.parent.parent / "tiny"]), list(DEFAULT_BY))
    frame = analysis.tables["accuracy"].frame
    figure = interactive_figure(analysis.tables["accuracy"], "accuracy", "accuracy", "Accuracy", {})
    checked = 0
    for trace in figure.data:
        part = frame[(frame["group"] == trace.meta["group"]) & (frame["grid"] == trace.meta["grid"])]
        assert len(part) == len(trace.customdata) and list(trace.x) == list(part["group_size"])
        for (low, high, episodes), record in zip(trace.customdata, part.to_dict(orient="records")):
            for got, want in ((low, record["ci95_low"]), (high, record["ci95_high"]), (episodes, record["episodes"])):
                assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
            assert "customdata[0]" in trace.hovertemplate and "customdata[2]" in trace.hovertemplate
            checked += 1
    assert checked == len(frame)


def test_a_small_regression_slope_is_not_shown_as_zero():
    """The regression table's estimate column holds intercepts (~0.5) and K x G slopes (~1e-4 per phrase and
    agent): at the column's 3 decimals each K x G and its interval read 0.000 or −0.000; a nonzero number that
    would read 0 is shown in 3 significant digits."""
    import numpy as np
    from test_regression import synthetic_rows

    from collective.analysis.regression import regression
    from collective.dashboards.explore import table_html

    coefficients = regression(synthetic_rows(np.random.default_rng(3)))[0]
    rows = table_html("regression", coefficients, {}).split("<tr")[2:]
    interactions = [row for row in rows if ">K x G</td>" in row]
    assert interactions and coefficients["estimate"].abs().max() > 0.1
    for row in interactions:
        shown = re.findall(r'<td class="number"[^>]*>([^<]*)</td>', row)
        assert not {"0.000", "−0.000"} & set(shown), shown


def test_number_format_and_headers():
    import pandas as pd

    from collective.dashboards.explore import format_number, grid_order, header, is_scientific

    assert [format_number(v, c) for v, c in ((0.5, "accuracy"), (-0.25, "difference"), (12345, "episodes"),
                                              (0.0004, "p_holm"), (0.0421, "p_t"), (float("nan"), "x"))] == \
        ["0.500", "−0.250", "12,345", "4.0e-04", "0.0421", ""]
    assert format_number(0.00004, "gain_per_bit", scientific=True) == "4.00e−05"
    assert format_number(0.0, "estimate") == "0.000" and format_number(0.0006, "estimate") == "0.001"
    assert is_scientific(pd.Series([0.00004, -0.002, float("nan")])) and not is_scientific(pd.Series([0.0004, 0.5]))
    assert sorted(["20x20", "5x5", "10x10", "5x10"], key=grid_order) == ["5x5", "5x10", "10x10", "20x20"]
    assert header("upsilon") == "Υ (mean score, −1…1)"
    assert header("message_entropy_bits") == "Message entropy (bits)"
    assert "_" not in header("some_new_column_a_helper_adds")
