"""Switches that reproduce a behaviour of the 2016 C++ program (nader-chmait/LambdaStar, main.cpp and src/) that
the papers do not describe; all on in `lambdastar2016`, all off (paper 003's reading) in `paper` and `sound`.
Each is a boolean field, recorded per row; the fields and their validation."""
from __future__ import annotations

from dataclasses import dataclass

from collective.config.checks import ConfigError, require_bool

CPP_SWITCHES = ("cpp_first_observation", "cpp_auction", "cpp_imitation", "cpp_learner_bootstrap", "cpp_oracle",
                "cpp_binary_tree", "cpp_groups_of_one", "cpp_approach_position")


@dataclass(frozen=True)
class CppSwitchesSection:
    """The 2016 program's behaviours (CPP_SWITCHES; docs/concepts.md, "Replicating the 2016 program")."""
    # the first scored observation sees the field with ⊕ and ⊖ both reset onto cell 0 (main.cpp
    # resets them after training): -0.5 on cell 0, 0 elsewhere; from the second iteration on it is right
    cpp_first_observation: bool = False
    # auction: bids in agent order, a bid >= the episode's best so far (initially -1, never reset within
    # the episode) moves the target to the bidder's local-search step, so the later agent wins ties
    cpp_auction: bool = False
    # imitation: the hidden oracle takes one step before each imitator acts (n steps per iteration) and
    # starts each episode on the last agent's start cell (the evaluation's episode 0: its own random cell)
    cpp_imitation: bool = False
    # learners: Q-learning bootstraps from max Q(s'=(c', t=0), ·); SARSA from Q((c', t), a'), a' chosen
    # at the same t and then discarded; no terminal state
    cpp_learner_bootstrap: bool = False
    # oracle (and the imitators' hidden oracle): one approach step toward ⊕'s next cell, not interception
    cpp_oracle: bool = False
    # hierarchy: every member does plain local search (the tree's reports are sent but never read)
    cpp_binary_tree: bool = False
    # every protocol accepts a group of one member (the C++ runs each group type with n = 1)
    cpp_groups_of_one: bool = False
    # every step toward a cell (oracles, imitators, protocol targets) as approachPosition (src/General.cpp) takes
    # it: exactly half-way round an axis (an even side), it goes the way that does not wrap, where paper 003's
    # reading (spec §5) always goes forward (+1)
    cpp_approach_position: bool = False


def validate_cpp_switches(c: CppSwitchesSection) -> None:
    """The 2016 switches are booleans; the reset field is Λ*'s; the C++ auction keeps its bid."""
    for name in CPP_SWITCHES:
        require_bool(c, name)
    if c.cpp_first_observation and c.env != "lambda_star":
        raise ConfigError("cpp_first_observation", "reproduces the 2016 program's Λ* field with ⊕ and ⊖ reset onto "
                                                   "cell 0, and that program has no landscapes; use false with "
                                                   f"--env {c.env}")
    if c.cpp_auction and c.protocol == "auction" and dict(c.protocol_params).get("sticky", "false") != "true":
        raise ConfigError("cpp_auction", "the C++ auction keeps the episode's best bid: it needs sticky=true "
                                         "(or set cpp_auction false)")
