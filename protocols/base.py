"""The protocol base: the `Protocol` class that built-ins and plug-ins subclass, the kernel codes and parameter
slots the compiled rules dispatch on, and the registry (`register`, `load_protocol`). The built-in modules import
it; the package (`collective.protocols`) imports them, to register them, and offers this module's names to the
rest of the code base, so no built-in imports the package that imports it.
"""
from __future__ import annotations

from typing import ClassVar

from collective.parameters import Parameter  # noqa: F401 - protocols declare theirs with it
from collective.registry import Registry
from collective.simulation.plugins import PluginClass, load_plugin, require_method

NONE, STIGMERGY, SHARED_Q, BROADCAST, AUCTION, DICTATORSHIP, HIERARCHY = range(7)
# `communication_accounting` values, in the order of their (messages, bits) slots in the compiled rules' comm.
COMMUNICATION_ACCOUNTINGS = ("writes", "reads_and_writes")
KERNEL_CODES = frozenset(range(7))
PARAMETER_SLOTS = 4  # the kernel receives each protocol's numeric parameters in a vector this long
SWITCH_SLOT = PARAMETER_SLOTS - 1  # the slot that carries a protocol's 2016 switch (`Protocol.cpp_switch`)


class Protocol:
    """How a group communicates; subclasses set the class attributes."""

    name: ClassVar[str]
    code: ClassVar[int]
    description: ClassVar[str]
    applies_to: ClassVar[frozenset[str]] = frozenset()  # behaviours that take part
    minimum_members: ClassVar[int] = 2  # participants needed for the protocol to mean anything
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    fixed: ClassVar[dict[str, str]] = {}  # parameters an alias pins (e.g. wisdom = broadcast+memory)
    # The EvaluationConfig switch (config.CPP_SWITCHES) that selects the 2016 program's form of the
    # rule; the kernel reads it as 1.0 in SWITCH_SLOT
    cpp_switch: ClassVar[str | None] = None

    @classmethod
    def check_group(cls, values: tuple[float, ...], participants: int, minimum: int | None = None) -> None:
        """ValueError when the group cannot use this protocol meaningfully; `minimum` caps
        `minimum_members` (1 under `cpp_groups_of_one`: the C++ runs every group type with n = 1)."""
        needed = cls.minimum_members if minimum is None else min(minimum, cls.minimum_members)
        if participants < needed:
            members = " or ".join(sorted(cls.applies_to))
            raise ValueError(f"protocol {cls.name} needs at least {needed} {members} agents "
                             f"(the group has {participants})")

    @classmethod
    def kernel_values(cls, params: dict[str, str], switched: bool = False) -> tuple[float, ...]:
        """The numeric parameter vector for the kernel, defaults filled in, in declaration order,
        and 1.0 in SWITCH_SLOT when `switched` (the 2016 form, see `cpp_switch`). Raises
        ValueError naming an unknown or invalid parameter."""
        allowed = {p.name: p for p in cls.parameters}
        for key in params:
            if key not in allowed or key in cls.fixed:
                names = ", ".join(p.name for p in cls.parameters if p.name not in cls.fixed) or "none"
                raise ValueError(f"protocol {cls.name} has no parameter {key!r}; its parameters: {names}")
        merged = {p.name: str(p.default) for p in cls.parameters} | dict(params) | cls.fixed
        values = tuple(allowed[name].parse(merged[name]) for name in allowed)
        values += (0.0,) * (PARAMETER_SLOTS - len(values))
        return values[:SWITCH_SLOT] + (1.0 if switched else values[SWITCH_SLOT],)


PROTOCOLS: Registry[Protocol] = Registry("protocol")
protocol_names = PROTOCOLS.names
get_protocol = PROTOCOLS.get


def register(cls: type) -> type:
    """Class decorator: register a protocol by its `name`. A class with `communicate` is a plug-in;
    only this package's built-ins may name a kernel code instead (at most PARAMETER_SLOTS numeric
    parameters), so that no class can reach a kernel branch that does not implement it."""
    builtin = cls.__module__.startswith("collective.protocols.") and getattr(cls, "code", None) in KERNEL_CODES
    if not builtin:
        require_method(cls, getattr(cls, "name", cls.__name__), "communicate", "protocol")
    elif len(cls.parameters) > (SWITCH_SLOT if cls.cpp_switch else PARAMETER_SLOTS):
        raise ValueError(f"protocol {cls.name!r} has more parameters than the kernel's slots")
    return PROTOCOLS.register(cls)


def load_protocol(text: str) -> PluginClass:
    """The protocol a registered name or an import path names; PluginError when it cannot be
    found or has no `communicate`."""
    return load_plugin(text, PROTOCOLS, "protocol", "communicate")
