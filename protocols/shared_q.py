"""`shared_q`: the group's learners read and write one Q-table (paper 003 §5.2.2; the
reference's CoopQlearning / CoopSarsa). Training passes run the learners together, each update
landing in the shared table. Its accesses happen inside the learners' steps (the fused kernel's
learner branch calls `count_learning_accesses`); their symbols are not logged, so a shared table has no
message entropy (NaN).

Traffic is the scored pass's (collective.simulation.kernel), and a table is shared only while it learns: the
scored pass of `learner_training` online counts every access, while a table frozen while the group is scored
(per_episode, after its training passes; pretrained) is read as each learner's own copy, and counts none
(issue 45 item 4: shared Q either shares while it is scored or its messages count zero)."""
from collective.protocols.base import SHARED_Q, Protocol, register


@register
class SharedQTable(Protocol):
    name = "shared_q"
    code = SHARED_Q
    description = "one Q-table (or SARSA table) shared by the group's learners"
    applies_to = frozenset({"q_learning", "sarsa"})


from numba import njit  # noqa: E402

from collective.protocols.kernel_support import FLOAT_BITS, READS_AND_WRITES, WRITES, count  # noqa: E402

ACTIONS = 9  # a state's action values, read together


@njit(cache=True, inline="always")
def count_learning_accesses(comm, steps, bootstrapping, address_bits):
    """The traffic of `steps` learning steps with the shared table, `bootstrapping` of them Q-learning updates,
    a value being addressed by `address_bits` (protocols/__init__.py). writes: each update writes one value.
    reads_and_writes: that write, the decision's read of the state's 9 values, and in a Q-learning update the
    read of the next state's 9 values for its target. A pass's steps are counted one by one (`_play_pass`) or
    at once (a training loop); every count and bit count is a whole number, so each float64 sum is exact (below
    2^53) in any order: the same values either way."""
    count(comm, WRITES, steps, steps * (FLOAT_BITS + address_bits))
    count(comm, READS_AND_WRITES, steps, steps * (FLOAT_BITS + address_bits))
    reads = steps + bootstrapping
    count(comm, READS_AND_WRITES, reads, reads * (ACTIONS * FLOAT_BITS + address_bits))
