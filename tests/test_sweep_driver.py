"""The sweep driver's own work between the workers' units, which 2 workers share the machine's cores with
(notes/sweep-runtime.md): a unit's rows, as a Ray worker returns them, reach the results
store without loading Arrow's compute module (~0.1 s of CPU in the middle of a sweep) and are stored as played;
a worker that dies is reported with what it held."""
import subprocess
import sys
import tomllib
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from collective.sweeps.plan import generate_block, plan, play_unit
from collective.simulation.plugins import PluginError
from collective.sweeps.runtime import RayExecutor, WorkerLost, arrow_stream
from collective.sweeps.spec import parse_spec
from collective.sweeps.store import DATASET_DIR, row_schema
from sweep_support import TINY_SPEC

DRIVER = """
import sys
from pathlib import Path
from collective.sweeps.runtime import stream_table
from collective.sweeps.store import ResultsStore
rows = stream_table(Path(sys.argv[1]).read_bytes())
with ResultsStore(sys.argv[2], "tiny", {}, planned={"u"}) as store:
    store.commit(store.writer.write("u", rows))
print("pyarrow.compute" in sys.modules)
"""


def test_a_units_rows_are_stored_as_played_without_arrows_compute_module(tmp_path):
    spec = parse_spec(tomllib.loads(TINY_SPEC), "tiny")
    block = plan(spec)[0]
    played = play_unit(spec, block.units[0], generate_block(spec, block))
    (tmp_path / "rows.arrow").write_bytes(arrow_stream(played).to_pybytes())
    driver = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path / "rows.arrow"), str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120)
    assert driver.returncode == 0, driver.stderr
    assert driver.stdout.split() == ["False"]  # the compute module stayed unloaded
    stored = pq.read_table(tmp_path / "out" / DATASET_DIR / "part-u.parquet")
    assert stored.schema.equals(row_schema()) and str(stored.to_pylist()) == str(played.to_pylist())


def test_rows_in_another_schema_are_still_cast_to_the_stores(tmp_path):
    spec = parse_spec(tomllib.loads(TINY_SPEC), "tiny")
    block = plan(spec)[0]
    played = play_unit(spec, block.units[0], generate_block(spec, block))
    narrow = played.set_column(played.schema.get_field_index("episode"), "episode",
                               played.column("episode").cast(pa.int32()))
    (tmp_path / "rows.arrow").write_bytes(arrow_stream(narrow).to_pybytes())
    driver = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path / "rows.arrow"), str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120)
    assert driver.returncode == 0, driver.stderr
    stored = pq.read_table(tmp_path / "out" / DATASET_DIR / "part-u.parquet")
    assert stored.schema.equals(row_schema()) and str(stored.to_pylist()) == str(played.to_pylist())


def test_a_dead_worker_names_the_plugins_of_every_unit_it_held():
    """A GroupHost holds its next unit queued behind the one it plays (`runtime.next_host`): when it dies for
    good, Ray fails both calls, and the first failure the driver sees may be the queued unit's. The error
    names the plug-ins of every unit the worker held, whichever came back first."""
    spec = parse_spec(tomllib.loads(TINY_SPEC.replace('"q_learning"]', '"examples.numpy_local_search:LocalSearch"]')),
                      "tiny")
    units = [unit for block in plan(spec) for unit in block.units]
    plugin = next(g for g, group in enumerate(spec.groups) if ":" in group.label)
    builtin_unit = next(replace(unit, groups=tuple(g for g in unit.groups if g != plugin)) for unit in units
                        if set(unit.groups) - {plugin})
    plugin_unit = next(replace(unit, groups=(plugin,)) for unit in units if plugin in unit.groups)
    executor = RayExecutor(spec)  # not entered: no Ray
    error = executor._worker_died([builtin_unit, plugin_unit])
    assert isinstance(error, PluginError) and error.plugin == "examples.numpy_local_search:LocalSearch"
    assert f"units {builtin_unit.id}, {plugin_unit.id}" in str(error)
    assert isinstance(executor._worker_died([builtin_unit]), WorkerLost)
