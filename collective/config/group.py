"""The group and its members: each agent's behaviour (one for all, or a mix), plug-in behaviours' parameters, and
which plug-ins the group plays with; the fields, what they tell of the group, and their validation."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from collective.behaviours import learns, load_behaviour
from collective.config.checks import ConfigError, refuse_repeated_keys, require_int
from collective.simulation.plugins import PluginClass, PluginError
from collective.protocols import load_protocol


@dataclass(frozen=True)
class GroupSection:
    """Who plays: the behaviours of the group's agents, in agent order, and which of them and of the protocol
    (the protocol section's `protocol`, `sham`) are plug-ins."""
    behaviour: str = "local_search"  # a registered name or an import path; "mix" when `mix` lists the group
    group_size: int = 1
    mix: str = ""  # heterogeneous group, e.g. "local_search:3,my_pkg.agents:Homing:2" (Dai et al. 2019)
    behaviour_params: tuple[tuple[str, str], ...] = ()  # plug-in behaviours' parameters, sorted

    @property
    def behaviours(self) -> list[str]:
        """Each agent's behaviour, in agent order."""
        return parse_mix(self.mix) if self.mix else [self.behaviour] * self.group_size

    @functools.cached_property
    def behaviour_counts(self) -> dict[str, int]:
        """Each distinct behaviour, in agent order, and its agents: what validation reads, so that a
        group of millions of agents is never listed before its memory is checked."""
        if not self.mix:
            return {self.behaviour: self.group_size}
        counts: dict[str, int] = {}
        for name, count in mix_counts(self.mix):
            counts[name] = counts.get(name, 0) + count
        return counts

    @property
    def uses_plugins(self) -> bool:
        """Whether a behaviour or the protocol is a plug-in: the group then plays on the stepping core."""
        return not load_protocol(self.protocol).builtin or \
            not all(load_behaviour(name).builtin for name in self.behaviour_counts)

    @property
    def on_stepping_core(self) -> bool:
        """Whether the group plays on the stepping core: a plug-in, or the sham control (which needs it)."""
        return self.sham or self.uses_plugins

    @property
    def plugins(self) -> tuple[PluginClass, ...]:
        """The group's plug-ins (behaviours, then the protocol), built-ins left out."""
        loaded = [load_behaviour(name) for name in self.behaviour_counts] + [load_protocol(self.protocol)]
        return tuple(plugin for plugin in loaded if not plugin.builtin)

    @property
    def persistent(self) -> bool:
        """Whether a plug-in keeps what it learns across batches (`persistent = True`)."""
        return any(plugin.persistent for plugin in self.plugins)

    @property
    def centralised(self) -> bool:
        """Whether a behaviour plug-in declares `centralised = True`: its agents act on each other's
        observations, so the group's score is not that of decentralised agents (issue 24 point 4)."""
        return any(load_behaviour(name).centralised for name in self.behaviour_counts)

    def behaviour_plugin_params(self, plugin: PluginClass) -> dict[str, str]:
        """The `behaviour_params` a plug-in behaviour declares."""
        declared = {p.name for p in plugin.parameters}
        return {key: value for key, value in self.behaviour_params if key in declared}


def mix_counts(text: str) -> list[tuple[str, int]]:
    """'local_search:3,my_pkg.agents:Homing:2' -> [('local_search', 3), ('my_pkg.agents:Homing', 2)]
    (the count follows the last colon); ValueError when malformed. Names are not resolved here."""
    counts = []
    for part in text.split(","):
        name, _, count = part.strip().rpartition(":")
        if not name or not count.isascii() or not count.isdigit() or int(count) < 1:
            raise ValueError(f"expected NAME:COUNT with a count >= 1 (got {part.strip()!r})")
        counts.append((name, int(count)))
    return counts


def parse_mix(text: str) -> list[str]:
    """The mix's agents in order: 3 local searchers then 2 Homing agents (see `mix_counts`)."""
    return [name for name, count in mix_counts(text) for _ in range(count)]


def validate_group_fields(c: GroupSection) -> None:
    """A mix is well formed and sets the behaviour and size; plug-in parameters are given once."""
    if c.mix:
        try:
            size = sum(count for _, count in mix_counts(c.mix))
        except ValueError as error:
            raise ConfigError("mix", str(error)) from None
        if c.behaviour != "mix" or c.group_size != size:
            raise ConfigError("mix", f"a mix sets behaviour 'mix' and group_size {size}")
    refuse_repeated_keys("behaviour_params", c.behaviour_params)
    require_int(c, "group_size", 1)


def validate_plugins(c: GroupSection) -> None:
    """Every behaviour and the protocol resolve (by name or import path), plug-in parameters are
    declared and valid, and a group on the stepping core has no kernel learner: q_learning and
    sarsa train in passes inside the fused kernel and have no stepping-core form yet."""
    field = "mix" if c.mix else "behaviour"
    plugins = {}
    for name in c.behaviour_counts:
        try:
            plugins[name] = load_behaviour(name)
        except PluginError as error:
            raise ConfigError(field, str(error)) from None
    try:
        protocol = load_protocol(c.protocol)
    except PluginError as error:
        raise ConfigError("protocol", str(error)) from None
    declared = {p.name for plugin in plugins.values() if not plugin.builtin for p in plugin.parameters}
    for key, _ in c.behaviour_params:
        if key not in declared:
            raise ConfigError("behaviour_params", f"no plug-in behaviour of the group declares {key!r}; "
                              f"declared: {', '.join(sorted(declared)) or 'none'}")
    for plugin in plugins.values():
        if not plugin.builtin:
            try:
                plugin.typed_params(c.behaviour_plugin_params(plugin))
            except ValueError as error:
                raise ConfigError("behaviour_params", str(error)) from None
    if protocol.builtin and all(plugin.builtin for plugin in plugins.values()):
        return
    learners = sorted(name for name in plugins if learns(name))
    if learners or protocol.spec == "shared_q":
        raise ConfigError(field if learners else "protocol",
                          f"{', '.join(learners) or 'shared_q'} trains in passes inside the fused kernel and "
                          "cannot share a group with plug-ins yet; play the learners in a group of built-ins")
