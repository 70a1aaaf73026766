"""The validity suite (issue 22): every check holds on a simulated dataset built to pass it and FAILS on a
known-bad variant of it (the sham's mechanism: re-played with the platform's sham and with a leaking, a blindfold
and a silent one), and the suite runs through `collective validate` on a tiny real sweep (serial executor) of
groups that cannot interact over three grids and three group sizes, and on the session's sweep with a sham."""
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from analysis_data import collective, sweep
from collective.analysis.validity import FAILS, HOLDS, REPORT, random_zero, validate

GRIDS = (5, 8, 10, 16, 20)
GRID_EFFECTS = (0.42, 0.55, 0.50, 0.30, 0.21)  # not linear in H (issue 22 point 1)
SIZES = (1, 2, 4, 8)  # 1/25 = 4/100, 1/64 = 4/256 ...: density is separable from G
EPISODES = 30


def simulated(seed: int = 0, g_effect: float = 0.0) -> pd.DataFrame:
    """Isolated searchers (score = grid effect - 0.004 K + g_effect G + cell effect + noise), random (mean 0),
    an oracle at 0.99 of the ceiling 0.8, and at size 4 a broadcast with its sham, both paired with the
    searchers by (cell, episode): real = searchers + 0.05, sham = searchers - 0.02."""
    rng = np.random.default_rng(seed)
    frames = []
    for index, side in enumerate(GRIDS):
        for size in SIZES:
            cell = 100 * index + size
            k = rng.integers(2, 24, EPISODES)
            motion = np.where(k <= 2, "stationary", np.where(k <= side, "periodic", "drifting"))
            base = dict(seed=1, cell=cell, episode=np.arange(EPISODES), grid=f"{side}x{side}", k_raw=k, motion=motion,
                        entropy_bits=math.log2(side * side * (side * side - 1)), group_size=size, mix="",
                        upsilon_best=0.8, communication_control="real", protocol_params="()")
            searchers = (GRID_EFFECTS[index] - 0.004 * k + g_effect * size + rng.normal(0, 0.02)
                         + rng.normal(0, 0.15, EPISODES))
            groups = {("local_search", "none", "real", "local_search"): searchers,
                      ("random", "none", "real", "random"): rng.normal(0, 0.1, EPISODES),
                      ("oracle", "none", "real", "oracle"): 0.792 + rng.normal(0, 0.005, EPISODES)}
            if size == 4:
                groups[("local_search", "broadcast", "real", "local_search+broadcast")] = searchers + 0.05
                groups[("local_search", "broadcast", "sham", "local_search+broadcast[sham]")] = searchers - 0.02
            for (behaviour, protocol, control, label), score in groups.items():
                frames.append(pd.DataFrame(dict(base, group=label, behaviour=behaviour, protocol=protocol,
                                                communication_control=control,
                                                score=np.minimum(score, base["upsilon_best"]))))
    return pd.concat(frames, ignore_index=True)


def statuses(rows: pd.DataFrame, check: str) -> set[str]:
    report = validate(rows)
    return set(report.loc[report["check"] == check, "status"])


def test_every_check_holds_on_a_dataset_built_to_pass():
    report = validate(simulated(), sweeps=[SHAM_SWEEP])
    assert set(report["status"]) == {HOLDS, REPORT}
    assert set(report["check"]) == {"isolated_group_size", "random_zero", "oracle_ceiling", "below_ceiling",
                                    "sham_not_above_real", "sham_mechanism", "k_by_motion"}
    isolated = report[report["check"] == "isolated_group_size"]
    assert set(isolated["subject"]) == {f"{group}: {term}" for group in ("local_search", "oracle", "random")
                                        for term in ("G", "D")}


def test_a_group_size_effect_of_agents_that_cannot_interact_fails():
    assert FAILS in statuses(simulated(g_effect=0.02), "isolated_group_size")


def paired_searchers(g_effect: float, episodes: int = 2000, seed: int = 1) -> pd.DataFrame:
    """Isolated searchers of a paired design (`paired_group_sizes`: the sizes of a grid play the same environments,
    one seed word per grid) at large n: score = grid effect + the environment's effect + g_effect G + noise, no
    cell effect (cells of a grid differ only in G)."""
    rng = np.random.default_rng(seed)
    frames = []
    for index, side in enumerate(GRIDS):
        environment = rng.normal(0, 0.15, episodes)
        k = rng.integers(2, 24, episodes)
        for size in SIZES:
            frames.append(pd.DataFrame(dict(
                group="local_search", behaviour="local_search", protocol="none", mix="", grid=f"{side}x{side}",
                group_size=size, cell=100 * index + size, seed_word=index, episode=np.arange(episodes), k_raw=k,
                entropy_bits=math.log2(side * side * (side * side - 1)),
                score=GRID_EFFECTS[index] + environment + g_effect * size + rng.normal(0, 0.05, episodes))))
    return pd.concat(frames, ignore_index=True)


def test_a_negligible_group_size_effect_at_large_n_holds_and_a_real_one_fails():
    """Issue 46 item 5: at 40,000 rows of a paired design the regression resolves a G effect of 0.0004 per agent
    (0.003 over G 1-8), which no reading could tell from 0; the check asks whether the effect over the design's
    range of G exceeds ISOLATED_MARGIN (a minimum-effect test), so it holds, and 0.004 per agent (0.028) fails."""
    from collective.analysis.validity import isolated_group_size

    negligible = {check.subject: check for check in isolated_group_size(paired_searchers(0.0004))}
    assert negligible["local_search: G"].status == HOLDS
    assert float(re.search(r"p\(≠ 0\) = ([\d.e-]+)", negligible["local_search: G"].figure)[1]) < 0.001  # resolved
    assert {check.status for check in isolated_group_size(paired_searchers(0.004))} == {FAILS, HOLDS}  # G fails, D not
    assert {check.status for check in isolated_group_size(paired_searchers(0.0))} == {HOLDS}


def test_the_suite_tests_one_group_size_slope_over_the_grids_where_the_report_has_one_per_grid():
    """The negative control's null (no G effect) holds in every grid, so it is tested on one slope over the grids
    (each grid its intercept) from every cell; the report's regression gives each grid its own (issue 45 item 2),
    whose few cells per grid would leave a real effect of 0.02 per agent undecided here."""
    from collective.analysis.regression import regression

    rows = simulated(g_effect=0.02)
    report = validate(rows).set_index(["check", "subject"])
    assert report.loc[("isolated_group_size", "local_search: G"), "status"] == FAILS
    per_grid = regression(rows[rows["group"] == "local_search"])[0].query("term == 'G'")
    assert len(per_grid) == len(GRIDS) and (per_grid["df"] < 4).all()


def test_a_random_agent_above_zero_fails():
    rows = simulated()
    rows.loc[(rows["group"] == "random") & (rows["grid"] == "8x8"), "score"] += 0.1
    report = validate(rows).set_index(["check", "subject"])
    assert report.loc[("random_zero", "random @ 8x8"), "status"] == FAILS
    assert report.loc[("random_zero", "random @ 5x5"), "status"] == HOLDS


def random_rows(rng, episodes: int, bias: dict[str, float] = {}) -> pd.DataFrame:
    """Random agents alone on four grids, R̄ ~ N(bias, 0.085) per episode (sd as random's on 5x5, T = 50)."""
    return pd.concat([pd.DataFrame(dict(seed=1, cell=c, episode=np.arange(episodes), grid=grid, behaviour="random",
                                        protocol="none", mix="", group="random",
                                        score=rng.normal(bias.get(grid, 0.0), 0.085, episodes)))
                      for c, grid in enumerate(["5x5", "8x8", "10x10", "20x20"])], ignore_index=True)


def test_random_zero_rarely_fails_correct_data_and_fails_an_imbalance():
    """Known answers (issue 46 item 5): on correct data (mean 0) the suite's random_zero fails a dataset at most at
    the nominal 5% (the CI-covers-0 rule failed one grid in twenty: ~19% of 4-grid datasets); an imbalance of 0.03
    fails its grid, and only it."""
    rng = np.random.default_rng(5)
    failed = [any(check.status == FAILS for check in random_zero(random_rows(rng, 80))) for _ in range(300)]
    assert np.mean(failed) <= 0.05
    caught = [any(check.status == FAILS for check in random_zero(random_rows(rng, 80, {"8x8": 0.05}))) for _ in range(50)]
    assert np.mean(caught) >= 0.9  # a clear imbalance fails at the small size too
    holding = [check for check in random_zero(random_rows(rng, 80)) if check.status == HOLDS]
    assert holding and all("not shown within it" in check.figure for check in holding)  # a pass the data cannot back
    large = random_zero(random_rows(rng, 2000, {"8x8": 0.03}))
    assert not any("not shown within it" in check.figure for check in large if check.status == HOLDS)
    checks = {check.subject: check.status for check in large}
    assert checks == {"random @ 10x10": HOLDS, "random @ 20x20": HOLDS, "random @ 5x5": HOLDS, "random @ 8x8": FAILS}


def test_an_oracle_far_below_its_ceiling_fails():
    rows = simulated()
    rows.loc[rows["group"] == "oracle", "score"] *= 0.8  # accuracy 0.79
    assert statuses(rows, "oracle_ceiling") == {FAILS}


def test_an_episode_above_its_ceiling_fails():
    rows = simulated()
    rows.loc[rows.index[rows["group"] == "local_search"][0], "score"] = 0.81
    report = validate(rows).set_index("check")
    assert report.loc["below_ceiling", "status"] == FAILS
    assert report.loc["below_ceiling", "figure"].startswith("1 of")


def test_messages_that_mislead_fail():
    """A protocol whose real messages do worse than another episode's (its sham) misleads its listeners."""
    rows = simulated()
    real = (rows["protocol"] == "broadcast") & (rows["communication_control"] != "sham")
    rows.loc[real, "score"] -= 0.2
    assert statuses(rows, "sham_not_above_real") == {FAILS}


SHAM_SWEEP = {"spec": {"name": "sham", "seed": 5, "profile": "sound", "episodes": 10, "iterations": 30,
                        "factors": {"grid": ["6x6"], "group_size": [3]},
                        "groups": {"behaviours": ["local_search"],
                                   "protocols": [{"name": "broadcast", "controls": ["real", "sham"]},
                                                 {"name": "examples.numpy_broadcast:Broadcast",
                                                  "controls": ["real", "sham"]}]}}}
SHAMS = ["local_search+broadcast[sham]", "local_search+examples.numpy_broadcast:Broadcast[sham]"]


def mechanism(monkeypatch=None, broken=None) -> pd.DataFrame:
    """sham_mechanism on the tiny sweep's two shams (a built-in and a plug-in protocol), with `broken` in place of
    the kernel's overhearing where given."""
    from collective.analysis.validity import sham_mechanism

    if broken is not None:
        monkeypatch.setattr("collective.evaluation.sham.play_overhearing", broken)
    rows = pd.DataFrame({"group": SHAMS, "communication_control": "sham"})
    return pd.DataFrame([vars(check) for check in sham_mechanism(rows, [SHAM_SWEEP])])


def test_the_platform_sham_holds_its_mechanism():
    report = mechanism()
    assert list(report["subject"]) == [f"{label} @ 6x6 G=3" for label in SHAMS]
    assert set(report["status"]) == {HOLDS}
    assert all("exactly" in figure and "8/8 episodes;" in figure for figure in report["figure"])


def test_a_sham_that_leaks_the_real_episodes_messages_fails(monkeypatch):
    """A sham whose listeners hear the others where they are in the listeners' own episode (a second copy playing
    it): (a) cannot tell it from the real one, (b) does: a listener's play follows the other members' starts."""
    from collective.simulation.stepping import play_overhearing

    def leaking(group, speaker, environments, shadows, record=False):
        return play_overhearing(group, speaker, environments, environments, record)

    report = mechanism(monkeypatch, leaking)
    assert set(report["status"]) == {FAILS}
    assert all("exactly" in figure and "8/8 episodes;" not in figure for figure in report["figure"])


def test_a_blindfold_sham_fails(monkeypatch):
    """A sham whose listeners play the shadow episode itself, acting on its information alone (issue 22 point 2):
    its play is the same whatever its own episode, so (c) finds no change when ⊕ and ⊖ trade places there, where
    the real group's play changes."""
    from collective.simulation.stepping import play_overhearing

    def blindfold(group, speaker, environments, shadows, record=False):
        return play_overhearing(group, speaker, shadows, shadows, record)

    report = mechanism(monkeypatch, blindfold)
    assert set(report["status"]) == {FAILS}
    assert all("⊕↔⊖: 0/8 episodes (real group" in figure and "group 0/8" not in figure
               for figure in report["figure"])


def test_a_sham_that_silences_the_others_fails(monkeypatch):
    """A sham whose listeners hear nothing (isolated play, the others' traffic still counted) keeps their sensing
    and lets no real message in, so (b) and (c) hold; only (a) finds that it is not the protocol with the others
    moved: hearing their own episode, its listeners do not play as the real group."""
    from collective.simulation.stepping import Playing

    def silent(group, speaker, environments, shadows, record=False):
        listening = Playing(group, environments, record, speaks=False)
        for _ in range(listening.core.iterations):
            listening.move(listening.core.observe(), None)
        return listening.result(0.0)

    report = mechanism(monkeypatch, silent)
    assert set(report["status"]) == {FAILS}
    assert all("shadow = real: NO" in figure and "8/8 episodes;" in figure for figure in report["figure"])


def test_validate_holds_on_a_real_sweep_with_a_sham(tmp_path_factory):
    """The session's broadcast-and-sham sweep (10 episodes): the sham's mechanism is re-played from its sweep.json
    and holds. (The correlation check it replaced FAILED here: r's CI over 10 episodes reaches below 0.)"""
    result = collective("validate", sweep(tmp_path_factory.getbasetemp(), "sham"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "holds   sham_mechanism       local_search+broadcast[sham] @ 6x6 G=3" in result.stdout


def test_the_mechanism_needs_the_sweep_to_replay():
    from collective.analysis.validity import sham_mechanism

    rows = pd.DataFrame({"group": SHAMS, "communication_control": "sham"})
    assert [check.status for check in sham_mechanism(rows)] == ["n/a"]
    real = rows.assign(communication_control="real")
    assert [check.status for check in sham_mechanism(real, [SHAM_SWEEP])] == ["n/a"]
    assert [check.figure for check in sham_mechanism(rows.assign(group="other[sham]"), [SHAM_SWEEP])] == [
        "no sham group of the rows in the sweeps' specs"]


def test_the_k_report_shows_a_stationary_versus_moving_step_without_a_slope():
    """Υ 0.6 when stationary, 0.3 when moving whatever K: the report shows the levels of the rows' motion kinds and
    a K slope near 0 within the moving ones."""
    rows = simulated()
    searchers = rows["group"] == "local_search"
    rows.loc[searchers, "score"] = np.where(rows.loc[searchers, "motion"] == "stationary", 0.6, 0.3)
    rows.loc[searchers, "score"] += np.random.default_rng(2).normal(0, 0.01, searchers.sum())
    report = validate(rows)
    figure = report.set_index(["check", "subject"]).loc[("k_by_motion", "local_search @ 10x10"), "figure"]
    levels = {kind: float(value) for kind, value in re.findall(r"(stationary|periodic|drifting) ([-\d.]+)", figure)}
    assert levels == pytest.approx({"stationary": 0.6, "periodic": 0.3, "drifting": 0.3}, abs=0.02)
    for kind in ("periodic", "drifting"):
        slope = figure.split(kind)[1].split("K slope ")[1]
        low, high = map(float, slope[slope.index("[") + 1:slope.index("]")].split(","))
        assert low < 0 < high


def test_the_k_report_needs_the_motion_column():
    report = validate(simulated().drop(columns="motion"))
    assert set(report.loc[report["check"] == "k_by_motion", "status"]) == {"n/a"}


TINY_ISOLATED = """
name = "isolated"
seed = 11
profile = "paper"
episodes = 24
iterations = 24
[factors]
grid = ["4x4", "6x6", "8x8"]
group_size = [1, 2, 4]
[groups]
behaviours = ["random", "local_search", "oracle"]
"""


@pytest.fixture(scope="module")
def isolated_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("validity")
    (root / "isolated.toml").write_text(TINY_ISOLATED)
    result = collective("sweep", root / "isolated.toml", "--out", root / "isolated", "--executor", "serial")
    assert result.returncode == 0, result.stderr
    return root / "isolated"


def test_the_suite_holds_on_a_real_sweep_of_groups_that_cannot_interact(isolated_sweep):
    result = collective("validate", isolated_sweep, "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = pd.DataFrame(json.loads(result.stdout))
    assert set(report.loc[report["check"] == "k_by_motion", "status"]) == {REPORT}  # the rows carry `motion`
    checked = report[~report["check"].isin(["k_by_motion", "sham_not_above_real", "sham_mechanism"])]  # no shams
    assert set(checked["status"]) == {HOLDS}
    assert {"isolated_group_size", "random_zero", "oracle_ceiling", "below_ceiling"} <= set(checked["check"])
    assert (report["check"] == "isolated_group_size").sum() == 6  # G and D: 1/16 = 4/64 shares a density


def test_validate_exits_1_naming_the_failing_check(isolated_sweep, tmp_path):
    rows = pd.read_parquet(isolated_sweep / "dataset")
    rows.loc[rows["group"] == "random", "score"] += 0.2
    (tmp_path / "dataset").mkdir()
    rows.to_parquet(tmp_path / "dataset" / "part-0.parquet")
    result = collective("validate", tmp_path)
    assert result.returncode == 1
    assert "FAILS   random_zero" in result.stdout and "checks fail" in result.stdout.splitlines()[-1]
