"""`auction` (bidding, spec §6): each iteration every searcher bids its best observed reward;
the highest bid (lowest index among equal bids) sets the target cell of the whole group.
sticky=true is the reference's variant: the best bid is kept for the episode and the target only
changes when a later bid beats it."""
from protocols import AUCTION, Parameter, Protocol, register


@register
class Auction(Protocol):
    name = "auction"
    code = AUCTION
    description = "searchers bid their best observed reward; the winner's cell becomes everyone's target"
    applies_to = frozenset({"local_search"})
    parameters = (Parameter("sticky", "false", "keep the best bid for the whole episode (reference)",
                            choices=("false", "true")),)


from numba import njit  # noqa: E402

from protocols.kernel_support import (BID, FLOAT_BITS, cell_bits, chosen_cell, count_all, local_choices,  # noqa: E402
                                      log_message, symbol_add_cell, symbol_add_value, symbol_start)


@njit(cache=True)
def auction_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                 targets, comm, log):
    """state = (best bid so far, its cell), reset each pass; used when sticky. Traffic: every searcher
    sends its bid (reward and cell) to the m - 1 others, m(m-1) messages (each bid logged once)."""
    sticky = values[0] > 0.5
    local_choices(members, pos_r, pos_c, scene, view, streams, window, choice)
    winner = members[0]
    for i in members:
        if choice[i, 2] > choice[winner, 2]:
            winner = i
        cell = chosen_cell(i, pos_r, pos_c, choice, scene.rows, scene.cols)
        log_message(log, symbol_add_value(symbol_add_cell(symbol_start(BID), cell), choice[i, 2]))
    target = chosen_cell(winner, pos_r, pos_c, choice, scene.rows, scene.cols)
    if sticky:
        if choice[winner, 2] > state[0]:
            state[0], state[1] = choice[winner, 2], target
        target = int(state[1])
    m = members.shape[0]
    count_all(comm, m * (m - 1), m * (m - 1) * (FLOAT_BITS + cell_bits(scene.rows, scene.cols)))
    for i in members:
        targets[i] = target
