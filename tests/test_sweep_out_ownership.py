"""Issue 46 point 0: every file `collective sweep` writes or removes in --out is provably its own. A symbolic
link (or a FIFO) at a path the sweep writes is refused with one line and never written through; a file in
OUT/dataset is removed only when this directory's sweep shows it wrote it (its manifest's digest, or the
store id in the chunk's metadata or the temporary's name), so a user's file named like a chunk, or another
sweep's real chunk copied in, is refused with one line and left byte for byte."""
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from collective.sweeps.store import ResultsStore, StoreError, row_schema
from sweep_support import collective, write_spec
from test_bad_input_sweeps import SMALL_SPEC, assert_one_line_error

PRECIOUS = b"\\documentclass{article} % the user's own file\n\x00\xff"
CHUNK_LIKE = "part-c0123456789abcdef-e0-24-g89abcdef.parquet"  # named as a sweep names its chunks
UNIT = "c0123456789abcdef-e0-24-g89abcdef"


def sweep(spec: Path, out: Path, timeout: float = 600):
    return collective("sweep", str(spec), "--out", str(out), "--executor", "serial", timeout=timeout)


def precious(directory: Path) -> Path:
    """A user's file outside --out."""
    path = directory / "thesis.tex"
    path.write_bytes(PRECIOUS)
    return path


# (a path the sweep writes, relative to --out); the link there points at the user's file
LINKED = ["sweep.lock", ".sweep.lock.guard", "manifest.jsonl", "sweep.json", ".sweep.json.tmp", ".manifest.jsonl.tmp",
          f"dataset/.{CHUNK_LIKE}.tmp", f"dataset/{CHUNK_LIKE}"]


@pytest.mark.parametrize("name", LINKED)
def test_a_link_at_a_path_the_sweep_writes_is_refused_and_its_target_untouched(tmp_path, name):
    """On main the lock, the manifest and the temporaries were written through the link (the user's file
    overwritten, exit 0), and a link at sweep.json or the guard went unremarked."""
    spec, out, target = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out", precious(tmp_path)
    link = out / name
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    result = sweep(spec, out)
    assert target.read_bytes() == PRECIOUS, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert_one_line_error(result, 2, "argument --out", f"{link} is a symbolic link",
                          "the sweep writes only its own regular files")
    assert not (out / "sweep.json").is_file() or name == "sweep.json"  # refused before anything was written


def test_a_fifo_at_the_manifest_is_refused_at_once(tmp_path):
    """On main reading the manifest blocked on the FIFO for ever."""
    spec, out = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "manifest.jsonl")
    assert_one_line_error(sweep(spec, out, timeout=120), 2, f"{out / 'manifest.jsonl'} is a named pipe")
    assert sorted(path.name for path in out.iterdir()) == ["manifest.jsonl"]


def _refused_and_kept(result, path: Path, content: bytes) -> None:
    assert_one_line_error(result, 2, "argument --out", "named as chunks that this sweep did not write", path.name)
    assert path.read_bytes() == content


@pytest.mark.parametrize("name", [CHUNK_LIKE, f".{CHUNK_LIKE}.tmp"])
def test_a_users_file_named_as_a_chunk_is_refused_and_kept_after_a_finished_sweep(tmp_path, name):
    """On main: "removed 1 chunk file(s) ... that no intact manifest entry lists", exit 0."""
    spec, out = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out"
    assert sweep(spec, out).returncode == 0
    chunks = sorted((out / "dataset").iterdir())
    mine = out / "dataset" / name
    mine.write_bytes(PRECIOUS)
    _refused_and_kept(sweep(spec, out), mine, PRECIOUS)
    assert sorted((out / "dataset").iterdir()) == sorted(chunks + [mine])


@pytest.mark.parametrize("name", [CHUNK_LIKE, f".{CHUNK_LIKE}.tmp"])
def test_a_users_file_named_as_a_chunk_is_refused_and_kept_without_a_sweep(tmp_path, name):
    spec, out = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out"
    (out / "dataset").mkdir(parents=True)
    mine = out / "dataset" / name
    mine.write_bytes(PRECIOUS)
    assert_one_line_error(sweep(spec, out), 2, "argument --out", f"holds 1 file(s) ({name}) but {out} has no sweep.json")
    assert mine.read_bytes() == PRECIOUS
    assert not (out / "sweep.json").exists() and os.listdir(out / "dataset") == [name]


def test_a_dataset_without_its_sweep_json_is_refused_and_kept(tmp_path):
    """A finished sweep's dataset and manifest with sweep.json gone (deleted, or the folder copied without it):
    a sweep writes sweep.json before its first chunk, so nothing shows whose they are. On main the chunks the
    manifest listed were taken as this sweep's and the sweep resumed into them, exit 0 (issue 46 point 4)."""
    spec, out = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out"
    assert sweep(spec, out).returncode == 0
    (out / "sweep.json").unlink()
    before = {path: path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()}
    assert_one_line_error(sweep(spec, out), 2, "argument --out", f"{out / 'dataset'} holds", "has no sweep.json")
    assert {path: path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()} == before


def test_a_chunk_of_another_sweep_copied_in_is_refused_and_kept(tmp_path):
    spec, out = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out"
    other = write_spec(tmp_path, SMALL_SPEC.replace('grid = ["5x5", "6x6"]', 'grid = ["7x7"]'), "other.toml")
    assert sweep(spec, out).returncode == 0 and sweep(other, tmp_path / "other").returncode == 0
    theirs = sorted((tmp_path / "other" / "dataset").iterdir())[0]
    copied = out / "dataset" / theirs.name
    assert not copied.exists()  # another spec's units are named apart
    shutil.copyfile(theirs, copied)
    _refused_and_kept(sweep(spec, out), copied, theirs.read_bytes())


def test_a_chunk_of_the_same_spec_swept_elsewhere_is_refused_and_kept(tmp_path):
    """The same sweep id and unit, but another directory's sweep wrote it (the store id tells them apart):
    here its unit is missing from OUT's manifest, as after a killed driver."""
    spec, out, elsewhere = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out", tmp_path / "elsewhere"
    assert sweep(spec, out).returncode == 0 and sweep(spec, elsewhere).returncode == 0
    manifest = (out / "manifest.jsonl").read_text().splitlines()
    dropped = json.loads(manifest[0])["file"]
    (out / "manifest.jsonl").write_text("".join(line + "\n" for line in manifest[1:]))
    shutil.copyfile(elsewhere / "dataset" / dropped, out / "dataset" / dropped)
    _refused_and_kept(sweep(spec, out), out / "dataset" / dropped, (elsewhere / "dataset" / dropped).read_bytes())


def test_every_chunk_carries_its_sweep_store_and_unit(tmp_path):
    """What lets a rerun remove a chunk the manifest does not list: its own metadata names this directory's sweep."""
    spec, out = write_spec(tmp_path, SMALL_SPEC), tmp_path / "out"
    assert sweep(spec, out).returncode == 0
    described = json.loads((out / "sweep.json").read_text())
    for line in (out / "manifest.jsonl").read_text().splitlines():
        record = json.loads(line)
        metadata = pq.read_metadata(out / "dataset" / record["file"]).metadata
        assert json.loads(metadata[b"collective.chunk"]) == {"sweep_id": described["sweep_id"],
                                                            "store": described["store"], "unit": record["unit"]}


def test_a_worker_never_writes_through_a_link_in_the_dataset(tmp_path):
    """A link put into OUT/dataset while the sweep runs: the writer's temporary is a new name of its own,
    created without following links (on main it wrote the chunk into the link's target), and a link at the
    chunk's own name is refused rather than replaced by the rename (on main it was replaced silently)."""
    target, second = precious(tmp_path), UNIT.replace("-g89abcdef", "-g00000000")
    with ResultsStore(tmp_path / "out", "tiny", {}, planned={UNIT, second}) as store:
        temporary = store.dataset / f".part-{UNIT}.parquet.tmp"  # where main's writer put it
        temporary.symlink_to(target)
        store.commit(store.writer.write(UNIT, row_schema().empty_table()))
        assert target.read_bytes() == PRECIOUS and temporary.is_symlink()
        chunk = store.dataset / f"part-{second}.parquet"
        chunk.symlink_to(target)
        with pytest.raises(StoreError, match=f"{chunk} is a symbolic link"):
            store.writer.write(second, row_schema().empty_table())
        assert target.read_bytes() == PRECIOUS and chunk.is_symlink()
        assert sorted(path.name for path in store.dataset.iterdir()) == sorted([temporary.name, chunk.name,
                                                                                 f"part-{UNIT}.parquet"])
