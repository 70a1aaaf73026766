"""Damaged copies of a real sweep's dataset, for the schema tests: a column of one chunk file given another type, a
value, no value, or left out; a chunk file emptied or cut to nothing. Every change is made with pyarrow on the
Parquet file as a user's tool would write it."""
from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def small_sweep(directory: Path) -> Path:
    """A finished small sweep (serial) in `directory`/out: several chunk files, every group on two cells."""
    from collective.sweeps.command import run_spec
    from collective.sweeps.runtime import SerialExecutor
    from collective.sweeps.spec import parse_spec
    from test_hostile_inputs import SMALL_SPEC

    out = directory / "out"
    spec = parse_spec(tomllib.loads(SMALL_SPEC), "small")
    run_spec(spec, out, SerialExecutor(spec))
    return out


def copy_dataset(sweep: Path, into: Path) -> Path:
    """A copy of the sweep directory `sweep` at `into`; its chunk files sorted by name."""
    shutil.copytree(sweep, into)
    return into


def chunks(sweep: Path) -> list[Path]:
    return sorted((sweep / "dataset").glob("part-*.parquet"))


def rewrite(part: Path, change) -> None:
    """Replace the chunk file `part` by `change(its table)`."""
    pq.write_table(change(pq.read_table(part)), part)


def cast(name: str, kind: pa.DataType):
    """The column `name` cast to `kind` (numbers as text, whole numbers as floats...)."""
    return lambda table: table.set_column(table.column_names.index(name), name, pc.cast(table[name], kind))


def set_value(name: str, value: object, row: int = 0):
    """Row `row` of column `name` set to `value` (None: missing), the column keeping its type."""
    def change(table: pa.Table) -> pa.Table:
        values = table[name].to_pylist()
        values[row] = value
        return table.set_column(table.column_names.index(name), name, pa.array(values, table[name].type))
    return change


def set_all(name: str, value: object):
    """Every row of column `name` set to `value` (the column keeping its type)."""
    return lambda table: table.set_column(table.column_names.index(name), name,
                                          pa.array([value] * len(table), table[name].type))


def drop(name: str):
    return lambda table: table.drop([name])


def no_rows(table: pa.Table) -> pa.Table:
    return table.slice(0, 0)
