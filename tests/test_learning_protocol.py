"""What learners train on (issue 12 points 4-5): held-out training episodes, never the scored one,
the same numbers for any batch split, and when SARSA and Q-learning coincide."""
import dataclasses
import tomllib

import numpy as np
import pytest

from collective.cli import main
from collective.config import PROFILES, ConfigError, EvaluationConfig
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluate import evaluate
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play, run_episodes
from collective.simulation.random_streams import AGENT_SEED, episode_seed_table, training_seed_table
from collective.sweeps.plan import generate_block, group_agent_seeds, plan, play_unit
from collective.sweeps.spec import parse_spec
from collective.sweeps.store import row_schema

SMALL = dict(rows=8, cols=8, iterations=30, q_training_passes=20)


def held_out(behaviour="q_learning", **settings) -> EvaluationConfig:
    """The paper profile with held-out training: the protocol alone differs from `paper`."""
    return EvaluationConfig.from_profile("paper", behaviour=behaviour, learning_protocol="held_out",
                                         training_episodes=4, **{**SMALL, **settings})


def test_profiles_and_validation():
    for profile in ("paper", "lambdastar2016"):  # today's behaviour: train on the scored episode
        config = EvaluationConfig.from_profile(profile)
        assert (config.learning_protocol, config.training_episodes, config.q_epsilon) == ("replay", 1, 0.0)
    sound = EvaluationConfig.from_profile("sound")
    assert sound.learning_protocol == "held_out" and sound.training_episodes == 10 and sound.q_epsilon == 0.2
    assert {"learning_protocol", "training_episodes"} <= set(sound.as_record()) <= set(row_schema().names)
    with pytest.raises(ConfigError, match="learning_protocol: unknown value 'memorise'; allowed: replay, held_out"):
        EvaluationConfig.from_profile("paper", learning_protocol="memorise")
    with pytest.raises(ConfigError, match="training_episodes: must be 1 with learning_protocol replay"):
        EvaluationConfig.from_profile("paper", training_episodes=3)
    with pytest.raises(ConfigError, match="training_episodes: at most q_training_passes = 5"):
        EvaluationConfig.from_profile("sound", q_training_passes=5)
    with pytest.raises(ConfigError, match="training_episodes: must be >= 1"):
        EvaluationConfig.from_profile("sound", training_episodes=0)


def test_training_seeds_are_a_branch_of_their_own():
    """No training episode's seeds are a test episode's (nor those of another training episode);
    a training seed row does not depend on which draws are asked for."""
    tests = episode_seed_table(7, np.arange(300), (5,))
    training = np.concatenate([training_seed_table(7, e, np.arange(10), (5,)) for e in range(300)])
    words = [tuple(row) for row in np.concatenate([tests, training])]
    assert len(set(words)) == len(words)
    assert np.array_equal(training_seed_table(7, 3, np.array([12, 2]), (5,)),
                          training_seed_table(7, 3, np.arange(13), (5,))[[12, 2]])


def test_a_learner_is_never_scored_on_an_episode_it_trained_on():
    """Held out: each training episode comes from the training branch of its own episode's key and
    differs from its test episode (start cells, ⊕, ⊖); replay: none are generated."""
    config = held_out()
    episodes = np.arange(40)
    batch = generate_environments(config, episodes)
    training = batch.training
    assert batch.training_episodes == 4 and len(training) == 160
    expected = np.concatenate([training_seed_table(config.seed, e, np.arange(4)) for e in episodes])
    assert np.array_equal(training.agent_seeds, expected[:, AGENT_SEED])
    assert not set(training.agent_seeds) & set(batch.agent_seeds)
    for e in episodes:
        for row in range(4 * e, 4 * e + 4):
            assert not (np.array_equal(training.good[row], batch.good[e]) and
                        np.array_equal(training.starts[row], batch.starts[e]))
    assert generate_environments(config.with_changes(learning_protocol="replay", training_episodes=1),
                                 episodes).training is None
    assert generate_environments(held_out("local_search"), episodes).training is None  # nobody learns


def test_a_training_draw_equal_to_its_test_episode_is_replaced():
    """On a 3x3 torus with T = 1 a fresh draw repeats its test episode now and then (2 in 200 for
    this seed); the next draw of the branch takes its place, so none is left."""
    config = EvaluationConfig.from_profile("paper", behaviour="q_learning", rows=3, cols=3, iterations=1,
                                           k_min=None, k_max=None, learning_protocol="held_out",
                                           training_episodes=1)
    episodes = np.arange(200)
    batch = generate_environments(config, episodes)
    first_draws = config.environment().generate(
        np.concatenate([training_seed_table(config.seed, e, np.arange(1)) for e in episodes]), 1)

    def repeats(training: EnvironmentBatch) -> np.ndarray:
        return np.flatnonzero([np.array_equal(training.good[e], batch.good[e]) and
                               np.array_equal(training.evil[e], batch.evil[e]) and
                               np.array_equal(training.starts[e], batch.starts[e]) for e in episodes])

    replaced = repeats(first_draws)
    assert len(replaced) > 0 and len(repeats(batch.training)) == 0
    redrawn = np.concatenate([training_seed_table(config.seed, e, np.array([1])) for e in replaced])
    assert np.array_equal(batch.training.agent_seeds[replaced], redrawn[:, AGENT_SEED])


@pytest.mark.parametrize("profile, settings", [
    ("paper", dict(learning_protocol="held_out", training_episodes=3)),
    ("paper", dict(learning_protocol="held_out", training_episodes=5, env="landscape", landscape_peaks=3)),
    ("sound", dict()),
])
def test_same_numbers_for_any_batch_split(profile, settings):
    config = EvaluationConfig.from_profile(profile, mix="q_learning:1,sarsa:1,local_search:1", episodes=23,
                                           **{**SMALL, **settings})
    whole = evaluate(config, batch_size=23)
    for size in (1, 5, 9):
        assert evaluate(config, batch_size=size).estimate == whole.estimate
    # a sweep block cut into units: episodes [7, 15) of a block of [0, 23) play as run on their own
    block = generate_environments(config, np.arange(23))
    unit = run_episodes(config, np.arange(7, 15))
    # a kept table (sound) trains on the cell's own episodes (`trained_tables`), none per test episode
    assert unit.environments.training_episodes == (0 if config.keeps_tables else config.training_episodes)
    assert np.array_equal(play(config, block.episodes(7, 15)).mean_rewards, unit.mean_rewards)


def test_an_observing_learner_carries_what_it_learned_to_unseen_episodes():
    """Paper 003 §5.2.1's learner memorises the scored episode (state (cell, t)): replayed, it
    scores far above random; trained on held-out episodes of the same class its (cell, t) table has
    nothing that carries over to an unseen one, and scores about zero, as a random agent does (the
    negative control). The default learner (issue 21) observes the signs of its window and keeps one
    table trained on held-out episodes: on unseen episodes it scores far above zero."""
    replay = evaluate(EvaluationConfig.from_profile("paper", behaviour="q_learning", episodes=150, **SMALL))
    unseen = evaluate(held_out(episodes=150))
    assert replay.estimate.ci95_low > 0.2
    assert unseen.estimate.ci95_low < 0.05 < replay.estimate.ci95_low - 0.15
    assert abs(unseen.estimate.upsilon) < 0.05
    observing = evaluate(EvaluationConfig.from_profile("sound", behaviour="q_learning", episodes=150,
                                                       training_episodes=100, **{**SMALL, "q_training_passes": 100}))
    assert observing.estimate.ci95_low > unseen.estimate.ci95_high + 0.05


@pytest.mark.parametrize("settings", [
    dict(),
    dict(learning_protocol="held_out", training_episodes=4),
    dict(coordination_threshold=2, group_size=3),
    dict(protocol="shared_q", group_size=3),
    dict(q_initial=2.0, q_reward_scale=10.0),
])
def test_sarsa_is_q_learning_when_training_is_greedy(settings):
    """At ε = 0 SARSA's update is Q-learning's (see the comment on it in the kernel): the same R̄
    in every episode, bit for bit."""
    q_learning, sarsa = (learner_scores("paper", behaviour, settings) for behaviour in ("q_learning", "sarsa"))
    assert np.array_equal(q_learning, sarsa)


def learner_scores(profile: str, behaviour: str, settings: dict) -> np.ndarray:
    """R̄ of 30 episodes of a learner group."""
    config = EvaluationConfig.from_profile(profile, behaviour=behaviour, episodes=30, **{**SMALL, **settings})
    return run_episodes(config, np.arange(30)).mean_rewards


@pytest.mark.parametrize("profile, settings", [("sound", {}), ("paper", dict(q_epsilon=0.1))])
def test_sarsa_differs_from_q_learning_with_exploration(profile, settings):
    """With ε > 0 (sound: 0.1) exploratory next actions make SARSA's target Q(s', a') differ from
    Q-learning's max: the episodes' R̄ differ (the default 100 passes over T = 60)."""
    settings = dict(settings, iterations=60, q_training_passes=100)
    q_learning, sarsa = (learner_scores(profile, behaviour, settings) for behaviour in ("q_learning", "sarsa"))
    assert np.mean(q_learning != sarsa) > 0.5 and q_learning.mean() != sarsa.mean()


def test_the_scored_pass_is_greedy():
    """Exploration is for training only: with ε = 1 the training passes act at random, yet the
    scored pass follows the learnt table greedily and scores far above a random walk (R̄ ≈ 0)."""
    config = EvaluationConfig.from_profile("paper", behaviour="q_learning", q_epsilon=1.0, episodes=100,
                                           **{**SMALL, "q_training_passes": 100})
    assert evaluate(config).estimate.ci95_low > 0.2


def test_behaviours_listing_says_when_the_learners_coincide(capsys):
    assert main(["behaviours"]) == 0
    listing = capsys.readouterr().out
    assert "q_learning and sarsa coincide exactly when training is greedy (epsilon 0" in listing
    assert f"profile sound: {PROFILES['sound']['q_epsilon']}" in listing


HELD_OUT_SPEC = """
seed = 3
profile = "paper"
episodes = 12
iterations = 20

[factors]
grid = ["6x6"]
group_size = [1, 2]

[groups]
behaviours = ["random", "q_learning"]

[settings]
learning_protocol = "held_out"
training_episodes = 3
q_training_passes = 6
"""


def test_a_sweep_block_carries_its_cells_training_episodes():
    """A block holds its episodes' training episodes, shared by the cell's groups; a unit plays
    exactly what a fresh generation of its episodes gives, and its rows record the protocol."""
    spec = parse_spec(tomllib.loads(HELD_OUT_SPEC), "held_out")
    for block in plan(spec):
        cell = spec.cells[block.cell]
        environments = generate_block(spec, block)
        assert environments.training_episodes == 3
        for unit in block.units:
            rows = play_unit(spec, unit, environments).to_pandas()
            assert set(rows["learning_protocol"]) == {"held_out"} and set(rows["training_episodes"]) == {3}
            episodes = np.arange(unit.first, unit.stop)
            for g in unit.groups:
                config, group = cell.configs[g], spec.groups[g]
                fresh = generate_environments(config, episodes, seed_prefix=(cell.seed_key,), training=True)
                seeds = group_agent_seeds(spec.seed, cell.seed_key, episodes, group.key)
                expected = play(config, dataclasses.replace(fresh, agent_seeds=seeds)).mean_rewards
                assert np.array_equal(rows[rows["group"] == group.label]["score"].to_numpy(), expected)
