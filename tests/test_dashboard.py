"""`collective dashboard`: one self-contained HTML report that a real browser (headless Chromium)
renders with every figure loaded; tables and provenance included."""
import re
import shutil
import subprocess

import pytest

from analysis_data import EPISODES, collective, sweep

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
    sources = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert sources and all(s.startswith(("data:", "#")) for s in sources)  # nothing fetched
    assert "<link" not in text and "@import" not in text
    assert text.count("<img") == len(FIGURES)
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
