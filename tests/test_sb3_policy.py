"""A policy trained with a standard RL library (Stable-Baselines3's PPO) on the Gymnasium adapter, scored as a
plug-in behaviour among teammates under a protocol (examples/sb3_policy; docs/adapters.md).

- the plug-in hands the policy the observations the adapter gave it: scored by `collective evaluate` among the
  same teammates, its agent's per-capita Υ is, to the last bits, the mean reward the same policy earns driving
  the adapter on the same episodes (a wrong observation, offset or order would move it);
- training is real: the trained policy's agent scores far above the untrained network's and a random agent's
  on episodes of a seed it never trained on;
- it passes the conformance kit (decentralised), and refuses a missing model or a window it was not trained on;
- the same seed trains the same policy whatever instructions the CPU has.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the test extra installs it: pip install -e '.[test]'")

from collective import api  # noqa: E402
from collective.adapters import LambdaStarVectorEnv  # noqa: E402
from collective.simulation.plugins import PluginError  # noqa: E402
from collective.testing import check_behaviour  # noqa: E402
from examples.sb3_policy.policy import PPOPolicy  # noqa: E402
from examples.sb3_policy.train import train  # noqa: E402

POLICY = "examples.sb3_policy.policy:PPOPolicy"
TEAM = dict(mix="local_search:3", protocol="broadcast")
GRID = dict(rows=10, cols=10, iterations=30)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A trained model (20,480 steps) and the untrained network, among three local searchers under broadcast."""
    folder = tmp_path_factory.mktemp("models")
    trained, untrained = folder / "trained.zip", folder / "untrained.zip"
    train(str(trained), timesteps=20_000, **TEAM, **GRID)
    train(str(untrained), timesteps=0, **TEAM, **GRID)
    return trained, untrained


def focal_upsilon(model, monkeypatch, focal: str = POLICY, episodes: int = 150, seed: int = 99, **settings):
    """The focal agent's per-capita Υ and interval in the group focal:1 + local_search:3 under broadcast."""
    monkeypatch.setattr(PPOPolicy, "model_path", str(model))
    record = api.evaluate(mix=f"{focal}:1,{TEAM['mix']}", protocol=TEAM["protocol"], episodes=episodes, seed=seed,
                          **{**GRID, **settings})
    return record["upsilon_by_behaviour"][focal]


def test_scored_as_a_behaviour_the_policy_earns_what_it_earns_on_the_adapter(models, monkeypatch):
    trained, _ = models
    episodes, seed = 40, 7
    env = LambdaStarVectorEnv(episodes=episodes, group_size=1, **TEAM, **GRID)
    policy = PPOPolicy()
    monkeypatch.setattr(PPOPolicy, "model_path", str(trained))
    observations, _ = env.reset(seed=seed)
    policy.reset(type("Batch", (), {"observation_range": 1, "rows": 10, "cols": 10}))
    totals = np.zeros(episodes)
    for _ in range(GRID["iterations"]):
        actions, _ = policy.model.predict(observations, deterministic=True)
        observations, rewards, _, truncated, _ = env.step(actions)
        totals += rewards
    assert truncated.all()
    on_adapter = float(np.mean(totals / GRID["iterations"]))
    scored = focal_upsilon(trained, monkeypatch, episodes=episodes, seed=seed)
    assert scored["agents"] == 1
    assert scored["upsilon"] == pytest.approx(on_adapter, abs=1e-12)
    assert abs(on_adapter) > 0.1  # a score of something, not a tie at 0


def test_the_trained_policy_scores_far_above_the_untrained_network_and_a_random_agent(models, monkeypatch):
    trained, untrained = models
    learned = focal_upsilon(trained, monkeypatch)
    before = focal_upsilon(untrained, monkeypatch)
    chance = focal_upsilon(trained, monkeypatch, focal="random")
    assert learned["ci95_low"] > before["ci95_high"] + 0.2, (learned, before)
    assert learned["ci95_low"] > chance["ci95_high"] + 0.2, (learned, chance)


def test_the_policy_passes_the_conformance_kit(models, monkeypatch):
    monkeypatch.setattr(PPOPolicy, "model_path", str(models[0]))
    said = []
    check_behaviour(POLICY, say=said.append)
    assert said and all(line.startswith("ok") for line in said), said


def test_a_missing_model_or_another_window_is_refused_naming_it(models, monkeypatch, tmp_path):
    missing = tmp_path / "none.zip"
    with pytest.raises(PluginError, match="none.zip: no model there"):
        focal_upsilon(missing, monkeypatch, episodes=2)
    with pytest.raises(PluginError, match="takes observations of 12 numbers; observation_range 2 gives 25 or 28"):
        focal_upsilon(models[0], monkeypatch, episodes=2, observation_range=2)


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
