"""A policy trained with a standard RL library (Stable-Baselines3's PPO) on the Gymnasium adapter, scored as a
plug-in behaviour among teammates under a protocol (examples/sb3_policy; docs/adapters.md).

- the plug-in hands the policy the observations the adapter gave it: scored by `collective evaluate` among the
  same teammates, its agent's per-capita Υ is, to the last bits, the mean reward the same policy earns driving
  the adapter on the same episodes (a wrong observation, offset, axis or order would move it), on a square grid
  and on a 7x11 one with range-2 windows, under a protocol and alone;
- training is real: the trained policy's agent scores far above the untrained network's and a random agent's
  on episodes of a seed it never trained on;
- it passes the conformance kit (decentralised); a missing model or a window it was not trained on is refused
  before any work, naming it;
- a subclass names its own model, as the docs show, and plays on Ray workers, whose directory is not the
  driver's; a retrained model changes the plug-in's digest the rows record;
- the same seed trains the same policy whatever instructions the CPU has.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from examples.sb3_policy.policy import PPOPolicy, padded  # first: it pins torch's arithmetic before torch loads
from examples.sb3_policy.train import train

import torch  # noqa: I001
from stable_baselines3 import PPO

from collective import api
from collective.adapters import LambdaStarVectorEnv
from collective.adapters.observations import agent_observations
from collective.simulation.plugins import Observation, PluginError
from collective.testing import check_behaviour

POLICY = "examples.sb3_policy.policy:PPOPolicy"
TEAM = dict(mix="local_search:3", protocol="broadcast")
GRID = dict(rows=10, cols=10, iterations=30)
ROOT = Path(__file__).resolve().parent.parent
SUBCLASS = """from collective.examples.sb3_policy.policy import PPOPolicy


class Mine(PPOPolicy):
    model_path = "mine.zip"
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A trained model (20,480 steps) and the untrained network, among three local searchers under broadcast."""
    folder = tmp_path_factory.mktemp("models")
    trained, untrained = folder / "trained.zip", folder / "untrained.zip"
    train(str(trained), timesteps=20_000, **TEAM, **GRID)
    train(str(untrained), timesteps=0, **TEAM, **GRID)
    return trained, untrained


def playing(monkeypatch, model: Path) -> None:
    """PPOPolicy plays `model` in this process."""
    monkeypatch.setattr(PPOPolicy, "model_path", str(model))
    monkeypatch.setattr(PPOPolicy, "data_files", (str(model),))


def focal_upsilon(model, monkeypatch, focal: str = POLICY, episodes: int = 150, seed: int = 99, team=TEAM,
                  **settings):
    """The focal agent's per-capita Υ and interval in the group focal:1 + the team's mix under its protocol."""
    playing(monkeypatch, model)
    record = api.evaluate(mix=f"{focal}:1,{team['mix']}", protocol=team["protocol"], episodes=episodes, seed=seed,
                          **{**GRID, **settings})
    return record["upsilon_by_behaviour"][focal]


def on_adapter(model: Path, episodes: int, seed: int, team: dict, settings: dict) -> np.ndarray:
    """(episodes,) the mean reward per iteration the model's agent earns driving the vector adapter among `team`."""
    env = LambdaStarVectorEnv(episodes=episodes, group_size=1, **team, **settings)
    policy = PPOPolicy()
    policy.reset(type("Batch", (), {"observation_range": settings.get("observation_range", 1),
                                    "rows": settings["rows"], "cols": settings["cols"]}))
    observations, _ = env.reset(seed=seed)
    totals = np.zeros(episodes)
    for _ in range(settings["iterations"]):
        actions, _ = policy.model.predict(observations, deterministic=True)
        observations, rewards, _, truncated, _ = env.step(actions)
        totals += rewards
    assert truncated.all()
    return totals / settings["iterations"]


@pytest.mark.parametrize("case", ["trained, 10x10", "untrained, 7x11, range 2", "trained alone, scored in a group"])
def test_scored_as_a_behaviour_the_policy_earns_what_it_earns_on_the_adapter(models, monkeypatch, tmp_path, case):
    model, team, settings = models[0], TEAM, GRID
    if case.startswith("untrained"):
        settings = dict(rows=7, cols=11, iterations=30, observation_range=2)
        model = tmp_path / "wide.zip"
        train(str(model), timesteps=0, **TEAM, **settings)
    elif case.endswith("in a group"):
        model, team = tmp_path / "alone.zip", dict(mix="local_search:3", protocol="none")
        train(str(model), timesteps=2048, **GRID)
    episodes, seed = 40, 7
    playing(monkeypatch, model)
    per_episode = on_adapter(model, episodes, seed, team, settings)
    scored = focal_upsilon(model, monkeypatch, episodes=episodes, seed=seed, team=team, **settings)
    assert scored["agents"] == 1
    assert scored["upsilon"] == pytest.approx(float(np.mean(per_episode)), abs=1e-12)
    assert np.ptp(per_episode) > 0.05  # episodes scored differently: a policy that did something


def test_a_model_trained_alone_sees_the_plain_window_under_a_protocols_field():
    """An agent trained alone never saw a field; one trained under a protocol sees window + field and the target."""
    window = np.arange(2 * 9, dtype=np.float64).reshape(2, 1, 3, 3) / 20
    field = np.full((2, 1, 3, 3), 0.5)
    obs = Observation(window, np.array([[0], [12]]), 3, np.zeros((2, 1)), np.array([[-1], [13]]), field)
    alone = agent_observations(obs, rows=5, cols=5, hears=False)
    assert np.array_equal(alone, window.reshape(2, 1, 9).astype(np.float32))
    heard = agent_observations(obs, rows=5, cols=5, hears=True)
    assert np.array_equal(heard[..., :9], (window + field).reshape(2, 1, 9).astype(np.float32))
    assert heard[..., 9:].tolist() == [[[0, 0, 0]], [[1, 0, 1]]]  # no target; cell 12 to 13: one column right


def test_padding_makes_an_agents_action_independent_of_how_many_share_the_batch(models):
    """Torch's products round a small batch's rows differently from a large one's; padded to ROWS_AT_ONCE, the
    policy's logits for the first k rows are those they get inside a batch of 5000."""
    model = PPO.load(models[0], device="cpu")

    def logits(rows):
        with torch.no_grad():
            return model.policy.get_distribution(model.policy.obs_to_tensor(rows)[0]).distribution.logits.numpy()

    rows = np.random.default_rng(0).normal(size=(5000, 12)).astype(np.float32)
    whole = logits(rows)
    assert all(np.array_equal(logits(padded(rows[:k]))[:k], whole[:k]) for k in (1, 2, 7, 63))
    assert not all(np.array_equal(logits(rows[:k]), whole[:k]) for k in (1, 2, 7, 63))  # what padding prevents


def test_the_trained_policy_scores_far_above_the_untrained_network_and_a_random_agent(models, monkeypatch):
    trained, untrained = models
    learned = focal_upsilon(trained, monkeypatch)
    before = focal_upsilon(untrained, monkeypatch)
    chance = focal_upsilon(trained, monkeypatch, focal="random")
    assert learned["ci95_low"] > before["ci95_high"] + 0.2, (learned, before)
    assert learned["ci95_low"] > chance["ci95_high"] + 0.2, (learned, chance)


def test_the_policy_passes_the_conformance_kit(models, monkeypatch):
    playing(monkeypatch, models[0])
    said = []
    check_behaviour(POLICY, say=said.append)
    assert said and all(line.startswith("ok") for line in said), said


def test_a_missing_model_or_another_window_is_refused_before_any_work_naming_it(models, monkeypatch, tmp_path):
    with pytest.raises(ValueError, match=r"^mix: plug-in examples.sb3_policy.policy:PPOPolicy.data_files: .*none.zip: "
                                         r"no such file"):
        focal_upsilon(tmp_path / "none.zip", monkeypatch, episodes=2)
    with pytest.raises(PluginError, match="takes observations of 12 numbers; observation_range 2 gives 25 or 28"):
        focal_upsilon(models[0], monkeypatch, episodes=2, observation_range=2)


def test_a_subclass_that_names_its_files_must_name_its_model():
    class Normalised(PPOPolicy):
        model_path = "mine.zip"
        data_files = ("mine.zip", "normalisation.pkl")

    class Plain(PPOPolicy):
        model_path = "runs/mine.zip"

    assert Normalised.data_files == ("mine.zip", "normalisation.pkl") and Plain.data_files == ("runs/mine.zip",)
    with pytest.raises(TypeError, match="Forgot.data_files must name its model_path 'mine.zip'"):
        class Forgot(PPOPolicy):
            model_path = "mine.zip"
            data_files = ("normalisation.pkl",)


@pytest.mark.filterwarnings("ignore:torch was imported before")  # the subclass imports the installed copy
def test_a_subclass_plays_its_own_model_on_ray_workers_and_a_retrained_one_changes_its_digest(tmp_path,
                                                                                                monkeypatch):
    """The docs' recipe (a subclass naming its model, relative to the run's directory) on an embedded Ray, whose
    workers run in directories of their own; rows record the plug-in's digest, model included."""
    (tmp_path / "my_policies.py").write_text(SUBCLASS)
    monkeypatch.chdir(tmp_path)
    train("mine.zip", timesteps=0, **TEAM, **GRID)
    spec = {"name": "mine", "profile": "sound", "seed": 5, "episodes": 6, "iterations": GRID["iterations"],
            "factors": {"grid": ["10x10"], "group_size": [4]},
            "groups": {"behaviours": ["local_search"], "mixes": [{"name": "my_policies.py:Mine:1,local_search:3"}],
                       "protocols": [{"name": "broadcast"}]}}
    api.sweep(spec, tmp_path / "ray", executor="ray", workers=1, progress=False)
    first = api.load(tmp_path / "ray", columns=["plugin_digests", "score_by_behaviour"])
    first = first[first["plugin_digests"].str.contains("Mine")]
    assert len(first) == 6 and first["plugin_digests"].nunique() == 1
    assert all("my_policies.py:Mine" in json.loads(scores) for scores in first["score_by_behaviour"])
    train("mine.zip", timesteps=0, seed=1, **TEAM, **GRID)  # another network
    api.sweep(spec, tmp_path / "serial", executor="serial", progress=False)
    again = api.load(tmp_path / "serial", columns=["plugin_digests"])
    again = again[again["plugin_digests"].str.contains("Mine")]
    before, after = (json.loads(frame["plugin_digests"].iloc[0])["my_policies.py:Mine"] for frame in (first, again))
    assert before != after


@pytest.mark.filterwarnings("ignore:torch was imported before")
def test_a_ray_worker_that_cannot_see_the_model_stops_the_sweep_naming_it(tmp_path, monkeypatch):
    """A node without the model (here: workers sent to look for it in a folder where it is not) refuses the sweep
    with the plug-in's one-line error before playing, not with the Ray actor's death."""
    import collective.sweeps.runtime as runtime

    (tmp_path / "my_policies.py").write_text(SUBCLASS)
    monkeypatch.chdir(tmp_path)
    train("mine.zip", timesteps=0, **TEAM, **GRID)
    monkeypatch.setattr(runtime, "run_directory", lambda: tmp_path / "elsewhere")  # what the workers are told
    spec = {"name": "mine", "profile": "sound", "seed": 5, "episodes": 2, "iterations": GRID["iterations"],
            "factors": {"grid": ["10x10"], "group_size": [4]},
            "groups": {"behaviours": ["local_search"], "mixes": [{"name": "my_policies.py:Mine:1,local_search:3"}],
                       "protocols": [{"name": "broadcast"}]}}
    with pytest.raises(PluginError, match=r"my_policies.py:Mine.data_files: .*elsewhere/mine.zip: no such file"):
        api.sweep(spec, tmp_path / "ray", executor="ray", workers=1, progress=False)


def test_the_same_seed_trains_the_same_policy_whatever_instructions_the_cpu_has():
    """examples/sb3_policy/reproducible.py pins torch's arithmetic: training where MKL may use AVX-512 and where
    it may use only AVX2 (as on an older CPU) gives the same weights; unpinned, the two paths differ."""
    code = ("from examples.sb3_policy.train import train; m = train('', timesteps=2048, envs=4, rows=7, cols=7, "
            "iterations=30); print(repr(sum(float(p.double().sum()) for p in m.policy.parameters())))")

    def weights(**variables):
        env = {**os.environ, "PYTHONPATH": str(ROOT), **variables}
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert weights() == weights(MKL_ENABLE_INSTRUCTIONS="AVX2")
    if "avx512f" in Path("/proc/cpuinfo").read_text():  # the paths that differ exist on this CPU
        assert weights(MKL_CBWR="AVX512", ATEN_CPU_CAPABILITY="avx512") != \
            weights(MKL_CBWR="AVX2", ATEN_CPU_CAPABILITY="avx2")
