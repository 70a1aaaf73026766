"""Every example in the README and the documentation runs as written. Each fenced `sh` and `python` block
of EXAMPLE_PAGES is run in that order (except those marked `<!-- readme-example: NAME -->`, which
test_readme_byo.py runs, those marked `<!-- not run: REASON -->`, and those followed by their output, which
test_doc_outputs.py runs and compares) in a fresh directory holding the project's Makefile, experiments,
examples and .venv, command by command as a user would paste them; later blocks use what earlier ones made
(the README's `make demo` makes runs/quickstart)."""
import shlex
import subprocess
import sys
import time
from pathlib import Path

from doc_blocks import FENCE, page_blocks, shell_commands

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".venv/.installed"  # the Makefile's install stamp: the venv under test is installed already
# The README first (its `make demo` makes what the others read), then the pages with runnable examples.
EXAMPLE_PAGES = ("README.md", "docs/tutorial.md", "docs/reference/cli.md", "docs/reference/plugins.md",
                 "docs/reference/config.md", "docs/plugins.md", "docs/adapters.md", "docs/dashboard.md",
                 "docs/learning.md", "docs/figures.md", "docs/scaling.md", "docs/python-api.md")


def readme_blocks(page: str = "README.md") -> list[tuple[str, str]]:
    """(language, code) of every fenced sh or python block of a page that this test runs, in order."""
    blocks = page_blocks(page)
    compared = {id(block.command) for block in blocks if block.kind == "output"}
    return [(block.language, block.code) for block in blocks if block.kind == "command" and id(block) not in compared]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900)
    print(f"{time.monotonic() - started:6.1f} s  {shlex.join(argv)[:160]}")  # shown when the test fails
    return done


def test_readme_blocks_are_found():
    blocks = [block for page in EXAMPLE_PAGES for block in readme_blocks(page)]
    assert {language for language, _ in blocks} == {"sh", "python"}
    assert any("collective evaluate" in code for _, code in blocks) and any("import" in code for _, code in blocks)
    first = readme_blocks()[0]  # the README's two commands, first and alone
    assert first[0] == "sh" and [line.split("#")[0].strip() for line in shell_commands(first[1])] == ["make demo",
                                                                                                     "make test"]
    pages = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md") if FENCE.search(path.read_text()))
    assert set(pages) <= set(EXAMPLE_PAGES), "a page with examples that no test runs"
    assert shell_commands("a \\\n  b  # c\n\n# d\ne\n") == ["a    b  # c", "e"]


def test_every_readme_example_runs_as_written(tmp_path):
    for name in ("Makefile", "pyproject.toml", "experiments", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / ".venv").symlink_to(ROOT / ".venv" if (ROOT / ".venv").exists() else Path(sys.prefix))
    for language, code in [block for page in EXAMPLE_PAGES for block in readme_blocks(page)]:
        if language == "python":
            done = run([sys.executable, "-c", code], tmp_path)
            assert done.returncode == 0 and "Traceback" not in done.stderr, f"{code}\n{done.stderr[-3000:]}"
            continue
        for command in shell_commands(code):
            argv = shlex.split(command, comments=True)
            if argv[:2] == ["make", "test"]:  # this suite is what it runs: check that it would
                done = run(["make", "-n", "-o", STAMP, "test"], tmp_path)
                assert done.returncode == 0 and "pytest" in done.stdout, done.stderr
                continue
            if argv[0] == "make":
                command = shlex.join(["make", "-o", STAMP, *argv[1:]])
            done = run(["bash", "-ec", command], tmp_path)
            assert done.returncode == 0 and "Traceback" not in done.stderr, f"{command}\n{done.stderr[-3000:]}"
            for option in ("--out", "--trace-out"):  # what it says it writes is there
                if option in argv and "--dry-run" not in argv:
                    assert (tmp_path / argv[argv.index(option) + 1]).exists(), command
