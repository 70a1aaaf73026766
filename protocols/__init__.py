"""Communication protocols (spec §6; paper 003 §5.2.2): how a group talks, one module each.

A built-in protocol is a small `Protocol` subclass registered by name. It declares its
parameters, the behaviours it applies to (the group's other members act alone), and the kernel
code whose compiled rule runs each iteration after every agent has observed and before any acts,
in the fused kernel (`collective.simulation.kernel`) and in the stepping core; any protocol but
`none` makes the group play together (`play_together`). Any other protocol is a class with
`communicate(self, obs)` (see `collective.simulation.plugins`), registered by name or named by
import path; `load_protocol` resolves both.

Communication cost (spec §6: "every protocol reports how much it communicated ... so communication
cost can enter the analysis"). A *message* is one transfer of content from an agent to another
agent, or between an agent and a shared medium (the environment's fake-reward field, the wisdom
map, a shared Q-table); its *bits* are the width of its content: a cell ⌈log2 N⌉ bits, a reward
64. The config field `communication_accounting` picks one of COMMUNICATION_ACCOUNTINGS:

- `reads_and_writes` (profile `sound`): writes and reads of a shared medium alike, each a message.
  broadcast: m(m-1) reports (cell + (2k+1)² rewards), every searcher to every other; auction:
  m(m-1) bids (reward + cell); dictatorship: m-1 orders (a cell); hierarchy: m-1 reports (reward +
  cell) to the parent; wisdom: one write per searcher with non-zero rewards in sight (cell + reward
  each) and m reads of the whole map (N rewards); stigmergy: one write per deposit of something
  ((2k+1)² values; a fake reward of 0 changes no cell and is no message) and m reads of the
  searcher's window of the field; shared_q: per learner step a read of the state's 9 values, and
  in training a write of one value (plus the next state's 9 values read for a Q-learning target),
  each with its ⌈log2 (table size)⌉-bit address.
- `writes` (profiles `paper`, `lambdastar2016`; the counts before this accounting existed): the
  same direct messages, the writes of shared media and no reads; the paper form of stigmergy
  counts every searcher's deposit, even of nothing, and shared_q only its training writes.

Information (Chmait, Dowe, Green & Li, AGI 2015, LNCS 9205, measure communication by its entropy
in bits): every message of `reads_and_writes` also has a *symbol*, a hash of its kind and content
(protocols.kernel_support); a row's `message_entropy_bits` is the empirical entropy of its episode's
symbols in the scored pass, bits per message (plug-in estimate with the Miller-Madow correction),
and `information_bits_per_iteration` that entropy times the messages per iteration of
`reads_and_writes`. Widths count what the encoding could carry; entropy what the messages did carry.
`information_bits_per_iteration` counts every copy (a map read by m searchers is m messages); a row's
`distinct_messages_per_iteration` counts its episode's distinct symbols over T (copies and repeats once:
H(X, X) = H(X), Cover & Thomas 2006, §2.2) and `distinct_information_bits_per_iteration` is the entropy
times that (issue 22 point 6).
A plug-in protocol counts its own messages and bits; its messages are not visible, so its symbols
are what each member is handed per iteration (target and field).
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


# Importing the modules registers them, in the order `collective protocols` lists them.
from collective.protocols import none  # noqa: E402,F401,I001
from collective.protocols import stigmergy  # noqa: E402,F401
from collective.protocols import shared_q  # noqa: E402,F401
from collective.protocols import broadcast  # noqa: E402,F401
from collective.protocols import auction  # noqa: E402,F401
from collective.protocols import dictatorship  # noqa: E402,F401
from collective.protocols import hierarchy  # noqa: E402,F401
