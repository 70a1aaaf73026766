"""Sweep specs: the shipped specs validate, bad specs fail naming the key path, seeds are keyed stably."""
import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from collective.config import CPP_SWITCHES
from collective.sweeps.spec import SpecError, load_spec, parse_spec
from sweep_support import TINY_SPEC, collective, write_spec

EXPERIMENTS = Path(__file__).parent.parent / "experiments"


def tiny(**changes) -> dict:
    """The tiny spec as a dict with top-level or dotted-path changes (None deletes the key)."""
    source = tomllib.loads(TINY_SPEC)
    for path, value in changes.items():
        *parents, key = path.split("__")
        table = source
        for parent in parents:
            table = table[parent]
        if value is None:
            del table[key]
        else:
            table[key] = value
    return source


def test_shipped_specs_validate_and_factor_study_has_its_size():
    quick = load_spec(EXPERIMENTS / "quickstart.toml")
    assert quick.name == "quickstart" and len(quick.cells) == 9
    study = load_spec(EXPERIMENTS / "factors.toml")
    assert len(study.groups) == 13 and study.episodes == 1000 and study.iterations == 100
    grids = {dict(cell.factors)["grid"] for cell in study.cells}
    sizes = {dict(cell.factors)["group_size"] for cell in study.cells}
    assert len(grids) == 6 and len(sizes) == 5 and len(study.cells) == 30
    protocols = {group.protocol for group in study.groups}
    assert len(protocols) == 8  # none and the seven protocols


# (changes to the tiny spec, the key path the error must name, a fragment of the allowed values)
BAD_SPECS = [
    (dict(factors__grdi=["5x5"]), "factors.grdi", "allowed: grid, group_size"),
    (dict(sede=1), "sede", "allowed: name, description, seed"),
    (dict(seed=None), "seed", "required"),
    (dict(factors__grid=["5x5", "ten"]), "factors.grid[1]", "MxN"),
    (dict(factors__grid=["1x5"]), "factors.grid[0]", "at least 2x2"),
    (dict(factors__grid=[]), "factors.grid", "non-empty list"),
    (dict(factors__group_size=[1, 3, 0]), "factors.group_size[2]", ">= 1"),
    (dict(factors__complexity=["9:3"]), "factors.complexity[0]", "must not exceed k_max"),
    (dict(factors__complexity=["50:60"]), "factors.complexity[0]", "reachable K"),
    (dict(factors__observation_range=[1, 3]), "factors.observation_range[1]", "at most 2 on 5x5"),
    (dict(factors__environment=["moon"]), "factors.environment[0]", "allowed: lambda_star, landscape"),
    (dict(groups__behaviours=["random", "telepath"]), "groups.behaviours[1]", "allowed: random, local_search"),
    (dict(groups__protocols=[{"name": "gossip"}]), "groups.protocols[0].name", "allowed: none, stigmergy"),
    (dict(groups__protocols=[{"name": "wisdom"}]), "groups.protocols[0].name", "at least 2"),
    (dict(groups__protocols=[{"name": "wisdom", "group_sizes": [3], "colour": 1}]), "groups.protocols[0].colour",
     "allowed: name, params"),
    (dict(groups__protocols=[{"name": "wisdom", "behaviours": ["local_search"], "group_sizes": [4]}]),
     "groups.protocols[0].group_sizes", "allowed: [1, 3]"),
    (dict(groups__protocols=[{"name": "none"}, {"name": "stigmergy", "behaviours": ["local_search"],
                                                  "group_sizes": [3], "params": {"loudness": 2}}]),
     "groups.protocols[1].params", "loudness"),
    (dict(groups__mixes=["local_search:2,telepath:1"]), "groups.mixes[0]", "allowed: random"),
    (dict(groups__mixes=["local_search:1,q_learning:1"], groups__protocols=[{"name": "none"}]), "groups.mixes[0]",
     "plays in no cell"),
    (dict(groups__behaviours=["random", "random"]), "groups", "listed twice"),
    (dict(settings__q_alpha=0), "settings.q_alpha", "(0.0, 1.0]"),
    (dict(settings__behaviour="random"), "settings.behaviour", "set by groups.behaviours"),
    (dict(settings__colour=1), "settings.colour", "reward_radius, coordination_threshold"),
    (dict(profile="lambdastar1999"), "profile", "allowed: paper, sound, lambdastar2016"),
    (dict(episodes=0), "episodes", ">= 1"),
    (dict(iterations="many"), "iterations", "integer"),
]


@pytest.mark.parametrize("changes, path, allowed", BAD_SPECS, ids=[case[1] for case in BAD_SPECS])
def test_bad_spec_names_key_path_and_allowed_values(changes, path, allowed):
    with pytest.raises(SpecError) as caught:
        parse_spec(tiny(**changes))
    assert caught.value.path == path
    assert allowed in caught.value.message


def test_bad_spec_on_the_command_line_exits_2_with_one_line(tmp_path):
    spec = write_spec(tmp_path, TINY_SPEC.replace('grid = ["5x5", "6x6"]', 'grid = ["5x5", "6x6"]\ngrdi = [1]'))
    result = collective("sweep", str(spec), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "factors.grdi" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # nothing started
    broken = write_spec(tmp_path, "seed = [", "broken.toml")
    assert collective("sweep", str(broken), "--out", str(tmp_path / "out")).returncode == 2


def test_dry_run_prints_the_plan_and_exits(tmp_path):
    result = collective("sweep", str(EXPERIMENTS / "factors.toml"), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "30 cells x 13 group types" in result.stdout and "348,000 rows" in result.stdout
    assert "estimated time" in result.stdout


def test_keys_are_stable_when_another_factor_value_changes():
    before = parse_spec(tiny())
    after = parse_spec(tiny(factors__grid=["5x5", "7x7"]))
    assert before.cells[0].key == after.cells[0].key and before.cells[1].key == after.cells[1].key  # 5x5 cells
    assert {c.key for c in before.cells[2:]}.isdisjoint(c.key for c in after.cells[2:])
    assert [g.key for g in before.groups] == [g.key for g in after.groups]
    assert before.sweep_id != after.sweep_id
    more_episodes = parse_spec(tiny(episodes=48))
    assert [c.key for c in more_episodes.cells] == [c.key for c in before.cells]  # episode e keeps its seeds


def test_specs_name_plugins_by_import_path_with_their_parameters():
    spec = parse_spec(tiny(groups__behaviours=["local_search", "examples.numpy_local_search:LocalSearch"],
                           groups__protocols=[{"name": "none"}, {"name": "examples.numpy_broadcast:Broadcast",
                                                                 "group_sizes": [3]}],
                           settings={"behaviour_params": {}}))
    labels = {group.label for group in spec.groups}
    assert "examples.numpy_local_search:LocalSearch+examples.numpy_broadcast:Broadcast" in labels
    with pytest.raises(SpecError, match=r"groups\.behaviours\[1\]: .*cannot import 'no_such_pkg.agents'"):
        parse_spec(tiny(groups__behaviours=["random", "no_such_pkg.agents:Homing"]))
    with pytest.raises(SpecError, match=r"settings\.behaviour_params\.speed: no plug-in behaviour of the sweep"):
        parse_spec(tiny(settings={"behaviour_params": {"speed": 2}}))


def test_cpp_switch_off_cells_share_their_environments_and_agent_streams():
    """An ablation (factors.cpp_switch_off): cells that differ only in one 2016 switch have keys of
    their own but one seed word, so their groups play the same episodes with the same agent streams
    (a paired difference); a spec without switches keeps its keys and seeds (key == seed_key)."""
    import numpy as np

    from collective.sweeps.plan import EnvironmentBlock, generate_block, group_agent_seeds
    plain = parse_spec(tiny())
    assert all(cell.key == cell.seed_key for cell in plain.cells)
    source = tiny(profile="lambdastar2016", factors__grid=["5x5"], factors__group_size=[3],
                  factors__cpp_switch_off=["none", "cpp_oracle", "cpp_first_observation", "all"])
    spec = parse_spec(source)
    on, no_oracle, no_reset, off = spec.cells
    assert off.seed_key == on.seed_key and not any(off.configs[off.playing[0]].as_record()[name]
                                                   for name in CPP_SWITCHES)
    assert len({on.key, no_oracle.key, no_reset.key}) == 3 and on.seed_key == no_oracle.seed_key == no_reset.seed_key
    config, other = on.configs[on.playing[0]], no_oracle.configs[no_oracle.playing[0]]
    assert config.cpp_oracle and not other.cpp_oracle and other.cpp_first_observation
    assert {k for k, v in config.as_record().items() if other.as_record()[k] != v} == {"cpp_oracle"}
    first, second = (generate_block(spec, EnvironmentBlock(c, 0, 6, ())) for c in (0, 1))
    assert np.array_equal(first.good, second.good) and np.array_equal(first.starts, second.starts)
    group = spec.groups[0].key
    assert np.array_equal(group_agent_seeds(spec.seed, on.seed_key, np.arange(6), group),
                          group_agent_seeds(spec.seed, no_oracle.seed_key, np.arange(6), group))
    with pytest.raises(SpecError, match=r"factors.cpp_switch_off\[0\]: unknown value 'cpp_magic'"):
        parse_spec(tiny(factors__cpp_switch_off=["cpp_magic"]))


def test_group_sizes_of_a_grid_share_their_environments_under_sound():
    """Issue 22 point 8: under `sound` (paired_group_sizes) cells that differ only in group size keep keys of
    their own and share one seed word per grid, so they play the same ⊕/⊖ paths and agent i the same start cell
    and stream;
    under `paper` every cell keeps its own word (the keys of before: key == seed_key, tested above)."""
    import numpy as np

    from collective.sweeps.plan import EnvironmentBlock, generate_block, group_agent_seeds
    spec = parse_spec(tiny(profile="sound", factors__group_size=[3, 6], groups__behaviours=["local_search"]))
    cells = {dict(cell.factors)["grid"]: [] for cell in spec.cells}
    for c, cell in enumerate(spec.cells):
        cells[dict(cell.factors)["grid"]].append(c)
    for grid, (small, large) in cells.items():
        assert spec.cells[small].key != spec.cells[large].key
        assert spec.cells[small].seed_key == spec.cells[large].seed_key, grid
        first, second = (generate_block(spec, EnvironmentBlock(c, 0, 8, ())) for c in (small, large))
        assert np.array_equal(first.good, second.good) and np.array_equal(first.evil, second.evil)
        assert np.array_equal(second.starts[:, :3], first.starts) and second.starts.shape[1] == 6
        group = spec.groups[0].key
        assert np.array_equal(group_agent_seeds(spec.seed, spec.cells[small].seed_key, np.arange(8), group),
                              group_agent_seeds(spec.seed, spec.cells[large].seed_key, np.arange(8), group))
    assert len({spec.cells[cs[0]].seed_key for cs in cells.values()}) == len(cells)  # grids keep their own
    paper = parse_spec(tiny(factors__group_size=[3, 6], groups__behaviours=["local_search"]))
    assert len({cell.seed_key for cell in paper.cells}) == len(paper.cells)


def test_lambdastar2016_specs_validate():
    main = load_spec(EXPERIMENTS / "lambdastar2016.toml")
    assert len(main.groups) == 13 and len(main.cells) == 120 and main.iterations == 50
    assert all(len(cell.playing) == 13 for cell in main.cells)  # groups of one under every protocol
    ablation = load_spec(EXPERIMENTS / "lambdastar2016_ablation.toml")
    assert len({cell.seed_key for cell in ablation.cells}) * 9 == len(ablation.cells)
    for name, grid, size, iterations in (("7x7_t20", "7x7", 6, 20), ("12x12_t30", "12x12", 6, 30)):
        spec = load_spec(EXPERIMENTS / f"lambdastar2016_{name}.toml")
        factors = dict(spec.cells[0].factors)
        assert (factors["grid"], factors["group_size"], spec.iterations) == (grid, size, iterations)


def test_key_value_overrides_set_the_spec_and_are_recorded(tmp_path):
    """`collective sweep SPEC KEY=VALUE ...` (issue 43 item 5): before or after the options; a list field from a
    comma-separated value; checked like the file's keys; the sweep's sweep.json holds the spec as overridden."""
    spec = write_spec(tmp_path, TINY_SPEC)
    result = collective("sweep", str(spec), "episodes=6", "--out", str(tmp_path / "out"), "--executor", "serial",
                        "factors.grid=5x5", "groups.behaviours=random,local_search")
    assert result.returncode == 0, result.stderr
    recorded = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert json.dumps(recorded).count('"episodes": 6') >= 1
    rows = pd.read_parquet(tmp_path / "out" / "dataset")
    assert len(rows) == 6 * (2 + 3) and set(rows["grid"]) == {"5x5"}  # size 1: 2 groups; size 3: 2 + wisdom
    assert load_spec(spec, ["episodes=6", "factors.grid=5x5", "groups.behaviours=random,local_search"]).sweep_id \
        in json.dumps(recorded)


@pytest.mark.parametrize("override, named", [
    ("episodes", "expected KEY=VALUE"),
    ("factors.gird=5x5", "factors.gird: unknown key"),
    ("episodes=0", "episodes"),
    ("episodes.x=3", "episodes is a value, not a table"),
])
def test_a_bad_override_is_one_line_before_any_work(tmp_path, override, named):
    spec = write_spec(tmp_path, TINY_SPEC)
    result = collective("sweep", str(spec), override, "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and named in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
