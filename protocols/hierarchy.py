"""`hierarchy` (binary tree, spec §6): searchers ranked k = 1..m in agent order; k reports its best
observed cell and reward to its parent ⌊k/2⌋; each searcher heads for the best among its own cell
and its children's reports (its own on ties, then the first child).

The 2016 program's tree agents (`cpp_binary_tree`) do plain local search: main.cpp calls
performAction(columns) through an Agent pointer, which dispatches to LocalSearchAgent's, never the
tree's three-argument overload (LambdaStar src/BinaryTreeLocalSearchAgent.cpp); the reports are
written (setTargets) and counted, but nobody reads them."""
from collective.protocols.base import HIERARCHY, SWITCH_SLOT, Protocol, register


@register
class Hierarchy(Protocol):
    name = "hierarchy"
    code = HIERARCHY
    description = "binary tree: k reports to ⌊k/2⌋, heads for the best of its own and its children's reports"
    applies_to = frozenset({"local_search"})
    cpp_switch = "cpp_binary_tree"


from numba import njit  # noqa: E402

from collective.protocols.kernel_support import (CHOICE_REPORT, FLOAT_BITS, cell_bits, chosen_cell, count_all,  # noqa: E402
                                      log_close, log_open, log_to, member_best, symbol_add_cell, symbol_add_value,
                                      symbol_start)


@njit(cache=True)
def hierarchy_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                   targets, comm, log, search):
    """Traffic: ranks 2..m each send their best cell and its reward to their parent, m - 1 messages."""
    reach, keys, ties, best, parts = search.reach, search.keys, search.ties, search.best, search.parts
    for i in members:  # each searcher's own best cell, one draw each (written out: a helper binding the
        # arrays would count a reference to each per iteration)
        streams[i, 0], choice[i, 0], choice[i, 1], choice[i, 2] = member_best(
            scene, i, pos_r[i], pos_c[i], view, streams[i, 0], reach, keys, ties, best, parts)
    m = members.shape[0]
    plain = values[SWITCH_SLOT] > 0.5  # cpp_binary_tree: each heads for its own choice
    logged = log_open(log)
    for rank in range(1, m + 1):  # rank k's children are 2k and 2k+1
        heads_for = members[rank - 1]  # whose choice this rank heads for: its own or a better child's
        for child_rank in (2 * rank, 2 * rank + 1):
            if not plain and child_rank <= m and choice[members[child_rank - 1], 2] > choice[heads_for, 2]:
                heads_for = members[child_rank - 1]
        targets[members[rank - 1]] = chosen_cell(heads_for, pos_r, pos_c, choice, scene.rows, scene.cols)
        if rank > 1:
            i = members[rank - 1]
            report = symbol_add_cell(symbol_start(CHOICE_REPORT), chosen_cell(i, pos_r, pos_c, choice, scene.rows,
                                                                              scene.cols))
            logged = log_to(log, logged, symbol_add_value(report, choice[i, 2]), 1)
    log_close(log, logged)
    count_all(comm, m - 1, (m - 1) * (FLOAT_BITS + cell_bits(scene.rows, scene.cols)))
