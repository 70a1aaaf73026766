"""Traffic is the scored pass's (review finding 2; issue 45 item 4): the columns are per scored iteration, so a
group's training passes add no messages, and a shared table that is frozen while the group is scored is read as
one's own copy, no message; a table that learns while scored counts every access."""
import math

import numpy as np

from collective.config import EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play

SETTINGS = dict(iterations=20, episodes=2, q_training_passes=7)


def _run(profile, **settings):
    config = EvaluationConfig.from_profile(profile, **{**SETTINGS, **settings})
    return play(config, generate_environments(config, np.arange(config.episodes)))


def test_a_hearing_groups_training_passes_send_no_counted_message():
    """Three Q-learners hear a broadcast, training 7 passes before each scored episode (per_episode): the scored
    pass's m(m-1) = 6 reports per iteration are counted, the training passes' are not (they were, 8x as many)."""
    for accounting in ("writes", "reads_and_writes"):
        run = _run("paper", behaviour="q_learning", group_size=3, protocol="broadcast",
                   communication_accounting=accounting)
        assert run.messages == 2 * 20 * 6 == run.transfers, accounting


def test_a_frozen_shared_table_is_read_without_a_message():
    """shared_q's table is frozen while the group is scored, after per-episode training passes (paper) or
    pretraining (sound): its reads are a learner's reads of its own copy, and nothing is counted."""
    for profile, settings in (("paper", {}), ("paper", dict(communication_accounting="reads_and_writes")),
                              ("sound", dict(iterations=30, q_training_passes=3, training_episodes=3))):
        run = _run(profile, behaviour="q_learning", group_size=3, protocol="shared_q", **settings)
        assert (run.messages, run.bits, run.transfers) == (0, 0, 0), (profile, settings)


def test_a_shared_table_that_learns_while_scored_counts_every_access():
    """Online, the group's table learns in the scored pass: per step a write of one value (`writes` counts these
    alone) and a read of the state's 9, plus the next state's read for a Q-learning target (not at the last step),
    each addressed in the 3^9-state window-sign table. The accesses have no logged symbols (entropy NaN)."""
    address = math.ceil(math.log2(3 ** 9 * 9))
    writes = 2 * 30 * 3
    reads = writes + 2 * 29 * 3
    for accounting in ("writes", "reads_and_writes"):
        run = _run("sound", behaviour="q_learning", group_size=3, protocol="shared_q", iterations=30,
                   q_training_passes=3, training_episodes=3, learner_training="online",
                   communication_accounting=accounting)
        assert run.transfers == writes + reads
        if accounting == "writes":
            assert (run.messages, run.bits) == (writes, writes * (64 + address))
        else:
            assert (run.messages, run.bits) == (writes + reads, writes * (64 + address) + reads * (9 * 64 + address))
        assert np.isnan(run.message_entropy).all()
