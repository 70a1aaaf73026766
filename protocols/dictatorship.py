"""`dictatorship` (spec §6): one searcher, the dictator, picks its best observed cell and the
whole group heads for it."""
from collective.protocols.base import DICTATORSHIP, Parameter, Protocol, register


@register
class Dictatorship(Protocol):
    name = "dictatorship"
    code = DICTATORSHIP
    description = "one searcher decides the target cell for all"
    applies_to = frozenset({"local_search"})
    parameters = (Parameter("dictator", 0, "which searcher rules (its rank among the searchers, from 0)",
                            low=0, high=10**6),)

    @classmethod
    def check_group(cls, values, participants, minimum=None):
        super().check_group(values, participants, minimum)
        if values[0] != int(values[0]) or values[0] >= participants:
            raise ValueError(f"dictator must be a whole rank below {participants}, the number of searchers "
                             f"(got {values[0]:g})")


from numba import njit  # noqa: E402

from collective.protocols.kernel_support import (ORDER, cell_bits, chosen_cell, count_all,  # noqa: E402
                                      log_message, member_best, symbol_add_cell, symbol_start)


@njit(cache=True)
def dictatorship_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                      targets, comm, log, search):
    """Traffic: the dictator sends its cell to the m - 1 others (logged once).

    Only the dictator's own choice is made (one draw from its stream): every member heads for the
    dictator's cell, so another member's choice would never be read, and its stream, drawn only by
    those choices, never again (spec §6; the reference twin makes them all, to the same targets)."""
    reach, keys, ties, best, parts = search.reach, search.keys, search.ties, search.best, search.parts
    i = members[int(values[0])]
    streams[i, 0], choice[i, 0], choice[i, 1], choice[i, 2] = member_best(
        scene, i, pos_r[i], pos_c[i], view, streams[i, 0], reach, keys, ties, best, parts)
    target = chosen_cell(i, pos_r, pos_c, choice, scene.rows, scene.cols)
    m = members.shape[0]
    count_all(comm, m - 1, (m - 1) * cell_bits(scene.rows, scene.cols))
    log_message(log, symbol_add_cell(symbol_start(ORDER), target))
    for i in members:
        targets[i] = target
