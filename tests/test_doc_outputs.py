"""Docs print what runs: every output block of README.md and docs/ (a block right after an `sh` block) is what
that block's commands print today, timings and the version masked (tests/doc_blocks.py; refresh the blocks with
`make docs-output`). Blocks that cannot run here are marked `<!-- not run: REASON -->`, listed and counted."""
from doc_blocks import check, mask, misquoted, page_blocks, pages, parse

# The blocks marked `<!-- not run: ... -->` in README.md and docs/: raise this only for a block that truly
# cannot run in CI (a cluster, a browser, a long sweep), with its reason in the marker.
NOT_RUN = {("docs/dashboard.md", "addresses to open in a browser; tests/test_dashboard.py opens the groups one"),
           ("docs/scaling.md", "a cluster of several machines; tests/test_sweep_ray.py starts one on loopback"),
           ("docs/scaling.md", "a sweep on that cluster; tests/test_sweep_ray.py runs sweeps across loopback nodes")}

TABLE = """\
group                      G      protocol        Υ              95% CI  K mean  H bits  msgs/it  M steps/s  wall s
-------------------------------------------------------------------------------------------------------------------
local_search              10          none  +0.5289  [+0.5146, +0.5433]   12.47   13.27      0.0       61.6    0.04
grid 10x10, T=200, 200 episodes, profile sound, protocol none, seed 0, collective 0.1.0
"""


def test_every_block_of_the_docs_is_a_command_an_output_a_file_or_marked_not_run():
    blocks = [block for page in pages() for block in page_blocks(page)]
    unexplained = [f"{b.page}:{b.line}" for b in blocks if b.kind == "unexplained"]
    assert not unexplained, f"output-like blocks that follow no sh block and are not marked not run: {unexplained}"
    not_run = [b for b in blocks if b.kind == "not run"]
    print("\n".join(f"not run: {b.page}:{b.line}: {b.reason}" for b in not_run))
    assert {(b.page, b.reason) for b in not_run} == NOT_RUN and len(not_run) == len(NOT_RUN)
    outputs = {(b.page, b.command.code.split()[2]) for b in blocks if b.kind == "output"}
    assert {("README.md", "--behaviour"), ("docs/reference/cli.md", "--behaviour")} <= outputs


def test_blocks_are_classified_and_only_timings_and_the_version_are_masked():
    page = ("```sh\ncollective evaluate\n```\n\n```text\nout\n```\n\nprose\n\n```text\nalone\n```\n"
            "<!-- not run: a cluster -->\n```sh\nray up\n```\n```toml\n[groups]\n```\n")
    kinds = [(b.kind, b.reason) for b in parse(page)]
    assert kinds == [("command", ""), ("output", ""), ("unexplained", ""), ("not run", "a cluster"), ("file", "")]
    timings = TABLE.replace("61.6    0.04", "2.7    10.58").replace("0.1.0", "0.2.0.dev3")
    assert mask(timings) == mask(TABLE) and "~" in mask(TABLE)
    quoting = f"```sh\ncollective evaluate\n```\n```text\n{TABLE}```\nIt scores 0.529 (`0.99`), {{}} 12.5.\n"
    assert misquoted("page", quoting.format("or 0.53")) == []
    assert misquoted("page", quoting.format("not 0.520")) != []  # prose that quotes a number the block lost
    for moved in ("+0.5289", "+0.5146", "12.47", "13.27", "0.0 ", "seed 0", "200 episodes"):
        changed = TABLE.replace(moved, moved.replace("2", "3").replace("0", "1"), 1)
        assert changed != TABLE and mask(changed) != mask(TABLE), moved


def test_every_output_block_is_what_its_command_prints():
    problems, outputs = check()
    assert len(outputs) >= 3
    problems += [problem for page in pages() for problem in misquoted(page)]
    assert not problems, ("\n".join(problems) + "\nrefresh the blocks with `make docs-output` "
                          "(.venv/bin/python tests/doc_blocks.py --update), then fix the prose that quotes them")
