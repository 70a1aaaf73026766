"""The sweep's results store: one Parquet dataset per sweep that never loses or duplicates a row.

Layout of a sweep directory:

    DIR/sweep.json      the full spec, sweep id, package version, plan and growth (episode counts and when)
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

Only what this sweep directory's own sweep wrote is ever deleted or replaced. sweep.json names the
directory with a random store id, kept across resumes; every chunk carries the sweep id, the store id
and its unit in its Parquet key-value metadata (CHUNK_METADATA_KEY), and every chunk's temporary the
store id and its writer's lock token in its name. A file in `dataset/` is removed only when the
manifest lists it (its digest recorded) or its metadata, or its temporary's name, carries this
directory's store id; anything else (a user's file, a chunk of another sweep copied in, a link) is
refused before anything is written, and left where it is. Every file the sweep writes in DIR is
opened without following a symbolic link (os.O_NOFOLLOW): a link, or anything but a regular file, at
one of its paths is refused.
"""
from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import json
import os
import re
import secrets
import socket
import stat
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
# Per-row columns after the config fields (added since, so that earlier datasets' columns stay a prefix): the
# training run whose kept tables played the episode (`evaluation.tables.episode_runs`), NO_TRAINING_RUN without kept
# tables: a per-episode learner trains its own table for every episode, and a group without learners has none (a
# number, not a missing value, so that a dataset rewritten by pandas keeps the column whole numbers).
TRAILING_FIELDS = (("training_run", pa.int64()),)
NO_TRAINING_RUN = -1
# The names a sweep gives the files it writes into dataset/ (see `plan._units` and `ChunkWriter.write`): chunks,
# and their temporaries, which carry the store id (sweep.json's "store") and the lock token of the holding that
# wrote them (a unit retried within a holding rewrites its temporary; a worker outliving its driver never shares it).
_UNIT = r"c[0-9a-f]{15,}-e[0-9]+-[0-9]+-g[0-9a-f]{8}"
CHUNK_NAME = re.compile(rf"part-(?P<unit>{_UNIT})\.parquet")
TEMPORARY_NAME = re.compile(rf"\.part-(?P<unit>{_UNIT})\.parquet\.(?P<store>[0-9a-f]{{16}})-[0-9a-f]{{16}}\.tmp")
# Names like a chunk's that a sweep of an earlier version, or a user, may have left (`.part-….parquet.tmp`).
CHUNK_LIKE_NAME = re.compile(rf"\.?part-{_UNIT}\.parquet(\..*)?")
CHUNK_METADATA_KEY = b"collective.chunk"  # a chunk's Parquet key-value metadata: JSON sweep_id, store, unit
STORE_ID = re.compile(r"[0-9a-f]{16}")
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
    return pa.schema([pa.field(name, kind) for name, kind in RESULT_FIELDS] + config_fields
                     + [pa.field(name, kind) for name, kind in TRAILING_FIELDS])


def config_column_value(value: object) -> object:
    """A config value as its column holds it: scalars unchanged, anything else canonical JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class Continued:
    """The sweep in an output directory that a run continues (`continued_sweep`)."""

    sweep_id: str  # the directory's: its rows and the new ones carry it
    episodes: int  # per cell and group, as its sweep.json last recorded
    growth: list[dict]  # sweep.json's "growth": each episode count a run asked for ("episodes") and when ("at")


def continued_sweep(directory: str | Path, sweep_id: str, source: dict) -> Continued | None:
    """The sweep that a run of the spec `source` (id `sweep_id`) continues in `directory`: its own (a resume),
    or one whose spec differs only by fewer `episodes` (a growth: the new episodes are added to its dataset).
    None where nothing can be continued (no readable sweep.json: `ResultsStore` says why, or starts one).
    StoreError in one line for a sweep of another spec, naming what differs, and for fewer episodes, naming the
    `episodes=M` to pass (the plain command after an interrupted growth asks for fewer than the sweep now holds)."""
    try:
        previous = _parse_sweep_bytes(_read_own(Path(directory) / SPEC_FILE) or b"")
    except (OSError, StoreError):
        return None
    existing = (previous or {}).get("sweep_id")
    if not isinstance(existing, str):
        return None
    before = previous.get("spec")
    if not isinstance(before, dict):  # an older or damaged sweep.json: its id alone tells
        if existing != sweep_id:
            raise StoreError(f"{directory} holds sweep {existing}, not {sweep_id}: a changed spec needs a new "
                             f"--out directory")
        return Continued(existing, source["episodes"], [{"episodes": source["episodes"], "at": None}])
    if changed := _differences(before, source):
        shown = "; ".join(f"{path}: {old!r} there, {new!r} here" for path, old, new in changed[:3])
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise StoreError(f"{directory} holds sweep {existing} of another spec ({shown}{more}): only a larger "
                         f"episodes grows a sweep in place; a changed spec needs a new --out directory")
    had, wanted = before.get("episodes"), source["episodes"]
    growth = previous.get("growth") if isinstance(previous.get("growth"), list) else [{"episodes": had, "at": None}]
    if isinstance(had, int) and wanted < had:
        raise StoreError(f"{directory} holds sweep {existing} with {had} episodes; episodes = {wanted} would leave "
                         f"rows out: pass episodes={had} to resume or finish it (more to grow it further), or give "
                         f"a new --out directory for fewer")
    if wanted != had:
        growth = [*growth, {"episodes": wanted, "at": utc_now()}]
    return Continued(existing, had if isinstance(had, int) else wanted, growth)


def utc_now() -> str:
    """The time now as sweep.json records it (ISO 8601, UTC, to the second)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def listed_units(directory: str | Path) -> set[str]:
    """The units whose chunks the manifest in `directory` lists, unverified (what a dry run reports; a run
    checks each chunk: `ResultsStore`)."""
    try:
        lines = (_read_own(Path(directory) / MANIFEST_FILE) or b"").splitlines()
    except (OSError, StoreError):
        return set()
    units = set()
    for line in lines:
        try:
            units.add(ChunkRecord(**json.loads(line)).unit)
        except (ValueError, TypeError):
            continue
    return units


def _differences(before: object, now: object, path: str = "") -> list[tuple[str, object, object]]:
    """(key path, value before, value now) of every key of two specs that differs, `episodes` left out."""
    if isinstance(before, dict) and isinstance(now, dict):
        return [found for key in dict.fromkeys([*before, *now]) if f"{path}{key}" != "episodes"
                for found in _differences(before.get(key), now.get(key), f"{path}{key}.")]
    return [] if before == now else [(path.rstrip("."), before, now)]


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
    return _parse_sweep_bytes(path.read_bytes())


def _parse_sweep_bytes(data: bytes) -> dict | None:
    try:
        description = json.loads(data)
    except ValueError:
        return None
    return description if isinstance(description, dict) else None


def _temporary(name: str) -> str:
    """The temporary a file of the sweep directory is written to before it is renamed onto `name`."""
    return f".{name}.tmp"


# Every open of a file in the sweep's directory: never through a symbolic link, and a FIFO does not block it.
_OWN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def _not_ours(path: Path, mode: int) -> StoreError:
    """The refusal of a link or other non-regular file at a path the sweep writes."""
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return StoreError(f"{path} is {kind}; the sweep writes only its own regular files: remove it or choose "
                      f"another --out")


def _check_regular(path: Path) -> None:
    """StoreError when `path` holds anything but a regular file (nothing there is fine)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise _not_ours(path, mode)


def _open_own(path: Path, flags: int) -> int:
    """A descriptor of the regular file at `path`, opened with `flags` without following a link
    (O_NOFOLLOW); StoreError naming a link or other non-regular file found there, so nothing is ever
    written through one. (O_TRUNC, not O_EXCL, where creating: what a killed write of ours left at one
    of our names is rewritten.)"""
    try:
        descriptor = os.open(path, flags | _OWN, 0o644)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP):
            _check_regular(path)
        raise
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):  # a FIFO or device opened without blocking
        os.close(descriptor)
        raise _not_ours(path, mode)
    return descriptor


def _read_own(path: Path) -> bytes | None:
    """The content of the regular file at `path` (read without following a link), None when absent."""
    try:
        descriptor = _open_own(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with open(descriptor, "rb") as handle:
        return handle.read()


def _chunk_metadata(path: Path) -> dict | None:
    """The sweep id, store id and unit a chunk's Parquet metadata carries; None for a file that is not
    a whole Parquet file, or whose metadata a sweep did not write."""
    try:
        with open(_open_own(path, os.O_RDONLY), "rb") as handle:
            metadata = pq.read_metadata(handle).metadata or {}
        found = json.loads(metadata[CHUNK_METADATA_KEY])
    except (OSError, StoreError, KeyError, ValueError, pa.ArrowException):
        return None
    return found if isinstance(found, dict) else None


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
        guard = _open_own(self.guard, os.O_CREAT | os.O_RDWR)
        try:
            fcntl.flock(guard, fcntl.LOCK_EX)
            self._refuse_if_held()
            with open(_open_own(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as handle:
                json.dump({"pid": os.getpid(), "host": socket.gethostname(),
                           "start_ticks": _process_start_ticks(os.getpid()), "since": time.time(),
                           "token": self.token}, handle)
            self.held = True
        finally:
            os.close(guard)  # releases the flock

    def _refuse_if_held(self) -> None:
        """StoreError when a live sweep (or one on another host) holds the lock; else it is stale."""
        try:
            holder = json.loads(_read_own(self.path) or b"null")  # a link or a FIFO there: StoreError
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
        """Remove the lock file, if it is still this holding's (never a file put in its place)."""
        if self.held:
            if lock_token(self.path) == self.token:
                self.path.unlink(missing_ok=True)
            self.held = False


def lock_token(path: Path) -> str | None:
    """The token of the lock file at `path` (read without following a link), None when it cannot be
    read as a lock's."""
    try:
        holder = json.loads(_read_own(path) or b"null")
    except (OSError, StoreError, ValueError):
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
    sweep_id: str
    store: str  # the directory's store id (sweep.json's "store"): in every chunk's metadata and temporary's name

    def visible(self) -> bool:
        """Whether this process sees the sweep's directory: its lock file, with the sweep's token."""
        return lock_token(self.lock) == self.token

    def metadata(self, unit: str) -> dict:
        """What the unit's chunk carries in its Parquet metadata: the proof that this directory's sweep wrote it."""
        return {"sweep_id": self.sweep_id, "store": self.store, "unit": unit}

    def write(self, unit: str, table: pa.Table) -> ChunkRecord:
        """Write the unit's rows atomically (a flushed dot-file named by this directory and holding, opened
        without following a link, renamed into place); the manifest line that records it is the sweep's to
        append (`ResultsStore.commit`)."""
        name = f"part-{unit}.parquet"
        if not table.schema.equals(row_schema(), check_metadata=True):  # a unit's rows have it already: casting
            table = table.cast(row_schema())  # them would load Arrow's compute module (~0.1 s of CPU)
        table = table.replace_schema_metadata({CHUNK_METADATA_KEY: json.dumps(self.metadata(unit))})
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        data = sink.getvalue()
        temporary = self.dataset / f".{name}.{self.store}-{self.token}.tmp"  # a killed try's is rewritten
        descriptor = _open_own(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            with open(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if not self.visible():
                raise StoreError(f"{self.lock} no longer names this sweep (token {self.token}): its driver is gone "
                                 "and another sweep holds the directory; chunk not written")
            path = self.dataset / name
            self._check_replaceable(path, unit)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        _fsync_directory(self.dataset)
        return ChunkRecord(unit=unit, file=name, rows=table.num_rows, bytes=data.size,
                           sha256=hashlib.sha256(data).hexdigest())

    def stamp(self, unit: str, episodes: int) -> ChunkRecord:
        """Rewrite the unit's chunk whole with `episodes` in its `episodes` column, as a sweep of that many from
        the start holds it (a grown sweep's kept chunk); the sweep records it again (`ResultsStore.commit`), so an
        interruption leaves it stamped and listed, or listed as it was, or (killed between rename and manifest
        line) damaged and played again."""
        with open(_open_own(self.dataset / f"part-{unit}.parquet", os.O_RDONLY), "rb") as handle:
            table = pq.read_table(handle)
        column = table.schema.get_field_index("episodes")
        return self.write(unit, table.set_column(column, "episodes", pa.array([episodes] * table.num_rows, pa.int64())))

    def _check_replaceable(self, path: Path, unit: str) -> None:
        """StoreError unless `path` is free or holds this unit's chunk from this directory's sweep (a
        worker of a killed driver finishing its unit late): the rename never replaces anything else."""
        _check_regular(path)
        if path.exists() and _chunk_metadata(path) != self.metadata(unit):
            raise StoreError(f"{path} appeared while the sweep ran and is not a chunk this sweep wrote: "
                             "move it out and rerun to resume")


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
        self.store_id = secrets.token_hex(8)  # this directory's, once sweep.json is read (`_check_sweep_file`)
        self._listed_chunks: dict[str, ChunkRecord] = {}  # the manifest's entries (`_sort_dataset`)
        self._damaged_lines = 0
        self._keep: dict[str, ChunkRecord] = {}  # planned units whose listed chunk is intact
        self._stale: list[str] = []  # files in dataset/ this directory's sweep wrote and no longer needs
        self._replanned: list[str] = []  # intact listed chunks of units the plan no longer has

    def __enter__(self) -> "ResultsStore":
        if self.directory.exists() and not self.directory.is_dir():
            raise StoreError(f"{self.directory} is a file, not a directory")
        try:
            for name in (GUARD_FILE, LOCK_FILE, SPEC_FILE, MANIFEST_FILE, _temporary(SPEC_FILE),
                         _temporary(MANIFEST_FILE)):  # before anything is written: no link, FIFO, ... at them
                _check_regular(self.directory / name)
            self.directory.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
        except OSError as error:
            raise StoreError(f"cannot write to {self.directory}: {error.strerror or error}") from None
        try:
            self._check_sweep_file()
            self._sort_dataset()
            self.dataset.mkdir(exist_ok=True)
            self._atomic_write_text(self.directory / SPEC_FILE, json.dumps(
                dict(self.description, sweep_id=self.sweep_id, store=self.store_id), indent=2))
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
            self.previous = _parse_sweep_bytes(_read_own(spec_file) or b"")
            if self.previous is None:  # cut short while being written, or damaged: rewritten below
                self.notices.append(f"{spec_file} was not the JSON object a sweep writes: rewritten")
                self.previous = {}
            existing = self.previous.get("sweep_id")
            if existing not in (None, self.sweep_id):
                raise StoreError(f"{self.directory} holds sweep {existing}, not {self.sweep_id}: "
                                 f"a changed spec needs a new --out directory")
            store = self.previous.get("store")
            if isinstance(store, str) and STORE_ID.fullmatch(store):
                self.store_id = store
        elif any(path.name not in (DATASET_DIR, LOCK_FILE, MANIFEST_FILE) and not path.name.startswith(".")
                 for path in self.directory.iterdir()):
            raise StoreError(f"{self.directory} is not empty and holds no {SPEC_FILE}: choose an empty or new "
                             f"--out directory")

    def _sort_dataset(self) -> None:
        """Refuse a dataset directory the sweep does not own whole: a symbolic link (its target is not
        ours), not a directory, or holding a file this directory's sweep cannot show it wrote (`_ours`).
        Sort the rest into intact listed chunks of planned units (kept) and files to remove. Nothing
        is removed or written here."""
        self._listed_chunks, self._damaged_lines = self._listed()
        if self.dataset.is_symlink():
            raise StoreError(f"{self.dataset} is a symbolic link: a sweep writes only into a dataset directory "
                             f"of its own; remove the link or choose another --out")
        if not self.dataset.exists():
            return
        if not self.dataset.is_dir():
            raise StoreError(f"{self.dataset} is not a directory: move it away or choose another --out")
        by_file = {record.file: record for record in self._listed_chunks.values()}
        foreign, unproven = [], []
        held = sorted(self.dataset.iterdir())
        for path in held:
            mode = path.lstat().st_mode
            if not stat.S_ISREG(mode):
                raise _not_ours(path, mode)
            record = by_file.get(path.name)
            if CHUNK_LIKE_NAME.fullmatch(path.name) is None:
                foreign.append(path.name)
            elif record is not None and self._intact(record):
                if record.unit in self.planned:
                    self._keep[record.unit] = record
                else:  # a unit planned differently (cut short by a grown sweep's old count, another version's
                    self._replanned.append(path.name)  # plan): redone
            elif self._ours(path, record):
                self._stale.append(path.name)
            else:
                unproven.append(path.name)
        if held and not (self.directory / SPEC_FILE).exists():
            raise StoreError(f"{self.dataset} holds {len(held)} file(s) ({_first_names([path.name for path in held])}) "
                             f"but {self.directory} has no {SPEC_FILE}, which a sweep writes before its first chunk: "
                             f"they are not this sweep's; move them out (nothing was changed) or choose another --out")
        if foreign:
            raise StoreError(f"{self.dataset} holds {len(foreign)} file(s) a sweep did not write "
                             f"({_first_names(foreign)}): "
                             f"move them out (nothing was changed) or choose another --out")
        if unproven:
            raise StoreError(f"{self.dataset} holds {len(unproven)} file(s) named as chunks that this sweep did not "
                             f"write ({_first_names(unproven)}: not in its manifest, and no metadata of this "
                             f"directory's sweep): move them out (nothing was changed) or choose another --out")

    def _ours(self, path: Path, record: ChunkRecord | None) -> bool:
        """Whether this directory's sweep wrote the file at `path`, which no intact manifest entry lists:
        a temporary carrying the store id in its name, a chunk carrying the sweep id, store id and its unit
        in its metadata, or a chunk at a name the manifest lists (`record`) whose bytes changed since
        (truncated or corrupt, its metadata maybe with them), unless it now is another sweep's chunk."""
        if temporary := TEMPORARY_NAME.fullmatch(path.name):
            return temporary["store"] == self.store_id
        if (chunk := CHUNK_NAME.fullmatch(path.name)) is None:
            return False  # an earlier version's temporary: nothing shows whose it is
        metadata = _chunk_metadata(path)
        ours = {"sweep_id": self.sweep_id, "store": self.store_id, "unit": chunk["unit"]}
        if record is not None:
            return metadata is None or metadata == ours
        return metadata == ours

    def _listed(self) -> tuple[dict[str, ChunkRecord], int]:
        """The manifest's entries by unit, and how many of its lines could not be read (cut short by a
        killed driver, or garbled: their chunks are redone)."""
        manifest = self.directory / MANIFEST_FILE
        listed: dict[str, ChunkRecord] = {}
        damaged = 0
        for line in (_read_own(manifest) or b"").splitlines():
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
        """Manifest entries of planned units whose chunk is intact; the files `_sort_dataset` found this
        directory's sweep wrote and no longer needs are removed (a unit planned differently by another
        package version is simply redone)."""
        manifest = self.directory / MANIFEST_FILE
        listed, intact = self._listed_chunks, self._keep
        if self._damaged_lines:
            self.notices.append(f"{manifest}: {self._damaged_lines} damaged line(s) ignored; their chunks are "
                                "computed again")
        for name in self._stale + self._replanned:  # temporaries, unlisted, damaged or replanned chunks: ours
            (self.dataset / name).unlink()
        if not manifest.exists() and self.previous:
            self.notices.append(f"{manifest} is missing: no chunk can be verified, so every unit is computed again")
        if self._stale:
            self.notices.append(f"removed {len(self._stale)} chunk file(s) from {self.dataset} that no intact "
                                f"manifest entry lists (unfinished or damaged): {_first_names(self._stale)}")
        if self._replanned:
            self.notices.append(f"removed {len(self._replanned)} chunk file(s) from {self.dataset} of units planned "
                                "differently (cut short at a grown sweep's old episode count, or planned by another "
                                "version): their episodes are played again")
        if intact != listed or not manifest.exists():
            self._atomic_write_text(manifest, "".join(json.dumps(asdict(r)) + "\n" for r in intact.values()))
        return intact

    def _intact(self, record: ChunkRecord) -> bool:
        """Whether the listed chunk is at its own name with the size and digest the manifest recorded."""
        path = self.dataset / record.file
        return (record.file == f"part-{record.unit}.parquet" and path.is_file() and not path.is_symlink()
                and path.stat().st_size == record.bytes and _sha256(path) == record.sha256)

    def _atomic_write_text(self, path: Path, text: str) -> None:
        """Replace `path` by `text` whole (a flushed temporary renamed onto it), neither opened through a
        link; a link at `path` is refused, though the rename would replace the link and not its target."""
        temporary = path.with_name(_temporary(path.name))
        with open(_open_own(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        _check_regular(path)
        os.replace(temporary, path)
        _fsync_directory(path.parent)

    @property
    def writer(self) -> ChunkWriter:
        """What a worker writes this sweep's chunks with (the directory resolved: workers may start elsewhere)."""
        directory = self.directory.resolve()  # the directory only: the files in it are never links
        return ChunkWriter(directory / DATASET_DIR, directory / LOCK_FILE, self.lock.token, self.sweep_id,
                           self.store_id)

    def unstamped(self, episodes: int) -> list[str]:
        """The units of the kept chunks whose `episodes` column is not `episodes` (a grown sweep's, played when it
        had fewer), from each chunk's footer statistics alone: metadata, one read per chunk. Workers stamp them
        (`ChunkWriter.stamp`), so that no rows go through the sweep's own process."""
        units = []
        for unit, record in self.finished.items():
            with open(_open_own(self.dataset / record.file, os.O_RDONLY), "rb") as handle:
                metadata = pq.read_metadata(handle)
            column = metadata.schema.to_arrow_schema().get_field_index("episodes")
            statistics = [metadata.row_group(r).column(column).statistics for r in range(metadata.num_row_groups)]
            if not all(s is not None and s.has_min_max and s.min == s.max == episodes for s in statistics):
                units.append(unit)
        return units

    def commit(self, record: ChunkRecord) -> ChunkRecord:
        """Record a chunk a writer wrote in the manifest: from here on a resumed sweep keeps it."""
        with open(_open_own(self.directory / MANIFEST_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as handle:
            handle.write(json.dumps(asdict(record)) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.finished[record.unit] = record
        return record
