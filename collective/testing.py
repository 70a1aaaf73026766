"""The conformance suite for behaviours and protocols, built-in or yours (like PettingZoo's
`parallel_api_test`): run it on your plug-in before you measure with it.

    from collective.testing import check_behaviour, check_protocol
    check_behaviour("my_pkg.agents:Homing")                             # alone, then in a mix
    check_protocol("my_pkg.talk:Gossip", mix="my_pkg.agents:Homing:3")

Each check plays small batches through `collective.evaluate.play` (the fused kernel for built-ins,
the stepping core for plug-ins) and raises AssertionError saying what failed: shapes, legal moves
(king moves on the torus, spec §1), R̄ as the mean reward (paper 003 Definition 2), determinism
under a seed, independence of the batch size (episode e plays the same whichever batch holds it),
no state leaking from one batch of a fresh-start plug-in to the next, real rewards untouched by
any protocol (each reward is R of the agent's cell from ⊕/⊖, spec §1, §6), and traffic counted.
A plug-in that declares `persistent = True` keeps state across batches by design; the checks of
batch-size independence and leaking are then skipped.
"""
from __future__ import annotations

import numpy as np

from collective.config import EvaluationConfig
from collective.evaluate import evaluate, generate_environments, play, plugin_group
from collective.simulation.reference import ReferenceWorld

ROWS, COLS, ITERATIONS, EPISODES = 6, 8, 30, 12


def check_behaviour(behaviour: str, params: tuple[tuple[str, str], ...] = (), group_size: int = 3,
                    seed: int = 11) -> None:
    """A behaviour (registered name or import path, with `params` for a plug-in) alone in a group
    of `group_size`, and beside a random agent and a local searcher."""
    settings = dict(rows=ROWS, cols=COLS, iterations=ITERATIONS, episodes=EPISODES, seed=seed, q_training_passes=5,
                    behaviour_params=params)
    _check_group(EvaluationConfig.from_profile("paper", behaviour=behaviour, group_size=group_size, **settings))
    _check_group(EvaluationConfig.from_profile("paper", mix=f"{behaviour}:2,random:1,local_search:1", **settings))


def check_protocol(protocol: str, mix: str = "local_search:3,random:1", params: tuple[tuple[str, str], ...] = (),
                   behaviour_params: tuple[tuple[str, str], ...] = (), seed: int = 21) -> None:
    """A protocol (registered name or import path) over the group `mix`, on Λ* and on a landscape."""
    for env in ("lambda_star", "landscape"):
        _check_group(EvaluationConfig.from_profile(
            "paper", mix=mix, protocol=protocol, protocol_params=params, behaviour_params=behaviour_params,
            rows=7, cols=9, iterations=ITERATIONS, episodes=EPISODES, seed=seed, q_training_passes=4, env=env,
            landscape_peaks=3), protocol=protocol)


def _check_group(config: EvaluationConfig, protocol: str = "none") -> None:
    label = f"{config.mix or config.behaviour} under {protocol} ({config.env})"
    agents, episodes, iterations = config.group_size, config.episodes, config.iterations
    environments = generate_environments(config, np.arange(episodes))
    run = play(config, environments, record=True)
    _expect(run.mean_rewards.shape == (episodes,), label, f"R̄ shaped {run.mean_rewards.shape}, not ({episodes},)")
    _expect(run.positions.shape == (episodes, iterations + 1, agents), label, "positions not (episodes, T+1, agents)")
    _expect(run.rewards.shape == (episodes, iterations, agents), label, "rewards not (episodes, T, agents)")
    n_cells = config.rows * config.cols
    _expect(run.positions.min() >= 0 and run.positions.max() < n_cells, label, "an agent left the grid")
    _expect(np.array_equal(run.positions[:, 0], environments.starts), label, "agents did not start on their start cells")
    rows, cols = np.divmod(run.positions, config.cols)
    for moved, size in ((np.abs(np.diff(rows, axis=1)), config.rows), (np.abs(np.diff(cols, axis=1)), config.cols)):
        _expect(np.all(np.minimum(moved, size - moved) <= 1), label, "a move that is not a king move (spec §1)")
    _expect(np.allclose(run.mean_rewards, run.rewards.mean(axis=(1, 2)), rtol=0, atol=1e-12), label,
            "R̄ is not the mean reward per agent and iteration (paper 003 Definition 2)")
    if config.coordination_threshold == 1:  # rewards are R of the agent's cell, whatever was said (spec §1, §6)
        _check_real_rewards(config, environments, run, label)
    again = play(config, generate_environments(config, np.arange(episodes)), record=True)
    _expect(np.array_equal(run.positions, again.positions) and np.array_equal(run.rewards, again.rewards), label,
            "not deterministic under a seed")
    _expect((run.messages, run.bits) == (again.messages, again.bits), label, "traffic not deterministic under a seed")
    _expect(run.messages >= 0 and run.bits >= 0, label, "negative traffic")
    group = plugin_group(config) if config.uses_plugins else None
    if group is not None and group.persistent:
        return
    split = [play(config, generate_environments(config, np.arange(a, b)), group=group).mean_rewards
             for a, b in ((0, 5), (5, episodes))]  # one group object for both batches: nothing may leak
    _expect(np.array_equal(np.concatenate(split), run.mean_rewards), label,
            "scores depend on the batch size, or state leaks from one batch to the next")
    alone = play(config, generate_environments(config, np.array([episodes - 1, 3])), record=True)
    _expect(np.array_equal(alone.positions[1], run.positions[3]), label, "an episode depends on the others in its batch")
    _expect(evaluate(config, batch_size=5).estimate == evaluate(config, batch_size=episodes).estimate, label,
            "Υ depends on the batch size")


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
                    f"episode {e}, iteration {t}: rewards are not R of the agents' cells (spec §1)")


def _expect(condition: bool, label: str, message: str) -> None:
    if not condition:
        raise AssertionError(f"{label}: {message}")
