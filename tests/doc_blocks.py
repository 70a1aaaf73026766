"""The fenced blocks of README.md and docs/, and the output blocks checked against what their commands print.

A page's fenced blocks are read in order and each is one of:

- a command: an `sh` or `python` block (tests/test_readme_examples.py runs it, or tests/test_readme_byo.py
  when marked `<!-- readme-example: NAME -->`);
- an output: any block right after an `sh` block (nothing but blank lines between): what that block's
  commands print, run in order in a fresh directory (stdout; a command that fails adds its stderr, which is
  what it says). This module runs them and compares (tests/test_doc_outputs.py), so docs print what runs;
- not run: a block right after a line `<!-- not run: REASON -->` (illustrative: a cluster, a browser
  address, a long sweep); counted and listed by the test, so none is skipped silently;
- a file's content (`toml` and other languages that are not commands): shown, not run;
- anything else (a `text` or bare block that follows no `sh` block and has no marker) is an error.

Output is compared after masking what varies between runs and machines and nothing else: the columns
`M steps/s` and `wall s` of an evaluation table (timings), the version after `collective `, the directory the
commands ran in, and the first run's compile notice on stderr. Every other character (Υ, its CI, K, H,
msgs/it) is compared exactly.

Refresh the docs after a change that moves a number (then read the diff and fix the prose that quotes it):

    .venv/bin/python tests/doc_blocks.py --update      # or: make docs-output
    .venv/bin/python tests/doc_blocks.py               # check only: exit 1 and a diff when a block differs
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.S | re.M)
COMMAND_LANGUAGES = ("sh", "python")
SHOWN_LANGUAGES = ("", "text", "console", "output")  # output-like: must be an output or marked not run
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
EXAMPLE = "<!-- readme-example:"
# What the commands see: the project's files a reader has in a clone (linked into a fresh directory).
PROJECT_FILES = ("Makefile", "pyproject.toml", "experiments", "examples")
TIMED_COLUMNS = ("M steps/s", "wall s")  # an evaluation table's timings: masked in the rows under the header
MASK_LINES = (  # (pattern, replacement): applied to each line of both sides
    (re.compile(r"\bcollective \d+\.\d+(?:\.\d+)?\S*"), "collective <version>"),
)
COMPILE_NOTICE = re.compile(r"^collective: (compiling kernels \(.*\) \.\.\.|\.\.\. done in \d+ s)$")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    start: int  # character offsets of the content in the page
    end: int
    kind: str  # "command", "example", "output", "not run", "file", "unexplained"
    reason: str = ""  # not run: why
    command: "Block | None" = None  # output: the sh block above it


def pages() -> list[str]:
    """README.md, then every page under docs/ (the site), as paths relative to the project."""
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]


def parse(text: str, page: str = "") -> list[Block]:
    """Every fenced block of a page's text, classified (see the module's docstring)."""
    blocks: list[Block] = []
    previous_end = None
    for match in FENCE.finditer(text):
        before = text[:match.start()].rstrip().splitlines()
        marker = before[-1].strip() if before else ""
        language = match.group(1)
        block = Block(page, text.count("\n", 0, match.start()) + 1, language, match.group(2), match.start(2),
                      match.end(2), "file")
        follows = blocks[-1] if blocks and not text[previous_end:match.start()].strip() else None
        if not_run := NOT_RUN.match(marker):
            block.kind, block.reason = "not run", not_run.group(1)
        elif marker.startswith(EXAMPLE):
            block.kind = "example"
        elif follows is not None and follows.language == "sh" and follows.kind == "command":
            block.kind, block.command = "output", follows
        elif language in COMMAND_LANGUAGES:
            block.kind = "command"
        elif language in SHOWN_LANGUAGES:
            block.kind = "unexplained"
        blocks.append(block)
        previous_end = match.end()
    return blocks


def page_blocks(page: str) -> list[Block]:
    return parse((ROOT / page).read_text(), page)


def shell_commands(block: str) -> list[str]:
    """A shell block's commands: lines joined across trailing backslashes; blank and comment lines dropped."""
    lines = re.sub(r"\\\n", " ", block).splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def as_run_here(command: str) -> str:
    """The command with `.venv/bin/collective` and `.venv/bin/python` as this interpreter (the code under test)."""
    python = shlex.quote(sys.executable)
    command = re.sub(r"(?<![\w/.-])\.venv/bin/collective(?![\w-])", f"{python} -m collective", command)
    return re.sub(r"(?<![\w/.-])\.venv/bin/python(?![\w-])", python, command)


def workspace(directory: Path) -> Path:
    for name in PROJECT_FILES:
        (directory / name).symlink_to(ROOT / name)
    return directory


def run_commands(code: str, directory: Path, log=print) -> str:
    """What the shell block's commands print, in order: stdout, and stderr of a command that fails."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("COLUMNS", None)
    shown = []
    for command in shell_commands(code):
        started = time.monotonic()
        done = subprocess.run(["bash", "-c", as_run_here(command)], cwd=directory, capture_output=True, text=True,
                              timeout=600, env=env, stdin=subprocess.DEVNULL)
        log(f"{time.monotonic() - started:6.1f} s  exit {done.returncode}  {command[:140]}")
        shown.append(done.stdout)
        if done.returncode != 0:
            shown.append("\n".join(line for line in done.stderr.splitlines() if not COMPILE_NOTICE.match(line)))
    output = "\n".join(part.rstrip("\n") for part in shown if part.strip())
    return output.replace(str(directory.resolve()), "<dir>").replace(str(directory), "<dir>")


def mask(output: str) -> str:
    """The output with what varies between runs and machines masked (see the module's docstring)."""
    lines = [line.rstrip() for line in output.strip("\n").splitlines()]
    spans: list[tuple[int, int]] = []
    width = None
    for index, line in enumerate(lines):
        if all(name in line for name in TIMED_COLUMNS):  # a table header: its timed columns, right-aligned
            width, spans = len(line), []
            for name in TIMED_COLUMNS:
                end = line.index(name) + len(name)
                start = max(match.end() for match in re.finditer(r"\S(?=\s)", line[:end - len(name)]))
                spans.append((start, end))
            continue
        if width is not None and len(line) == width and not set(line) <= {"-"}:  # a row of that table
            for start, end in spans:
                line = line[:start] + " " * (end - start - 1) + "~" + line[end:]
        elif width is not None and len(line) != width and not set(line) <= {"-"} and not line.startswith("  "):
            width = None  # the table ended (an indented line is a row's part: a mixed group's behaviours)
        for pattern, replacement in MASK_LINES:
            line = pattern.sub(replacement, line)
        lines[index] = line
    return "\n".join(lines)


def difference(expected: str, actual: str, where: str) -> str:
    """A unified diff of the masked texts ('' when they agree)."""
    return "\n".join(difflib.unified_diff(mask(expected).splitlines(), mask(actual).splitlines(),
                                          f"{where} (the docs)", "what the command prints", lineterm=""))


def check(selected: list[str] | None = None, update: bool = False, log=print) -> tuple[list[str], list[Block]]:
    """Run every output block's commands; (differences, output blocks). With update, rewrite the blocks that differ."""
    problems, outputs = [], []
    for page in selected or pages():
        text = (ROOT / page).read_text()
        blocks = [block for block in parse(text, page) if block.kind == "output"]
        if not blocks:
            continue
        outputs += blocks
        replacements = []
        with tempfile.TemporaryDirectory(prefix="doc-blocks-") as name:
            directory = workspace(Path(name))
            for block in blocks:  # in the page's order: a later command may use what an earlier one made
                actual = run_commands(block.command.code, directory, log)
                where = f"{page}:{block.line}"
                if "Traceback (most recent call last)" in actual:
                    problems.append(f"{where}: the command crashed\n{actual[-3000:]}")
                    continue
                if diff := difference(block.code, actual, where):
                    problems.append(diff)
                    replacements.append((block, actual.rstrip("\n") + "\n"))
        if update and replacements:
            for block, actual in sorted(replacements, key=lambda pair: -pair[0].start):
                text = text[:block.start] + actual + text[block.end:]
            (ROOT / page).write_text(text)
            log(f"{page}: rewrote {len(replacements)} output block(s)")
    return problems, outputs


def misquoted(page: str, text: str | None = None) -> list[str]:
    """Numbers with two or more decimals in the prose that follows an output block (to the next block) that are
    no rounding of a number in the page's output blocks so far: prose that quotes an output the update moved."""
    text = (ROOT / page).read_text() if text is None else text
    blocks = parse(text, page)
    shown: set[str] = set()
    problems = []
    for index, block in enumerate(blocks):
        if block.kind != "output":
            continue
        numbers = re.findall(r"\d+\.\d+", block.code)
        for number in numbers:
            for decimals in range(2, len(number.split(".")[1]) + 1):
                shown.add(f"{float(number):.{decimals}f}")
        prose = text[block.end:blocks[index + 1].start if index + 1 < len(blocks) else len(text)]
        prose = re.sub(r"^```.*$", "", prose, flags=re.M)  # the fences around it
        prose = re.sub(r"`[^`\n]*`", "", prose)  # code spans name options and files, not results
        for quoted in re.findall(r"(?<![\w.])\d+\.\d{2,}(?![\w.])", prose):
            if quoted not in shown:
                problems.append(f"{page}:{block.line}: the prose after this output quotes {quoted}, which it does not "
                                f"show (shown: {', '.join(sorted(n for n in shown if len(n.split('.')[1]) == 3))})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check (or --update) the output blocks of README.md and docs/.")
    parser.add_argument("pages", nargs="*", help="pages relative to the project (default: README.md and docs/)")
    parser.add_argument("--update", action="store_true", help="rewrite the output blocks that differ")
    args = parser.parse_args(argv)
    problems, outputs = check(args.pages or None, update=args.update)
    crashed = [p for p in problems if "the command crashed" in p]
    problems += [problem for page in args.pages or pages() for problem in misquoted(page)]
    for problem in problems:
        print(problem, file=sys.stderr)
    not_run = [b for page in args.pages or pages() for b in page_blocks(page) if b.kind == "not run"]
    print(f"{len(outputs)} output blocks checked; {len(not_run)} blocks marked not run:")
    for block in not_run:
        print(f"  {block.page}:{block.line}: {block.reason}")
    if args.update:
        return 1 if crashed else 0
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
