"""Communication protocols (spec §6; paper 003 §5.2.2): how a group talks, one module each.

A built-in protocol is a small `Protocol` subclass registered by name. It declares its
parameters, the behaviours it applies to (the group's other members act alone), and the kernel
code whose compiled rule runs each iteration after every agent has observed and before any acts,
in the fused kernel (`collective.simulation.kernel`) and in the stepping core; any protocol but
`none` makes the group play together (`play_together`). Any other protocol is a class with
`communicate(self, obs)` (see `collective.simulation.plugins`), registered by name or named by
import path; `load_protocol` resolves both.

Communication cost (spec §6: "every protocol reports how much it communicated ... so communication
cost can enter the analysis"). A *message* is one transfer of content from an agent to another
agent, or between an agent and a shared medium (the environment's fake-reward field, the wisdom
map, a shared Q-table); its *bits* are the width of its content: a cell ⌈log2 N⌉ bits, a reward
64. The config field `communication_accounting` picks one of COMMUNICATION_ACCOUNTINGS:

- `reads_and_writes` (profile `sound`): writes and reads of a shared medium alike, each a message.
  broadcast: m(m-1) reports (cell + (2k+1)² rewards), every searcher to every other; auction:
  m(m-1) bids (reward + cell); dictatorship: m-1 orders (a cell); hierarchy: m-1 reports (reward +
  cell) to the parent; wisdom: one write per searcher with non-zero rewards in sight (cell + reward
  each) and m reads of the whole map (N rewards); stigmergy: one write per deposit of something
  ((2k+1)² values; a fake reward of 0 changes no cell and is no message) and m reads of the
  searcher's window of the field; shared_q: per learner step of a table that learns a read of the
  state's 9 values and a write of one value (plus the next state's 9 values read for a Q-learning
  target), each with its ⌈log2 (table size)⌉-bit address.
- `writes` (profiles `paper`, `lambdastar2016`; the counts before this accounting existed): the
  same direct messages, the writes of shared media and no reads; the paper form of stigmergy
  counts every searcher's deposit, even of nothing, and shared_q only its writes.

Both count the scored pass only (the columns are per scored iteration): a group's training passes, where
its learners train together under the protocol, add nothing. So shared_q counts only under
`learner_training` online, whose table learns while the group is scored; a table frozen while the group
is scored (per_episode, pretrained) is read as each learner's own copy, and counts no message.

Information (Chmait, Dowe, Green & Li, AGI 2015, LNCS 9205, measure communication by its entropy
in bits): every message of `reads_and_writes` also has a *symbol*, a hash of its kind and content
(protocols.kernel_support); a row's `message_entropy_bits` is the empirical entropy of its episode's
symbols in the scored pass, bits per message (plug-in estimate with the Miller-Madow correction),
and `information_bits_per_iteration` that entropy times the messages per iteration of
`reads_and_writes`. Widths count what the encoding could carry; entropy what the messages did carry.
`information_bits_per_iteration` counts every copy (a map read by m searchers is m messages); a row's
`distinct_messages_per_iteration` counts its episode's distinct symbols over T (copies and repeats once:
H(X, X) = H(X), Cover & Thomas 2006, §2.2) and `distinct_information_bits_per_iteration` is the entropy
times that (issue 22 point 6).
A plug-in protocol counts its own messages and bits; its messages are not visible, so its symbols
are what each member is handed per iteration (target and field).
"""
# The names the rest of the code base reads off the package (the built-ins import them from base)
from collective.protocols.base import (AUCTION, BROADCAST, COMMUNICATION_ACCOUNTINGS, DICTATORSHIP,  # noqa: F401
                                       HIERARCHY, NONE, SHARED_Q, STIGMERGY, Protocol, get_protocol, load_protocol,
                                       protocol_names, register)

# Importing the modules registers them, in the order `collective protocols` lists them.
from collective.protocols import none  # noqa: E402,F401,I001
from collective.protocols import stigmergy  # noqa: E402,F401
from collective.protocols import shared_q  # noqa: E402,F401
from collective.protocols import broadcast  # noqa: E402,F401
from collective.protocols import auction  # noqa: E402,F401
from collective.protocols import dictatorship  # noqa: E402,F401
from collective.protocols import hierarchy  # noqa: E402,F401
