"""The analysis holds what its tables need, bounded by the rows it reads, not by how they are stored or by the
columns the tables never read (notes/analysis-memory.md)."""
import shutil
import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis_data import sweep
from collective.analysis.dataset import load_dataset

ROWS_PER_FILE = 2


def split(sweep_directory, into, rows_per_file: int):
    """A copy of the sweep whose rows are in files of `rows_per_file` rows each (a long sweep's many small chunks)."""
    shutil.copytree(sweep_directory, into)
    parts = sorted((into / "dataset").glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(path) for path in parts])
    for path in parts:
        path.unlink()
    for number, start in enumerate(range(0, len(table), rows_per_file)):
        pq.write_table(table.slice(start, rows_per_file), into / "dataset" / f"part-{number:06d}.parquet")
    return into


def peak_while(function):
    """(result, the peak of memory Python and numpy allocated while `function` ran)."""
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_loading_many_small_chunk_files_costs_what_one_file_of_the_rows_does(tmp_path_factory):
    tiny = sweep(tmp_path_factory.getbasetemp(), "tiny")
    whole = split(tiny, tmp_path_factory.mktemp("whole") / "tiny", 10**9)
    scattered = split(tiny, tmp_path_factory.mktemp("scattered") / "tiny", ROWS_PER_FILE)
    one, one_peak = peak_while(lambda: load_dataset([whole]))
    many, many_peak = peak_while(lambda: load_dataset([scattered]))
    assert len(list((scattered / "dataset").glob("*.parquet"))) == 100
    assert many.rows.equals(one.rows)
    assert many_peak < 6 * one_peak  # a frame per file: 30 times (100 files of 2 rows; 3 now)


def test_the_replication_tables_hold_only_the_columns_they_read():
    """Columns the 2016 tables never read (a dataset has ~60) cost them nothing: they copied every column of
    every row several times, ~2 GB of the 6 GB `analyze` took on the 3.12 x 10^6 rows of the replication."""
    from test_claims_2016 import rows_of

    from collective.analysis.base import Analysis
    from collective.analysis.claims_2016 import add_claims_2016_table
    from collective.analysis.replication import add_replication_tables

    rows = rows_of(lambda label, side, size, bits: 0.5, episodes=200).assign(iterations=50)
    rows["seed_word"] = rows["cell"]
    unread = pd.concat([rows, pd.DataFrame({f"unread_{i}": np.arange(len(rows), dtype=float) for i in range(100)})],
                       axis=1)

    def tables(frame):
        analysis = Analysis()
        add_replication_tables(analysis, frame)
        add_claims_2016_table(analysis, frame)
        return analysis.tables

    narrow, narrow_peak = peak_while(lambda: tables(rows))
    wide, wide_peak = peak_while(lambda: tables(unread))
    assert set(wide) == set(narrow) == {"replication", "replication_author", "replication_claims", "claims_2016"}
    assert all(wide[name].frame.equals(narrow[name].frame) for name in wide)
    assert wide_peak < 1.5 * narrow_peak  # every column copied: 3.2 times


def test_the_tables_asked_for_are_the_only_ones_computed(tmp_path_factory):
    """`analyze --tables claims_2016` took 19 minutes on the 2016 replication, every table computed and all but one
    dropped; a family of tables is computed when one of its tables is asked for, and gives the same table."""
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse

    dataset = load_dataset([sweep(tmp_path_factory.getbasetemp(), "tiny")])
    every = analyse(dataset, list(DEFAULT_BY))
    asked = analyse(dataset, list(DEFAULT_BY), tables=["upsilon", "regression_fit"])
    assert list(asked.tables) == ["upsilon", "regression_fit"] and not asked.skipped
    assert all(asked.tables[name].frame.equals(every.tables[name].frame) for name in asked.tables)
