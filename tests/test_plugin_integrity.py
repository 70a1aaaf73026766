"""Integrity of plug-ins (issue 24 point 4): observations handed to plug-ins are read-only, a behaviour's
agents act on their own slices unless it declares `centralised = True`, which every row records, and
the conformance kit refuses the two cheats of the issue and says what it checked."""
from pathlib import Path

import numpy as np
import pytest

from collective.config import EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.simulation.stepping import SteppingCore
from collective.testing import check_behaviour, check_protocol

CHEATS = Path(__file__).parent / "cheating_plugins.py"
EXAMPLES = Path(__file__).parent.parent / "examples"


def test_the_core_hands_out_read_only_observations_whose_views_stay_read_only():
    config = EvaluationConfig.from_profile("paper", behaviour="random", group_size=3, rows=5, cols=5, iterations=4,
                                           episodes=2)
    core = SteppingCore(generate_environments(config, np.arange(2)), 3, 5, 5, 4, 1, 1, 1)
    obs = core.observe()
    for array in (obs.window, obs.cell, obs.reward, obs.target, obs.field):
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0
        view = array[:, 1:]
        with pytest.raises(ValueError):
            view.flags.writeable = True


def test_the_kit_refuses_a_protocol_that_writes_into_the_window():
    """Fails on the old code: the write went through, steering agents with 0 messages, and the kit passed."""
    with pytest.raises(AssertionError, match="SteersThroughWindow.communicate: raised ValueError: .*read-only"):
        check_protocol(f"{CHEATS}:SteersThroughWindow", mix="local_search:3", say=lambda line: None)


def test_the_kit_refuses_a_behaviour_that_coordinates_its_agents_centrally():
    """Fails on the old code: the kit did not look at what an agent's action depends on."""
    with pytest.raises(AssertionError, match="changed when only the other agents' observations did"):
        check_behaviour(f"{CHEATS}:CentralCoordinator", say=lambda line: None)


def test_a_declared_centralised_behaviour_passes_labelled():
    lines = []
    check_behaviour(f"{CHEATS}:DeclaredCentralCoordinator", say=lines.append)
    assert any("declares centralised = True" in line for line in lines)
    assert EvaluationConfig.from_profile("paper", behaviour=f"{CHEATS}:DeclaredCentralCoordinator").centralised
    assert not EvaluationConfig.from_profile("paper", behaviour=f"{EXAMPLES}/numpy_local_search.py:LocalSearch",
                                             mix="").centralised


@pytest.mark.parametrize("behaviour", ["local_search", "oracle", "imitation", "random",
                                       f"{EXAMPLES}/numpy_local_search.py:LocalSearch"])
def test_honest_behaviours_pass_the_decentralisation_check_and_the_kit_says_so(behaviour):
    lines = []
    check_behaviour(behaviour, say=lines.append)
    assert sum("depend on its own observation only" in line for line in lines) == 1
    assert all(line.startswith(("ok ", "skip ")) for line in lines) and len(lines) >= 10


def test_an_honest_plugin_protocol_passes_with_a_line_per_check():
    lines = []
    check_protocol(f"{EXAMPLES}/numpy_broadcast.py:Broadcast", mix="local_search:3", say=lines.append)
    assert any("without writing into its read-only observations" in line for line in lines)
    assert any("whatever was said" in line for line in lines)


def test_rows_record_centralised_and_the_upsilon_table_shows_it(tmp_path):
    from collective.analysis.dataset import load_dataset
    from collective.analysis.upsilon import upsilon_table
    from collective.sweeps.command import run_spec
    from collective.sweeps.runtime import SerialExecutor
    from collective.sweeps.spec import load_spec

    spec_file = tmp_path / "central.toml"
    spec_file.write_text(f"""
name = "central"
seed = 3
profile = "paper"
episodes = 6
iterations = 10

[factors]
grid = ["5x5"]
group_size = [3]

[groups]
behaviours = ["local_search", "{CHEATS}:DeclaredCentralCoordinator"]
protocols = [{{ name = "none" }}]
""")
    spec = load_spec(spec_file)
    run_spec(spec, tmp_path / "out", SerialExecutor(spec))
    rows = load_dataset([tmp_path / "out"]).rows
    by_behaviour = rows.groupby("behaviour")["centralised"].agg(["all", "any"])
    assert by_behaviour.loc[f"{CHEATS}:DeclaredCentralCoordinator", "all"]
    assert not by_behaviour.loc["local_search", "any"]
    table = upsilon_table(rows, ["behaviour"]).set_index("behaviour")
    assert table["centralised"].to_dict() == {"local_search": False, f"{CHEATS}:DeclaredCentralCoordinator": True}
