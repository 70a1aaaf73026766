"""The content-free communication control (issue 45 item 4): the sham with each episode emptied as its shadow, so
that every report, bid, deposit or write of the other members says "nothing seen" and real - content_free is the
information value alone."""
import json
import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from collective import Messages
from collective.config import ConfigError, EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.evaluation.play import play
from collective.evaluation.sham import empty_environments, shadow_play
from collective.evaluation.stepping_group import plugin_group
from collective.simulation.stepping import play_group


class Walker:
    """A plug-in behaviour that walks at random (its own streams) and notes the largest |reward| it is shown in a
    window or paid: whether its world shows or pays anything."""

    protocols = ("*",)
    seen: list[float] = []

    def reset(self, batch):
        self.streams = batch.streams

    def act(self, obs):
        Walker.seen += [float(np.abs(obs.window).max()), float(np.abs(obs.reward).max())]
        return self.streams.integers(np.full(obs.cell.shape, 9))

    def observe(self, rewards):
        Walker.seen.append(float(np.abs(rewards).max()))


@pytest.mark.parametrize("settings", [dict(coordination_threshold=2, cpp_first_observation=True),
                                      dict(env="landscape", landscape_peaks=3)], ids=["lambda_star", "landscape"])
def test_the_empty_world_shows_and_pays_nothing(settings):
    """The content-free shadow shows every member a window of zeros and pays it 0 at every iteration, Λ* under
    the 2016 first observation and the coordination variant (whose quorum rule, were its group not played at
    threshold 1, would still charge ⊖) as well as a landscape, while the same walkers see and earn in the episodes
    themselves."""
    config = EvaluationConfig.from_profile("paper", behaviour=f"{__name__}:Walker", group_size=4, rows=6, cols=6,
                                           iterations=40, episodes=8, protocol="broadcast",
                                           communication_control="content_free", **settings)
    environments = generate_environments(config, np.arange(8))
    speaker, shadows = shadow_play(config, environments)
    assert np.array_equal(shadows.starts, environments.starts)
    assert np.array_equal(shadows.agent_seeds, environments.agent_seeds)
    Walker.seen = []
    empty = play_group(speaker, shadows, record=True)
    assert max(Walker.seen) == 0.0 and not empty.rewards.any() and not empty.mean_rewards.any()
    assert len(np.unique(empty.positions)) > 1  # they walked
    Walker.seen = []
    play_group(plugin_group(config), environments)
    assert max(Walker.seen) > 0
    if config.coordination_threshold > 1:
        assert (play_group(plugin_group(config), shadows, record=True).rewards < 0).any()


SEARCHERS = dict(behaviour="local_search", group_size=10, iterations=200, seed=17)


def runs(protocol, controls, grid=10, episodes=40, environments=None, record=False, **settings):
    """The runs of isolated searchers ("isolated") and of the protocol under each control, on the same episodes."""
    base = EvaluationConfig.from_profile("paper", rows=grid, cols=grid, episodes=episodes, **{**SEARCHERS, **settings})
    if environments is None:
        environments = generate_environments(base, np.arange(episodes))
    played = {"isolated": play(base, environments, record=record)}
    for control in controls:
        played[control] = play(base.with_changes(protocol=protocol, communication_control=control), environments,
                               record=record)
    return played


def test_informative_broadcast_is_worth_much_more_than_its_content_free_control():
    """Known answer: broadcast among local searchers on 20x20 beats its content-free control clearly (about 0.29 of
    Υ): the others' reports lead each searcher to ⊕; with every report zeroed they lead it nowhere."""
    played = runs("broadcast", ["real", "content_free"], grid=20, episodes=100)
    difference = played["real"].mean_rewards - played["content_free"].mean_rewards
    half = 2.58 * difference.std(ddof=1) / math.sqrt(len(difference))
    assert difference.mean() - half > 0.15, f"real - content_free {difference.mean():+.4f} ± {half:.4f}"
    assert (played["content_free"].messages, played["content_free"].bits) == \
        (played["real"].messages, played["real"].bits)  # broadcast's fixed counts: the same traffic


class Ignored:
    """A protocol whose messages are sent and ignored: each member is handed its own window as an additive field
    (window + field = 2 x window: the same best cells, ties and draws as alone)."""

    members = None

    def communicate(self, obs):
        episodes, members = obs.cell.shape
        sent = episodes * members * (members - 1)
        return Messages(field=obs.window.copy(), messages=float(sent), bits=float(sent * obs.window[0, 0].size * 64))


@pytest.mark.parametrize("protocol, settings", [(f"{__name__}:Ignored", {}), ("hierarchy", {"cpp_binary_tree": True})],
                         ids=["plugin-field", "builtin-unread-reports"])
def test_members_that_ignore_messages_score_alike_real_sham_and_content_free(protocol, settings):
    """Where nothing heard is acted on, real, sham and content-free play exactly as isolated searchers, episode by
    episode: the control changes what the others say and nothing else (a content-free control that moved a
    member's own sensing, draws or start would fail here)."""
    played = runs(protocol, ["real", "sham", "content_free"], iterations=60, episodes=30, **settings)
    for control in ("real", "sham", "content_free"):
        assert np.array_equal(played[control].mean_rewards, played["isolated"].mean_rewards), control


def test_content_free_paper_stigmergy_is_isolated_search():
    """Derived identity: in the paper form of stigmergy a member heads for the best R + F of its window, F the
    deposits of this iteration. Under the content-free control the others see only zeros, so their r̂ = 0 deposits
    nothing; the member's own r̂ adds one constant to every cell of its window (exact on Λ*'s dyadic rewards), so
    its best cells, ties and draws are those of R alone: local search, bit for bit. The real protocol and the sham,
    whose others deposit what they see, do not."""
    played = runs("stigmergy", ["real", "sham", "content_free"], episodes=30)
    isolated = played["isolated"].mean_rewards
    assert np.array_equal(played["content_free"].mean_rewards, isolated)
    assert not np.array_equal(played["real"].mean_rewards, isolated)
    assert not np.array_equal(played["sham"].mean_rewards, isolated)


@pytest.mark.parametrize("protocol, params", [("wisdom", ()), ("stigmergy", (("form", "reference"),))])
def test_a_content_free_listener_is_untouched_by_where_the_others_are(protocol, params):
    """Wisdom folds only non-zero rewards into its map and the reference stigmergy deposits only when fr ≠ 0:
    under the content-free control nothing of the others reaches a member, so member 0 walks the same path
    wherever the others start. Under the real protocol their reports move it."""
    config = EvaluationConfig.from_profile("paper", rows=10, cols=10, episodes=20, protocol=protocol,
                                           protocol_params=params, **{**SEARCHERS, "group_size": 5, "iterations": 100})
    environments = generate_environments(config, np.arange(20))
    elsewhere = environments.starts.copy()
    elsewhere[:, 1:] = np.roll(elsewhere[:, 1:], 1, axis=0)  # the others start where another episode's did
    moved = replace(environments, starts=elsewhere)
    for control, same in (("content_free", True), ("real", False)):
        controlled = config.with_changes(communication_control=control)
        here, there = play(controlled, environments, record=True), play(controlled, moved, record=True)
        assert np.array_equal(here.positions[:, :, 0], there.positions[:, :, 0]) == same, control


def test_in_empty_episodes_the_content_free_control_is_the_real_protocol():
    """Were the scored episodes themselves empty, the content-free shadow would be each episode itself (its start
    cells and draws kept): the control plays exactly as the real protocol, member for member."""
    config = EvaluationConfig.from_profile("paper", rows=10, cols=10, episodes=20, protocol="broadcast",
                                           **{**SEARCHERS, "group_size": 5, "iterations": 60})
    empty = empty_environments(config, generate_environments(config, np.arange(20)))
    real = play_group(plugin_group(config), empty, record=True)
    free = play(config.with_changes(communication_control="content_free"), empty, record=True)
    assert np.array_equal(real.positions, free.positions)
    assert len(np.unique(real.positions)) > 1


@pytest.mark.parametrize("settings, says", [
    (dict(behaviour="local_search", group_size=3, protocol="none"), "content_free needs a communicating protocol"),
    (dict(behaviour="q_learning", group_size=3, protocol="shared_q"), "shared_q cannot be played under content_free"),
    (dict(mix="local_search:3,q_learning:1", protocol="broadcast"), "content_free plays on the stepping core"),
])
def test_what_cannot_be_played_content_free_is_refused(settings, says):
    with pytest.raises(ConfigError, match=says) as error:
        EvaluationConfig.from_profile("paper", communication_control="content_free", **settings)
    assert error.value.field == "communication_control" and "\n" not in str(error.value)


SWEEP = """
name = "content_free"
seed = 3
profile = "paper"
episodes = 12
iterations = 30
[factors]
grid = ["8x8"]
group_size = [4]
[groups]
behaviours = ["local_search"]
protocols = [{ name = "none" }, { name = "broadcast", controls = ["real", "content_free"] }]
"""


def test_a_sweep_records_the_content_free_control_and_the_sham_table_reads_it(tmp_path):
    """`controls = ["real", "content_free"]` puts a [content_free] group beside the real one; its rows record the
    control, and `collective analyze --tables sham` gives the information value over it and the mechanics."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SWEEP)
    swept = subprocess.run([sys.executable, "-m", "collective", "sweep", spec, "--out", tmp_path / "run",
                            "--executor", "serial"], capture_output=True, text=True, timeout=900)
    assert swept.returncode == 0, swept.stderr
    rows = pd.read_parquet(tmp_path / "run" / "dataset")
    controls = rows.groupby("group", observed=True)["communication_control"].first().to_dict()
    assert controls == {"local_search": "real", "local_search+broadcast": "real",
                        "local_search+broadcast[content_free]": "content_free"}
    analysed = subprocess.run([sys.executable, "-m", "collective", "analyze", tmp_path / "run", "--tables", "sham",
                               "--format", "json"], capture_output=True, text=True, timeout=600)
    assert analysed.returncode == 0, analysed.stderr
    (row,) = json.loads(analysed.stdout)["sham"]["rows"]
    assert (row["real"], row["content_free"], row["information_baseline"]) == \
        ("local_search+broadcast", "local_search+broadcast[content_free]", "content_free")
    assert row["information_value"] == pytest.approx(row["upsilon_real"] - row["upsilon_content_free"])
    assert row["mechanics"] == pytest.approx(row["upsilon_content_free"] - row["upsilon_isolated"])
    assert "sham" not in row and "reliance" in row
