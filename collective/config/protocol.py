"""The protocol and communication control (spec §6): which protocol the group talks by, its parameters, how its
traffic is counted, and whether the real or the sham exchange is played; the fields, what the compiled rules take
of them, and their validation."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collective.behaviours import learns, load_behaviour
from collective.config.checks import ConfigError, refuse_repeated_keys, require_choice
from collective.protocols import COMMUNICATION_ACCOUNTINGS, NONE, SHARED_Q, load_protocol
from collective.simulation.kernel import HEAR_DIRECTION, HEAR_NOISE, HEAR_NONE, HEAR_NOTHING

# `communication_control` (issue 14 point 4; collective.evaluation.sham; "deaf", "noise", "content_free": issue 45)
COMMUNICATION_CONTROLS = ("real", "sham", "deaf", "noise", "content_free")
# The controls of learners that hear the protocol (`learners_hear`), and how each makes them hear it
HEARING_CONTROLS = {"deaf": HEAR_NOTHING, "noise": HEAR_NOISE}


@dataclass(frozen=True)
class ProtocolSection:
    """How the group's members talk, and what of it is counted or shammed."""
    protocol: str = "none"  # a registered name or an import path (MODULE:CLASS)
    protocol_params: tuple[tuple[str, str], ...] = ()  # (name, value) pairs, sorted
    # Traffic (protocols/__init__.py, spec §6): "writes" counts direct messages and writes to shared media (the
    # counts of before issue 14); "reads_and_writes" counts every read of a shared medium as a message too
    communication_accounting: str = "writes"
    # "real", or "sham": the sham-communication control (collective.evaluation.sham): each scored episode is
    # played beside a shadow episode of the same cell; each member keeps its own sensing and its own part in the
    # protocol, and what the others tell it is what they told in the shadow (issue 22 point 2): the protocol's
    # traffic and rule, with no information from the others about the episode; or "content_free", that sham with
    # each episode emptied as its shadow (every cell pays 0): the others' every report, bid, deposit or write says
    # "nothing seen"; or "deaf", for learners that hear the protocol (`learners_hear`): they take part and train as
    # members, and hear nothing (their state is their own); or "noise", for them too: they take part, train and hear
    # as members, each symbol replaced by a uniform draw among the ten (`simulation.kernel.noise_symbol`): hearing's
    # table, told nothing, so real - noise is what the symbols tell, where real - deaf mixes it with the ten-fold
    # table's slower training
    communication_control: str = "real"

    @property
    def protocol_values(self) -> tuple[float, ...]:
        """A built-in protocol's numeric parameters as the compiled rules take them, its 2016
        switch (`Protocol.cpp_switch`) in the last slot."""
        protocol = load_protocol(self.protocol).cls
        return protocol.kernel_values(dict(self.protocol_params),
                                      switched=bool(protocol.cpp_switch and getattr(self, protocol.cpp_switch)))

    @property
    def protocol_members(self) -> np.ndarray:
        """(agents,) bool: which agents take part in the protocol. A built-in protocol takes the
        behaviours it applies to and any plug-in behaviour whose `protocols` names it (or "*"); a
        plug-in protocol takes the behaviours its `members` names, every agent when it is None."""
        protocol = load_protocol(self.protocol)
        if protocol.builtin:
            takes_part = {name: self._joins_builtin(name, protocol.cls) for name in self.behaviour_counts}
            return np.array([takes_part[b] for b in self.behaviours], bool)
        members = getattr(protocol.cls, "members", None)
        return np.array([members is None or b in members for b in self.behaviours], bool)

    @property
    def learners_hear(self) -> bool:
        """Whether a learner is a member of a talking built-in protocol and so hears it (its state pairs its own
        with the king move toward the target the protocol gives it: `simulation.kernel.learners_hear`)."""
        protocol = load_protocol(self.protocol)
        if not protocol.builtin or protocol.cls.code in (NONE, SHARED_Q):
            return False
        return any(learns(name) and self._joins_builtin(name, protocol.cls) for name in self.behaviour_counts)

    @property
    def hearing(self) -> int:
        """How the learners hear the protocol, as the kernel takes it (`simulation.kernel.HEAR_NONE`...)."""
        if not self.learners_hear:
            return HEAR_NONE
        return HEARING_CONTROLS.get(self.communication_control, HEAR_DIRECTION)

    def _joins_builtin(self, name: str, protocol: type) -> bool:
        """Whether agents of behaviour `name` take part in the built-in `protocol`: it applies to them, or the
        plug-in behaviour's `protocols` names it (or "*")."""
        return name in protocol.applies_to or bool(load_behaviour(name).joins & {"*", self.protocol})

    @property
    def sham(self) -> bool:
        """Whether the group is played beside shadow episodes: the sham control, or the content-free one (the sham
        with an empty shadow, `collective.evaluation.sham.play_sham`)."""
        return self.communication_control in ("sham", "content_free")

    @property
    def accounting_offset(self) -> int:
        """Where the compiled rules count this row's accounting: (messages, bits) at comm[offset:offset + 2]."""
        return 2 * COMMUNICATION_ACCOUNTINGS.index(self.communication_accounting)


def validate_protocol_fields(c: ProtocolSection) -> None:
    """Each parameter given once (the protocol itself resolves with the group's plug-ins: `group.validate_plugins`)."""
    refuse_repeated_keys("protocol_params", c.protocol_params)


def validate_protocol(c: ProtocolSection) -> None:
    """Parameters known and in range; the group has enough members the protocol applies to (spec §6)."""
    protocol = load_protocol(c.protocol)
    participants = int(c.protocol_members.sum())
    if not protocol.builtin:
        try:
            protocol.typed_params(dict(c.protocol_params))
        except ValueError as error:
            raise ConfigError("protocol_params", str(error)) from None
        minimum = int(getattr(protocol.cls, "minimum_members", 1))
        if c.cpp_groups_of_one:
            minimum = min(minimum, 1)
        if participants < minimum:
            raise ConfigError("protocol", f"{protocol.spec} needs at least {minimum} members "
                              f"(the group has {participants})")
        return
    try:
        values = protocol.cls.kernel_values(dict(c.protocol_params))
    except ValueError as error:
        raise ConfigError("protocol_params", str(error)) from None
    try:
        protocol.cls.check_group(values, participants, minimum=1 if c.cpp_groups_of_one else None)
    except ValueError as error:
        raise ConfigError("protocol", str(error)) from None
    if c.cpp_learner_bootstrap and c.learners_hear:
        raise ConfigError("cpp_learner_bootstrap", f"bootstraps from the 2016 program's (cell, t=0) state, which "
                                                   f"hears nothing: learners under {c.protocol} hear it (set "
                                                   f"cpp_learner_bootstrap false)")


def validate_communication(c: ProtocolSection) -> None:
    """The accounting and the control are known; the sham and content-free controls are refused where they cannot
    be made: without messages, with learners (the stepping core, where they play, has none) or a shared table
    (its traffic happens inside the learners' training), or with a persistent plug-in (it would learn from the
    shadow episodes as well)."""
    require_choice(c, "communication_accounting", COMMUNICATION_ACCOUNTINGS)
    require_choice(c, "communication_control", COMMUNICATION_CONTROLS)
    if c.communication_control in HEARING_CONTROLS and not c.learners_hear:
        acts = {"deaf": "deaf silences learners that hear the protocol",
                "noise": "noise replaces what learners hear of the protocol"}[c.communication_control]
        raise ConfigError("communication_control", f"{acts}: it needs q_learning or sarsa agents under stigmergy, "
                                                   "broadcast or wisdom")
    if not c.sham:
        return
    control = c.communication_control
    protocol = load_protocol(c.protocol)
    code = protocol.cls.code if protocol.builtin else None
    if code == NONE:
        raise ConfigError("communication_control", f"{control} needs a communicating protocol: protocol none sends no "
                                                   "message to exchange between episodes")
    if code == SHARED_Q:
        played = "shammed" if control == "sham" else f"played under {control}"
        raise ConfigError("communication_control", f"shared_q cannot be {played}: its learners read and write the "
                                                   "table while they train inside the fused kernel, with no message "
                                                   "that could be exchanged between episodes")
    learners = sorted(name for name in c.behaviour_counts if learns(name))
    if learners:
        raise ConfigError("communication_control", f"{control} plays on the stepping core, where "
                                                   f"{', '.join(learners)} cannot play (it trains inside the fused "
                                                   "kernel)")
    if c.persistent:
        raise ConfigError("communication_control", f"{control} cannot be played with a persistent plug-in: it would "
                                                   "learn from the shadow episodes as well")
