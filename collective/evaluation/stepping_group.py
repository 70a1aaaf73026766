"""Which members play on the stepping core: a group with a plug-in behaviour or protocol, or a sham, as
stepping-core members, built-ins in their compiled forms."""
from __future__ import annotations

import numpy as np

from collective.behaviours import load_behaviour
from collective.config import EvaluationConfig
from collective.evaluation.fused_kernel import kernel_switches
from collective.protocols import NONE, load_protocol
from collective.simulation.compiled_plugins import CompiledBehaviour, CompiledProtocol
from collective.simulation.stepping import Group, Member


def plugin_group(config: EvaluationConfig) -> Group:
    """The configured group as stepping-core members: one object per distinct behaviour (serving all
    agents of that behaviour) and one for the protocol; kernel built-ins as their compiled forms."""
    behaviours = np.array(config.behaviours)
    members = []
    for name in dict.fromkeys(config.behaviours):
        plugin = load_behaviour(name)
        instance = CompiledBehaviour(plugin.cls.code) if plugin.builtin else \
            plugin.instantiate(config.behaviour_plugin_params(plugin))
        members.append(Member(plugin, instance, np.flatnonzero(behaviours == name)))
    protocol = load_protocol(config.protocol)
    talker = None
    if not protocol.builtin:
        talker = Member(protocol, protocol.instantiate(dict(config.protocol_params)),
                        np.flatnonzero(config.protocol_members))
    elif protocol.cls.code != NONE:
        talker = Member(protocol, CompiledProtocol(protocol.cls.code, config.protocol_values, config.accounting_offset),
                        np.flatnonzero(config.protocol_members))
    return Group(members, talker, config.group_size, config.rows, config.cols, config.iterations,
                 config.observation_range, config.reward_radius, config.coordination_threshold,
                 kernel_switches(config, None))
