"""Sweep specifications: a TOML file naming the factors to cross, read and validated before any work.

A spec crosses environment factors (grid, complexity, group size, observation range, environment
class) into *cells*, and lists the *group types* (behaviour or mix, protocol with parameters) that
every cell plays. Every (cell, group) pair is turned into an `EvaluationConfig` while loading, so
anything `EvaluationConfig` rejects is reported before work starts, under the TOML key path that
set it and with the allowed values (see `SpecError`). Unknown keys are errors.

Seeds (issue 4 §4): cells and groups are keyed by a hash of their own settings, not by position,
so editing one factor value leaves every other cell's numbers unchanged. Episode e of cell c plays
environments from `SeedSequence(seed, spawn_key=(cell_key, e))`, shared by all groups of the cell
(a paired design); group g's agents draw from `SeedSequence(seed, spawn_key=(cell_key, e, group_key))`.
The 2016 program's switches (`config.CPP_SWITCHES`) change how agents play, not the environments:
the seeds' cell word (`Cell.seed_key`) leaves them out, so cells that differ only in switches (the
`cpp_switch_off` factor, an ablation) play the same episodes with the same agent streams, and a
cell's key leaves out the switches that are off, so every spec without them keeps its keys and seeds.
With `paired_group_sizes` (profile `sound`; issue 22 point 8) the seed word leaves out the group size
too: cells that differ only in group size play the same ⊕/⊖ paths and agent i the same start cell
(`lambda_star.start_cells`) and stream, so group-size contrasts within a grid are paired by (seed word,
episode), the first word of the rows' `spawn_key`.

    name = "quickstart"          # optional, default: the file's stem
    description = "..."          # optional
    seed = 0                     # root of every random number
    profile = "sound"            # EvaluationConfig profile
    episodes = 200               # per cell and group
    iterations = 100             # T

    [factors]                    # each a non-empty list; crossed into cells
    grid = ["5x5", "10x10"]      # "M" or "MxN"
    group_size = [1, 5]
    complexity = ["2:23", 8]     # optional; K or "KMIN:KMAX" (default: the profile's range)
    observation_range = [1]      # optional (default [1])
    environment = ["lambda_star"]  # optional: lambda_star and/or landscape (default ["lambda_star"])
    cpp_switch_off = ["none", "cpp_oracle"]  # optional: "none", one 2016 switch to turn off, or "all" (an ablation)
    training_episodes = [0, 10, 100]  # optional: learning curves (issue 21): n held-out training episodes, each
                                 # played once (training_episodes = q_training_passes = n; 0: untrained, passes 0)

    [groups]                     # the group types every cell plays
    behaviours = ["random", "local_search"]       # homogeneous groups; plug-ins by import path too
    mixes = ["local_search:3,q_learning:2"]       # optional heterogeneous groups, e.g. "my_pkg.agents:Homing:2,local_search:3"
    protocols = [{ name = "none" },               # optional (default [{ name = "none" }])
                 { name = "stigmergy", params = { gamma = 0.5 }, behaviours = ["local_search"],
                   group_sizes = [5] }]
    # On a protocol, `behaviours`/`mixes` replace the groups' lists for that protocol and
    # `group_sizes` limits it to cells of those sizes (a protocol needs at least 2 members).
    # A mix fixes its own group size: it plays in the cells of that size.
    # `controls = ["real", "sham"]` adds beside each group of the entry its sham control (label
    # "...+broadcast[sham]", config communication_control = "sham"), on the same environments; likewise
    # "content_free" (the sham with an empty shadow) and "deaf" (learners that hear nothing).
    # Display labels (figures; never in a key or seed): a behaviour or mix may be written
    # { name = "my_pkg.agents:Homing", label = "homing" } and a protocol entry may have label = "gossip";
    # the group "my_pkg.agents:Homing+my_pkg.talk:Gossip" is then shown as "homing, gossip".

    [settings]                   # optional: any other EvaluationConfig field, fixed for all cells
    reward_radius = 1
    behaviour_params = { patience = 3 }  # parameters the plug-in behaviours declare
"""
from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from collective.behaviours import load_behaviour
from collective.config import (COMMUNICATION_CONTROLS, CPP_SWITCHES, ENVIRONMENT_CLASSES, RENAMED_FIELDS,
                               ConfigError, EvaluationConfig, mix_counts)
from collective.simulation.plugins import PluginError
from collective.shipped import builtin_spec, builtin_specs
from collective.sweeps.overrides import OverrideError, apply_overrides

TOP_LEVEL_KEYS = ("name", "description", "seed", "profile", "episodes", "iterations", "factors", "groups",
                  "settings")
REQUIRED_KEYS = ("seed", "profile", "episodes", "iterations", "factors", "groups")
FACTOR_KEYS = ("grid", "group_size", "complexity", "observation_range", "environment", "cpp_switch_off",
               "training_episodes")
REQUIRED_FACTORS = ("grid", "group_size")
GROUP_KEYS = ("behaviours", "mixes", "protocols")
PROTOCOL_KEYS = ("name", "params", "behaviours", "mixes", "group_sizes", "controls", "label")
MEMBER_KEYS = ("name", "label")  # a behaviour or mix written as a table
# Config fields a group sets; every other field belongs to the cell and enters its key.
GROUP_FIELDS = ("behaviour", "protocol", "protocol_params", "mix", "communication_control")
# Config fields the spec sets outside [settings], and where.
SPEC_OWNED_FIELDS = {"seed": "seed", "profile": "profile", "episodes": "episodes", "iterations": "iterations",
                     "rows": "factors.grid", "cols": "factors.grid", "group_size": "factors.group_size",
                     "k_min": "factors.complexity", "k_max": "factors.complexity",
                     "observation_range": "factors.observation_range", "env": "factors.environment",
                     "behaviour": "groups.behaviours",
                     "protocol": "groups.protocols", "protocol_params": "groups.protocols", "mix": "groups.mixes",
                     "communication_control": "groups.protocols"}
KEY_BITS = 60  # cell and group keys: SeedSequence spawn-key words, stored as int64 columns
# Sizes refused before reading or expanding a spec: the largest spec in experiments/ is 2 KB and
# 120 cells x 13 groups; every (cell, group) is validated while loading (~0.2 ms each, 100 000 in ~20 s).
MAX_SPEC_BYTES = 1 << 20
MAX_CELL_GROUPS = 100_000


class SpecError(ValueError):
    """An invalid sweep spec: names the TOML key path and what is allowed."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True)
class GroupType:
    """One agent group every cell plays: a behaviour (or a mix) under a protocol."""

    key: int  # hash of the fields below: the group's word in its agents' spawn keys
    label: str
    behaviour: str | None  # None for a mix
    mix: str
    protocol: str
    protocol_params: tuple[tuple[str, str], ...]
    group_sizes: tuple[int, ...] | None  # the cell group sizes it plays (None: all)
    paths: tuple[tuple[str, str], ...]  # config field -> TOML key path that set it
    communication_control: str = "real"
    display: str = ""  # the display label the spec gives (empty: show `label`); in no key or seed

    def config_fields(self) -> dict[str, object]:
        """The fields this group passes to `EvaluationConfig.from_profile`; empty protocol params,
        mixes and the real control are left out, so specs without them validate on any config version."""
        chosen = {"behaviour": self.behaviour, "protocol": self.protocol}
        if self.protocol_params:
            chosen["protocol_params"] = self.protocol_params
        if self.mix:
            chosen["mix"] = self.mix
        if self.communication_control != "real":
            chosen["communication_control"] = self.communication_control
        return chosen


@dataclass(frozen=True)
class Cell:
    """One environment setting: every group of the sweep plays the same episodes of it."""

    key: int  # hash of the cell's settings (seed, episodes and the 2016 switches that are off excluded)
    seed_key: int  # hash of the settings without any 2016 switch: the cell's word in every spawn key
    factors: tuple[tuple[str, object], ...]  # factor name -> value as written in the spec
    configs: tuple[EvaluationConfig | None, ...]  # per group type, in `SweepSpec.groups` order;
    # None where the group does not play this cell (outside its group sizes)

    @property
    def playing(self) -> tuple[int, ...]:
        """Indices of the group types that play this cell."""
        return tuple(g for g, config in enumerate(self.configs) if config is not None)

    def describe(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in self.factors)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: its cells, its group types, and the raw spec it came from."""

    name: str
    description: str
    seed: int
    episodes: int
    iterations: int
    groups: tuple[GroupType, ...]
    cells: tuple[Cell, ...]
    source: dict  # the parsed TOML, written to sweep.json
    study: str = ""  # the sweep id of the sweep this one grows (`store.continued_sweep`): kept by its rows

    def plugin_digests(self) -> dict[str, str]:
        """Import path -> source digest of every plug-in the spec plays (`PluginClass.source_digest`)."""
        return {plugin.spec: plugin.source_digest for cell in self.cells for config in cell.configs
                if config is not None for plugin in config.plugins}

    @property
    def sweep_id(self) -> str:
        """Name plus a hash of the spec's content: equal for equal specs, whatever the formatting. A sweep grown
        to more episodes in its directory keeps the id of its first run (`study`): it is the same study."""
        if self.study:
            return self.study
        digest = hashlib.sha256(_canonical_json(self.source).encode()).hexdigest()[:12]
        return f"{self.name}-{digest}"


def load_spec(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Read and validate a TOML sweep spec, or a built-in one by name (`quickstart`: `collective.shipped`, for a pip
    install without experiments/), with KEY=VALUE `overrides` of its fields (`collective.sweeps.overrides`); raises
    `SpecError` naming the offending key."""
    path = Path(path)
    if not path.exists() and (builtin := builtin_spec(str(path))):
        path = builtin
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SPEC_BYTES + 1)
        if len(data) > MAX_SPEC_BYTES:
            raise SpecError(str(path), f"larger than {MAX_SPEC_BYTES >> 20} MiB: not a sweep spec")
        source = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise SpecError(str(path), f"no such file (built-in specs, by name: {', '.join(builtin_specs())}; "
                                   "`collective examples DIR` copies them to edit)") from None
    except IsADirectoryError:
        raise SpecError(str(path), "is a directory, not a TOML spec file") from None
    except UnicodeDecodeError as error:
        raise SpecError(str(path), f"not a text file (a TOML spec is UTF-8 text; byte {error.start} is not)") from None
    except OSError as error:
        raise SpecError(str(path), f"cannot read: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise SpecError(str(path), f"not valid TOML: {error}") from None
    except RecursionError:
        raise SpecError(str(path), "not a sweep spec: arrays or tables nested too deeply") from None
    try:
        source = apply_overrides(source, overrides)
    except OverrideError as error:
        raise SpecError(error.where, error.message) from None
    return parse_spec(source, default_name=path.stem)


def parse_spec(source: dict, default_name: str = "sweep") -> SweepSpec:
    """Validate a parsed spec and expand it into cells and group types."""
    _check_keys(source, "", TOP_LEVEL_KEYS, REQUIRED_KEYS)
    name = _string(source.get("name", default_name), "name")
    description = _string(source.get("description", ""), "description")
    factors = _table(source["factors"], "factors")
    _check_keys(factors, "factors.", FACTOR_KEYS, REQUIRED_FACTORS)
    settings = _table(source.get("settings", {}), "settings")
    _check_settings(settings)
    for key in ("training_episodes", "q_training_passes"):
        if "training_episodes" in factors and key in settings:
            raise SpecError(f"settings.{key}", "set by factors.training_episodes, not in [settings]")
    groups = _group_types(_table(source["groups"], "groups"))
    behaviour_params = {str(key): _param_text(value, f"settings.behaviour_params.{key}") for key, value in
                        _table(settings.get("behaviour_params", {}), "settings.behaviour_params").items()}
    _check_behaviour_params(behaviour_params, groups)
    base = dict(settings, seed=source["seed"], episodes=source["episodes"], iterations=source["iterations"],
                behaviour_params=behaviour_params)  # a copy: `source` is the spec as written
    profile = source["profile"]
    group_sizes = _list(factors["group_size"], "factors.group_size")
    for group in groups:
        for size in group.group_sizes or ():
            if size not in group_sizes:
                raise SpecError(dict(group.paths)["group_sizes"],
                                f"{size!r} is not a group size of the sweep; allowed: {group_sizes}")
    cells = tuple(_cell(profile, base, choice, groups) for choice in _factor_choices(factors, len(groups)))
    _require_distinct([c.key for c in cells], "factors", "two cells have the same settings")
    for g, group in enumerate(groups):
        if all(cell.configs[g] is None for cell in cells):
            path = dict(group.paths)["mix" if group.mix else "group_sizes"]
            raise SpecError(path, f"group {group.label} plays in no cell: its group size is not in "
                                  f"factors.group_size {group_sizes}")
    return SweepSpec(name=name, description=description, seed=source["seed"], episodes=source["episodes"],
                     iterations=source["iterations"], groups=groups, cells=cells, source=source)


def stable_key(value: object) -> int:
    """A KEY_BITS-bit hash of a JSON-able value, the same on every machine and Python version."""
    digest = hashlib.sha256(_canonical_json(value).encode()).hexdigest()
    return int(digest, 16) >> (256 - KEY_BITS)


def _canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _check_keys(table: dict, prefix: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> None:
    for key in table:
        if key not in allowed:
            raise SpecError(f"{prefix}{key}", f"unknown key; allowed: {', '.join(allowed)}")
    for key in required:
        if key not in table:
            raise SpecError(f"{prefix}{key}", "required key is missing")


def _table(value: object, path: str) -> dict:
    if not isinstance(value, dict):
        raise SpecError(path, f"must be a table (got {value!r})")
    return value


def _string(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise SpecError(path, f"must be a string (got {value!r})")
    return value


def _list(value: object, path: str, allow_empty: bool = False) -> list:
    if not isinstance(value, list) or (not value and not allow_empty):
        raise SpecError(path, f"must be a {'' if allow_empty else 'non-empty '}list (got {value!r})")
    return value


def _require_distinct(values: list, path: str, message: str) -> None:
    if len(set(values)) != len(values):
        raise SpecError(path, message)


def _check_settings(settings: dict) -> None:
    config_fields = [f.name for f in fields(EvaluationConfig)]
    for key in settings:
        if key in RENAMED_FIELDS:
            raise SpecError(f"settings.{key}", RENAMED_FIELDS[key])
        if key in SPEC_OWNED_FIELDS:
            raise SpecError(f"settings.{key}", f"set by {SPEC_OWNED_FIELDS[key]}, not in [settings]")
        if key not in config_fields:
            free = [name for name in config_fields if name not in SPEC_OWNED_FIELDS]
            raise SpecError(f"settings.{key}", f"unknown setting; allowed: {', '.join(free)}")


def parse_grid(value: object, path: str) -> tuple[int, int]:
    """"10" or 10 -> (10, 10); "8x12" -> (8, 12)."""
    try:
        parts = [int(part) for part in str(value).lower().split("x")] if not isinstance(value, bool) else []
    except ValueError:
        parts = []
    if len(parts) not in (1, 2):
        raise SpecError(path, f"expected \"M\" or \"MxN\" with whole numbers (got {value!r})")
    return parts[0], parts[-1]


def parse_complexity(value: object, path: str) -> tuple[int, int]:
    """12 -> (12, 12); "2:23" -> (2, 23)."""
    try:
        parts = [int(part) for part in str(value).split(":")] if not isinstance(value, (bool, float)) else []
    except ValueError:
        parts = []
    if len(parts) not in (1, 2):
        raise SpecError(path, f"expected K or \"KMIN:KMAX\" with whole numbers (got {value!r})")
    return parts[0], parts[-1]


def _factor_choices(factors: dict, groups: int) -> list[dict[str, tuple[int | None, object]]]:
    """Every combination of factor values, as factor -> (index in its list, or None when the
    factor is not in the spec and takes its default, value); SpecError before listing them when
    they and the `groups` group types make more than MAX_CELL_GROUPS (cell, group) pairs."""
    lists = {name: _list(factors.get(name, default), f"factors.{name}") for name, default in
             (("grid", None), ("group_size", None), ("complexity", [None]), ("observation_range", [1]),
              ("environment", [ENVIRONMENT_CLASSES[0]]), ("cpp_switch_off", [None]), ("training_episodes", [None]))}
    cells = math.prod(map(len, lists.values()))
    if cells * groups > MAX_CELL_GROUPS:
        raise SpecError("factors", f"{cells:,} cells x {groups} group types = {cells * groups:,} (cell, group) pairs; "
                                   f"the limit is {MAX_CELL_GROUPS:,}: split the sweep")
    for index, value in enumerate(lists["cpp_switch_off"]):
        if value not in (None, "none", "all") and value not in CPP_SWITCHES:
            raise SpecError(f"factors.cpp_switch_off[{index}]",
                            f"unknown value {value!r}; allowed: none, all, {', '.join(CPP_SWITCHES)}")
    for index, value in enumerate(lists["training_episodes"]):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise SpecError(f"factors.training_episodes[{index}]", f"must be a whole number >= 0 (got {value!r})")
    for name, values in lists.items():
        _require_distinct([json.dumps(v) for v in values], f"factors.{name}", "values must be distinct")
    choices = [{}]
    for name, values in lists.items():
        choices = [dict(choice, **{name: (index if name in factors else None, value)})
                   for choice in choices for index, value in enumerate(values)]
    return choices


def _group_types(groups: dict) -> tuple[GroupType, ...]:
    _check_keys(groups, "groups.", GROUP_KEYS, ("behaviours",))
    behaviours = _list(groups["behaviours"], "groups.behaviours", allow_empty="mixes" in groups)
    mixes = _list(groups.get("mixes", []), "groups.mixes", allow_empty=True)
    protocols = _list(groups.get("protocols", [{"name": "none"}]), "groups.protocols")
    result, label_paths = [], []
    for p, protocol in enumerate(protocols):
        path = f"groups.protocols[{p}]"
        protocol = _table(protocol, path)
        _check_keys(protocol, f"{path}.", PROTOCOL_KEYS, ("name",))
        name = _string(protocol["name"], f"{path}.name")
        params = tuple(sorted((str(key), _param_text(value, f"{path}.params.{key}"))
                              for key, value in _table(protocol.get("params", {}), f"{path}.params").items()))
        shown = ",".join(f"{key}={value}" for key, value in params)
        protocol_label = "" if name == "none" and not params else f"+{name}" + (f"({shown})" if shown else "")
        protocol_paths = (("protocol", f"{path}.name"), ("protocol_params", f"{path}.params"),
                          ("group_sizes", f"{path}.group_sizes"), ("communication_control", f"{path}.controls"))
        group_sizes = tuple(_list(protocol["group_sizes"], f"{path}.group_sizes")) \
            if "group_sizes" in protocol else None
        controls = _controls(protocol.get("controls", ["real"]), f"{path}.controls")
        protocol_display = _string(protocol["label"], f"{path}.label") if "label" in protocol else ""
        if "label" in protocol and not protocol_display.strip():
            raise SpecError(f"{path}.label", f"must be a non-empty string (got {protocol_display!r})")
        for members, list_path, is_mix in ((behaviours, "groups.behaviours", False), (mixes, "groups.mixes", True)):
            key = "mixes" if is_mix else "behaviours"
            if key in protocol:
                members, list_path = _list(protocol[key], f"{path}.{key}", allow_empty=True), f"{path}.{key}"
            for m, member in enumerate(members):
                member, member_display = _member(member, f"{list_path}[{m}]")
                field = "mix" if is_mix else "behaviour"
                for control in controls:
                    fields_ = {"behaviour": None if is_mix else member, "mix": member if is_mix else "",
                               "protocol": name, "protocol_params": params}
                    if control != "real":  # the real groups keep the keys (and seeds) they always had
                        fields_["communication_control"] = control
                    result.append(GroupType(
                        key=stable_key(fields_), label=(f"mix({member})" if is_mix else member) + protocol_label
                        + ("" if control == "real" else f"[{control}]"), group_sizes=group_sizes,
                        paths=((field, f"{list_path}[{m}]"),) + protocol_paths,
                        display=_display(member_display, protocol_display, control,
                                         f"mix({member})" if is_mix else member, protocol_label), **fields_))
                    label_paths.append(f"{list_path}[{m}].label" if member_display else f"{path}.label")
    if not result:
        raise SpecError("groups", "no group types: list behaviours or mixes")
    labels = [g.label for g in result]
    for label in labels:
        if labels.count(label) > 1:
            raise SpecError("groups", f"group {label!r} is listed twice")
    shown = {}  # display label -> the first group shown so, and the spec's label that made it (None: no label)
    for group, label_path in zip(result, label_paths):
        name, label_path = group.display or group.label, label_path if group.display else None
        other, other_path = shown.setdefault(name, (group.label, label_path))
        if other != group.label:
            raise SpecError(label_path or other_path, f"groups {other!r} and {group.label!r} would both be shown "
                                                      f"as {name!r}; give them distinct labels")
    return tuple(result)


def _member(value: object, path: str) -> tuple[str, str]:
    """A behaviour or mix: its name and display label, from "name" or { name = "...", label = "..." }."""
    if not isinstance(value, dict):
        return _string(value, path), ""
    _check_keys(value, f"{path}.", MEMBER_KEYS, ("name",))
    label = _string(value.get("label", ""), f"{path}.label")
    if "label" in value and not label.strip():
        raise SpecError(f"{path}.label", f"must be a non-empty string (got {label!r})")
    return _string(value["name"], f"{path}.name"), label


def _display(member: str, protocol: str, control: str, shown_member: str, shown_protocol: str) -> str:
    """A group's display label from its parts' labels (a part without one is shown by its name); empty when
    the spec labels neither part."""
    if not member and not protocol:
        return ""
    parts = (member or shown_member, protocol or shown_protocol.lstrip("+"))
    return ", ".join(part for part in parts if part) + ("" if control == "real" else f" [{control}]")


def _controls(value: object, path: str) -> list[str]:
    """A protocol entry's `controls`: distinct values of COMMUNICATION_CONTROLS."""
    controls = _list(value, path)
    for c, control in enumerate(controls):
        if control not in COMMUNICATION_CONTROLS:
            raise SpecError(f"{path}[{c}]",
                            f"unknown control {control!r}; allowed: {', '.join(COMMUNICATION_CONTROLS)}")
    _require_distinct(controls, path, "values must be distinct")
    return controls


def _declared(group: GroupType) -> set[str]:
    """The parameters the group's plug-in behaviours declare ([settings] behaviour_params apply to
    the groups whose plug-ins declare them); an unloadable plug-in is reported by the config."""
    try:
        return {p.name for name in ([name for name, _ in mix_counts(group.mix)] if group.mix else [group.behaviour])
                for p in load_behaviour(name).parameters}
    except (PluginError, ValueError):
        return set()


def _check_behaviour_params(params: dict[str, str], groups: tuple[GroupType, ...]) -> None:
    declared = set().union(*(_declared(group) for group in groups))
    for key in params:
        if key not in declared:
            raise SpecError(f"settings.behaviour_params.{key}", f"no plug-in behaviour of the sweep declares it; "
                                                                f"declared: {', '.join(sorted(declared)) or 'none'}")


def _param_text(value: object, path: str) -> str:
    """Protocol parameters travel as strings, as on the command line; booleans as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise SpecError(path, f"must be a string, number or boolean (got {value!r})")


def _cell(profile: object, base: dict, choice: dict[str, tuple[int | None, object]], groups: tuple[GroupType, ...]) -> Cell:
    """Build and validate one cell's configs; a ConfigError is re-raised under its TOML key path."""
    rows, cols = parse_grid(choice["grid"][1], f"factors.grid[{choice['grid'][0]}]")
    fields_ = dict(base, rows=rows, cols=cols, group_size=choice["group_size"][1],
                   observation_range=choice["observation_range"][1], env=choice["environment"][1])
    if choice["complexity"][1] is not None:
        k_min, k_max = parse_complexity(choice["complexity"][1], f"factors.complexity[{choice['complexity'][0]}]")
        fields_.update(k_min=k_min, k_max=k_max)
    switched_off = choice["cpp_switch_off"][1]
    if switched_off not in (None, "none"):
        fields_.update(dict.fromkeys(CPP_SWITCHES if switched_off == "all" else (switched_off,), False))
    if choice["training_episodes"][1] is not None:  # n episodes each played once; 0: the untrained table
        episodes = choice["training_episodes"][1]
        fields_.update(training_episodes=max(episodes, 1), q_training_passes=episodes)
    factor_values = tuple((name, value) for name, (_, value) in choice.items() if value is not None)
    context = ", ".join(f"{name}={value}" for name, value in factor_values)
    configs = []
    for group in groups:
        if group.group_sizes is not None and fields_["group_size"] not in group.group_sizes:
            configs.append(None)
            continue
        params = {key: value for key, value in fields_["behaviour_params"].items() if key in _declared(group)}
        try:
            config = EvaluationConfig.from_profile(profile, **dict(fields_, behaviour_params=params),
                                                   **group.config_fields())
        except ConfigError as error:
            path = _key_path(error.field, choice, group)
            raise SpecError(path, f"{error.message} (cell {context}; group {group.label})") from None
        configs.append(config if config.group_size == fields_["group_size"] else None)  # a mix of another size
    played = [config for config in configs if config is not None]
    if not played:
        raise SpecError(f"factors.group_size[{choice['group_size'][0]}]", f"no group type plays cell {context}")
    record = {name: value for name, value in played[0].as_record().items()
              if name not in GROUP_FIELDS and name not in ("seed", "episodes")}
    # specs without them keep their keys and seeds; lazy_segment_shuffle (no pattern of T <= 257) and pattern_pool
    # change which patterns are drawn but never their distribution, so cells that differ only in them share their
    # environments' seeds
    unkeyed_when_off = CPP_SWITCHES + ("paired_group_sizes", "lazy_segment_shuffle", "pattern_pool")
    paired = ("group_size",) if record["paired_group_sizes"] else ()
    environment = {name: value for name, value in record.items() if name != "training_runs" and
                   (name not in unkeyed_when_off or name == "paired_group_sizes" and value) and name not in paired}
    # training_runs (issue 45 item 3) changes the rows only of groups that keep tables, and 1 plays as before it
    # was counted: cells where it changes nothing keep their keys, and it never enters the environments' seeds
    runs_count = record["training_runs"] != 1 and any(config.keeps_tables for config in played)
    identity = {name: value for name, value in record.items()
                if (name not in unkeyed_when_off or value) and (name != "training_runs" or runs_count)}
    return Cell(key=stable_key(identity), seed_key=stable_key(environment), factors=factor_values,
                configs=tuple(configs))


def _key_path(field: str, choice: dict[str, tuple[int | None, object]], group: GroupType) -> str:
    """The TOML key path that set config field `field`."""
    factor_of = {"rows": "grid", "cols": "grid", "k_min": "complexity", "k_max": "complexity",
                 "group_size": "group_size", "observation_range": "observation_range", "env": "environment"}
    if field in ("training_episodes", "q_training_passes") and choice["training_episodes"][0] is not None:
        return f"factors.training_episodes[{choice['training_episodes'][0]}]"
    if field in factor_of:
        factor = factor_of[field]
        index = choice[factor][0]
        return f"factors.{factor}[{index}]" if index is not None else f"factors.{factor}"
    group_paths = dict(group.paths)
    if field in group_paths:
        return group_paths[field]
    if field in ("seed", "episodes", "iterations", "profile"):
        return field
    return f"settings.{field}"  # where the field is set, or would be
