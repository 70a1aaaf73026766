"""The results store with the serial executor: readable by three libraries, resumable without
duplicates, damaged chunks redone, a directory in use refused."""
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import fields

import duckdb
import pyarrow.dataset as ds
import pytest

from collective.config import EvaluationConfig
from collective.progress import COMPILE_NOTICE
from collective.sweeps.store import MANIFEST_FILE, StoreError, row_schema
from collective.sweeps.runtime import SerialExecutor
from collective.sweeps.command import SweepInterrupted, run_spec
from collective.sweeps.spec import parse_spec
from collective.sweeps.plan import plan
from sweep_support import TINY_ROWS, TINY_SPEC, collective, rows, write_spec


@pytest.fixture(scope="module")
def spec():
    return parse_spec(tomllib.loads(TINY_SPEC), "tiny")


def run(spec, out):
    return run_spec(spec, out, SerialExecutor(spec))


def test_dataset_opens_in_pandas_pyarrow_and_duckdb_with_every_config_field(spec, tmp_path):
    summary = run(spec, tmp_path)
    assert summary.rows == TINY_ROWS and summary.chunks_written == len([u for b in plan(spec) for u in b.units])
    frame = rows(summary.dataset)
    assert len(frame) == TINY_ROWS
    assert not frame.duplicated(["cell", "episode", "group_key"]).any()
    assert {f.name for f in fields(EvaluationConfig)} <= set(frame.columns)
    for column in ("score", "k_raw", "k_normalised", "entropy_bits", "spawn_key", "messages_per_iteration",
                   "bits_per_iteration", "version", "sweep_id"):
        assert column in frame.columns
    assert (frame.sweep_id == spec.sweep_id).all()
    assert frame.groupby("group").size().to_dict() == {"local_search": 96, "local_search+wisdom": 48,
                                                       "q_learning": 96, "random": 96}
    assert (frame[frame.group == "local_search+wisdom"].messages_per_iteration > 0).all()
    first = frame.iloc[0]
    assert list(first.spawn_key) == [first.cell, first.episode, first.group_key]
    assert ds.dataset(summary.dataset).to_table().num_rows == TINY_ROWS
    assert ds.dataset(summary.dataset).schema.equals(row_schema())
    query = f"SELECT count(*), avg(score) FROM read_parquet('{summary.dataset}/*.parquet')"
    [(count, mean)] = duckdb.sql(query).fetchall()
    assert count == TINY_ROWS and mean == pytest.approx(frame.score.mean())
    described = json.loads((tmp_path / "sweep.json").read_text())
    assert described["sweep_id"] == spec.sweep_id and described["spec"] == tomllib.loads(TINY_SPEC)


def test_groups_of_a_cell_play_the_same_environments(spec, tmp_path):
    frame = rows(run(spec, tmp_path).dataset)
    per_episode = frame.groupby(["cell", "episode"]).k_raw.nunique()
    assert (per_episode == 1).all()  # one ⊕ pattern per (cell, episode), whatever the group
    assert frame.groupby(["cell", "group_key"]).score.std().min() > 0


def test_resume_skips_finished_chunks_and_redoes_damaged_ones(spec, tmp_path):
    reference = rows(run(spec, tmp_path / "reference").dataset)
    out = tmp_path / "out"
    run(spec, out)
    manifest = (out / MANIFEST_FILE).read_text().splitlines()
    entries = [json.loads(line) for line in manifest]
    truncated, corrupt, unlisted = (out / "dataset" / e["file"] for e in entries[:3])
    truncated.write_bytes(truncated.read_bytes()[:-100])
    data = bytearray(corrupt.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    (out / MANIFEST_FILE).write_text("\n".join(line for line in manifest if entries[2]["file"] not in line)
                                     + '\n{"unit": "cut sho')  # a line cut short by a killed driver
    store = json.loads((out / "sweep.json").read_text())["store"]  # a chunk's temporary, left by a killed driver
    half = out / "dataset" / f".{entries[3]['file']}.{store}-0badc0de0badc0de.tmp"
    half.write_bytes(b"half a chunk")
    summary = run(spec, out)
    assert summary.chunks_written == 3 and summary.chunks_resumed == len(entries) - 3
    assert unlisted.exists() and not half.exists()
    assert rows(summary.dataset).equals(reference)
    again = run(spec, out)
    assert again.chunks_written == 0 and rows(again.dataset).equals(reference)


def test_second_sweep_into_a_directory_in_use_is_refused(spec, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "sweep.lock").write_text(json.dumps({"pid": holder.pid, "host": os.uname().nodename}))
        with pytest.raises(StoreError, match=f"in use by another sweep \\(PID {holder.pid}\\)"):
            run(spec, tmp_path)
        (tmp_path.parent / "specs").mkdir(exist_ok=True)
        result = collective("sweep", str(write_spec(tmp_path.parent / "specs", TINY_SPEC)), "--out", str(tmp_path),
                            "--executor", "serial")
        lines = [line for line in result.stderr.splitlines() if line != COMPILE_NOTICE]  # a cold cache says so first
        assert result.returncode == 2 and len(lines) == 1 and "in use" in lines[0], result.stderr
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone: its lock is stale, and the sweep takes the directory over
    assert run(spec, tmp_path).rows == TINY_ROWS and not (tmp_path / "sweep.lock").exists()


def test_directory_of_another_sweep_or_other_files_is_refused(spec, tmp_path):
    run(spec, tmp_path / "one")
    other = parse_spec({**tomllib.loads(TINY_SPEC), "seed": 8}, "tiny")
    with pytest.raises(StoreError, match="holds sweep tiny-"):
        run(other, tmp_path / "one")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("precious")
    with pytest.raises(StoreError, match="not empty"):
        run(spec, tmp_path / "home")


def test_environment_class_is_a_factor_and_landscape_rows_carry_ruggedness(tmp_path):
    source = tomllib.loads(TINY_SPEC)
    source["factors"] = {"grid": ["8x8"], "group_size": [3], "environment": ["lambda_star", "landscape"]}
    source["settings"]["landscape_peaks"] = 2
    frame = rows(run(parse_spec(source, "classes"), tmp_path).dataset)
    landscape = frame[frame.env == "landscape"]
    assert len(landscape) == len(frame) / 2 and (landscape.local_optima == 2).all()
    assert frame[frame.env == "lambda_star"].local_optima.isna().all()


def test_ctrl_c_while_a_chunk_is_recorded_counts_it_as_kept(spec, tmp_path, monkeypatch):
    """A Ctrl-C landing just after a chunk's manifest line is on disk (during its fsync, before the
    store's bookkeeping) still reports that chunk as kept: the rerun resumes it, so the message says so."""
    import collective.sweeps.store as store_module

    real_fsync, synced = os.fsync, []

    def fsync_then_ctrl_c(descriptor):
        real_fsync(descriptor)
        if os.readlink(f"/proc/self/fd/{descriptor}").endswith(MANIFEST_FILE):
            synced.append(descriptor)
            raise KeyboardInterrupt

    monkeypatch.setattr(store_module.os, "fsync", fsync_then_ctrl_c)
    with pytest.raises(SweepInterrupted) as interrupted:
        run(spec, tmp_path)
    monkeypatch.undo()
    kept = [json.loads(line) for line in (tmp_path / MANIFEST_FILE).read_text().splitlines()]
    assert len(synced) == len(kept) == 1
    assert str(interrupted.value).startswith(f"{kept[0]['rows']:,} of {TINY_ROWS:,} rows kept in 1 chunks")
    resumed = run(spec, tmp_path)
    assert resumed.chunks_resumed == 1 and len(rows(resumed.dataset)) == TINY_ROWS
