"""Every registered behaviour passes the conformance suite; statistical facts from the papers
hold (seeded, with tolerances well outside sampling noise)."""
import pytest

from collective.testing import check_behaviour
from collective.behaviours import behaviour_names
from collective.config import EvaluationConfig
from collective.evaluate import evaluate


@pytest.mark.parametrize("name", behaviour_names())
def test_conformance(name):
    check_behaviour(name)


def upsilon(behaviour, **settings):
    config = EvaluationConfig.from_profile(settings.pop("profile", "paper"), behaviour=behaviour, **settings)
    return evaluate(config).estimate


def test_random_agent_scores_zero():
    """Balanced environments (paper 000 Definition 13): a random agent's Υ is 0 in expectation."""
    estimate = upsilon("random", episodes=6000, iterations=100, seed=1)
    assert abs(estimate.upsilon) < 0.01
    assert estimate.ci95_low < 0 < estimate.ci95_high


def test_random_group_scores_zero_on_reference_profile():
    assert abs(upsilon("random", profile="lambdastar2016", group_size=5, episodes=5000, iterations=100,
                       seed=2).upsilon) < 0.01


def test_oracle_is_near_the_top():
    assert upsilon("oracle", episodes=500, seed=3).upsilon > 0.9


def test_local_search_between_random_and_oracle():
    local = upsilon("local_search", episodes=1000, seed=4).upsilon
    oracle = upsilon("oracle", episodes=1000, seed=4).upsilon
    assert 0.1 < local < oracle - 0.1


def test_local_search_falls_as_the_grid_grows():
    """Paper 003 §4.3: a larger search space (higher H) is harder for a searcher that sees 3x3."""
    small = upsilon("local_search", rows=10, cols=10, episodes=2000, seed=5)
    large = upsilon("local_search", rows=20, cols=20, episodes=2000, seed=5)
    assert large.ci95_high < small.ci95_low


def test_q_learning_learns():
    """Algorithm 1 after 100 training passes: far above random, below the oracle."""
    estimate = upsilon("q_learning", episodes=60, iterations=100, seed=6)
    assert 0.2 < estimate.upsilon < 0.9


def test_greedy_sarsa_equals_q_learning_and_exploring_sarsa_differs():
    """With a greedy policy the SARSA target Q(s', a') is max Q(s', ·), the Q-learning target,
    so the two coincide exactly (Sutton & Barto §6.4-6.5); ε-exploration separates them."""
    settings = dict(episodes=20, iterations=60, seed=7, q_training_passes=30)
    assert upsilon("sarsa", **settings) == upsilon("q_learning", **settings)
    exploring = dict(settings, q_epsilon=0.2)
    assert upsilon("sarsa", **exploring).upsilon != upsilon("q_learning", **exploring).upsilon


def test_lone_agent_loses_reward_to_coordination_threshold():
    """Paper 003 §6.1: Good pays only when q agents are near it; alone, an agent cannot earn it."""
    free = upsilon("oracle", episodes=200, seed=8)
    coordinated = upsilon("oracle", episodes=200, seed=8, coordination_threshold=2)
    assert coordinated.upsilon <= 0 < free.upsilon
