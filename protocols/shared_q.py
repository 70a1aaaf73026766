"""`shared_q`: the group's learners read and write one Q-table (paper 003 §5.2.2; the
reference's CoopQlearning / CoopSarsa). Training passes run the learners together, each update
landing in the shared table."""
from protocols import SHARED_Q, Protocol, register


@register
class SharedQTable(Protocol):
    name = "shared_q"
    code = SHARED_Q
    description = "one Q-table (or SARSA table) shared by the group's learners"
    applies_to = frozenset({"q_learning", "sarsa"})
