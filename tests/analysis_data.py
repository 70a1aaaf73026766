"""Tiny sweep datasets for the analysis, figure and dashboard tests, built once per test session.

`tiny` crosses 2 grids x 2 group sizes with random, local search, oracle and Q-learning groups and two
local-search protocols at size 3; `trained` plays Q-learning (with random and oracle references) with
more training passes, so the two together vary training experience; `sham` plays broadcast beside its
sham-communication control and isolated searchers; `labelled` gives its groups labels with mathtext, HTML and a
script's end tag. `many_groups` copies a sweep's rows into many group types.
"""
import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

EPISODES, ITERATIONS = 10, 15
GRIDS = ("4x4", "6x6")
TINY_PASSES, TRAINED_PASSES = 2, 8
TINY = f"""
name = "tiny"
seed = 3
profile = "paper"
episodes = {EPISODES}
iterations = {ITERATIONS}
[factors]
grid = {list(GRIDS)}
group_size = [1, 3]
[groups]
behaviours = ["random", "local_search", "oracle", "q_learning"]
protocols = [
    {{ name = "none" }},
    {{ name = "stigmergy", behaviours = ["local_search"], group_sizes = [3] }},
    {{ name = "wisdom", behaviours = ["local_search"], group_sizes = [3] }},
]
[settings]
q_training_passes = {TINY_PASSES}
"""
TRAINED = f"""
name = "trained"
seed = 3
profile = "paper"
episodes = {EPISODES}
iterations = {ITERATIONS}
[factors]
grid = ["4x4"]
group_size = [1]
[groups]
behaviours = ["random", "oracle", "q_learning"]
[settings]
q_training_passes = {TRAINED_PASSES}
"""
SHAM = f"""
name = "sham"
seed = 5
profile = "paper"
episodes = {EPISODES}
iterations = {ITERATIONS}
[factors]
grid = ["6x6"]
group_size = [3]
[groups]
behaviours = ["local_search"]
protocols = [{{ name = "none" }}, {{ name = "broadcast", controls = ["real", "sham"] }}]
"""

# Labels a researcher may well write, and hostile ones: mathtext, HTML, a script's end tag. local_search is shown
# as "$x$" and its wisdom collective as "$\frac{, $\frac{ <a href=...>link</a></script><script>...".
HOSTILE_LINK = "http://collective.invalid/"
HOSTILE_HTML = f'<a href="{HOSTILE_LINK}">link</a></script><script>document.title = "pwned"</script>'
LABELLED = f"""
name = "labelled"
seed = 11
profile = "paper"
episodes = {EPISODES}
iterations = {ITERATIONS}
[factors]
grid = ["4x4"]
group_size = [1, 3]
[groups]
behaviours = ["random", "oracle", {{ name = "local_search", label = '$x$' }}]
[[groups.protocols]]
name = "none"
[[groups.protocols]]
name = "wisdom"
label = '$\\frac{{ {HOSTILE_HTML}'
group_sizes = [3]
behaviours = [{{ name = "local_search", label = '$\\frac{{' }}]
"""


def collective(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collective", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


@functools.cache
def sweep(root: Path, name: str) -> Path:
    """Run the named spec serially into root/name once per session; returns the sweep directory."""
    spec = root / f"{name}.toml"
    spec.write_text({"tiny": TINY, "trained": TRAINED, "sham": SHAM, "labelled": LABELLED}[name])
    result = collective("sweep", spec, "--out", root / name, "--executor", "serial")
    assert result.returncode == 0, result.stderr
    return root / name


def many_groups(sweep_directory, into, count: int):
    """A copy of the sweep whose dataset also holds `count` copies of local search's rows, each its own group type
    (behaviour agent_I): as if many sweeps had been merged by hand."""
    shutil.copytree(sweep_directory, into)
    part, *others = sorted((into / "dataset").glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(path) for path in (part, *others)])
    for path in others:
        path.unlink()
    rows = table.filter(pc.equal(table["group"], "local_search"))
    copies = [table]
    for i in range(count):
        copy = rows
        for name, value in (("group", f"agent_{i}"), ("behaviour", f"agent_{i}"), ("group_key", 10**9 + i)):
            copy = copy.set_column(copy.column_names.index(name), name, pa.array([value] * len(copy), copy[name].type))
        copies.append(copy)
    pq.write_table(pa.concat_tables(copies), part)
    return into
