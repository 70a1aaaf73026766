"""The anytime test (spec §8; paper 000 Definitions 18-19): adaptation, interruption, no reuse, CLI."""
import itertools
import json
import math
import signal
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from collective.anytime import (AnytimeConfig, anytime_steps, draw_environment, format_step, format_summary,
                               run_anytime)
from collective.cli import main
from collective.config import ConfigError, EvaluationConfig
from collective.evaluation.play import play
from sweep_support import as_at_a_terminal


def anytime(behaviour, seed=0, **settings):
    return AnytimeConfig(EvaluationConfig.from_profile("paper", behaviour=behaviour, seed=seed), **settings)


def first_steps(config, count):
    return list(itertools.islice(anytime_steps(config), count))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_complexity_climbs_and_random_does_not(seed):
    """Paper 000 §5.2, Table 3: ξ rises with positive rewards; a random agent (expected reward 0 in
    balanced environments, Definition 13) stays at the simplest levels."""
    oracle = first_steps(anytime("oracle", seed), 15)
    random = first_steps(anytime("random", seed), 15)
    assert oracle[-1].xi_next > 10 * oracle[0].xi
    assert max(step.xi for step in random) < 4
    assert oracle[-1].upsilon > 0.5 and abs(random[-1].upsilon) < 0.2


def test_trace_follows_definitions_18_and_19():
    steps = first_steps(anytime("local_search", seed=4), 12)
    budget, budgets = 10, []
    for _ in steps:
        budgets.append(budget)
        budget += budget // 2  # spec §8: n <- n + floor(n/2)
    assert [s.budget for s in steps] == budgets
    # ξ starts at 1, but no pattern of two or more positions has K = 1 (LZ76 '111111111' -> 2,
    # spec §2), so Definition 18's "not found" rule lifts it to 2 before the first environment.
    assert steps[0].xi == 2.0 and steps[0].k == 2
    for before, after in zip(steps, steps[1:]):
        lift = after.xi - before.xi * (1 + before.reward / 2)  # ξ <- ξ + ξ·reward/2, then +1 per "not found"
        assert lift >= -1e-12 and abs(lift - round(lift)) < 1e-9
    for step in steps:  # the environment's K lies in [ξ-1, ξ] unless clamped at the paper's K_max = 23
        assert step.k <= math.floor(step.xi) and (step.k >= step.xi - 1 or step.k == 23)
    rewards = [s.reward for s in steps]
    assert [s.upsilon for s in steps] == pytest.approx([np.mean(rewards[:i + 1]) for i in range(len(steps))])


def test_time_based_slot_grows_by_half():
    """Definition 18: τ starts at 1 µs and grows τ <- τ + τ/2; episodes never drop below n0."""
    steps = first_steps(anytime("oracle", time_based=True), 8)
    assert [s.seconds for s in steps] == pytest.approx([1e-6 * 1.5 ** i for i in range(8)])
    assert all(s.budget >= 10 for s in steps) and math.isfinite(steps[-1].upsilon)


def test_interrupting_at_any_point_returns_a_finite_estimate(monkeypatch):
    seen = []

    def stop_after_three(step):
        seen.append(step)
        if len(seen) == 3:
            raise KeyboardInterrupt

    result = run_anytime(anytime("local_search"), on_step=stop_after_three)
    assert result.stopped == "interrupted" and len(result.trace) == 3
    assert result.upsilon == pytest.approx(np.mean([s.reward for s in seen]))
    assert result.xi_final == pytest.approx(seen[-1].xi * (1 + seen[-1].reward / 2))

    def interrupted_play(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr("collective.anytime.play", interrupted_play)  # Ctrl-C inside the first episode
    result = run_anytime(anytime("local_search"))
    assert result.stopped == "interrupted" and result.trace == ()
    assert result.upsilon == 0.0 and result.interactions == 0  # Definition 18's initial Υ


def test_stop_conditions():
    assert run_anytime(anytime("random", max_environments=5)).stopped == "max_environments"
    timed = run_anytime(anytime("local_search", budget_seconds=0.3))
    assert timed.stopped == "budget_seconds" and timed.wall_seconds >= 0.3 and timed.trace
    # a learner's Q-table has N·T·9 entries: the test stops before one that would not fit
    limited = run_anytime(anytime("q_learning", memory_limit_bytes=100 * 60 * 9 * 8))
    assert limited.stopped == "memory_limit" and [s.budget for s in limited.trace] == [10, 15, 22, 33, 49]


@pytest.mark.parametrize("grid", [(10, 10), (3, 3)])
def test_no_environment_is_reused(grid):
    """Paper 000 §5.2: S_used grows by each environment played; none is played twice. On a 3x3
    grid a random agent stays at K = 2, where few distinct environments exist, so redraws happen."""
    config = AnytimeConfig(EvaluationConfig.from_profile("paper", behaviour="random", rows=grid[0], cols=grid[1],
                                                         seed=7), max_environments=25)
    trace = run_anytime(config).trace
    assert len({(s.environment, s.draw) for s in trace}) == len(trace)
    identities = set()
    for step in trace:
        batch = draw_environment(config, step.environment, step.draw, step.budget, step.k)
        assert int(batch.k_raw[0]) == step.k
        identities.add((batch.starts.tobytes(), batch.good[0, :11].tobytes()))  # first n0 + 1 = 11 cells
        episode = config.evaluation.with_changes(iterations=step.budget, k_min=None, k_max=None)
        assert float(play(episode, batch).mean_rewards[0]) == step.reward  # the trace is reproducible
    assert len(identities) == len(trace)
    if grid == (3, 3):
        assert any(step.draw > 0 for step in trace)


def test_json_and_parquet_trace(tmp_path, capsys):
    out = tmp_path / "trace.parquet"
    assert main(["anytime", "--profile", "paper", "--behaviour", "oracle", "--group-size", "2", "--seed", "3",
                 "--max-environments", "4", "--json", "--trace-out", str(out)]) == 0  # paper: spec §8's budgets
    record = json.loads(capsys.readouterr().out)
    assert {"upsilon", "xi_final", "environments", "interactions", "seed", "config", "trace"} <= set(record)
    assert record["environments"] == 4 and record["interactions"] == 10 + 15 + 22 + 33
    assert record["seed"] == 3 and record["config"]["group_size"] == 2 and record["stopped"] == "max_environments"
    table = pq.read_table(out)
    assert table.num_rows == 4 and table.column("budget").to_pylist() == [10, 15, 22, 33]
    assert table.column("upsilon").to_pylist()[-1] == record["upsilon"]
    assert set(table.column_names) >= {"xi", "k", "budget", "reward", "upsilon"}


def test_ctrl_c_prints_a_finite_estimate_and_exits_0():
    process = subprocess.Popen([sys.executable, "-m", "collective", "anytime", "--behaviour", "local_search"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)
    lines = [process.stdout.readline() for _ in range(3)]  # the header and two environments
    process.send_signal(signal.SIGINT)
    rest, errors = process.communicate(timeout=120)
    assert process.returncode == 0, errors
    summary = rest.strip().splitlines()[-1]
    assert len(lines[2].split()) == 7 and "stopped: interrupted" in summary
    assert math.isfinite(float(summary.split()[2].rstrip(";")))


@pytest.mark.parametrize("args, option", [
    (["--episodes", "5"], "--episodes"),
    (["--iterations", "50"], "--iterations"),
    (["--budget-rounding", "floor", "--start-budget", "1"], "--start-budget"),  # n + ⌊n/2⌋ never grows from 1
    (["--start-seconds", "0.1"], "--start-seconds"),
    (["--time-based", "--start-seconds", "0"], "--start-seconds"),
    (["--budget-seconds", "0"], "--budget-seconds"),
    (["--max-environments", "0"], "--max-environments"),
    (["--trace-out", "/no/such/dir/trace.parquet"], "--trace-out"),
    (["--grid", "5", "--complexity", "40:50"], "--complexity"),
    (["--behaviour", "telepath"], "--behaviour"),
    (["--learner-training", "online"], "--learner-training"),  # issue 46 point 5: was run per_episode, unsaid
    (["--learner-training", "pretrained"], "--learner-training"),
])
def test_bad_input_exits_2_with_one_line(args, option, capsys):
    argv = ["anytime"] + ([] if "--behaviour" in args else ["--behaviour", "random"]) + args
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and f"argument {option}:" in captured.err


def test_learner_training_per_episode_is_what_runs_and_is_recorded(capsys):
    """Issue 46 point 5: --learner-training reaches the test; per_episode, the one it runs, is accepted and recorded
    (the sound profile's pretrained gives way to it)."""
    assert main(["anytime", "--behaviour", "q_learning", "--learner-training", "per_episode",
                 "--max-environments", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["learner_training"] == "per_episode"


def test_config_rejects_a_budget_that_cannot_grow():
    with pytest.raises(ConfigError, match="start_budget"):
        anytime("random", start_budget=1)  # 1 + floor(1/2) = 1: Definition 19's budget would never grow


def test_held_out_learners_never_train_on_the_environment_they_are_scored_on():
    """Issue 12 point 6(a): under `sound` every environment is new, and the learners train on
    held-out episodes of its K and budget, from the training branch of its key, never equal to it;
    under `paper` they replay it (paper 003 §5.2.1)."""
    config = AnytimeConfig(EvaluationConfig.from_profile("sound", behaviour="q_learning", seed=2), max_environments=7)
    trace = run_anytime(config).trace
    assert len(trace) == 7
    for step in trace:
        batch = draw_environment(config, step.environment, step.draw, step.budget, step.k)
        training = batch.training
        assert batch.training_episodes == config.evaluation.training_episodes
        assert set(training.k_raw) == {step.k} and training.good.shape[1] == step.budget + 1
        assert not set(training.agent_seeds) & set(batch.agent_seeds)
        for row in range(len(training)):
            assert not (np.array_equal(training.good[row], batch.good[0]) and
                        np.array_equal(training.starts[row], batch.starts[0]))
        episode = config.evaluation.with_changes(iterations=step.budget, k_min=None, k_max=None)
        assert float(play(episode, batch).mean_rewards[0]) == step.reward  # the trace is reproducible
    again = run_anytime(config).trace  # same seed, same numbers
    assert [(s.draw, s.xi, s.k, s.budget, s.reward) for s in again] == [(s.draw, s.xi, s.k, s.budget, s.reward)
                                                                        for s in trace]
    replaying = AnytimeConfig(EvaluationConfig.from_profile("paper", behaviour="q_learning"))
    assert draw_environment(replaying, 0, 0, 10, 2).training is None


def test_an_exhausted_class_is_reported_instead_of_xi():
    """Point 6(b): with K ≤ 4 the oracle's ξ soon passes K + 1 = 5, where Definition 18's window
    ξ − 1 ≤ K ≤ ξ holds no environment of the class: every later environment has K = 4, the steps
    are marked, and the result reports where the class ran out instead of a final ξ."""
    config = AnytimeConfig(EvaluationConfig.from_profile("paper", behaviour="oracle", k_min=1, k_max=4),
                           max_environments=15)
    result = run_anytime(config)
    assert result.exhausted_at is not None and result.xi_final is None and result.k_top == 4
    for step in result.trace:
        assert step.exhausted == (step.xi - 1 > 4)
        assert step.environment < result.exhausted_at or (step.exhausted and step.k == 4)
    record = result.as_record()
    assert record["exhausted_at"] == result.exhausted_at and record["xi_final"] is None and record["k_top"] == 4
    assert f"class exhausted at environment {result.exhausted_at}" in format_summary(result)
    assert "exhausted" in format_step(result.trace[-1]).split()
    calm = run_anytime(anytime("random", max_environments=6))
    assert calm.exhausted_at is None and calm.xi_final == pytest.approx(calm.trace[-1].xi_next)


def test_budget_follows_definition_19_under_sound():
    """Point 6(c): paper 000 §5.3 sets n ← 1 and n ← ⌈n + n/2⌉: 1, 2, 3, 5, 8, 12, 18, 27, 41, 62."""
    config = AnytimeConfig(EvaluationConfig.from_profile("sound", behaviour="local_search"))
    assert (config.budget_rounding, config.start_budget) == ("ceiling", 1)
    assert [s.budget for s in first_steps(config, 10)] == [1, 2, 3, 5, 8, 12, 18, 27, 41, 62]
    paper = anytime("local_search")
    assert (paper.budget_rounding, paper.start_budget) == ("floor", 10)  # spec §8's reading, kept for `paper`
    chosen = anytime("local_search", budget_rounding="ceiling", start_budget=1)
    assert [s.budget for s in first_steps(chosen, 4)] == [1, 2, 3, 5]
    with pytest.raises(ConfigError, match="budget_rounding: unknown value 'round'"):
        anytime("random", budget_rounding="round")


def test_time_based_results_are_marked_machine_dependent():
    """Point 6(d): τ becomes iterations at this machine's simulator speed, which the trace records
    step by step; the result says it is machine-dependent and names the machine."""
    result = run_anytime(anytime("oracle", time_based=True, max_environments=6))
    assert result.trace[0].speed == 0.0  # nothing measured yet: n₀
    for step in result.trace:
        assert step.budget == max(10, math.floor(step.seconds * step.speed))
    assert all(step.speed > 0 for step in result.trace[1:])
    record = result.as_record()
    assert record["machine_dependent"] is True and record["machine"]
    assert "compare only interaction-based runs" in format_summary(result)
    counted = run_anytime(anytime("oracle", max_environments=2)).as_record()
    assert counted["machine_dependent"] is False and counted["machine"] is None
    assert all(step["speed"] is None for step in counted["trace"])


def test_reward_sensitivity_of_hand_built_episodes():
    """Reach t + radius at iteration t (toroidal Chebyshev): an agent 3 cells from a still ⊕ on 20x20 can score
    by t = 2 with radius 1; 5 cells away it cannot within T = 3; the torus wraps (column 18 to column 1 is 3);
    ⊖ counts too (its reward can be avoided)."""
    from collective.anytime import reward_sensitive
    from collective.environments.lambda_star import EnvironmentBatch

    def batch(agent, good, evil):
        return EnvironmentBatch(np.full((1, 4), good), np.full((1, 4), evil), np.array([[agent]]),
                                np.zeros(1, np.uint64), np.zeros(1, np.int32), np.zeros(1))
    far = 10 * 20 + 10  # the middle of the grid, 10 cells from column and row 0 and 20
    assert list(reward_sensitive(batch(0 * 20 + 3, 0, far), 20, 20, 1)) == [True]
    assert list(reward_sensitive(batch(0 * 20 + 5, 0, far), 20, 20, 1)) == [False]
    assert list(reward_sensitive(batch(0 * 20 + 18, 0 * 20 + 1, far), 20, 20, 1)) == [True]
    assert list(reward_sensitive(batch(far + 4, 0, far), 20, 20, 1)) == [True]
    assert list(reward_sensitive(batch(0 * 20 + 5, 0, far), 20, 20, 2)) == [True]
    two = EnvironmentBatch(np.full((1, 4), 0), np.full((1, 4), far), np.array([[0 * 20 + 5, 0 * 20 + 3]]),
                           np.zeros(1, np.uint64), np.zeros(1, np.int32), np.zeros(1))
    assert list(reward_sensitive(two, 20, 20, 1)) == [False]  # a second agent in reach does not keep the draw:
    # the draws kept must not depend on the group's size (else groups of 1 and 10 face different environments)


def test_the_first_budgets_are_not_zero_for_the_oracle_under_sound():
    """Issue 22 point 8: with T = 1-3 on 20x20, ⊕ and ⊖ were beyond every agent's reach in ~96% of the first
    three environments, so the oracle scored 0 there. Sound draws only reward-sensitive environments (paper 000
    Definitions 10 and 15): each played one is, and the oracle scores 0 in at most about a third."""
    from collective.anytime import reward_sensitive

    rewards = []
    for seed in range(8):
        config = AnytimeConfig(EvaluationConfig.from_profile("sound", behaviour="oracle", group_size=1, rows=20,
                                                             cols=20, seed=seed))
        for step in first_steps(config, 3):
            rewards.append(step.reward)
            played = draw_environment(config, step.environment, step.draw, step.budget, step.k, training=False)
            assert reward_sensitive(played, 20, 20, 1)[0]
    assert np.mean(np.array(rewards) == 0) < 0.6 and np.mean(rewards) > 0.1


def test_batched_draws_are_the_draws_made_one_at_a_time():
    from collective.anytime import draw_environments

    for profile in ("paper", "sound"):
        config = AnytimeConfig(EvaluationConfig.from_profile(profile, behaviour="local_search", group_size=3))
        batch = draw_environments(config, 5, np.arange(6), 12, 4)
        for draw in range(6):
            alone = draw_environment(config, 5, draw, 12, 4, training=False)
            for name in ("good", "evil", "starts", "agent_seeds", "k_raw"):
                assert np.array_equal(getattr(batch, name)[draw], getattr(alone, name)[0]), (profile, draw, name)
