"""Agent behaviours (spec §5, paper 003 §5.2.1): plug-ins named by registered name or import path.

The built-ins are `Behaviour` subclasses naming a kernel code; their decision rules are compiled
functions (`decisions`), called by the fused kernel (`collective.simulation.kernel`) and by the
stepping core (`collective.simulation.compiled_plugins`), and mirrored, slowly and plainly, by
`collective.simulation.reference`. Any other behaviour is a class with `act(self, obs)` (see
`collective.simulation.plugins`), registered by name with `register` or named by import path;
`load_behaviour` resolves both.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from collective.registry import Registry
from collective.simulation.plugins import PluginClass, load_plugin, require_method

# Kernel codes: the simulator dispatches on these.
RANDOM, LOCAL_SEARCH, ORACLE, Q_LEARNING, SARSA, IMITATION = range(6)
KERNEL_CODES = frozenset(range(6))


@dataclass(frozen=True)
class Behaviour:
    """What one agent does each iteration."""

    name: ClassVar[str]
    code: ClassVar[int]
    description: ClassVar[str]
    learns: ClassVar[bool] = False
    privileged: ClassVar[bool] = False  # sees what no agent of the test can (the future): a reference, not a contestant


BEHAVIOURS: Registry[Behaviour] = Registry("behaviour")
behaviour_names = BEHAVIOURS.names
get_behaviour = BEHAVIOURS.get


def register(cls: type) -> type:
    """Class decorator: register a behaviour by its `name`. A class with `act` is a plug-in; only
    this module's built-ins may name a kernel code instead, so that no class can reach a kernel
    branch that does not implement it (which once ran the Q-learner on an empty table)."""
    builtin = cls.__module__ == __name__ and getattr(cls, "code", None) in KERNEL_CODES
    if not builtin:
        require_method(cls, getattr(cls, "name", cls.__name__), "act", "behaviour")
    return BEHAVIOURS.register(cls)


def load_behaviour(text: str) -> PluginClass:
    """The behaviour a registered name or an import path names; PluginError when it cannot be
    found or has no `act`."""
    return load_plugin(text, BEHAVIOURS, "behaviour", "act")


def learns(text: str) -> bool:
    """Whether the behaviour is one of the kernel's learners, trained in passes before each scored
    pass; answered from the registry alone, so a dataset naming plug-ins needs none of them."""
    return text in BEHAVIOURS.names() and bool(getattr(get_behaviour(text), "learns", False))


def privileged(text: str) -> bool:
    """Whether the behaviour uses information the test hides from its agents (⊕'s future path), so that
    indices of intelligence flag it (paper 004's PGI index, collective.analysis.pgi.pgi_table)."""
    return text in BEHAVIOURS.names() and bool(getattr(get_behaviour(text), "privileged", False))


@register
class RandomBehaviour(Behaviour):
    name = "random"
    code = RANDOM
    description = "uniform random action every iteration (lower reference, scores ~0)"


@register
class LocalSearchBehaviour(Behaviour):
    name = "local_search"
    code = LOCAL_SEARCH
    description = "step toward the best observed cell, random tie-break (paper 003 §5.2.1)"


@register
class OracleBehaviour(Behaviour):
    name = "oracle"
    code = ORACLE
    description = "knows Good's future path and intercepts it (upper reference)"
    privileged = True


@register
class QLearningBehaviour(Behaviour):
    name = "q_learning"
    code = Q_LEARNING
    description = ("tabular Q-learning (paper 003 Algorithm 1): sound, one table per group over the signs of its "
                   "3x3 window, trained on held-out episodes; paper, lambdastar2016, (cell, iteration) trained on "
                   "the scored episode")
    learns = True


@register
class SarsaBehaviour(Behaviour):
    name = "sarsa"
    code = SARSA
    description = "tabular SARSA, the on-policy twin of q_learning"
    learns = True


@register
class ImitationBehaviour(Behaviour):
    name = "imitation"
    code = IMITATION
    description = "follows a hidden oracle when it is in view, local search otherwise"
    privileged = True  # its guide knows the future


from collective.behaviours.heading import HeadingSearch  # noqa: E402 - a plug-in built-in, registered last

register(HeadingSearch)
