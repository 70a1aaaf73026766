"""The conformance suite for behaviours and protocols, built-in or yours (like PettingZoo's
`parallel_api_test`): run it on your plug-in before you measure with it.

    from collective.testing import check_behaviour, check_protocol
    check_behaviour("my_pkg.agents:Homing")                             # alone, then in a mix
    check_protocol("my_pkg.talk:Gossip", mix="my_pkg.agents:Homing:3")

Each check plays small batches through `collective.evaluation.play.play` (the fused kernel for built-ins,
the stepping core for plug-ins) and raises AssertionError saying what failed: shapes, legal moves
(king moves on the torus, paper 003 §4.1), R̄ as the mean reward (paper 003 Definition 2), determinism
under a seed, independence of the batch size (episode e plays the same whichever batch holds it),
no state leaking from one batch of a fresh-start plug-in to the next, real rewards untouched by
any protocol (each reward is R of the agent's cell from ⊕/⊖, paper 003 §4.1, §5.2), and traffic counted.
A plug-in that declares `persistent = True` keeps state across batches by design; the checks of
batch-size independence and leaking are then skipped.

Integrity (issue 24 point 4): the stepping core hands plug-ins read-only observations, so a plug-in
that writes into them (a protocol steering agents through `obs.window`, uncounted) fails here. A
behaviour is decentralised unless it declares `centralised = True`: each agent's action may depend
on its own slice of the observation only. The kit checks it by playing the behaviour beside probes
that see, at every iteration, the same own slice but the other agents' slices of another episode
of the batch: agent i's actions must not change. A declared centralised behaviour is not checked
for it, and every row of its groups records `centralised` (shown in the Υ table). Each check
prints one line when it passes (`say`, default print).
"""
from __future__ import annotations

import numpy as np

from collections.abc import Callable

from collective.behaviours import load_behaviour
from collective.config import EvaluationConfig
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments
from collective.evaluation.fused_kernel import kernel_switches
from collective.evaluation.play import play
from collective.evaluation.stepping_group import plugin_group
from collective.simulation.plugins import Observation, PluginError
from collective.simulation.reference import ReferenceWorld
from collective.simulation.stepping import SteppingCore, checked_actions, read_only

ROWS, COLS, ITERATIONS, EPISODES = 6, 8, 30, 12


def check_behaviour(behaviour: str, params: tuple[tuple[str, str], ...] = (), group_size: int = 3,
                    seed: int = 11, say: Callable[[str], None] = print) -> None:
    """A behaviour (registered name or import path, with `params` for a plug-in) alone in a group
    of `group_size`, checked to be decentralised there, and beside a random agent and a local searcher."""
    settings = dict(rows=ROWS, cols=COLS, iterations=ITERATIONS, episodes=EPISODES, seed=seed, q_training_passes=5,
                    behaviour_params=params)
    alone = EvaluationConfig.from_profile("paper", behaviour=behaviour, group_size=group_size, **settings)
    _check_group(alone, say=say)
    _check_decentralised(alone, behaviour, say)
    _check_group(EvaluationConfig.from_profile("paper", mix=f"{behaviour}:2,random:1,local_search:1", **settings),
                 say=say)


def check_protocol(protocol: str, mix: str = "local_search:3,random:1", params: tuple[tuple[str, str], ...] = (),
                   behaviour_params: tuple[tuple[str, str], ...] = (), seed: int = 21,
                   say: Callable[[str], None] = print) -> None:
    """A protocol (registered name or import path) over the group `mix`, on Λ* and on a landscape."""
    for env in ("lambda_star", "landscape"):
        _check_group(EvaluationConfig.from_profile(
            "paper", mix=mix, protocol=protocol, protocol_params=params, behaviour_params=behaviour_params,
            rows=7, cols=9, iterations=ITERATIONS, episodes=EPISODES, seed=seed, q_training_passes=4, env=env,
            landscape_peaks=3), protocol=protocol, say=say)


def _check_decentralised(config: EvaluationConfig, behaviour: str, say: Callable[[str], None]) -> None:
    """Agent i's actions do not change when only the other agents' observations do: a probe copy of the
    behaviour, on its own core moved by the honest copy's actions, sees at every iteration agent i's own
    slice and the other agents' slices of the next episode of the batch (rewards passed to `observe` too)."""
    label = f"{behaviour} x{config.group_size} under none ({config.env})"
    plugin = load_behaviour(behaviour)
    if plugin.centralised:
        say(f"ok   {label}: declares centralised = True (not checked for decentralisation; rows record it)")
        return
    if plugin.builtin and getattr(plugin.cls, "learns", False):
        say(f"skip {label}: decentralised by construction (a kernel learner: one table per agent, paper 003 §5.2)")
        return
    environments = generate_environments(config, np.arange(config.episodes))

    def started():
        c = config
        core = SteppingCore(environments, c.group_size, c.rows, c.cols, c.iterations, c.observation_range,
                            c.reward_radius, c.coordination_threshold, kernel_switches(c, None))
        [member] = plugin_group(c).behaviours
        member.reset(core)
        return core, member

    honest, probes = started(), [started() for _ in range(config.group_size)]
    listens = callable(getattr(honest[1].instance, "observe", None))
    for t in range(config.iterations):
        actions = _acted(honest[1], honest[0].observe(), label)
        for i, (core, member) in enumerate(probes):
            probed = _acted(member, _others_elsewhere(core.observe(), i), label)
            _expect(np.array_equal(probed[:, i], actions[:, i]), label,
                    f"agent {i}'s action at iteration {t} changed when only the other agents' observations did: "
                    f"a behaviour acts on each agent's own slice, or declares centralised = True")
        for i, (core, member) in enumerate(probes):
            rewards = core.step(actions)
            if listens:
                member.instance.observe(_others_elsewhere_rows(rewards, i))
        rewards = honest[0].step(actions)
        if listens:
            honest[1].instance.observe(rewards)
    say(f"ok   {label}: each agent's actions depend on its own observation only (others' perturbed, "
        f"{config.episodes} episodes x {config.iterations} iterations)")


def _acted(member, obs: Observation, label: str) -> np.ndarray:
    try:
        return checked_actions(member.instance.act(obs), member.plugin.spec, obs.cell.shape)
    except (PluginError, ValueError) as error:
        raise AssertionError(f"{label}: {error}") from error


def _others_elsewhere_rows(array: np.ndarray, agent: int) -> np.ndarray:
    """array (E, A, ...) with every agent but `agent` taken from the next episode (cyclically)."""
    out = np.roll(array, -1, axis=0)
    out[:, agent] = array[:, agent]
    return out


def _others_elsewhere(obs: Observation, agent: int) -> Observation:
    """The observation with agent `agent`'s slice as it is and the others' from the next episode."""
    return read_only(Observation(*(_others_elsewhere_rows(getattr(obs, name), agent) for name in ("window", "cell")),
                                 obs.t, *(_others_elsewhere_rows(getattr(obs, name), agent)
                                          for name in ("reward", "target", "field"))))


def _check_group(config: EvaluationConfig, protocol: str = "none", say: Callable[[str], None] = print) -> None:
    label = f"{config.mix or config.behaviour} under {protocol} ({config.env})"
    agents, episodes, iterations = config.group_size, config.episodes, config.iterations
    environments = generate_environments(config, np.arange(episodes))
    try:
        run = play(config, environments, record=True)
    except PluginError as error:  # a plug-in writing into its read-only observation lands here too
        raise AssertionError(f"{label}: {error}") from error
    _expect(run.mean_rewards.shape == (episodes,), label, f"R̄ shaped {run.mean_rewards.shape}, not ({episodes},)")
    _expect(run.positions.shape == (episodes, iterations + 1, agents), label, "positions not (episodes, T+1, agents)")
    _expect(run.rewards.shape == (episodes, iterations, agents), label, "rewards not (episodes, T, agents)")
    say(f"ok   {label}: played {episodes} episodes without writing into its read-only observations; shapes")
    n_cells = config.rows * config.cols
    _expect(run.positions.min() >= 0 and run.positions.max() < n_cells, label, "an agent left the grid")
    _expect(np.array_equal(run.positions[:, 0], environments.starts), label, "agents did not start on their start cells")
    rows, cols = np.divmod(run.positions, config.cols)
    for moved, size in ((np.abs(np.diff(rows, axis=1)), config.rows), (np.abs(np.diff(cols, axis=1)), config.cols)):
        _expect(np.all(np.minimum(moved, size - moved) <= 1), label, "a move that is not a king move (paper 003 §4.1)")
    say(f"ok   {label}: start cells, king moves on the torus (paper 003 §4.1)")
    _expect(np.allclose(run.mean_rewards, run.rewards.mean(axis=(1, 2)), rtol=0, atol=1e-12), label,
            "R̄ is not the mean reward per agent and iteration (paper 003 Definition 2)")
    say(f"ok   {label}: R̄ is the mean reward (paper 003 Definition 2)")
    if config.coordination_threshold == 1:  # rewards are R of the agent's cell, whatever was said (paper 003 §4.1, §5.2)
        _check_real_rewards(config, environments, run, label)
        say(f"ok   {label}: every reward is R of the agent's cell, whatever was said (paper 003 §4.1, §5.2)")
    again = play(config, generate_environments(config, np.arange(episodes)), record=True)
    _expect(np.array_equal(run.positions, again.positions) and np.array_equal(run.rewards, again.rewards), label,
            "not deterministic under a seed")
    _expect((run.messages, run.bits) == (again.messages, again.bits), label, "traffic not deterministic under a seed")
    _expect(run.messages >= 0 and run.bits >= 0, label, "negative traffic")
    say(f"ok   {label}: deterministic under a seed, traffic included; traffic >= 0")
    group = plugin_group(config) if config.uses_plugins else None
    if group is not None and group.persistent:
        say(f"skip {label}: batch-size independence and leaks (a plug-in declares persistent = True)")
        return
    split = [play(config, generate_environments(config, np.arange(a, b)), group=group).mean_rewards
             for a, b in ((0, 5), (5, episodes))]  # one group object for both batches: nothing may leak
    _expect(np.array_equal(np.concatenate(split), run.mean_rewards), label,
            "scores depend on the batch size, or state leaks from one batch to the next")
    alone = play(config, generate_environments(config, np.array([episodes - 1, 3])), record=True)
    _expect(np.array_equal(alone.positions[1], run.positions[3]), label, "an episode depends on the others in its batch")
    _expect(evaluate(config, batch_size=5).estimate == evaluate(config, batch_size=episodes).estimate, label,
            "Υ depends on the batch size")
    say(f"ok   {label}: independent of the batch size; no state leaks between batches")


def _check_real_rewards(config, environments, run, label) -> None:
    worlds = [ReferenceWorld(config.rows, config.cols, config.iterations, config.observation_range,
                             config.reward_radius, landscape=None if environments.landscapes is None else tuple(field))
              for field in (environments.landscapes if environments.landscapes is not None else [None])]
    for e in range(config.episodes):
        world = worlds[e if environments.landscapes is not None else 0]
        good, evil = environments.good[e].tolist(), environments.evil[e].tolist()
        for t in range(config.iterations):
            pays = world.payoffs(good, evil, t + 1)
            expected = [pays(int(cell)) for cell in run.positions[e, t + 1]]
            _expect(np.array_equal(run.rewards[e, t], expected), label,
                    f"episode {e}, iteration {t}: rewards are not R of the agents' cells (paper 003 §4.1)")


def _expect(condition: bool, label: str, message: str) -> None:
    if not condition:
        raise AssertionError(f"{label}: {message}")
