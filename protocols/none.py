"""`none`: isolated agents, no communication."""
from collective.protocols.base import NONE, Protocol, register


@register
class NoProtocol(Protocol):
    name = "none"
    code = NONE
    description = "isolated agents: nobody communicates"
    minimum_members = 0
