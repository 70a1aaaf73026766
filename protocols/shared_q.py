"""`shared_q`: the group's learners read and write one Q-table (paper 003 §5.2.2; the
reference's CoopQlearning / CoopSarsa). Training passes run the learners together, each update
landing in the shared table. Its accesses happen inside the learners' steps (the fused kernel's
learner branch calls `count_table_accesses`); their symbols are not logged, so a shared table has no
message entropy (NaN)."""
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
def count_table_accesses(comm, learning, bootstraps, address_bits):
    """One learner step's traffic with the shared table, a value being addressed by `address_bits`
    (protocols/__init__.py). writes: each training update writes one value. reads_and_writes: that
    write, the decision's read of the state's 9 values (training and scored passes), and in a
    Q-learning update (`bootstraps`) the read of the next state's 9 values for its target."""
    if learning:
        count_learning_accesses(comm, 1, bootstraps, address_bits)
    else:
        count(comm, READS_AND_WRITES, 1, ACTIONS * FLOAT_BITS + address_bits)


@njit(cache=True, inline="always")
def count_learning_accesses(comm, steps, bootstrapping, address_bits):
    """`count_table_accesses` of `steps` training steps at once, `bootstrapping` of them Q-learning updates that
    read the next state's values (a training loop counts a whole pass in one call). Every count and bit count is
    a whole number, so each float64 sum is exact (below 2^53) in any order: the same values as step by step."""
    count(comm, WRITES, steps, steps * (FLOAT_BITS + address_bits))
    count(comm, READS_AND_WRITES, steps, steps * (FLOAT_BITS + address_bits))
    reads = steps + bootstrapping
    count(comm, READS_AND_WRITES, reads, reads * (ACTIONS * FLOAT_BITS + address_bits))
