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

from protocols.kernel_support import FLOAT_BITS, cell_bits, chosen_cell, local_choices  # noqa: E402


@njit(cache=True)
def auction_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                 targets, comm):
    """state = (best bid so far, its cell), reset each pass; used when sticky."""
    sticky = values[0] > 0.5
    local_choices(members, pos_r, pos_c, scene, view, streams, window, choice)
    winner = members[0]
    for i in members:
        if choice[i, 2] > choice[winner, 2]:
            winner = i
    target = chosen_cell(winner, pos_r, pos_c, choice, scene.rows, scene.cols)
    if sticky:
        if choice[winner, 2] > state[0]:
            state[0], state[1] = choice[winner, 2], target
        target = int(state[1])
    m = members.shape[0]
    comm[0] += m * (m - 1)
    comm[1] += m * (m - 1) * (FLOAT_BITS + cell_bits(scene.rows, scene.cols))
    for i in members:
        targets[i] = target
