"""The open stepping core (issue 11): groups of built-ins play on it exactly as in the fused
kernel, step by step; the NumPy example plug-ins reproduce the built-ins; user plug-ins mix with
built-ins; bad plug-ins fail before or at the first batch, naming the plug-in and the method."""
import numpy as np
import pytest

from collective import Messages, Parameter, PluginError
from collective.config import ConfigError, EvaluationConfig
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments
from collective.evaluation.fused_kernel import play_fused
from collective.evaluation.play import play
from collective.evaluation.stepping_group import plugin_group
from collective.simulation.stepping import play_group
from collective.testing import check_behaviour, check_protocol

LOCAL = "examples.numpy_local_search:LocalSearch"
BROADCAST = "examples.numpy_broadcast:Broadcast"
SMALL = dict(rows=9, cols=8, iterations=40, episodes=16, seed=5)


def assert_same_runs(kernel, core, same_symbols=True):
    """Identical runs; `same_symbols`: the message entropy too (a plug-in's symbols are what it hands out)."""
    assert np.array_equal(kernel.positions, core.positions), "positions differ"
    assert np.array_equal(kernel.rewards, core.rewards), "rewards differ"
    assert np.array_equal(kernel.mean_rewards, core.mean_rewards), "R̄ differs"
    assert (kernel.messages, kernel.bits) == (core.messages, core.bits), "traffic differs"
    if same_symbols:
        assert kernel.transfers == core.transfers, "reads_and_writes traffic differs"
        assert np.array_equal(kernel.message_entropy, core.message_entropy, equal_nan=True), "message entropy differs"


BUILTIN_GROUPS = [
    ("local_search:3,random:2,oracle:2,imitation:2", "none", ()),
    ("local_search:5,random:1", "stigmergy", ()),
    ("local_search:4", "stigmergy", (("form", "reference"),)),
    ("local_search:4,oracle:1", "broadcast", ()),
    ("local_search:4", "wisdom", ()),
    ("local_search:4", "auction", ()),
    ("local_search:4", "auction", (("sticky", "true"),)),
    ("local_search:4", "dictatorship", (("dictator", "2"),)),
    ("local_search:6", "hierarchy", ()),
]


@pytest.mark.parametrize("mix, protocol, params", BUILTIN_GROUPS, ids=[f"{p}-{m}" for m, p, _ in BUILTIN_GROUPS])
@pytest.mark.parametrize("variant", [dict(), dict(observation_range=2, reward_radius=2, rows=11, cols=9),
                                     dict(coordination_threshold=2), dict(env="landscape", landscape_peaks=3)],
                         ids=["default", "range2", "coordination", "landscape"])
def test_builtins_on_the_stepping_core_match_the_fused_kernel(mix, protocol, params, variant):
    """The built-ins' compiled stepping-core forms draw from the kernel's streams in the kernel's
    order: every trajectory, reward and message count is identical."""
    config = EvaluationConfig.from_profile("paper", mix=mix, protocol=protocol, protocol_params=params,
                                           **{**SMALL, **variant})
    environments = generate_environments(config, np.arange(config.episodes))
    assert_same_runs(play_fused(config, environments, record=True),
                     play_group(plugin_group(config), environments, True))
    sound = config.with_changes(communication_accounting="reads_and_writes")
    assert_same_runs(play_fused(sound, environments, record=True), play_group(plugin_group(sound), environments, True))


CPP_GROUPS = [("local_search:3,random:1,oracle:2,imitation:3", "none", ()),
              ("local_search:4,imitation:1", "stigmergy", (("form", "reference"),)),
              ("local_search:4", "wisdom", ()), ("local_search:4", "auction", (("sticky", "true"),)),
              ("local_search:5", "hierarchy", ()), ("local_search:1", "dictatorship", ())]


@pytest.mark.parametrize("mix, protocol, params", CPP_GROUPS, ids=[f"{p}-{m}" for m, p, _ in CPP_GROUPS])
@pytest.mark.parametrize("first", [0, 3], ids=["from-episode-0", "later"])
def test_builtins_on_the_stepping_core_match_the_fused_kernel_under_the_2016_switches(mix, protocol, params, first):
    """Every 2016 switch on (issue 13): the stepping core's built-ins still play as the fused kernel,
    the hidden oracle's start in the evaluation's episode 0 included."""
    config = EvaluationConfig.from_profile("lambdastar2016", mix=mix, protocol=protocol, protocol_params=params,
                                           **SMALL)
    environments = generate_environments(config, np.arange(first, first + config.episodes))
    assert_same_runs(play_fused(config, environments, record=True),
                     play_group(plugin_group(config), environments, True))


@pytest.mark.parametrize("mix, protocol, twin_mix, twin_protocol", [
    (f"{LOCAL}:6", "none", "local_search:6", "none"),
    (f"{LOCAL}:6", BROADCAST, "local_search:6", "broadcast"),
    (f"local_search:5", BROADCAST, "local_search:5", "broadcast"),
    (f"{LOCAL}:5,random:2", "stigmergy", "local_search:5,random:2", "stigmergy"),
    (f"{LOCAL}:3,oracle:1", "auction", "local_search:3,oracle:1", "auction"),
    (f"{LOCAL}:7", "hierarchy", "local_search:7", "hierarchy"),
])
@pytest.mark.parametrize("variant", [dict(), dict(observation_range=2, rows=11, cols=9),
                                     dict(env="landscape", landscape_peaks=3)], ids=["default", "range2", "landscape"])
def test_numpy_examples_reproduce_the_builtins(mix, protocol, twin_mix, twin_protocol, variant):
    """Handed the same streams, the NumPy local searcher and broadcast give the built-ins' episodes."""
    config = EvaluationConfig.from_profile("paper", mix=mix, protocol=protocol, **{**SMALL, **variant})
    twin = EvaluationConfig.from_profile("paper", mix=twin_mix, protocol=twin_protocol, **{**SMALL, **variant})
    environments = generate_environments(config, np.arange(config.episodes))
    assert config.uses_plugins and not twin.uses_plugins
    assert_same_runs(play_fused(twin, environments, record=True), play(config, environments, record=True),
                     same_symbols=not protocol.startswith("examples"))


@pytest.mark.parametrize("mix, protocol, twin_mix", [(f"{LOCAL}:4", "none", "local_search:4"),
                                                     (f"{LOCAL}:3,imitation:2", "wisdom", "local_search:3,imitation:2")])
def test_a_plugin_sees_the_2016_reset_field_first(mix, protocol, twin_mix):
    """Under lambdastar2016 a plug-in's first observation is the reset field, as the built-ins' is. The example
    plug-in steps toward a protocol's target spec §5's way (half-way forward), so the built-ins do too here."""
    spec_steps = dict(SMALL, cpp_approach_position=False)
    config = EvaluationConfig.from_profile("lambdastar2016", mix=mix, protocol=protocol, **spec_steps)
    twin = EvaluationConfig.from_profile("lambdastar2016", mix=twin_mix, protocol=protocol, **spec_steps)
    environments = generate_environments(config, np.arange(config.episodes))
    assert_same_runs(play_fused(twin, environments, record=True), play(config, environments, record=True))


def test_numpy_local_search_scores_as_the_builtin_on_2000_environments():
    """The issue's acceptance figure: the same per-episode scores on 2000 environments (10x10,
    T=200, 10 agents), here identical to the bit."""
    settings = dict(group_size=10, rows=10, cols=10, iterations=200, episodes=2000, seed=3)
    ours = evaluate(EvaluationConfig.from_profile("paper", behaviour=LOCAL, **settings))
    builtin = evaluate(EvaluationConfig.from_profile("paper", behaviour="local_search", **settings))
    assert ours.estimate == builtin.estimate
    assert builtin.estimate.upsilon > 0.3  # a local searcher scores well above the random agent's 0


def test_conformance_suite_passes_on_the_examples():
    check_behaviour(LOCAL)
    check_protocol(BROADCAST, mix=f"{LOCAL}:3,random:1")
    check_protocol(BROADCAST, mix="local_search:3")


class Homing:
    """A plug-in that walks toward its protocol's target, else stays put."""

    parameters = (Parameter("patience", 3, "iterations to wait", low=0, high=100),)

    def __init__(self, patience):
        self.patience = patience

    def reset(self, batch):
        self.cols, self.rows = batch.cols, batch.rows

    def act(self, obs):
        row, col = np.divmod(obs.cell, self.cols)
        target_row, target_col = np.divmod(np.where(obs.target >= 0, obs.target, obs.cell), self.cols)
        step = lambda a, b, n: np.where((b - a) % n == 0, 0, np.where(2 * ((b - a) % n) <= n, 1, -1))  # noqa: E731
        return (step(row, target_row, self.rows) + 1) * 3 + step(col, target_col, self.cols) + 1


class Beacon:
    """Points every member at the first member's cell and adds a field to its windows."""

    def communicate(self, obs):
        target = np.repeat(obs.cell[:, :1], obs.cell.shape[1], axis=1)
        return Messages(target=target, field=np.ones(obs.window.shape), messages=1.0, bits=8.0)


def chebyshev(a, b, rows, cols):
    (ar, ac), (br, bc) = np.divmod(a, cols), np.divmod(b, cols)
    dr, dc = np.abs(ar - br), np.abs(ac - bc)
    return np.maximum(np.minimum(dr, rows - dr), np.minimum(dc, cols - dc))


def test_user_behaviours_mix_with_builtins_under_builtin_and_user_protocols():
    mix = f"{__name__}:Homing:2,local_search:3"
    config = EvaluationConfig.from_profile("paper", mix=mix, protocol="broadcast", behaviour_params=(("patience", "4"),),
                                           **SMALL)
    assert config.protocol_members.tolist() == [False, False, True, True, True]  # Homing does not join broadcast
    run = play(config, generate_environments(config, np.arange(4)), record=True)
    assert np.all(run.positions[:, :, :2] == run.positions[:, :1, :2])  # no target: the Homing agents stay put
    assert run.messages == 4 * SMALL["iterations"] * 3 * 2  # the searchers broadcast, m(m-1) per iteration
    beacon = EvaluationConfig.from_profile("paper", mix=mix, protocol=f"{__name__}:Beacon", **SMALL)
    assert beacon.protocol_members.all()  # members = None: everyone
    run = play(beacon, generate_environments(beacon, np.arange(4)), record=True)
    assert (run.messages, run.bits) == (SMALL["iterations"], 8 * SMALL["iterations"])  # Beacon counts 1 per call
    leader = run.positions[:, :, 0]  # pointed at its own cell, agent 0 stays put
    assert np.all(leader == leader[:, :1])
    for follower in (1, 2):  # a Homing agent and a built-in searcher walk to agent 0, one step each iteration
        distance = chebyshev(run.positions[:, :, follower], leader, SMALL["rows"], SMALL["cols"])
        assert np.all(np.diff(distance, axis=1) == -np.minimum(distance[:, :-1], 1))


def test_plugin_parameters_are_declared_and_checked():
    with pytest.raises(ConfigError, match="behaviour_params.*declares 'speed'"):
        EvaluationConfig.from_profile("paper", behaviour=f"{__name__}:Homing", behaviour_params=(("speed", "2"),))
    with pytest.raises(ConfigError, match=r"patience must be a number in \[0, 100\]"):
        EvaluationConfig.from_profile("paper", behaviour=f"{__name__}:Homing", behaviour_params=(("patience", "-1"),))


class NoAct:
    pass


class WrongShape:
    def act(self, obs):
        return np.zeros(obs.cell.shape[0], np.int64)


class FloatActions:
    def act(self, obs):
        return np.zeros(obs.cell.shape)


class OutOfRange:
    def act(self, obs):
        return np.full(obs.cell.shape, 9)


class Raises:
    def act(self, obs):
        raise RuntimeError("boom")


class NaNField:
    def communicate(self, obs):
        return Messages(field=np.full(obs.window.shape, np.nan))


class NotMessages:
    def communicate(self, obs):
        return {"target": obs.cell}


@pytest.mark.parametrize("behaviour, field, match", [
    ("no_such_module:Agent", "behaviour", "cannot import 'no_such_module'"),
    (f"{__name__}:Missing", "behaviour", "has no class 'Missing'"),
    (f"{__name__}:NoAct", "behaviour", "NoAct.act.*needs a method act"),
    ("nonsense", "behaviour", "unknown behaviour 'nonsense'"),
])
def test_unloadable_behaviours_are_config_errors(behaviour, field, match):
    with pytest.raises(ConfigError, match=match) as error:
        EvaluationConfig.from_profile("paper", behaviour=behaviour)
    assert error.value.field == field


@pytest.mark.parametrize("behaviour, protocol, method, match", [
    ("WrongShape", "none", "act", r"shaped \(4,\); expected \(episodes, agents\) = \(4, 2\)"),
    ("FloatActions", "none", "act", "dtype float64; expected integers"),
    ("OutOfRange", "none", "act", "in 9..9; the nine actions are 0..8"),
    ("Raises", "none", "act", "raised RuntimeError: boom"),
    ("Homing", "NaNField", "communicate", "NaN"),
    ("Homing", "NotMessages", "communicate", "returned dict; expected collective.Messages"),
])
def test_misbehaving_plugins_fail_at_the_first_batch_naming_plugin_and_method(behaviour, protocol, method, match):
    config = EvaluationConfig.from_profile("paper", behaviour=f"{__name__}:{behaviour}", group_size=2,
                                           protocol=protocol if protocol == "none" else f"{__name__}:{protocol}",
                                           rows=6, cols=6, iterations=5, episodes=4)
    with pytest.raises(PluginError, match=match) as error:
        evaluate(config)
    assert error.value.method == method


def test_kernel_learners_are_refused_beside_plugins():
    with pytest.raises(ConfigError, match="q_learning trains in passes inside the fused kernel"):
        EvaluationConfig.from_profile("paper", mix=f"{LOCAL}:2,q_learning:1")


def test_a_class_cannot_reach_an_unused_kernel_code():
    """Registering a class under a kernel code silently ran the Q-learner on an empty table."""
    from collective.behaviours import Behaviour, register
    from collective.protocols import Protocol, register as register_protocol

    class Impostor(Behaviour):
        name, code, description = "impostor", 9, "no kernel rule"

    with pytest.raises(PluginError, match="needs a method act"):
        register(Impostor)

    class Talker(Protocol):
        name, code, description = "talker", 3, "a kernel code it does not own"

    with pytest.raises(PluginError, match="needs a method communicate"):
        register_protocol(Talker)


class Counter:
    """A persistent plug-in: counts the batches it has seen and stands still."""

    persistent = True

    def __init__(self):
        self.batches = 0

    def reset(self, batch):
        self.batches += 1

    def act(self, obs):
        return np.full(obs.cell.shape, 4)


def test_persistent_plugins_keep_their_object_across_an_evaluation():
    config = EvaluationConfig.from_profile("paper", behaviour=f"{__name__}:Counter", rows=6, cols=6, iterations=5,
                                           episodes=10)
    group = plugin_group(config)
    for first in range(0, 10, 3):
        play(config, generate_environments(config, np.arange(first, min(first + 3, 10))), group=group)
    assert group.persistent and group.behaviours[0].instance.batches == 4


@pytest.mark.parametrize("mix, protocol", [("q_learning:1,local_search:2,random:1", "none"),
                                           ("sarsa:2,q_learning:1", "shared_q"), ("local_search:3,oracle:1", "wisdom"),
                                           ("local_search:3", "none")])
def test_per_agent_scores_are_each_agents_mean_reward(mix, protocol):
    """The kernel's per-agent totals (a mix's focal and background scores) against its recorded
    rewards; a homogeneous group skips them and reports R̄ for every agent."""
    config = EvaluationConfig.from_profile("paper", mix=mix, protocol=protocol, q_training_passes=5, **SMALL)
    run = play(config, generate_environments(config, np.arange(config.episodes)), record=True)
    if len(set(config.behaviours)) == 1:
        assert run.agent_scores is None
    else:
        assert np.allclose(run.agent_scores, run.rewards.mean(axis=1), rtol=0, atol=1e-12)


def test_a_plugin_without_a_source_file_has_an_empty_digest(monkeypatch):
    """A class defined where no file is (a notebook) still plays; its rows record no digest."""
    import types

    from collective.simulation.plugins import PluginClass

    module = types.ModuleType("notebook_cell")
    monkeypatch.setitem(__import__("sys").modules, "notebook_cell", module)
    inline = type("Inline", (), {"act": lambda self, obs: np.full(obs.cell.shape, 4), "__module__": "notebook_cell"})
    assert PluginClass("notebook_cell:Inline", inline, builtin=False).source_digest == ""
    assert PluginClass(LOCAL, __import__("examples.numpy_local_search").numpy_local_search.LocalSearch,
                       builtin=False).source_digest != ""
