"""The `collective evaluate` contract: JSON keys, readable table, one-line errors with status 2."""
import json
import re
import subprocess
import sys

import pytest

from collective.progress import COMPILE_NOTICE

REQUIRED_KEYS = {"upsilon", "ci95_low", "ci95_high", "episodes", "iterations", "group_size", "grid", "behaviour",
                 "protocol", "profile", "k_mean", "entropy_bits", "seed", "wall_seconds", "agent_steps_per_second"}


def collective(*args):
    return subprocess.run([sys.executable, "-m", "collective", *args], capture_output=True, text=True, timeout=300)


def test_evaluate_json_contract():
    result = collective("evaluate", "--behaviour", "local_search", "--group-size", "3", "--grid", "10",
                        "--iterations", "50", "--episodes", "40", "--seed", "9", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert REQUIRED_KEYS <= set(record)
    assert record["grid"] == "10x10" and record["group_size"] == 3 and record["episodes"] == 40
    assert record["behaviour"] == "local_search" and record["protocol"] == "none" and record["profile"] == "sound"
    assert record["ci95_low"] < record["upsilon"] < record["ci95_high"]
    assert record["entropy_bits"] == pytest.approx(13.2732, abs=1e-4)  # log2(100·99): an independent ⊖
    assert 2 <= record["k_mean"] <= 23 and record["k_evil_mean"] == record["k_mean"]  # sound: both played at K
    again = json.loads(collective("evaluate", "--behaviour", "local_search", "--group-size", "3", "--grid",
                                  "10x10", "--iterations", "50", "--episodes", "40", "--seed", "9",
                                  "--json").stdout)
    assert again["upsilon"] == record["upsilon"]


def test_evaluate_table_and_reference_profile_with_complexity_range():
    result = collective("evaluate", "--behaviour", "oracle", "--grid", "8x12", "--iterations", "60",
                        "--episodes", "30", "--complexity", "5:9", "--profile", "lambdastar2016")
    assert result.returncode == 0, result.stderr
    assert "oracle" in result.stdout and "8x12" in result.stdout and "lambdastar2016" in result.stdout


@pytest.mark.parametrize("args, option", [
    (["--grid", "1x5"], "--grid"),
    (["--grid", "ten"], "--grid"),
    (["--group-size", "0"], "--group-size"),
    (["--iterations", "0"], "--iterations"),
    (["--behaviour", "telepath"], "--behaviour"),
    (["--profile", "lambdastar1999"], "--profile"),
    (["--grid", "5", "--iterations", "20", "--complexity", "50:60"], "--complexity"),
    (["--complexity", "9:3"], "--complexity"),
    (["--observation-range", "5", "--grid", "10"], "--observation-range"),
    (["--episodes", "-3"], "--episodes"),
    (["--alpha", "0"], "--alpha"),
    (["--evil", "twin"], "--evil"),
    (["--env", "maze"], "--env"),
    (["--env", "landscape", "--peaks", "0"], "--peaks"),
    (["--env", "landscape", "--grid", "6", "--peaks", "30"], "--peaks"),
    (["--env", "landscape", "--deception", "2"], "--deception"),
    (["--env", "landscape", "--noise", "-0.5"], "--noise"),
    (["--env", "landscape", "--ruggedness", "0.5"], "--deception"),  # renamed: the message names the new option
    (["--env", "landscape", "--motion", "spin"], "--motion"),
])
def test_bad_input_exits_2_with_one_line(args, option):
    base = {"--behaviour": "random"}
    argv = ["evaluate"] + [x for k, v in base.items() if k not in args for x in (k, v)] + args
    result = collective(*argv)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert option in lines[0] and "Traceback" not in result.stderr


def test_help_explains_options():
    result = collective("evaluate", "--help")
    assert result.returncode == 0
    for option in ("--behaviour", "--group-size", "--grid", "--iterations", "--episodes", "--seed", "--profile",
                   "--observation-range", "--complexity", "--json"):
        assert option in result.stdout


def test_version_names_the_installed_distribution_and_bare_collective_shows_usage():
    from importlib.metadata import version

    shown = collective("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == \
        f"collective {version('collective-intelligence')} (collective-intelligence)"
    bare = collective()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: collective") and "evaluate" in bare.stdout


def test_help_shows_the_default_profiles_defaults():
    """--evil and --epsilon differ by profile: help names the default profile's values first (issue 22)."""
    from collective.config import DEFAULT_PROFILE, EvaluationConfig

    text = " ".join(collective("evaluate", "--help").stdout.split())
    sound = EvaluationConfig.from_profile(DEFAULT_PROFILE)
    assert f"default {sound.evil_pairing} under {DEFAULT_PROFILE}" in text
    assert f"default {sound.q_epsilon} under {DEFAULT_PROFILE}" in text


def test_the_helps_copy_of_the_profiles_matches_the_config():
    """cli.py writes out what --help says of the profiles (so --help need not load numba): it must say what
    collective.config does, each profile's value of each field, the default profile first."""
    from dataclasses import fields

    from collective import cli
    from collective.config import DEFAULT_PROFILE, PROFILES, EvaluationConfig

    assert cli.DEFAULT_PROFILE == DEFAULT_PROFILE and set(cli.PROFILE_NAMES) == set(PROFILES)
    assert cli.PROFILE_NAMES[0] == DEFAULT_PROFILE
    plain = {f.name: f.default for f in fields(EvaluationConfig)}
    for field, text in cli.PROFILE_DEFAULTS.items():
        values: dict[str, list[str]] = {}
        for name in cli.PROFILE_NAMES:
            values.setdefault(str(PROFILES[name].get(field, plain[field])), []).append(name)
        assert text == "default " + "; ".join(f"{value} under {', '.join(names)}" for value, names in values.items())


def test_every_option_whose_default_differs_by_profile_names_each_profiles_value():
    """--help of `evaluate` shows, for each option whose field the profiles set differently, every profile's value
    (said `--alpha` "(default 0.3)" while the default profile, sound, runs 0.1: issue 43 point 5)."""
    from dataclasses import fields

    from collective import cli
    from collective.config import PROFILES, EvaluationConfig

    plain = {f.name: f.default for f in fields(EvaluationConfig)}
    actions = {option: action for action in cli.build_parser()._subparsers._group_actions[0].choices["evaluate"]._actions
               for option in action.option_strings}
    for field, option in cli.FIELD_OPTIONS.items():
        values = {PROFILES[name].get(field, plain.get(field)) for name in cli.PROFILE_NAMES} - {None}
        if len(values) > 1:
            assert all(str(value) in actions[option].help for value in values), (option, values, actions[option].help)


HEAVY_MODULES = ("numba", "ray", "pandas", "pyarrow", "matplotlib", "scipy", "statsmodels", "numpy")
HELP_PROBE = """
import contextlib, io, sys
from collective.cli import EXAMPLES, main
for argv in [["--help"], []] + [[name, "--help"] for name in EXAMPLES]:
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        try:
            main(argv)
        except SystemExit as stop:
            assert stop.code in (0, None), (argv, stop.code)
    assert "usage: collective" in shown.getvalue() and "examples:" in shown.getvalue(), argv
print(" ".join(name for name in {heavy} if name in sys.modules))
"""


def test_help_loads_no_heavy_module():
    """`collective --help` and every `collective SUB --help` (and bare `collective`) import none of numba, Ray,
    pandas, pyarrow, matplotlib, SciPy, statsmodels or NumPy: they stay well under half a second."""
    probe = subprocess.run([sys.executable, "-c", HELP_PROBE.format(heavy=HEAVY_MODULES)], capture_output=True,
                           text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == []


CITATIONS_A_USER_CANNOT_READ = re.compile(r"spec §|\bissue \d+")


def test_help_cites_only_what_a_user_can_read():
    """Issue 43 point 8: help cited "spec §N", a document that is not in the repository or the wheel; it cites the
    papers (docs/concepts.md lists them). Every subcommand's help and the behaviours and protocols lists."""
    from collective.cli import EXAMPLES

    for argv in [["--help"], ["behaviours"], ["protocols"]] + [[name, "--help"] for name in EXAMPLES]:
        shown = collective(*argv).stdout
        assert shown and not CITATIONS_A_USER_CANNOT_READ.search(shown), (argv, CITATIONS_A_USER_CANNOT_READ.findall(shown))


def test_every_help_example_parses():
    """Each subcommand's --help shows examples, and each example is a valid command line."""
    import shlex

    from collective.cli import EXAMPLES, build_parser

    parser = build_parser()
    commands = next(action for action in parser._actions if action.dest == "command").choices
    assert set(EXAMPLES) == set(commands)
    for name, examples in EXAMPLES.items():
        assert 1 <= len(examples) <= 2
        for example in examples:
            argv = shlex.split(example)
            assert argv[0] == "collective" and argv[1] == name
            assert parser.parse_args(argv[1:]).command == name


def test_a_protocol_with_the_default_group_of_one_says_which_group_size_to_give():
    result = collective("evaluate", "--behaviour", "local_search", "--protocol", "broadcast", "--episodes", "10")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "needs at least 2" in lines[0] and "--group-size 10" in lines[0]
    given = collective("evaluate", "--behaviour", "local_search", "--group-size", "1", "--protocol", "broadcast")
    assert given.returncode == 2 and "--group-size 10" not in given.stderr  # the user chose 1: no hint


def test_evaluate_with_protocol_reports_communication():
    result = collective("evaluate", "--profile", "paper", "--mix", "local_search:4,oracle:1", "--protocol", "broadcast",
                        "--protocol-param", "memory=true", "--iterations", "30", "--episodes", "10", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["protocol"] == "broadcast" and record["protocol_params"] == {"memory": "true"}
    assert record["group_size"] == 5 and record["mix"] == "local_search:4,oracle:1"
    assert 0 < record["messages_per_iteration"] <= 4 and record["bits_per_iteration"] > 0


@pytest.mark.parametrize("args, option", [
    (["--behaviour", "local_search", "--protocol", "gossip"], "--protocol"),
    (["--behaviour", "local_search", "--group-size", "3", "--protocol", "shared_q"], "--protocol"),
    (["--behaviour", "local_search", "--protocol", "hierarchy"], "--protocol"),
    (["--behaviour", "local_search", "--group-size", "3", "--protocol", "auction", "--protocol-param", "bid=9"],
     "--protocol-param"),
    (["--behaviour", "local_search", "--protocol-param", "novalue"], "--protocol-param"),
    (["--mix", "local_search:2,telepath:1"], "--mix"),
    (["--group-size", "2"], "--behaviour"),
])
def test_bad_protocol_input_exits_2_with_one_line(args, option):
    result = collective("evaluate", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("args, suggestion", [
    (["analyse", "runs/quickstart"], "analyze"),
    (["evalute", "--behaviour", "random"], "evaluate"),
    (["evaluate", "--behavior", "random"], "--behaviour"),
    (["evaluate", "--behavior=random", "--episodes", "5"], "--behaviour"),
    (["demo", "--group-szie", "3"], "--group-size"),
    (["sweep", "experiments/quickstart.toml", "--dryrun"], "--dry-run"),
    (["--debgu", "behaviours"], "--debug"),
])
def test_a_mistyped_command_or_option_names_the_closest_in_one_line(args, suggestion):
    result = collective(*args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and result.stdout == "" and len(lines) == 1, result.stderr
    assert lines[0].endswith(f"did you mean {suggestion}?"), lines[0]
    assert args[0] in lines[0]  # what was typed is quoted


@pytest.mark.parametrize("args, suggestion", [
    (["evaluate", "--behaviour", "randm"], "random"),
    (["evaluate", "--behaviour", "local_serch", "--group-size", "3"], "local_search"),
    (["evaluate", "--behaviour", "local_search", "--group-size", "3", "--protocol", "stigmery"], "stigmergy"),
    (["evaluate", "--mix", "local_search:2,qlearning:1"], "q_learning"),
])
def test_a_mistyped_builtin_name_names_the_closest_in_one_line(args, suggestion):
    result = collective(*args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and f"(did you mean {suggestion}?)" in lines[0], result.stderr


def test_a_mistyped_command_or_option_far_from_any_gets_no_suggestion():
    for args in (["zzz"], ["evaluate", "--behaviour", "random", "--zzz"]):
        result = collective(*args)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and "did you mean" not in lines[0], result.stderr


def test_protocols_listing():
    result = collective("protocols")
    assert result.returncode == 0
    listed = [line.split()[0] for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert listed == ["none", "stigmergy", "shared_q", "broadcast", "wisdom", "auction", "dictatorship", "hierarchy",
                      "MODULE:CLASS"]  # and how to name your own
    assert "gamma=" in result.stdout and "sticky=" in result.stdout


PLUGINS = '''
import numpy as np

class Raises:
    def act(self, obs):
        raise RuntimeError("boom at t=%d" % obs.t)

class Stays:
    parameters = ()
    def act(self, obs):
        return np.full(obs.cell.shape, 4)

class Silent:
    def communicate(self, obs):
        return None
'''


@pytest.mark.parametrize("args, message", [
    (["--behaviour", "plugins.py:Raises"], "plug-in plugins.py:Raises.act: raised RuntimeError: boom at t=0"),
    (["--behaviour", "plugins.py:Stays", "--group-size", "2", "--protocol", "plugins.py:Silent"],
     "plug-in plugins.py:Silent.communicate: returned NoneType; expected collective.Messages"),
    (["--behaviour", "missing.py:Agent"], "argument --behaviour: plug-in missing.py: no such file"),
    (["--behaviour", "plugins.py:Nobody"], "argument --behaviour: plug-in plugins.py:Nobody: module 'plugins.py' has "
                                           "no class 'Nobody'"),
    (["--mix", "plugins.py:Stays:2,q_learning:1"], "argument --mix: q_learning trains in passes inside the fused kernel"),
    (["--behaviour", "plugins.py:Stays", "--behaviour-param", "speed=2"],
     "argument --behaviour-param: no plug-in behaviour of the group declares 'speed'"),
])
def test_plugin_errors_are_one_line_with_status_2(tmp_path, args, message):
    (tmp_path / "plugins.py").write_text(PLUGINS)
    result = subprocess.run([sys.executable, "-m", "collective", "evaluate", *args, "--profile", "paper", "--grid", "6", "--iterations",
                             "5", "--episodes", "3"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 2
    # a plug-in compiled into the kernel first says so (COMPILE_NOTICE and its "done" line)
    lines = [line for line in result.stderr.strip().splitlines()
             if line not in (COMPILE_NOTICE,) and not line.startswith("collective: ... done in")]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("where", ["before the command", "after it"])
def test_debug_shows_the_plugins_traceback(tmp_path, where):
    (tmp_path / "plugins.py").write_text(PLUGINS)
    command = ["evaluate", "--behaviour", "plugins.py:Raises", "--profile", "paper", "--grid", "6", "--iterations",
               "5", "--episodes", "3"]
    command = ["--debug", *command] if where == "before the command" else [*command, "--debug"]
    result = subprocess.run([sys.executable, "-m", "collective", *command],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" in result.stderr and "boom at t=0" in result.stderr


def test_a_user_behaviour_in_a_file_mixes_with_builtins_under_a_user_protocol(tmp_path):
    (tmp_path / "plugins.py").write_text(PLUGINS + '''
from collective import Messages

class Rally:
    members = ("local_search",)
    def communicate(self, obs):
        return Messages(target=np.repeat(obs.cell[:, :1], obs.cell.shape[1], axis=1), messages=1.0, bits=7.0)
''')
    result = subprocess.run([sys.executable, "-m", "collective", "evaluate", "--mix", "plugins.py:Stays:2,local_search:3",
                             "--protocol", "plugins.py:Rally", "--profile", "paper", "--grid", "7", "--iterations", "20", "--episodes", "10",
                             "--json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["mix"] == "plugins.py:Stays:2,local_search:3" and record["protocol"] == "plugins.py:Rally"
    assert record["messages_per_iteration"] == pytest.approx(1 / 10)  # one message per call, over 10 episodes
    assert record["config"]["behaviour_params"] == []
