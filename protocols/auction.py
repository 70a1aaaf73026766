"""`auction` (bidding, spec §6): each iteration every searcher bids its best observed reward;
the highest bid (lowest index among equal bids) sets the target cell of the whole group.
sticky=true keeps the best bid for the episode and the target only changes when a later bid
beats it, read as strictly greater (`>`), the lowest index winning among equal bids.

The 2016 program (`cpp_auction`, LambdaStar src/BiddingLocalSearchAgent.cpp updateMyBid, main.cpp)
meant "beats" as *at least equal*: agents bid in index order and a bid `>=` the episode's highest
so far (initially -1, reset only between episodes) makes that agent's local-search step the
target, so the later agent wins ties and every bid equal to the best (1.0 once anyone stood next
to ⊕) moves the target again. The spec's "beats the best bid" is therefore the C++'s `>=`;
sticky=true without `cpp_auction` is the strict reading, which freezes the target once anyone has
bid 1.0. Bids lie in [-1, 1], so the initial -1 and this rule's -inf accept the same first bid."""
from collective.protocols.base import AUCTION, SWITCH_SLOT, Parameter, Protocol, register


@register
class Auction(Protocol):
    name = "auction"
    code = AUCTION
    description = "searchers bid their best observed reward; the winner's cell becomes everyone's target"
    applies_to = frozenset({"local_search"})
    parameters = (Parameter("sticky", "false", "keep the best bid for the whole episode (reference)",
                            choices=("false", "true")),)
    cpp_switch = "cpp_auction"


import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from collective.protocols.kernel_support import (BID, FLOAT_BITS, cell_bits, count_all, log_close,  # noqa: E402
                                      log_open, log_to, member_best, offset_cell, symbol_add_cell, symbol_add_value,
                                      symbol_start)


@njit(cache=True)
def auction_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
                 targets, comm, log, search):
    """state = (best bid so far, its cell), reset each pass; used when sticky or in the 2016 form.
    Traffic: every searcher sends its bid (reward and cell) to the m - 1 others, m(m-1) messages
    (each bid logged once)."""
    reach, keys, ties, best, parts = search.reach, search.keys, search.ties, search.best, search.parts
    sticky = values[0] > 0.5
    rows, cols = scene.rows, scene.cols
    logged = log_open(log)
    for i in members:  # each searcher's own best cell, one draw each, and its bid (written out: a helper binding
        # the arrays would count a reference to each per iteration)
        r, c = pos_r[i], pos_c[i]
        streams[i, 0], row_offset, column_offset, reward = member_best(
            scene, i, r, c, view, streams[i, 0], reach, keys, ties, best, parts)
        choice[i, 0], choice[i, 1], choice[i, 2] = row_offset, column_offset, reward
        cell = offset_cell(r, c, int(row_offset), int(column_offset), rows, cols)  # its `chosen_cell`
        targets[i] = cell  # the bid's cell, until the winner's is everyone's target
        logged = log_to(log, logged, symbol_add_value(symbol_add_cell(symbol_start(BID), cell), reward), 1)
    log_close(log, logged)
    if values[SWITCH_SLOT] > 0.5:  # cpp_auction: bids in index order, `>=` moves the target
        for i in members:
            if choice[i, 2] >= state[0]:  # the bidder's local-search step (one step toward its choice)
                state[0] = choice[i, 2]
                state[1] = offset_cell(pos_r[i], pos_c[i], int(np.sign(choice[i, 0])), int(np.sign(choice[i, 1])),
                                       rows, cols)
        target = int(state[1])
    else:
        winner = members[0]
        for i in members:
            if choice[i, 2] > choice[winner, 2]:
                winner = i
        target = targets[winner]
        if sticky:
            if choice[winner, 2] > state[0]:
                state[0], state[1] = choice[winner, 2], target
            target = int(state[1])
    m = members.shape[0]
    count_all(comm, m * (m - 1), m * (m - 1) * (FLOAT_BITS + cell_bits(scene.rows, scene.cols)))
    for i in members:
        targets[i] = target
