"""Agent behaviours (spec §5, paper 003 §5.2.1): small plug-ins registered by name.

A behaviour is a `Behaviour` subclass naming its kernel code; its decision rule is a compiled
function in its own module, called by the batched simulator (`collective.simulation.kernel`) and
mirrored, slowly and plainly, by `collective.simulation.reference`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from collective.registry import Registry

# Kernel codes: the simulator dispatches on these.
RANDOM, LOCAL_SEARCH, ORACLE, Q_LEARNING, SARSA, IMITATION = range(6)


@dataclass(frozen=True)
class Behaviour:
    """What one agent does each iteration."""

    name: ClassVar[str]
    code: ClassVar[int]
    description: ClassVar[str]
    learns: ClassVar[bool] = False


BEHAVIOURS: Registry[Behaviour] = Registry("behaviour")
register = BEHAVIOURS.register
behaviour_names = BEHAVIOURS.names
get_behaviour = BEHAVIOURS.get


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


@register
class QLearningBehaviour(Behaviour):
    name = "q_learning"
    code = Q_LEARNING
    description = "tabular Q-learning on (cell, iteration), trained before each scored pass (Algorithm 1)"
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
