"""Communication as information (issue 14 points 3-4): one accounting of every protocol's traffic,
the empirical entropy of what it sent, and the sham-communication control that keeps the traffic and
takes away the information."""
import math

import numpy as np
import pytest
from numba import njit

from collective import Messages
from collective.config import ConfigError, EvaluationConfig
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
from collective.evaluation.sham import shadow_environments
from collective.evaluation.stepping_group import plugin_group
from collective.simulation.stepping import play_group, play_overhearing
from collective.sweeps.spec import SpecError, parse_spec
from collective.protocols.kernel_support import (empty_log, log_copies, message_entropy_bits, table_distinct,
                                                 table_entropy_bits, table_log)

LN2 = math.log(2)


def cell(r, c, cols=7):
    return r * cols + c


def scenario(protocol, starts, good, evil=cell(6, 6), iterations=1, params=(), episodes=12, **settings):
    """`episodes` copies of one hand-built episode on a 7x7 grid: ⊕ at `good`, ⊖ at `evil`, agents at `starts`."""
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=len(starts), rows=7, cols=7,
                                           iterations=iterations, protocol=protocol, protocol_params=params,
                                           **settings)
    env = EnvironmentBatch(np.full((episodes, iterations + 1), good, np.int32),
                           np.full((episodes, iterations + 1), evil, np.int32),
                           np.tile(np.array(starts, np.int32), (episodes, 1)), np.arange(episodes, dtype=np.uint64),
                           np.ones(episodes, np.int32), np.ones(episodes))
    return play(config, env)


# ---- one accounting (protocols/__init__.py) ----

@pytest.mark.parametrize("form, writes, reads_and_writes", [("paper", 2, 1 + 2), ("reference", 1, 1 + 2)])
def test_stigmergy_counts_deposits_of_something_and_every_read(form, writes, reads_and_writes):
    """A at (3,2) sees ⊕ and deposits; B at (3,0) sees nothing: the paper form's `writes` count takes
    B's deposit of nothing too; reads_and_writes counts A's deposit and both searchers' reads, each
    of a 3x3 window of 64-bit values."""
    for accounting, per_episode in (("writes", writes), ("reads_and_writes", reads_and_writes)):
        run = scenario("stigmergy", [cell(3, 2), cell(3, 0)], good=cell(3, 3), params=(("form", form),),
                       communication_accounting=accounting)
        assert (run.messages, run.bits) == (12 * per_episode, 12 * per_episode * 9 * 64), accounting
        assert run.transfers == 12 * reads_and_writes


def test_wisdom_reads_the_whole_map_under_reads_and_writes():
    """The writes are the same under both accountings; reads_and_writes adds every searcher's read of
    the N-cell map each iteration (N x 64 bits)."""
    config = EvaluationConfig.from_profile("paper", mix="local_search:5,oracle:2", protocol="wisdom", iterations=20,
                                           episodes=3)
    environments = generate_environments(config, np.arange(3))
    writes = play(config, environments)
    both = play(config.with_changes(communication_accounting="reads_and_writes"), environments)
    assert both.messages - writes.messages == 3 * 20 * 5
    assert both.bits - writes.bits == 3 * 20 * 5 * 100 * 64
    assert writes.messages > 0


@pytest.mark.parametrize("protocol, messages", [("broadcast", 20), ("auction", 20), ("dictatorship", 4),
                                                ("hierarchy", 4)])
def test_direct_messages_count_alike_under_both_accountings(protocol, messages):
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=5, protocol=protocol,
                                           iterations=10, episodes=2)
    environments = generate_environments(config, np.arange(2))
    writes = play(config, environments)
    both = play(config.with_changes(communication_accounting="reads_and_writes"), environments)
    assert (writes.messages, writes.bits) == (both.messages, both.bits)
    assert writes.messages == 2 * 10 * messages == both.transfers


@pytest.mark.parametrize("name, value", [("communication_accounting", "both"), ("communication_control", "fake")])
def test_unknown_accounting_or_control_is_refused(name, value):
    with pytest.raises(ConfigError, match=f"{name}: unknown value") as error:
        EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=3, protocol="broadcast",
                                      **{name: value})
    assert error.value.field == name


def test_profiles_pick_their_accounting():
    assert EvaluationConfig.from_profile("paper").communication_accounting == "writes"
    assert EvaluationConfig.from_profile("lambdastar2016").communication_accounting == "writes"
    assert EvaluationConfig.from_profile("sound").communication_accounting == "reads_and_writes"


# ---- the entropy of what was sent ----

def test_entropy_estimator_on_hand_counts():
    """Plug-in entropy + (K - 1)/(2n ln 2) bits, in whatever order the symbols came."""
    two_pairs = np.array([7, 9, 7, 9], np.uint64)
    assert message_entropy_bits(two_pairs, 4) == pytest.approx(1 + 1 / (8 * LN2), abs=1e-15)
    assert message_entropy_bits(np.array([9, 9, 7, 7], np.uint64), 4) == message_entropy_bits(two_pairs, 4)
    thirds = np.array([1, 2, 2, 3, 3, 3], np.uint64)
    plug_in = -(1 / 6 * math.log2(1 / 6) + 2 / 6 * math.log2(2 / 6) + 3 / 6 * math.log2(3 / 6))
    assert message_entropy_bits(thirds, 6) == pytest.approx(plug_in + 2 / (12 * LN2), abs=1e-15)
    assert message_entropy_bits(np.full(10, 5, np.uint64), 10) == 0.0
    assert math.isnan(message_entropy_bits(np.empty(0, np.uint64), 0))


@njit
def _count_into(log, symbols, copies):
    for k in range(symbols.shape[0]):
        log_copies(log, symbols[k], copies[k])


def test_the_count_table_counts_what_a_list_of_the_same_messages_holds():
    """The fused kernel's count table (each message counted when the next comes, the last one when the pass
    is read) against the symbols listed one by one: the same entropy to the bit and the same distinct
    symbols, for streams of few and of many distinct symbols (probes that collide in a small table), with
    copies; a table emptied after a pass (a training pass) keeps nothing of it, its pending message included."""
    rng = np.random.default_rng(25)
    for distinct in (1, 3, 40, 400):
        for n in (1, 2, 7, 300):
            log = table_log(n, 1)  # room for the messages of n iterations of one member (3n)
            stale = rng.integers(0, 2 ** 63, 5).astype(np.uint64)
            _count_into(log, stale, np.ones(5, np.int64))
            empty_log(log)
            symbols = rng.integers(0, distinct, n).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            copies = rng.integers(1, 4, n)
            _count_into(log, symbols, copies)
            listed = np.repeat(symbols, copies)
            assert table_entropy_bits(log).hex() == message_entropy_bits(listed, len(listed)).hex(), (distinct, n)
            assert table_distinct(log) == len(np.unique(symbols))
            assert table_entropy_bits(log).hex() == message_entropy_bits(listed, len(listed)).hex()  # read twice


def test_miller_madow_removes_most_of_the_plug_in_bias():
    """Uniform over 16 symbols (4 bits), 40 samples: the plug-in estimate is biased low by about
    (K-1)/(2n ln 2) = 0.27 bits (Paninski 2003); the corrected one lands within a third of that."""
    rng = np.random.default_rng(3)
    corrected, plug_in = [], []
    for _ in range(3000):
        symbols = rng.integers(0, 16, 40).astype(np.uint64)
        estimate = message_entropy_bits(symbols, 40)
        corrected.append(estimate)
        plug_in.append(estimate - (len(np.unique(symbols)) - 1) / (80 * LN2))
    assert 4 - np.mean(plug_in) > 0.2
    assert abs(4 - np.mean(corrected)) < (4 - np.mean(plug_in)) / 3


def test_entropy_of_hand_built_messages():
    """One iteration: broadcast sends two different reports (A's and B's), so 1 bit + MM per message;
    a dictator sends one order, 0 bits; the entropy is the same under both accountings."""
    for accounting in ("writes", "reads_and_writes"):
        broadcast = scenario("broadcast", [cell(3, 2), cell(0, 6)], good=cell(3, 3),
                             communication_accounting=accounting)
        assert broadcast.message_entropy == pytest.approx(np.full(12, 1 + 1 / (4 * LN2)), abs=1e-15)
        dictator = scenario("dictatorship", [cell(3, 2), cell(0, 6)], good=cell(3, 3),
                            communication_accounting=accounting)
        assert np.array_equal(dictator.message_entropy, np.zeros(12))
    alone = scenario("none", [cell(3, 2), cell(0, 6)], good=cell(3, 3))
    assert np.isnan(alone.message_entropy).all() and alone.transfers == 0


def test_distinct_messages_count_copies_and_repeats_once():
    """Issue 22 point 6: three searchers round ⊕ under wisdom, one iteration: three writes of what each sees and
    three reads of the one map, 6 messages under reads_and_writes, 4 distinct. A dictator standing by a still ⊕
    orders the same cell at each of 5 iterations: 5 orders, 1 distinct."""
    wisdom = scenario("wisdom", [cell(3, 2), cell(3, 4), cell(2, 3)], good=cell(3, 3),
                      communication_accounting="reads_and_writes")
    assert wisdom.transfers == 12 * 6
    assert np.array_equal(wisdom.distinct_messages, np.full(12, 4.0))
    dictator = scenario("dictatorship", [cell(3, 2), cell(0, 6)], good=cell(3, 3), iterations=5)
    assert dictator.messages == 12 * 5 and np.array_equal(dictator.distinct_messages, np.ones(12))
    record = evaluate(EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=4,
                                                    protocol="wisdom", iterations=30, episodes=10)).as_record()
    assert record["distinct_messages_per_iteration"] < record["messages_per_iteration"] - 3  # 4 reads, 1 map
    assert record["distinct_information_bits_per_iteration"] < record["information_bits_per_iteration"]


class Cycler:
    """Hands every member the cell t mod 4: four equally frequent deliveries, one message each."""

    def communicate(self, obs):
        return Messages(target=np.full(obs.cell.shape, obs.t % 4), messages=float(obs.cell.size),
                        bits=2.0 * obs.cell.size)


def test_a_plugins_symbols_are_what_it_hands_its_members():
    """8 iterations x 3 members = 24 deliveries per episode, uniform over 4 cells: 2 bits + 3/(48 ln 2)."""
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=3,
                                           protocol=f"{__name__}:Cycler", iterations=8, episodes=5, rows=7, cols=7)
    run = play(config, generate_environments(config, np.arange(5)))
    assert run.message_entropy == pytest.approx(np.full(5, 2 + 3 / (48 * LN2)), abs=1e-15)
    record = evaluate(config).as_record()
    assert record["message_entropy_bits"] == pytest.approx(2 + 3 / (48 * LN2))
    assert record["information_bits_per_iteration"] == pytest.approx(record["message_entropy_bits"] * 3)


def test_information_is_entropy_times_messages():
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", group_size=4, protocol="auction",
                                           iterations=30, episodes=20)
    record = evaluate(config).as_record()
    assert record["messages_per_iteration"] == 12
    assert 0 < record["message_entropy_bits"] < math.log2(12 * 30)  # bids repeat within an episode
    assert record["information_bits_per_iteration"] == pytest.approx(12 * record["message_entropy_bits"])
    assert record["communication_accounting"] == "reads_and_writes" and record["communication_control"] == "real"


# ---- the sham-communication control ----

SHAM = dict(behaviour="local_search", group_size=10, iterations=200, seed=17)


def paired(protocol, grid, episodes=300, **settings):
    """Per-episode R̄ of isolated searchers and of the protocol's real and sham groups on the same
    environments, and the two runs."""
    base = EvaluationConfig.from_profile("paper", rows=grid, cols=grid, episodes=episodes, **SHAM, **settings)
    environments = generate_environments(base, np.arange(episodes))
    real = play(base.with_changes(protocol=protocol), environments)
    sham = play(base.with_changes(protocol=protocol, communication_control="sham"), environments)
    return play(base, environments).mean_rewards, real, sham


def gain(scores, isolated):
    difference = scores - isolated
    return difference.mean(), 2.58 * difference.std(ddof=1) / math.sqrt(len(difference))


@pytest.mark.parametrize("protocol, grid", [("broadcast", 20), ("wisdom", 10)])
def test_sham_keeps_the_traffic_and_loses_the_gain(protocol, grid):
    """Broadcast on 20x20 and wisdom on 10x10 beat isolated searchers and beat their shams, which send the
    same traffic (exactly for broadcast's fixed counts, in distribution for wisdom's writes). Each sham
    searcher keeps its own window, yet heads for the best cell reported, and the others report cells of
    the shadow: the sham loses the gain and costs the searchers their own search."""
    isolated, real, sham = paired(protocol, grid)
    real_gain, real_half = gain(real.mean_rewards, isolated)
    sham_gain, sham_half = gain(sham.mean_rewards, isolated)
    over_sham, over_sham_half = gain(real.mean_rewards, sham.mean_rewards)
    assert real_gain - real_half > 0, f"real gain {real_gain:+.4f} ± {real_half:.4f}"
    assert over_sham - over_sham_half > real_gain, f"real over sham {over_sham:+.4f} ± {over_sham_half:.4f}"
    assert sham_gain + sham_half < 0, f"sham gain {sham_gain:+.4f} ± {sham_half:.4f}"
    if protocol == "broadcast":
        assert (sham.messages, sham.bits) == (real.messages, real.bits)
    else:
        assert sham.messages == pytest.approx(real.messages, rel=0.03)
        assert sham.bits == pytest.approx(real.bits, rel=0.03)


@pytest.mark.parametrize("protocol", ["auction", "dictatorship", "hierarchy", "stigmergy"])
def test_sham_traffic_of_fixed_counts_is_exact(protocol):
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=5, iterations=30,
                                           episodes=6, protocol=protocol)
    environments = generate_environments(config, np.arange(6))
    real, sham = play(config, environments), play(config.with_changes(communication_control="sham"), environments)
    assert (sham.messages, sham.bits) == (real.messages, real.bits)


def test_overhearing_ones_own_episode_is_the_real_protocol():
    """Were each shadow the episode itself, the listeners would hear exactly the messages the real group
    hears, member for member and iteration by iteration, and play exactly as it does."""
    config = EvaluationConfig.from_profile("paper", mix="local_search:4,random:1", protocol="stigmergy",
                                           iterations=40, episodes=6, rows=9, cols=8)
    environments = generate_environments(config, np.arange(6))
    real = play_group(plugin_group(config), environments, record=True)
    heard = play_overhearing(plugin_group(config), plugin_group(config), environments, environments, record=True)
    assert np.array_equal(real.positions, heard.positions) and np.array_equal(real.rewards, heard.rewards)
    assert (real.messages, real.bits, real.transfers) == (heard.messages, heard.bits, heard.transfers)
    assert np.array_equal(real.message_entropy, heard.message_entropy)


def test_shadows_are_other_environments_of_the_cell_keyed_by_episode():
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=3, iterations=30,
                                           episodes=8, protocol="broadcast", k_min=4, k_max=9)
    environments = generate_environments(config, np.arange(8))
    shadows = shadow_environments(config, environments)
    assert not np.array_equal(shadows.good, environments.good)
    assert ((shadows.k_raw >= 4) & (shadows.k_raw <= 9)).all()  # drawn from the same class
    later = shadow_environments(config, generate_environments(config, np.arange(5, 8)))
    assert np.array_equal(later.good, shadows.good[5:]) and np.array_equal(later.starts, shadows.starts[5:])


def test_sham_is_batch_split_invariant():
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=4, iterations=40,
                                           episodes=12, protocol="wisdom", communication_control="sham")
    whole = play(config, generate_environments(config, np.arange(12)))
    parts = [play(config, generate_environments(config, np.arange(a, b))) for a, b in ((0, 5), (5, 12))]
    assert np.array_equal(np.concatenate([part.mean_rewards for part in parts]), whole.mean_rewards)
    assert np.array_equal(np.concatenate([part.message_entropy for part in parts]), whole.message_entropy)
    assert sum(part.messages for part in parts) == whole.messages
    assert evaluate(config, batch_size=5).estimate == evaluate(config, batch_size=12).estimate


def test_a_plugin_protocol_can_be_shammed():
    config = EvaluationConfig.from_profile("paper", behaviour="examples.numpy_local_search:LocalSearch",
                                           group_size=5, iterations=30, episodes=6,
                                           protocol="examples.numpy_broadcast:Broadcast")
    environments = generate_environments(config, np.arange(6))
    real, sham = play(config, environments), play(config.with_changes(communication_control="sham"), environments)
    assert (sham.messages, sham.bits) == (real.messages, real.bits)
    assert not np.array_equal(sham.mean_rewards, real.mean_rewards)


class Ignored:
    """A protocol whose messages are sent and ignored: every member reports its window to the others (m(m-1)
    messages) and is handed, as an additive field, its own window only, so that a local searcher weighs
    window + field = 2 x window: the same best cells, the same ties and draws as alone."""

    members = None

    def communicate(self, obs):
        episodes, members = obs.cell.shape
        sent = episodes * members * (members - 1)
        return Messages(field=obs.window.copy(), messages=float(sent), bits=float(sent * obs.window[0, 0].size * 64))


@pytest.mark.parametrize("protocol, settings", [(f"{__name__}:Ignored", {}),
                                                ("hierarchy", {"cpp_binary_tree": True})],
                         ids=["plugin-field", "builtin-unread-reports"])
def test_a_protocol_whose_messages_are_ignored_scores_like_isolated_agents_real_and_sham_alike(protocol, settings):
    """The sham removes information and keeps everything else, the members' own sensing included (issue 22
    point 2): a protocol whose messages are ignored (a plug-in handing each member its own window; the 2016
    binary tree, whose reports nobody reads) plays exactly as isolated searchers, episode by episode, and so
    does its sham, with the real protocol's traffic to the bit. (A sham that handed each member what the
    protocol told it in the shadow would send these searchers after the shadow's rewards.)"""
    config = EvaluationConfig.from_profile("paper", rows=10, cols=10, episodes=60, **{**SHAM, "iterations": 60},
                                           **settings)
    environments = generate_environments(config, np.arange(60))
    isolated = play(config, environments)
    real = play(config.with_changes(protocol=protocol), environments)
    sham = play(config.with_changes(protocol=protocol, communication_control="sham"), environments)
    assert np.array_equal(real.mean_rewards, isolated.mean_rewards)
    assert np.array_equal(sham.mean_rewards, isolated.mean_rewards)
    assert (sham.messages, sham.bits) == (real.messages, real.bits) and real.messages > 0


class Learning:
    """A persistent plug-in protocol (it would keep what it learns across batches)."""

    persistent = True

    def communicate(self, obs):
        return Messages(target=np.full(obs.cell.shape, -1), messages=0.0, bits=0.0)


@pytest.mark.parametrize("settings, says", [
    (dict(behaviour="local_search", group_size=3, protocol="none"), "protocol none sends no message"),
    (dict(behaviour="q_learning", group_size=3, protocol="shared_q"), "shared_q cannot be shammed"),
    (dict(mix="local_search:3,q_learning:1", protocol="broadcast"), "where q_learning cannot play"),
    (dict(behaviour="local_search", group_size=3, protocol=f"{__name__}:Learning"), "learn from the shadow"),
])
def test_what_cannot_be_shammed_is_refused(settings, says):
    with pytest.raises(ConfigError, match=says) as error:
        EvaluationConfig.from_profile("paper", communication_control="sham", **settings)
    assert error.value.field == "communication_control"


SPEC = {"name": "sham", "seed": 1, "profile": "paper", "episodes": 10, "iterations": 20,
        "factors": {"grid": ["6x6"], "group_size": [3]},
        "groups": {"behaviours": ["local_search"],
                   "protocols": [{"name": "none"}, {"name": "broadcast", "controls": ["real", "sham"]}]}}


def test_specs_put_a_sham_group_beside_the_real_one():
    spec = parse_spec(SPEC)
    labels = [group.label for group in spec.groups]
    assert labels == ["local_search", "local_search+broadcast", "local_search+broadcast[sham]"]
    assert [config.communication_control for config in spec.cells[0].configs] == ["real", "real", "sham"]
    without = parse_spec({**SPEC, "groups": {"behaviours": ["local_search"],
                                             "protocols": [{"name": "none"}, {"name": "broadcast"}]}})
    assert [g.key for g in without.groups] == [g.key for g in spec.groups[:2]]  # real groups keep their seeds
    assert without.cells[0].key == spec.cells[0].key  # one cell, the same environments
    with pytest.raises(SpecError, match=r"groups\.protocols\[0\]\.controls\[1\]: unknown control 'fake'"):
        parse_spec({**SPEC, "groups": {"behaviours": ["local_search"],
                                       "protocols": [{"name": "broadcast", "controls": ["real", "fake"]}]}})
    with pytest.raises(SpecError, match=r"groups\.protocols\[0\]\.controls: sham needs a communicating protocol"):
        parse_spec({**SPEC, "groups": {"behaviours": ["local_search"],
                                       "protocols": [{"name": "none", "controls": ["sham"]}]}})
