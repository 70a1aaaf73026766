"""Protocols (spec §6): conformance of every plug-in, exact semantics on hand-built tiny grids,
communication costs, and seeded paired tests that each mechanism does what it is for."""
import math

import numpy as np
import pytest

from collective.config import ConfigError, EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
from collective.environments.lambda_star import EnvironmentBatch
from collective.simulation.reference import ReferenceWorld
from collective.testing import check_protocol
from collective.protocols import get_protocol, protocol_names

FITTING_GROUPS = {"none": "local_search:2,random:1", "shared_q": "q_learning:2,sarsa:1",
                  "hierarchy": "local_search:5,oracle:1"}


@pytest.mark.parametrize("name", protocol_names())
def test_conformance(name):
    check_protocol(name, FITTING_GROUPS.get(name, "local_search:3,random:1"))


@pytest.mark.parametrize("name, params", [("stigmergy", (("form", "reference"),)), ("auction", (("sticky", "true"),)),
                                          ("broadcast", (("memory", "true"),)), ("dictatorship", (("dictator", "1"),))])
def test_conformance_of_variants(name, params):
    check_protocol(name, "local_search:3", params)


# ---- exact semantics: one or two iterations on a 7x7 grid, cells (row, col) -> row*7 + col ----

def cell(r, c, cols=7):
    return r * cols + c


def scenario(protocol, starts, good, evil=cell(6, 6), iterations=1, params=(), seeds=range(12), rows=7, cols=7):
    """Play `len(seeds)` copies of one hand-built episode (⊕ path `good`, ⊖ fixed, agents at
    `starts`) that differ only in the agents' random streams; returns positions (episodes, T+1, agents)."""
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", group_size=len(starts), rows=rows,
                                           cols=cols, iterations=iterations, protocol=protocol,
                                           protocol_params=params)
    n = len(seeds)
    good_path = np.array(good if isinstance(good, list) else [good] * (iterations + 1), np.int32)
    env = EnvironmentBatch(np.tile(good_path, (n, 1)), np.full((n, iterations + 1), evil, np.int32),
                           np.tile(np.array(starts, np.int32), (n, 1)), np.array(list(seeds), np.uint64),
                           np.ones(n, np.int32), np.ones(n))
    return play(config, env, record=True)


def rc(position, cols=7):
    return divmod(int(position), cols)


def test_stigmergy_paper_form_pulls_a_blind_neighbour_toward_the_deposit():
    """A at (3,2) sees ⊕ at (3,3): r̂ = 0.5·1 + 0.5·0 = 0.5 on its window. B at (3,0) sees only
    zeros (its own r̂ = 0), so its window's column 1, shared with A, scores 0.5 and wins:
    B always steps right (Algorithm 2)."""
    run = scenario("stigmergy", [cell(3, 2), cell(3, 0)], good=cell(3, 3))
    assert all(rc(p)[1] == 1 for p in run.positions[:, 1, 1])
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 1, 0])  # A steps onto ⊕
    alone = scenario("none", [cell(3, 2), cell(3, 0)], good=cell(3, 3))
    assert len({rc(p)[1] for p in alone.positions[:, 1, 1]}) > 1  # without it, B goes anywhere


def test_stigmergy_reference_form():
    """Reference form: A's fr = 0.4·(1 + 0) makes F = (0 + R + 0.4)/3 on its window (0.467 on ⊕'s
    cell, 0.133 on the zero cells); B's fr = 0 deposits nothing, so B heads for the shared column."""
    run = scenario("stigmergy", [cell(3, 2), cell(3, 0)], good=cell(3, 3), params=(("form", "reference"),))
    assert all(rc(p)[1] == 1 for p in run.positions[:, 1, 1])
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 1, 0])
    assert run.messages == 12 and run.bits == 12 * 9 * 64  # one deposit (A's) per episode


@pytest.mark.parametrize("memory", ["false", "true"])
def test_broadcast_sends_everyone_to_the_best_reported_cell(memory):
    """A at (3,2) reports ⊕'s cell (3,3) with reward 1; B at (0,6) far away heads for it the
    shorter way round: rows 0 -> 3 go down, columns 6 -> 3 go left."""
    run = scenario("broadcast", [cell(3, 2), cell(0, 6)], good=cell(3, 3), params=(("memory", memory),))
    assert all(int(p) == cell(1, 5) for p in run.positions[:, 1, 1])
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 1, 0])


def test_wisdom_remembers_what_nobody_sees_any_more():
    """A at (3,2) sees ⊕ at (3,3) at t = 0; then ⊕ jumps out of everyone's sight to (5,0) (a
    hand-built path): the map still holds A(3,3) = (0 + 1)/2, its best value, so at t = 1 both
    agents keep heading there: A stays, B goes on from (1,5) to (2,4)."""
    run = scenario("wisdom", [cell(3, 2), cell(0, 6)], good=[cell(3, 3), cell(5, 0), cell(5, 0)],
                   iterations=2, evil=cell(6, 6))
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 2, 0])
    assert all(int(p) == cell(1, 5) for p in run.positions[:, 1, 1])
    assert all(int(p) == cell(2, 4) for p in run.positions[:, 2, 1])
    forgetful = scenario("broadcast", [cell(3, 2), cell(0, 6)], good=[cell(3, 3), cell(5, 0), cell(5, 0)],
                         iterations=2, evil=cell(6, 6))
    assert len({int(p) for p in forgetful.positions[:, 2, 1]}) > 1  # without memory B loses the trail


def test_auction_and_its_sticky_variant():
    """t=0: A at (3,2) bids 1 for (3,3) and wins; everyone heads there. t=1: ⊕ has jumped out of
    sight, every bid is 0 and A (first among equals) wins with a random cell of its window: the
    plain auction sends A there, the sticky one keeps the old best bid's (3,3)."""
    path = [cell(3, 3), cell(6, 0), cell(6, 0)]
    sticky = scenario("auction", [cell(3, 2), cell(0, 6)], good=path, iterations=2, evil=cell(0, 0),
                      params=(("sticky", "true"),))
    assert all(int(p) == cell(3, 3) for p in sticky.positions[:, 2, 0])  # A stays on (3,3)
    assert all(int(p) == cell(2, 4) for p in sticky.positions[:, 2, 1])
    plain = scenario("auction", [cell(3, 2), cell(0, 6)], good=path, iterations=2, evil=cell(0, 0))
    assert all(int(p) == cell(1, 5) for p in plain.positions[:, 1, 1])  # t=0 as before
    assert len({int(p) for p in plain.positions[:, 2, 0]}) > 1  # then A's own random pick


def test_dictatorship_follows_the_dictator_even_when_another_sees_more():
    """dictator=1 is B, far from ⊕: A, next to ⊕, must head for B's pick, a cell of B's window."""
    world = ReferenceWorld(7, 7, 1)
    b_window = [c for c, _, _ in world.window(cell(0, 6))]
    run = scenario("dictatorship", [cell(3, 2), cell(0, 6)], good=cell(3, 3), params=(("dictator", "1"),))
    for a in run.positions[:, 1, 0]:
        assert int(a) != cell(3, 3)
        assert int(a) in {world.step_toward(cell(3, 2), target) for target in b_window}
    truthful = scenario("dictatorship", [cell(3, 2), cell(0, 6)], good=cell(3, 3))
    assert all(int(p) == cell(1, 5) for p in truthful.positions[:, 1, 1])


def test_hierarchy_reports_flow_to_the_parent_only():
    """Ranks 1, 2, 3 = agents 0, 1, 2; rank 3 reports to rank 1. Agent 2 at (3,2) sees ⊕ at (3,3):
    agent 0 (its parent) heads there; agent 1 (a sibling, no children) does not learn of it."""
    run = scenario("hierarchy", [cell(0, 0), cell(6, 4), cell(3, 2)], good=cell(3, 3), evil=cell(6, 0))
    assert all(int(p) == cell(1, 1) for p in run.positions[:, 1, 0])
    assert all(int(p) == cell(3, 3) for p in run.positions[:, 1, 2])
    assert len({int(p) for p in run.positions[:, 1, 1]}) > 1


# ---- communication costs (messages per iteration, spec §6) ----

@pytest.mark.parametrize("name, messages", [("broadcast", lambda m: m * (m - 1)), ("auction", lambda m: m * (m - 1)),
                                            ("dictatorship", lambda m: m - 1), ("hierarchy", lambda m: m - 1),
                                            ("stigmergy", lambda m: m)])
def test_message_counts(name, messages):
    config = EvaluationConfig.from_profile("paper", mix="local_search:5,oracle:2", protocol=name, iterations=20,
                                           episodes=3)
    run = play(config, generate_environments(config, np.arange(3)))
    assert run.messages == 3 * 20 * messages(5)


# ---- configuration: meaningless pairs and bad parameters are refused ----

@pytest.mark.parametrize("settings, field", [
    (dict(behaviour="local_search", protocol="shared_q", group_size=3), "protocol"),
    (dict(behaviour="q_learning", protocol="auction", group_size=3), "protocol"),
    (dict(behaviour="local_search", protocol="hierarchy", group_size=1), "protocol"),
    (dict(behaviour="q_learning", protocol="shared_q", group_size=1), "protocol"),
    (dict(behaviour="local_search", protocol="stigmergy", group_size=3, protocol_params=(("gamma", "1.5"),)),
     "protocol_params"),
    (dict(behaviour="local_search", protocol="auction", group_size=3, protocol_params=(("sticky", "maybe"),)),
     "protocol_params"),
    (dict(behaviour="local_search", protocol="wisdom", group_size=3, protocol_params=(("memory", "false"),)),
     "protocol_params"),
    (dict(behaviour="local_search", protocol="dictatorship", group_size=3, protocol_params=(("dictator", "3"),)),
     "protocol"),
    (dict(behaviour="local_search", protocol="telepathy", group_size=3), "protocol"),
    (dict(mix="local_search:2,oracle:x"), "mix"),
])
def test_invalid_protocol_settings_are_refused(settings, field):
    with pytest.raises(ConfigError) as error:
        EvaluationConfig.from_profile("paper", **settings)
    assert error.value.field == field


def test_reference_profile_selects_reference_forms():
    config = EvaluationConfig.from_profile("lambdastar2016", behaviour="local_search", group_size=3,
                                           protocol="stigmergy")
    assert dict(config.protocol_params)["form"] == "reference"
    auction = EvaluationConfig.from_profile("lambdastar2016", behaviour="local_search", group_size=3,
                                            protocol="auction")
    assert dict(auction.protocol_params)["sticky"] == "true"
    assert get_protocol("wisdom").kernel_values({}) == get_protocol("broadcast").kernel_values({"memory": "true"})


# ---- mechanisms do what they are for (seeded, paired on the same environments) ----

def paired_gain(protocol, params=(), grid=10, behaviour="local_search", episodes=400, iterations=200):
    """Mean per-episode gain in R̄ of the protocol over isolated agents on the same environments, with a
    95% half-width (normal approximation over paired differences)."""
    base = EvaluationConfig.from_profile("paper", behaviour=behaviour, group_size=10, rows=grid, cols=grid,
                                         iterations=iterations, episodes=episodes, seed=17)
    env = generate_environments(base, np.arange(episodes))
    difference = (play(base.with_changes(protocol=protocol, protocol_params=params), env).mean_rewards
                  - play(base, env).mean_rewards)
    return difference.mean(), 1.96 * difference.std(ddof=1) / math.sqrt(episodes)


@pytest.mark.parametrize("protocol, params, grid", [
    ("wisdom", (), 10),
    ("stigmergy", (("form", "reference"),), 10),
    ("stigmergy", (), 20),  # the paper's one-iteration field only links overlapping windows: see docs/concepts.md
    ("broadcast", (), 20),
    ("hierarchy", (), 20),
])
def test_communicating_searchers_beat_isolated_ones(protocol, params, grid):
    gain, half_width = paired_gain(protocol, params, grid)
    assert gain - half_width > 0, f"{protocol}{params} on {grid}x{grid}: gain {gain:+.4f} ± {half_width:.4f}"


def test_shared_table_beats_isolated_q_learning():
    gain, half_width = paired_gain("shared_q", behaviour="q_learning", episodes=40, iterations=100)
    assert gain - half_width > 0, f"gain {gain:+.4f} ± {half_width:.4f}"


def test_coordination_threshold_lowers_a_lone_searchers_score():
    config = EvaluationConfig.from_profile("paper", behaviour="local_search", episodes=300, seed=4)
    env = generate_environments(config, np.arange(300))
    free = play(config, env).mean_rewards.mean()
    coordinated = play(config.with_changes(coordination_threshold=2), env).mean_rewards.mean()
    assert coordinated <= 0 < free - 0.1
