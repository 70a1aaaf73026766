"""The sweep's results store: one Parquet dataset per sweep that never loses or duplicates a row.

Layout of a sweep directory:

    DIR/sweep.json      the full spec, sweep id, package version and plan (written once)
    DIR/manifest.jsonl  one line per finished chunk: unit id, file, rows, bytes, sha256
    DIR/sweep.lock      the PID holding the directory while a sweep runs
    DIR/.sweep.lock.guard  empty; flocked while sweep.lock is checked and taken
    DIR/dataset/        part-<unit>.parquet chunks only: open it with pandas.read_parquet,
                        pyarrow.dataset.dataset or duckdb's read_parquet('DIR/dataset/*.parquet')

A chunk is written to a dot-file (which Parquet readers skip), flushed, renamed into place and
only then recorded in the manifest, so a chunk is either whole and listed or absent. The worker that
played a unit writes its chunk (`ChunkWriter`, wherever it sees the directory); the sweep's own
process only appends the manifest line (`ResultsStore.commit`), so no process handles every row. On start the
manifest is checked against the files: a listed chunk whose size or checksum differs (truncated,
corrupt, missing) is deleted and redone, and chunks not listed (the driver died between rename and
manifest) are deleted, so a resumed sweep never holds a row twice.

Only what a sweep wrote is ever deleted: a regular file named as a chunk or a chunk's temporary.
A `dataset/` that is a symbolic link, or that holds anything else, is refused before anything is
written, and the files are left where they are.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import secrets
import socket
import time
import types
import typing
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from collective.config import EvaluationConfig

DATASET_DIR = "dataset"
SPEC_FILE = "sweep.json"
MANIFEST_FILE = "manifest.jsonl"
LOCK_FILE = "sweep.lock"
GUARD_FILE = ".sweep.lock.guard"  # flocked while a lock is checked and taken (never removed: see DirectoryLock)
# Columns that hold timings: the only ones allowed to differ between runs of the same spec.
TIMING_COLUMNS = ("wall_seconds", "kernel_seconds")
# Per-row columns besides the config fields, in dataset order.
RESULT_FIELDS = (
    ("sweep_id", pa.string()), ("cell", pa.int64()), ("group", pa.string()), ("group_key", pa.int64()),
    ("episode", pa.int64()), ("grid", pa.string()),
    ("score", pa.float64()),  # R̄ of the episode (paper 003 Definition 2); Υ is its mean over episodes
    ("k_raw", pa.int64()), ("k_normalised", pa.float64()), ("entropy_bits", pa.float64()),
    # log2 probability that the generator draws ⊕'s pattern, K range's constant left out; NaN: unknown
    # (collective.environments.pattern_probability), for the importance-weighted Legg-Hutter Υ
    ("pattern_log2_probability", pa.float64()),
    ("k_evil", pa.int64()),  # LZ76 count of ⊖'s played path (Λ* rows; k_raw is ⊕'s as its generator measures it)
    # The episode's ceiling of R̄: mean over the agents of the best R̄ from their start cells, by dynamic
    # programming on the known paths (collective.environments.ceiling); exact when coordination_threshold
    # is 1, an upper bound above. Accuracy = (Υ - Υ_random) / (Υ_best - Υ_random) per cell.
    ("upsilon_best", pa.float64()),
    ("local_optima", pa.int64()), ("correlation_length", pa.float64()),  # landscape rows only (spec §7)
    ("spawn_key", pa.list_(pa.int64())),  # (cell, episode, group): the agents' SeedSequence spawn key
    ("messages_per_iteration", pa.float64()), ("bits_per_iteration", pa.float64()),
    # the episode's message entropy (bits per message; NaN: nothing logged) and that times the batch's messages
    # per iteration, both of the reads_and_writes accounting (protocols/__init__.py)
    ("message_entropy_bits", pa.float64()), ("information_bits_per_iteration", pa.float64()),
    # the episode's distinct messages (symbols; copies to several readers and repeats counted once) per iteration,
    # and that times the message entropy (NaN: nothing logged; protocols/__init__.py, issue 22 point 6)
    ("distinct_messages_per_iteration", pa.float64()), ("distinct_information_bits_per_iteration", pa.float64()),
    # JSON: each behaviour's per-capita R̄ (a mixed group's focal and background scores, Melting Pot)
    ("score_by_behaviour", pa.string()),
    ("plugin_digests", pa.string()),  # JSON: import path -> source digest of the group's plug-ins
    ("wall_seconds", pa.float64()), ("kernel_seconds", pa.float64()),  # the group's batch time / episodes
    ("version", pa.string()),
    # ⊕'s and ⊖'s played paths (collective.environments.motion, issue 22 point 3): the period of their moves, the
    # net displacement per period on the torus in king moves (0: back at the start), the mean king distance moved
    # per iteration, and the row's motion kind (stationary / periodic / drifting, the more mobile object's)
    ("good_period", pa.int64()), ("good_drift", pa.int64()), ("good_displacement_per_iteration", pa.float64()),
    ("evil_period", pa.int64()), ("evil_drift", pa.int64()), ("evil_displacement_per_iteration", pa.float64()),
    ("motion", pa.string()),
    # whether a behaviour plug-in of the group declares centralised = True (its agents act on each other's
    # observations; collective.testing checks every other behaviour acts on its own slice only)
    ("centralised", pa.bool_()),
)
# The names a sweep gives the files it writes into dataset/ (see `plan._units` and `ChunkWriter.write`).
CHUNK_NAME = re.compile(r"\.?part-c[0-9a-f]{15,}-e[0-9]+-[0-9]+-g[0-9a-f]{8}\.parquet(\.tmp)?")
_ARROW_TYPES = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}


class StoreError(RuntimeError):
    """The output directory cannot take this sweep (in use, or holds another sweep)."""


@functools.cache  # fixed for the process (the dataclass's fields); every play_unit table asks for it
def row_schema() -> pa.Schema:
    """Result columns, then one column per `EvaluationConfig` field (nullable where the field is
    Optional; tuples such as protocol_params as canonical JSON text). Derived from the dataclass,
    so new config fields become columns without edits here."""
    hints = typing.get_type_hints(EvaluationConfig)
    config_fields = []
    for field in fields(EvaluationConfig):
        kinds = [kind for kind in typing.get_args(hints[field.name]) if kind is not type(None)] \
            if isinstance(hints[field.name], types.UnionType) else [hints[field.name]]
        config_fields.append(pa.field(field.name, _ARROW_TYPES.get(kinds[0], pa.string())))
    return pa.schema([pa.field(name, kind) for name, kind in RESULT_FIELDS] + config_fields)


def config_column_value(value: object) -> object:
    """A config value as its column holds it: scalars unchanged, anything else canonical JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class ChunkRecord:
    """One manifest line: a finished work unit's chunk file."""

    unit: str
    file: str
    rows: int
    bytes: int
    sha256: str


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _first_names(names: list[str]) -> str:
    """Up to five names, then how many more: a notice's or an error's list of files."""
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def parse_sweep_file(path: Path) -> dict | None:
    """A sweep.json's content; None when it is not the JSON object a sweep writes (cut short while
    being written, or damaged). Errors reading the file are the caller's."""
    try:
        description = json.loads(path.read_bytes())
    except ValueError:
        return None
    return description if isinstance(description, dict) else None


def _written_by_a_sweep(path: Path) -> bool:
    """A regular file (not a link) named as a sweep names its chunks and their temporaries."""
    return CHUNK_NAME.fullmatch(path.name) is not None and path.is_file() and not path.is_symlink()


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _process_start_ticks(pid: int) -> int | None:
    """Start time of a live process (Linux /proc), to tell a PID from a later process reusing it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _process_alive(pid: int, start_ticks: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return start_ticks is None or _process_start_ticks(pid) in (None, start_ticks)


class DirectoryLock:
    """An exclusive claim on a sweep directory: a lock file naming the host and PID that holds it.

    A lock left by a process that is gone (killed driver), or one whose content is not a lock's, is
    stale and taken over; a live holder's lock, or one from another host that cannot be checked,
    refuses the second sweep. Checking a lock and taking it over happen under an flock on the
    directory's GUARD_FILE, so sweeps started together on one host take it one at a time: exactly
    one wins, the others see its live lock."""

    def __init__(self, directory: Path):
        self.path = directory / LOCK_FILE
        self.guard = directory / GUARD_FILE
        self.held = False
        self.token = secrets.token_hex(8)  # names this holding: a worker writes chunks only while the lock shows it

    def acquire(self) -> None:
        guard = os.open(self.guard, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(guard, fcntl.LOCK_EX)
            self._refuse_if_held()
            with open(self.path, "w") as handle:
                json.dump({"pid": os.getpid(), "host": socket.gethostname(),
                           "start_ticks": _process_start_ticks(os.getpid()), "since": time.time(),
                           "token": self.token}, handle)
            self.held = True
        finally:
            os.close(guard)  # releases the flock

    def _refuse_if_held(self) -> None:
        """StoreError when a live sweep (or one on another host) holds the lock; else it is stale."""
        try:
            holder = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            return  # cut short while being written (its writer died) or damaged: stale
        if not isinstance(holder, dict):
            return
        if holder.get("host") != socket.gethostname():
            raise StoreError(f"{self.path.parent} is in use by a sweep on host {holder.get('host')} "
                             f"(PID {holder.get('pid')}); delete {self.path} if that sweep is gone")
        pid, ticks = holder.get("pid"), holder.get("start_ticks")
        if isinstance(pid, int) and pid > 0 and (ticks is None or isinstance(ticks, int)) and _process_alive(pid, ticks):
            raise StoreError(f"{self.path.parent} is in use by another sweep (PID {pid}); "
                             f"wait for it or choose another --out")

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


def lock_token(path: Path) -> str | None:
    """The token of the lock file at `path`, None when it cannot be read as a lock's."""
    try:
        holder = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return holder.get("token") if isinstance(holder, dict) else None


@dataclass(frozen=True)
class ChunkWriter:
    """Writes a finished unit's chunk into a sweep's dataset directory, in whichever process played the
    unit (a Ray worker on any node that sees the directory, or the sweep's own process). It writes only
    while the directory's lock holds `token`, the holding of the sweep that sent it: a worker outliving
    its killed driver never writes into the dataset of the sweep that resumed it."""

    dataset: Path  # absolute
    lock: Path  # the directory's lock file
    token: str

    def visible(self) -> bool:
        """Whether this process sees the sweep's directory: its lock file, with the sweep's token."""
        return lock_token(self.lock) == self.token

    def write(self, unit: str, table: pa.Table) -> ChunkRecord:
        """Write the unit's rows atomically (a flushed dot-file renamed into place); the manifest line
        that records it is the sweep's to append (`ResultsStore.commit`)."""
        name = f"part-{unit}.parquet"
        temporary = self.dataset / f".{name}.tmp"
        if not table.schema.equals(row_schema(), check_metadata=True):  # a unit's rows have it already: casting
            table = table.cast(row_schema())  # them would load Arrow's compute module (~0.1 s of CPU)
        pq.write_table(table, temporary, compression="zstd")
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        if not self.visible():
            temporary.unlink(missing_ok=True)
            raise StoreError(f"{self.lock} no longer names this sweep (token {self.token}): its driver is gone "
                             "and another sweep holds the directory; chunk not written")
        path = self.dataset / name
        os.replace(temporary, path)
        _fsync_directory(self.dataset)
        return ChunkRecord(unit=unit, file=name, rows=table.num_rows, bytes=path.stat().st_size, sha256=_sha256(path))


class ResultsStore:
    """A sweep directory opened for writing: lock held, manifest verified, ready for chunks."""

    def __init__(self, directory: str | Path, sweep_id: str, description: dict, planned: set[str]):
        """`description` is written to sweep.json; `sweep_id` must match an existing one to resume;
        `planned` are the unit ids of the sweep's plan: chunks of any other unit are dropped."""
        self.directory = Path(directory)
        self.planned = planned
        self.dataset = self.directory / DATASET_DIR
        self.sweep_id = sweep_id
        self.description = description
        self.lock = DirectoryLock(self.directory)
        self.finished: dict[str, ChunkRecord] = {}
        self.previous: dict = {}  # the sweep.json found in the directory, if any
        self.notices: list[str] = []  # what opening the store did that a user should hear of

    def __enter__(self) -> "ResultsStore":
        if self.directory.exists() and not self.directory.is_dir():
            raise StoreError(f"{self.directory} is a file, not a directory")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
        except OSError as error:
            raise StoreError(f"cannot write to {self.directory}: {error.strerror or error}") from None
        try:
            self._check_sweep_file()
            self._check_dataset()
            self.dataset.mkdir(exist_ok=True)
            self._atomic_write_text(self.directory / SPEC_FILE,
                                    json.dumps(dict(self.description, sweep_id=self.sweep_id), indent=2))
            self.finished = self._verified_manifest()
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.lock.release()

    def _check_sweep_file(self) -> None:
        """Refuse a directory that holds another sweep, or other files."""
        spec_file = self.directory / SPEC_FILE
        if spec_file.exists():
            self.previous = parse_sweep_file(spec_file)
            if self.previous is None:  # cut short while being written, or damaged: rewritten below
                self.notices.append(f"{spec_file} was not the JSON object a sweep writes: rewritten")
                self.previous = {}
            existing = self.previous.get("sweep_id")
            if existing not in (None, self.sweep_id):
                raise StoreError(f"{self.directory} holds sweep {existing}, not {self.sweep_id}: "
                                 f"a changed spec needs a new --out directory")
        elif any(path.name not in (DATASET_DIR, LOCK_FILE, MANIFEST_FILE) and not path.name.startswith(".")
                 for path in self.directory.iterdir()):
            raise StoreError(f"{self.directory} is not empty and holds no {SPEC_FILE}: choose an empty or new "
                             f"--out directory")

    def _check_dataset(self) -> None:
        """Refuse a dataset directory the sweep does not own whole: a symbolic link (its target is
        not ours), not a directory, or holding files a sweep did not write. Nothing is removed."""
        if self.dataset.is_symlink():
            raise StoreError(f"{self.dataset} is a symbolic link: a sweep writes only into a dataset directory "
                             f"of its own; remove the link or choose another --out")
        if not self.dataset.exists():
            return
        if not self.dataset.is_dir():
            raise StoreError(f"{self.dataset} is not a directory: move it away or choose another --out")
        foreign = sorted(path.name for path in self.dataset.iterdir() if not _written_by_a_sweep(path))
        if foreign:
            raise StoreError(f"{self.dataset} holds {len(foreign)} file(s) a sweep did not write "
                             f"({_first_names(foreign)}): "
                             f"move them out (nothing was changed) or choose another --out")

    def _listed(self) -> tuple[dict[str, ChunkRecord], int]:
        """The manifest's entries by unit, and how many of its lines could not be read (cut short by a
        killed driver, or garbled: their chunks are redone)."""
        manifest = self.directory / MANIFEST_FILE
        listed: dict[str, ChunkRecord] = {}
        damaged = 0
        for line in manifest.read_bytes().splitlines() if manifest.exists() else ():
            try:
                record = ChunkRecord(**json.loads(line))
            except (ValueError, TypeError):
                damaged += 1
                continue
            listed[record.unit] = record
        return listed, damaged

    def recorded(self) -> dict[str, ChunkRecord]:
        """The chunks the manifest on disk lists: what a rerun resumes. After an interruption this is the
        truth, `finished` may lag it (a Ctrl-C between a chunk's manifest line and its bookkeeping)."""
        return self._listed()[0]

    def _verified_manifest(self) -> dict[str, ChunkRecord]:
        """Manifest entries of planned units whose chunk is intact; everything else in the dataset
        is removed (a unit planned differently by another package version is simply redone)."""
        manifest = self.directory / MANIFEST_FILE
        listed, damaged = self._listed()
        if damaged:
            self.notices.append(f"{manifest}: {damaged} damaged line(s) ignored; their chunks are computed again")
        intact = {unit: record for unit, record in listed.items() if unit in self.planned and self._intact(record)}
        keep = {record.file for record in intact.values()}
        removed = sorted(path.name for path in self.dataset.iterdir() if path.name not in keep)
        for name in removed:  # all written by a sweep (`_check_dataset`): temporaries, unlisted or damaged chunks
            (self.dataset / name).unlink()
        if not manifest.exists() and self.previous:
            self.notices.append(f"{manifest} is missing: no chunk can be verified, so every unit is computed again")
        if removed:
            self.notices.append(f"removed {len(removed)} chunk file(s) from {self.dataset} that no intact manifest "
                                f"entry lists (unfinished or damaged): {_first_names(removed)}")
        if intact != listed or not manifest.exists():
            self._atomic_write_text(manifest, "".join(json.dumps(asdict(r)) + "\n" for r in intact.values()))
        return intact

    def _intact(self, record: ChunkRecord) -> bool:
        path = self.dataset / record.file
        return path.is_file() and path.stat().st_size == record.bytes and _sha256(path) == record.sha256

    def _atomic_write_text(self, path: Path, text: str) -> None:
        temporary = path.with_name(f".{path.name}.tmp")
        with open(temporary, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        _fsync_directory(path.parent)

    @property
    def writer(self) -> ChunkWriter:
        """What a worker writes this sweep's chunks with (the directory resolved: workers may start elsewhere)."""
        return ChunkWriter(self.dataset.resolve(), self.lock.path.resolve(), self.lock.token)

    def commit(self, record: ChunkRecord) -> ChunkRecord:
        """Record a chunk a writer wrote in the manifest: from here on a resumed sweep keeps it."""
        with open(self.directory / MANIFEST_FILE, "a") as handle:
            handle.write(json.dumps(asdict(record)) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.finished[record.unit] = record
        return record
