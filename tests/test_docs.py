"""The documentation: the site builds with `mkdocs build --strict` (a broken link or anchor fails it), the
README stays short and, like every page, names no path outside the repository and no issue number, and the
configuration page's table says what the code does."""
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=root,
                          capture_output=True, text=True, timeout=300)


def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path):
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "tutorial" / "index.html").exists()
    for broken in ("[gone](missing.md)", "[gone](concepts.md#no-such-section)"):  # the negative controls
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(ROOT / "docs", copy / "docs")
        shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
        (copy / "docs" / "index.md").write_text((ROOT / "docs" / "index.md").read_text() + f"\n{broken}\n")
        failed = build(copy, copy / "site")
        assert failed.returncode != 0 and "gone" not in failed.stdout and "index.md" in failed.stderr, broken


def test_pages_name_no_path_outside_the_repository_and_no_issue_number():
    for page in PAGES:
        text = page.read_text()
        assert "../shared" not in text and "shared/spec" not in text and "shared/papers" not in text, page
        assert not re.search(r"\b[Ii]ssues? (notes|\d)", text), (page, re.search(r".{40}[Ii]ssues? (notes|\d).{20}", text))


def test_the_readme_is_short_and_links_to_existing_pages():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 120
    for target in re.findall(r"\]\(([^)#]+)", text):
        assert (ROOT / target).exists(), target


def test_the_config_page_gives_each_fields_value_under_each_profile():
    from collective.config import EvaluationConfig

    text = (ROOT / "docs" / "reference" / "config.md").read_text()
    header = re.search(r"^\| field \| option \|(.*)\|$", text, re.M).group(1)
    profiles = re.findall(r"`(\w+)`", header)
    assert profiles == ["sound", "paper", "lambdastar2016"]
    cells = [[cell.strip().strip("`") for cell in line.strip("|").split("|")] for line in text.splitlines()
             if line.startswith("| `")]
    rows = {row[0]: row[2:] for row in cells}
    names = [field.name for field in fields(EvaluationConfig)]
    assert list(rows) == names, "docs/reference/config.md: one row per EvaluationConfig field, in order"
    for profile_index, profile in enumerate(profiles):
        config = EvaluationConfig.from_profile(profile)
        for name in names:
            assert rows[name][profile_index] == str(getattr(config, name)), (name, profile)
