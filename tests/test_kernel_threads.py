"""A batch played in several kernel threads gives the numbers of one call (issue 25: end to end on every core).

`play(threads=N)` cuts the batch into runs of consecutive episodes (`EnvironmentBatch.split`, views), plays
them at once and joins them in episode order (`joined_runs`). Every group type on the fused kernel is played
with 1 and 3 threads (12 runs of unequal size) and every output compared to the bit: R̄ per episode, each
agent's score, message counts, entropies. The cases include the 2016 switches that single out episode 0 (here
in the last part: the episodes are played in reverse order), pretrained tables (shared by the threads, only
read), held-out training episodes, a coordination quorum and landscapes.
"""
import json
import subprocess
import sys
import threading
from dataclasses import fields

import numpy as np
import pytest

import collective.evaluation.play as play_module
import collective.evaluation.sham as sham_module
import collective.evaluation.threads as threads_module
from collective.config import BATCHES_PREPARED_AHEAD, EvaluationConfig, learner_table_bytes, memory_needs
from collective.evaluate import evaluate
from collective.evaluation.compiled_code import load_code
from collective.evaluation.environments import generate_environments, with_ceiling
from collective.evaluation.fused_kernel import kernel_switches, play_fused
from collective.evaluation.play import play
from collective.evaluation.tables import starting_tables
from collective.simulation import compiled_plugins, stepping
from collective.simulation.kernel import simulate_batch

SMALL = dict(rows=6, cols=6, iterations=30, q_training_passes=12)
CASES = [
    ("sound", dict(behaviour="local_search")),
    ("sound", dict(behaviour="oracle")),
    ("sound", dict(behaviour="random")),
    ("lambdastar2016", dict(behaviour="imitation")),
    ("lambdastar2016", dict(behaviour="q_learning")),
    ("lambdastar2016", dict(behaviour="local_search", protocol="stigmergy")),
    ("paper", dict(behaviour="sarsa")),
    ("paper", dict(behaviour="q_learning", protocol="shared_q")),
    ("sound", dict(behaviour="q_learning", training_runs=1)),  # a pretrained table, shared by the threads
    ("sound", dict(behaviour="local_search", protocol="stigmergy")),
    ("sound", dict(behaviour="local_search", protocol="broadcast")),
    ("sound", dict(behaviour="local_search", protocol="wisdom")),
    ("sound", dict(behaviour="local_search", protocol="auction")),
    ("sound", dict(behaviour="local_search", protocol="dictatorship")),
    ("sound", dict(behaviour="local_search", protocol="hierarchy")),
    ("paper", dict(mix="q_learning:1,sarsa:1,local_search:2")),
    ("paper", dict(behaviour="local_search", coordination_threshold=2)),
    ("paper", dict(behaviour="q_learning", learning_protocol="held_out", training_episodes=3)),
    ("sound", dict(behaviour="local_search", env="landscape", landscape_peaks=3)),
]
EPISODES = 20


def _config(profile: str, settings: dict) -> EvaluationConfig:
    group = {} if "mix" in settings else dict(group_size=4)
    return EvaluationConfig.from_profile(profile, **{"episodes": EPISODES, **SMALL, **group, **settings})


def _same(one, other) -> None:
    for name in ("mean_rewards", "agent_scores", "message_entropy", "distinct_messages"):
        a, b = getattr(one, name), getattr(other, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.tobytes() == b.tobytes(), name  # bits: NaN where nobody spoke, -0.0 apart from 0.0
    for name in ("messages", "bits", "transfers"):
        assert getattr(one, name) == getattr(other, name), name


@pytest.mark.parametrize("profile, settings", CASES, ids=lambda case: str(case))
def test_a_batch_played_in_threads_is_the_batch_played_in_one(monkeypatch, profile, settings):
    monkeypatch.setattr(threads_module, "MIN_STEPS_PER_THREAD", 1)  # small test batches are cut too
    config = _config(profile, settings)
    batch = with_ceiling(config, generate_environments(config, np.arange(EPISODES)[::-1].copy()))
    load_code(config)  # its warm-up plays a tiny batch: before the spy
    tables = {0: starting_tables(config)} if config.keeps_tables else None  # trained before the spy too (one run)
    before = tables[0].q.copy() if tables is not None else None
    played_in = []
    meeting = threading.Barrier(3, timeout=60)  # in the threaded play, its first three runs meet: three threads

    def spying(*args, **kwargs):
        played_in.append((threading.current_thread().name, len(args[1])))
        if threading.current_thread() is not threading.main_thread() and len(played_in) <= 3:
            meeting.wait()  # a thread waiting here takes no other run, so each of the three is another thread's
        return play_fused(*args, **kwargs)

    for module in (play_module, threads_module):  # one batch in one call, and each run of a batch in threads
        monkeypatch.setattr(module, "play_fused", spying)
    one = play(config, batch, threads=1, tables=tables)
    assert played_in == [(threading.current_thread().name, EPISODES)]
    played_in.clear()
    variants = len(simulate_batch.signatures)
    three = play(config, batch, threads=3, tables=tables)
    assert len(simulate_batch.signatures) == variants  # the views are the arrays' types: nothing compiled again
    assert sorted(size for _, size in played_in) == [1] * 4 + [2] * 8  # 4 runs a thread
    assert len({name for name, _ in played_in}) == 3 and three.threads == 3
    _same(one, three)
    if tables is not None:
        assert tables[0].q.tobytes() == before.tobytes() and tables[0].n_written[0] == 0  # only read


def test_episode_zero_is_found_in_whichever_part_holds_it(monkeypatch):
    """Control for the reversed order above: the 2016 imitator's first episode is special (its hidden oracle
    starts from the world stream), so playing the parts with the batch's own switches (episode 0's row of the
    whole batch, not of each part) would change numbers."""
    monkeypatch.setattr(threads_module, "MIN_STEPS_PER_THREAD", 1)
    config = _config("lambdastar2016", dict(behaviour="imitation"))
    batch = with_ceiling(config, generate_environments(config, np.arange(EPISODES)[::-1].copy()))
    first_part = batch.split(3)[-1]
    assert kernel_switches(config, first_part).first_episode == len(first_part) - 1
    unsplit = play(config, batch, threads=1).mean_rewards
    alone = play(config, first_part, threads=1).mean_rewards
    assert alone.tobytes() == unsplit[-len(first_part):].tobytes()


def test_split_views_cover_the_batch_in_order_with_their_training_episodes():
    config = _config("paper", dict(behaviour="q_learning", learning_protocol="held_out", training_episodes=3))
    batch = generate_environments(config, np.arange(11))
    parts = batch.split(3)
    assert [len(part) for part in parts] == [4, 3, 4]
    assert np.array_equal(np.concatenate([part.episode_index for part in parts]), batch.episode_index)
    assert np.array_equal(np.concatenate([part.training.good for part in parts]), batch.training.good)
    assert all(part.training_episodes == 3 and np.shares_memory(part.good, batch.good) for part in parts)
    assert all(part.good.flags.c_contiguous and part.starts.flags.c_contiguous for part in parts)


def test_an_evaluation_in_two_threads_reports_what_one_thread_does(monkeypatch):
    monkeypatch.setattr(threads_module, "MIN_STEPS_PER_THREAD", 1)
    config = _config("sound", dict(behaviour="local_search", protocol="wisdom", episodes=200))
    one, two = evaluate(config, threads=1), evaluate(config, threads=2)
    assert (one.threads, two.threads) == (1, 2)
    timings = {"wall_seconds", "kernel_seconds", "compile_seconds", "generation_wait_seconds", "threads"}
    for field in fields(one):
        if field.name not in timings:
            assert getattr(one, field.name) == getattr(two, field.name), field.name


def test_online_learners_and_plugins_play_in_one_thread(monkeypatch):
    monkeypatch.setattr(threads_module, "MIN_STEPS_PER_THREAD", 1)
    monkeypatch.setattr(threads_module, "MIN_SHAM_LANES_PER_THREAD", 1)
    online = _config("sound", dict(behaviour="q_learning", learner_training="online"))
    plugin_sham = _config("sound", dict(behaviour="local_search", protocol="examples.numpy_broadcast:Broadcast",
                                        communication_control="sham"))
    sham = _config("sound", dict(behaviour="local_search", protocol="broadcast", communication_control="sham"))
    real = _config("sound", dict(behaviour="local_search", protocol="broadcast"))
    assert [evaluate(config, threads=2).threads for config in (online, plugin_sham, sham, real)] == [1, 1, 2, 2]
    with pytest.raises(ValueError, match="threads must be 1 or more"):
        evaluate(online, threads=0)


SHAMS = [("sound", dict(behaviour="local_search", protocol=protocol))
         for protocol in ("stigmergy", "broadcast", "wisdom", "auction", "dictatorship", "hierarchy")] + [
    ("lambdastar2016", dict(behaviour="local_search", protocol="stigmergy")),
    ("sound", dict(mix="random:1,local_search:3", protocol="hierarchy")),
    ("sound", dict(behaviour="local_search", protocol="broadcast", env="landscape", landscape_peaks=3)),
]


@pytest.mark.parametrize("profile, settings", SHAMS, ids=lambda case: str(case))
def test_a_built_in_sham_played_in_threads_is_the_sham_played_in_one(monkeypatch, profile, settings):
    """A built-in group's sham control (on the stepping core) cut into runs of consecutive episodes, each
    played with a group and shadows of its own in three threads at once: every number of one call."""
    monkeypatch.setattr(threads_module, "MIN_SHAM_LANES_PER_THREAD", 1)
    config = _config(profile, {**settings, "communication_control": "sham"})
    batch = generate_environments(config, np.arange(EPISODES)[::-1].copy())
    load_code(config)
    played_in = []
    sham = sham_module.play_sham
    meeting = threading.Barrier(3, timeout=60)

    def spying(config, environments, record, group):
        played_in.append((threading.current_thread().name, len(environments), id(group)))
        if threading.current_thread() is not threading.main_thread():
            meeting.wait()  # each of the three runs is another thread's
        return sham(config, environments, record, group)

    for module in (play_module, sham_module):  # the sham in one call, and each run of it in threads
        monkeypatch.setattr(module, "play_sham", spying)
    one = play(config, batch, threads=1)
    assert [size for _, size, _ in played_in] == [EPISODES]
    played_in.clear()
    three = play(config, batch, threads=3)
    assert sorted(size for _, size, _ in played_in) == [6, 7, 7] and three.threads == 3
    assert len({name for name, _, _ in played_in}) == 3 and len({group for _, _, group in played_in}) == 3
    _same(one, three)
    assert all(step.targetoptions.get("nogil") for step in STEPS)  # else the threads take turns


def test_a_sham_takes_a_second_thread_from_500_lanes_a_thread():
    """Each of a sham's threads steps at least MIN_SHAM_LANES_PER_THREAD episodes x agents an iteration."""
    config = _config("sound", dict(behaviour="local_search", protocol="auction", communication_control="sham",
                                   group_size=10, episodes=100))
    batch = generate_environments(config, np.arange(100))
    assert [play(config, batch.episodes(0, n), threads=2).threads for n in (99, 100)] == [1, 2]


STEPS = (stepping.observe_windows, stepping.advance, compiled_plugins.builtin_actions,
         compiled_plugins.builtin_communicate, compiled_plugins.builtin_overhear)  # a sham's compiled steps


def test_threads_stop_where_their_learner_tables_would_not_fit(monkeypatch):
    """Each thread past the first makes its own per-episode tables, which the memory check counts once."""
    config = _config("paper", dict(behaviour="q_learning"))
    needs = sum(memory_needs(config, batches=1 + BATCHES_PREPARED_AHEAD).values())
    own = 2 * learner_table_bytes(config)
    for spare, room in ((0, 1), (own - 1, 1), (3 * own, 4)):
        monkeypatch.setattr(threads_module, "physical_memory_limit", lambda: needs + spare)
        threads_module.threads_with_room.cache_clear()
        assert threads_module.threads_with_room(config) == room
    threads_module.threads_with_room.cache_clear()
    pretrained = _config("sound", dict(behaviour="q_learning"))  # one shared table, only read
    assert threads_module.threads_with_room(pretrained) == sys.maxsize


def test_the_cli_takes_threads_and_refuses_zero():
    base = [sys.executable, "-m", "collective", "evaluate", "--behaviour", "local_search", "--grid", "6x6",
            "--iterations", "30", "--episodes", "20000", "--group-size", "3", "--json"]
    refused = subprocess.run(base + ["--threads", "0"], capture_output=True, text=True)
    assert refused.returncode == 2 and "argument --threads: expected a whole number >= 1 (got '0')" in refused.stderr
    records = [json.loads(subprocess.run(base + ["--threads", n], capture_output=True, text=True, check=True).stdout)
               for n in ("1", "2")]
    assert [record["kernel_threads"] for record in records] == [1, 2]
    assert records[0]["upsilon"] == records[1]["upsilon"] and records[0]["std"] == records[1]["std"]

