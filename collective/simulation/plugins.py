"""The plug-in seam: what the stepping core hands a behaviour or protocol, what it takes back, and
how a plug-in is named and loaded (paper 003 §7: "evaluate new agent behaviours ... individually
and collectively using different communication and interaction protocols").

A *behaviour* is any class with `act(self, obs) -> actions`; a *protocol* any class with
`communicate(self, obs) -> Messages`. No base class is needed: `BehaviourPlugin` and
`ProtocolPlugin` are typing Protocols for editors and type checkers. Both are named on the command
line, in sweep specs and in Python by a registered name (`local_search`) or an import path
(`my_pkg.agents:Homing`, or `path/to/file.py:Homing`); built-ins and user plug-ins resolve through
the same function, `load_plugin` (as `load_behaviour` / `load_protocol`). Arrays are shaped (episodes, agents, ...)
for the agents the plug-in serves; the spec's cell order is row-major, `row * cols + col`, and its
action order is up-left, up, up-right, left, stay, right, down-left, down, down-right (spec §1).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol as TypingProtocol, runtime_checkable

from collective.parameters import Parameter

if TYPE_CHECKING:  # annotations only: `collective --help` loads neither numpy nor numba
    import numpy as np

    from collective.simulation.random_streams import AgentStreams


# Set on Ray workers by a sweep's runtime environment (`collective.sweeps.runtime`): plug-in files
# as named on the driver -> the module name under which the runtime environment ships them.
SHIPPED_FILES_VARIABLE = "COLLECTIVE_PLUGIN_FILES"
# Set on Ray workers likewise: the directory the driver runs in, where plug-ins' relative `data_files` are.
RUN_DIRECTORY_VARIABLE = "COLLECTIVE_RUN_DIRECTORY"


def run_directory() -> Path:
    """The directory a run started in, against which a plug-in's relative `data_files` (a trained model, a table)
    are read: the working directory, or on a Ray worker the driver's (`RUN_DIRECTORY_VARIABLE`). Workers on other
    machines need the files at the same path there (a shared filesystem)."""
    return Path(os.environ.get(RUN_DIRECTORY_VARIABLE) or os.getcwd())


class PluginError(ValueError):
    """A plug-in that cannot be loaded or misbehaved: names the plug-in, the method and what was wrong."""

    def __init__(self, plugin: str, method: str, message: str):
        where = f"{plugin}.{method}" if method else plugin
        super().__init__(f"plug-in {where}: {message}")
        self.plugin, self.method, self.message = plugin, method, message

    def __reduce__(self):  # crosses process boundaries (Ray) whole
        return type(self), (self.plugin, self.method, self.message)


class CtrlC(KeyboardInterrupt):
    """The KeyboardInterrupt of a real Ctrl-C (SIGINT), raised by `on_ctrl_c`: a plug-in that raises
    KeyboardInterrupt itself is a failing plug-in, not a user who stops the run."""


_CTRL_C_RECEIVED = threading.Event()  # set by `on_ctrl_c`: this process was asked to stop


def on_ctrl_c(signum, frame) -> None:
    """SIGINT handler of the command line: Ctrl-C raises `CtrlC` (and is remembered: `ctrl_c_received`)."""
    _CTRL_C_RECEIVED.set()
    raise CtrlC()


class Terminated(CtrlC):
    """The interruption of a SIGTERM (`kill PID`, a scheduler ending the job), raised by `on_terminate`: the run
    stops as on Ctrl-C, finished work kept, with status 143 (`interrupted_status`)."""


_TERMINATED = threading.Event()  # set by `on_terminate`


def on_terminate(signum, frame) -> None:
    """SIGTERM handler of the command line: raises `Terminated`, so the run ends as on Ctrl-C."""
    _TERMINATED.set()
    _CTRL_C_RECEIVED.set()
    raise Terminated()


def interrupted_status() -> int:
    """The exit status of an interrupted run: 128 + the signal, 143 after a SIGTERM, else 130 (Ctrl-C)."""
    return 128 + (signal.SIGTERM if _TERMINATED.is_set() else signal.SIGINT)


def ctrl_c_received() -> bool:
    """Whether a Ctrl-C reached `on_ctrl_c` in this process: a library that turns the KeyboardInterrupt into an
    error of its own (numba, interrupted while it compiles and caches) still ended the run by the user's wish."""
    return _CTRL_C_RECEIVED.is_set()


def is_ctrl_c(error: BaseException) -> bool:
    """Whether `error` is a user's Ctrl-C: a `CtrlC`, or any KeyboardInterrupt where `on_ctrl_c` is
    not installed (Python's own handler cannot tell it from one a plug-in raised)."""
    return isinstance(error, KeyboardInterrupt) and \
        (isinstance(error, CtrlC) or signal.getsignal(signal.SIGINT) is not on_ctrl_c)


@contextlib.contextmanager
def plugin_code(plugin: str, method: str, verb: str = "raised"):
    """Run the user's code: whatever it raises, SystemExit and GeneratorExit included (a plug-in's
    `sys.exit(0)` must not end a run as a success), becomes a PluginError naming it and the method;
    only a real Ctrl-C passes (`is_ctrl_c`)."""
    try:
        yield
    except PluginError:
        raise
    except BaseException as error:  # noqa: BLE001 - the user's code: say where it failed, never hide it
        if is_ctrl_c(error):
            raise
        raise PluginError(plugin, method, f"{verb} {type(error).__name__}: {error}") from error


@dataclass(frozen=True)
class Batch:
    """What `reset(batch)` receives at the start of every batch of episodes.

    `streams` are the agents' own random streams, one lane per (episode, agent): the same
    splitmix64 streams the built-ins draw from, keyed by episode, so draws never depend on the batch
    size or the worker count. `rng` is a NumPy Generator seeded from the batch's episode keys; it
    is convenient but its draws depend on which episodes share the batch.
    """

    episodes: int  # E
    agents: int  # A: the agents this plug-in serves
    rows: int
    cols: int
    iterations: int  # T
    observation_range: int  # k: windows are (2k+1) x (2k+1)
    agent_ids: np.ndarray  # (A,) the agents' indices in the group
    streams: AgentStreams  # (E, A) lanes
    rng: np.random.Generator


@dataclass(frozen=True)
class Observation:
    """What an agent perceives at iteration t (spec §1), for the E episodes and A agents served.
    Arrays are fresh each iteration and read-only: a plug-in may keep them, but writing into them
    raises ValueError (what a protocol tells members goes through its counted `Messages`; copy an
    array to change it)."""

    window: np.ndarray  # (E, A, 2k+1, 2k+1) float64: R of the observed cells, own cell in the middle
    cell: np.ndarray  # (E, A) int64: own cell, row * cols + col
    t: int  # the iteration, 0..T-1
    reward: np.ndarray  # (E, A) float64: the last reward (0 at t = 0)
    target: np.ndarray  # (E, A) int64: the cell the group's protocol points to, -1 for none
    field: np.ndarray  # (E, A, 2k+1, 2k+1) float64: a protocol's additive field (zeros for none)


@dataclass(frozen=True)
class Messages:
    """What a protocol returns for its M members: targets and/or an additive field, and its traffic
    this iteration (summed over the batch's episodes; spec §6 asks that communication be counted)."""

    target: np.ndarray | None = None  # (E, M) int: a cell per member, -1 for none
    field: np.ndarray | None = None  # (E, M, 2k+1, 2k+1) float: added to what each member observes
    messages: float = 0.0
    bits: float = 0.0


@runtime_checkable
class BehaviourPlugin(TypingProtocol):
    """An agent behaviour. Optional methods: `reset(self, batch)` at the start of every batch and
    `observe(self, rewards)` with the (E, A) rewards received after each move (for learners).
    Optional class attributes: `name`, `description`, `parameters` (a tuple of `Parameter`, given
    to the constructor as keyword arguments), `persistent` (True: one object plays the whole
    evaluation and keeps what it learned across its batches, played in episode order; False, the
    default: it must start fresh in every `reset`), `batch_episodes` (the most episodes per batch:
    a persistent learner's step), `protocols` (names or import paths of the protocols its agents
    take part in, "*" for any), `centralised` (True: an agent's action may depend on the other
    agents' observations, which one object serving several agents sees; False, the default: each
    agent acts on its own slice only, which `collective.testing.check_behaviour` verifies; rows
    record it in the column `centralised`), `data_files` (paths of files it reads, a trained model say, relative
    to `run_directory()`: refused before any work when missing, and their bytes join its source digest, so rows
    record which data made them)."""

    def act(self, obs: Observation) -> np.ndarray:
        """(E, A) integer actions in 0..8."""
        ...


@runtime_checkable
class ProtocolPlugin(TypingProtocol):
    """A communication protocol, called after every agent observes and before any acts, for the
    group's members only (`members`: behaviour names or import paths that take part; None, the
    default, for every agent). Optional: `reset(self, batch)`, `name`, `description`,
    `parameters`, `minimum_members`, `data_files` (as a behaviour's). It may keep state across iterations;
    `reset` starts an episode batch."""

    def communicate(self, obs: Observation) -> Messages:
        ...


@functools.lru_cache(maxsize=64)
def _file_digest(path: Path, device: int, inode: int, size: int, modified_ns: int, changed_ns: int) -> bytes:
    """SHA-256 of a data file, read once per version of it (a model may be large; digests are asked per unit).
    A version is its inode and sizes and times; the change time (ctime) moves on every write and no tool can set
    it back, as `cp -p` or `touch -r` set the modification time."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()


@dataclass(frozen=True)
class PluginClass:
    """A resolved plug-in: the text that named it, the class, and whether it is a kernel built-in."""

    spec: str  # the name or import path as given
    cls: type
    builtin: bool

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return tuple(getattr(self.cls, "parameters", ()))

    def check_parameters(self) -> None:
        """PluginError unless `parameters` is a tuple or list of collective.Parameter."""
        declared = getattr(self.cls, "parameters", ())
        if not isinstance(declared, (tuple, list)) or not all(isinstance(p, Parameter) for p in declared):
            raise PluginError(self.spec, "parameters", f"must be a tuple of collective.Parameter (got {declared!r:.80})")

    @property
    def data_files(self) -> tuple[Path, ...]:
        """The files the plug-in reads besides its code (`data_files`, paths relative to `run_directory`)."""
        return tuple(run_directory() / path for path in getattr(self.cls, "data_files", ()))

    def check_data_files(self) -> None:
        """PluginError unless `data_files` is a tuple of paths to files that are there: a missing trained model
        is refused before any work."""
        declared = getattr(self.cls, "data_files", ())
        if not isinstance(declared, (tuple, list)) or not all(isinstance(p, (str, os.PathLike)) for p in declared):
            raise PluginError(self.spec, "data_files", f"must be a tuple of file paths (got {declared!r:.80})")
        for path in self.data_files:
            if not path.is_file():
                raise PluginError(self.spec, "data_files", f"{path}: no such file (paths are read relative to the "
                                                           f"directory the run starts in)")

    @property
    def persistent(self) -> bool:
        return bool(getattr(self.cls, "persistent", False))

    @property
    def centralised(self) -> bool:
        """Whether the plug-in declares that its agents act on each other's observations (`centralised = True`)."""
        return bool(getattr(self.cls, "centralised", False))

    @property
    def batch_episodes(self) -> int | None:
        """The most episodes a batch may hold for this plug-in (a persistent learner's step), if declared."""
        return getattr(self.cls, "batch_episodes", None)

    @property
    def source_file(self) -> Path | None:
        """The file of the plug-in's module; None for a class defined where no file is (a notebook)."""
        path = getattr(sys.modules.get(self.cls.__module__), "__file__", None)
        return Path(path) if path else None

    @property
    def source_digest(self) -> str:
        """SHA-256 (16 hex digits) of the source file of the plug-in's module and of its `data_files`, '' when it
        has neither: a changed plug-in or a retrained model changes the numbers, so results record which code and
        data made them."""
        source, data = self.source_file, self.data_files
        if not data:
            return hashlib.sha256(source.read_bytes()).hexdigest()[:16] if source else ""
        digest = hashlib.sha256(source.read_bytes() if source else b"")
        for path in data:
            try:
                status = path.stat()
                digest.update(_file_digest(path, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns,
                                           status.st_ctime_ns))
            except OSError as error:
                raise PluginError(self.spec, "data_files", f"{path}: {error.strerror or error}") from None
        return digest.hexdigest()[:16]

    @property
    def joins(self) -> frozenset[str]:
        """The protocols (names or import paths, "*" for any) a behaviour's agents take part in."""
        return frozenset(getattr(self.cls, "protocols", ()))

    def typed_params(self, params: dict[str, str]) -> dict[str, Any]:
        """The constructor's keyword arguments: declared defaults, then `params`, each validated
        (ValueError naming the parameter and what is allowed)."""
        declared = {p.name: p for p in self.parameters}
        for key in params:
            if key not in declared:
                names = ", ".join(declared) or "none"
                raise ValueError(f"{self.spec} has no parameter {key!r}; its parameters: {names}")
        return {name: p.typed(str(params.get(name, p.default))) for name, p in declared.items()}

    def instantiate(self, params: dict[str, str]):
        kwargs = self.typed_params(params)
        with plugin_code(self.spec, "__init__"):
            return self.cls(**kwargs)


def is_import_path(text: str) -> bool:
    """'pkg.module:Class' or 'path/file.py:Class' (a registered name has no colon)."""
    return ":" in text


def import_class(path: str, kind: str) -> type:
    """The class an import path names; PluginError when the module or the class is missing, or
    when importing it raises anything (SystemExit included). A module that sys.path does not
    hold is looked up in the working directory, which is never put on sys.path: a file there named like a
    module that something imports (a `cffi.py`) never runs in its place. A plug-in module named like
    an installed one (a `json.py` given as json:CLASS) is refused: one of the two would shadow the other."""
    module_name, _, class_name = path.rpartition(":")
    if not module_name or not class_name.isidentifier():
        raise PluginError(path, "", f"expected MODULE:CLASS or FILE.py:CLASS for a {kind}")
    with plugin_code(path, "", verb=f"cannot import {module_name!r}:"):
        if module_name.endswith(".py"):
            module = _import_file(Path(module_name))
        else:
            top = module_name.partition(".")[0]
            local = importlib.machinery.PathFinder.find_spec(top, [os.getcwd()])
            if local is not None and local.origin is not None:  # a module or package, not a bare folder
                other = importlib.util.find_spec(top)  # not in the working directory (collective/__init__.py)
                if other is None:
                    sys.modules[top] = importlib.util.module_from_spec(local)
                    try:
                        local.loader.exec_module(sys.modules[top])
                    except BaseException:
                        del sys.modules[top]
                        raise
                elif Path(other.origin or "").resolve() != Path(local.origin).resolve() and _installed(top):
                    found = Path(local.origin).relative_to(os.getcwd()).parts[0]
                    raise PluginError(path, "", f"{found} in the working directory has the name of the installed "
                                                f"module {top!r}: rename it")
            module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise PluginError(path, "", f"module {module_name!r} has no class {class_name!r}")
    return cls


def _installed(name: str) -> bool:
    """Whether `name` is a module of the standard library or of an installed distribution."""
    return name in sys.stdlib_module_names or name in sys.builtin_module_names or name in _installed_modules()


@functools.cache
def _installed_modules() -> frozenset[str]:
    """The top-level modules of the installed distributions."""
    return frozenset(importlib.metadata.packages_distributions())


def _import_file(path: Path):
    """A plug-in file as its own module; on a Ray worker, the copy a sweep's runtime environment shipped
    (see SHIPPED_FILES_VARIABLE) under the file's name, which therefore must not be an installed module's."""
    shipped = json.loads(os.environ.get(SHIPPED_FILES_VARIABLE, "{}")).get(str(path))
    if shipped:
        return importlib.import_module(shipped)
    if not path.is_file():
        raise PluginError(str(path), "", "no such file")
    if _installed(path.stem):
        raise PluginError(str(path), "", f"the file has the name of the installed module {path.stem!r}, which it "
                                         f"would replace on Ray workers: rename it")
    name = "collective_plugin_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def require_method(cls: type, spec: str, method: str, kind: str) -> None:
    if not callable(getattr(cls, method, None)):
        raise PluginError(spec, method, f"a {kind} needs a method {method}(self, obs); {cls.__name__} has none")


def load_plugin(text: str, registry, kind: str, method: str) -> PluginClass:
    """The plug-in a registered name or an import path ('pkg.module:Class', 'file.py:Class') names;
    PluginError when it cannot be found or has no `method`. A registered class without `method`
    is a kernel built-in (registration allows that only for the package's own classes)."""
    if is_import_path(text):
        cls = import_class(text, kind)
        require_method(cls, text, method, kind)
        plugin = PluginClass(text, cls, builtin=False)
        plugin.check_parameters()
        plugin.check_data_files()
        return plugin
    try:
        cls = registry.get(text)
    except KeyError as error:
        raise PluginError(text, "", f"{error.args[0]}; or an import path MODULE:CLASS") from None
    return PluginClass(text, cls, builtin=not callable(getattr(cls, method, None)))

