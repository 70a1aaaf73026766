"""The `collective` command line: `evaluate` one group, `demo` the six behaviours, list `behaviours`.

Bad input exits with status 2 and one line naming the argument and what is allowed, before any
work starts; a plug-in that fails while playing exits 2 with one line naming it and its method
(`--debug` shows the traceback). Every command, and the help, writes its stdout through
`output_files.write_stdout`: a write that fails (a full disk behind `> FILE`) exits 2 with one line
naming standard output, and a reader that left (`| head -1`) ends the command quietly with status
141 (128 + SIGPIPE, as a shell reports a command that SIGPIPE ended), nothing on stderr.
"""
from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import signal
import sys
import threading
from pathlib import Path

from collective.output_files import STANDARD_OUTPUT, write_stdout
from collective.simulation.plugins import PluginError, ctrl_c_received, interrupted_status, on_ctrl_c, on_terminate
from collective.progress import Progress, add_yes_option, announce_compilation, unconfirmed_work
from collective.sweeps.options import add_sweep_parser, positive_int
from collective.version import DISTRIBUTION, VERSION
from collective.dashboards.commands import COMMANDS as ANALYSIS_COMMANDS, add_analysis_commands, run_analysis_command

# The modules that load numba, Ray, pandas, pyarrow or matplotlib (collective.config, the behaviours and
# protocols, the sweeps, the analysis) are imported where a command runs: `--help` takes a fraction of a
# second. What the help says of the profiles is therefore written out here; tests/test_cli.py checks it
# against collective.config.PROFILES and the dataclass defaults.
DEFAULT_PROFILE = "sound"
PROFILE_NAMES = ("sound", "paper", "lambdastar2016")
PROFILE_DEFAULTS = {
    "evil_pairing": "default independent under sound; index_shift under paper, lambdastar2016",
    "q_alpha": "default 0.1 under sound; 0.3 under paper, lambdastar2016",
    "q_gamma": "default 0.7 under sound; 0.3 under paper, lambdastar2016",
    "q_epsilon": "default 0.2 under sound; 0.0 under paper, lambdastar2016",
    "q_initial": "default 1.0 under sound; 0.0 under paper; 2.0 under lambdastar2016",
    "q_reward_scale": "default 1.0 under sound, paper; 10.0 under lambdastar2016",
    "training_episodes": "default 10 under sound; 1 under paper, lambdastar2016",
}

# Config field -> the option that sets it, so errors name what the user typed.
FIELD_OPTIONS = {
    "behaviour": "--behaviour", "group_size": "--group-size", "rows": "--grid", "cols": "--grid",
    "iterations": "--iterations", "episodes": "--episodes", "seed": "--seed", "profile": "--profile",
    "protocol": "--protocol", "protocol_params": "--protocol-param", "mix": "--mix",
    "communication_control": "--communication-control", "communication_accounting": "--communication-accounting",
    "behaviour_params": "--behaviour-param",
    "observation_range": "--observation-range", "reward_radius": "--reward-radius",
    "coordination_threshold": "--coordination-threshold", "env": "--env", "landscape_peaks": "--peaks",
    "landscape_peak_width": "--peak-width", "landscape_deception": "--deception", "landscape_noise": "--noise",
    "landscape_motion": "--motion",
    "pattern_generator": "--patterns",
    "evil_pairing": "--evil", "k_min": "--complexity", "k_max": "--complexity",
    "q_alpha": "--alpha", "q_gamma": "--gamma", "q_epsilon": "--epsilon", "q_initial": "--q-initial",
    "q_training_passes": "--training-passes", "q_reward_scale": "--reward-scale",
    "learning_protocol": "--learning-protocol", "training_episodes": "--training-episodes",
    "learner_state": "--learner-state", "learner_training": "--learner-training", "training_runs": "--training-runs",
}

# One or two examples per subcommand, shown under its --help (tests/test_cli.py parses each).
EXAMPLES = {
    "evaluate": ["collective evaluate --behaviour local_search --group-size 10 --episodes 200",
                 "collective evaluate --mix local_search:8,q_learning:2 --protocol wisdom --json"],
    "demo": ["collective demo --episodes 100", "collective demo --mix local_search:3,oracle:2"],
    "behaviours": ["collective behaviours"],
    "protocols": ["collective protocols"],
    "sweep": ["collective sweep quickstart --dry-run",
              "collective sweep experiments/quickstart.toml --out runs/quickstart"],
    "examples": ["collective examples my-study"],
    "docs": ["collective docs", "collective docs tutorial"],
    "analyze": ["collective analyze runs/quickstart",
                "collective analyze runs/quickstart --tables upsilon,gains --format csv"],
    "figures": ["collective figures runs/quickstart --out runs/quickstart/figures"],
    "dashboard": ["collective dashboard runs/quickstart --out runs/quickstart/report.html"],
    "validate": ["collective validate runs/quickstart"],
    "anytime": ["collective anytime --behaviour local_search --group-size 5 --budget-seconds 5",
                "collective anytime --behaviour q_learning --max-environments 20 --trace-out trace.parquet"],
}
# Said when a protocol refuses the default group of one agent: the group size stays 1 whatever the protocol
# (a default that followed the protocol would compare groups of different sizes without saying so).
GROUP_SIZE_HINT = "; without --group-size the group is 1 agent: give e.g. --group-size 10"

DEMO_BEHAVIOURS = ("random", "local_search", "oracle", "q_learning", "sarsa", "imitation")
LANDSCAPE_OPTIONS = {"peaks": "--peaks", "peak_width": "--peak-width", "deception": "--deception",
                     "noise": "--noise", "motion": "--motion"}
# Options whose meaning changed: refused with what to use now.
RENAMED_OPTIONS = {"ruggedness": ("--ruggedness", "renamed --deception: it sets how close the secondary optima "
                                  "stand to the global one, not the ruggedness; for ruggedness (shorter correlation "
                                  "length, more local optima) use --noise")}


def did_you_mean(typed: str, candidates) -> str:
    """'; did you mean X?' with the candidate closest to what was typed (difflib's ratio at least 0.6), else ''."""
    close = difflib.get_close_matches(typed, list(candidates), n=1)
    return f"; did you mean {close[0]}?" if close else ""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2, naming the closest choice to a
    mistyped one (a subcommand: `collective analyse` -> analyze), and writes its help through `write_stdout`."""

    def _print_message(self, message: str, file=None) -> None:  # argparse's --help, --version
        if file is sys.stdout and message:  # argparse would ignore a failed write: error at exit instead
            write_stdout(message.removesuffix("\n"))
        else:
            super()._print_message(message, file)

    def error(self, message: str) -> None:  # noqa: D102 - argparse hook
        if choice := re.search(r"invalid choice: '?(.*?)'? \(choose from (.*)\)$", message):
            message += did_you_mean(choice.group(1), [c.strip(" '") for c in choice.group(2).split(",")])
        self.exit(2, f"{self.prog}: error: {message}\n")


def reject_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """argparse's 'unrecognized arguments' line, from the command's parser and naming the command's option
    closest to the first mistyped one (`--behavior` -> --behaviour)."""
    command = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
    options = [option for action in parser._actions + command._actions if action.help != argparse.SUPPRESS
               for option in action.option_strings if option.startswith("--")]
    hints = (did_you_mean(token.split("=", 1)[0], options) for token in unknown if token.startswith("--"))
    command.error(f"unrecognized arguments: {' '.join(unknown)}{next(filter(None, hints), '')}")


class ExamplesFormatter(argparse.HelpFormatter):
    """argparse's help, with the epilog's example lines kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if not text.startswith("examples:"):  # the description: wrapped
            return super()._fill_text(text, width, indent)
        return "\n".join(indent + line for line in text.splitlines())


def whole(text: str) -> int:
    """An ASCII whole number: int() also takes '１０', '1_000' and surrounding blanks."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise argparse.ArgumentTypeError(f"expected a whole number in ASCII digits (got {text!r})")
    return int(text)


def parse_grid(text: str) -> tuple[int, int]:
    """'10' -> (10, 10); '8x12' -> (8, 12)."""
    parts = text.lower().split("x")
    if not all(re.fullmatch(r"[0-9]+", p) for p in parts):
        raise argparse.ArgumentTypeError(f"expected M or MxN with whole numbers in ASCII digits (got {text!r})")
    values = [int(p) for p in parts]
    if len(values) == 1:
        return values[0], values[0]
    if len(values) == 2:
        return values[0], values[1]
    raise argparse.ArgumentTypeError(f"expected M or MxN (got {text!r})")


def parse_complexity(text: str) -> tuple[int, int]:
    """'12' -> (12, 12); '2:23' -> (2, 23)."""
    parts = text.split(":")
    if not all(re.fullmatch(r"[+-]?[0-9]+", p) for p in parts):
        raise argparse.ArgumentTypeError(f"expected K or KMIN:KMAX with whole numbers in ASCII digits (got {text!r})")
    values = [int(p) for p in parts]
    if len(values) not in (1, 2):
        raise argparse.ArgumentTypeError(f"expected K or KMIN:KMAX (got {text!r})")
    return values[0], values[-1]


def parse_param(text: str) -> tuple[str, str]:
    """'memory=true' -> ('memory', 'true')."""
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (got {text!r})")
    return key.strip(), value.strip()


def _add_group_options(parser: argparse.ArgumentParser, group_size: int = 1, episodes: int = 1000) -> None:
    """The group and environment options; `group_size` and `episodes` are the command's defaults."""
    env = parser.add_argument_group("environment (paper 003 §4.1-4.2)")
    env.add_argument("--grid", type=parse_grid, default=(10, 10), metavar="MxN",
                     help="toroidal grid size; '10' means 10x10 (default 10x10)")
    env.add_argument("--iterations", type=whole, default=200, metavar="T", help="iterations per episode (default 200)")
    env.add_argument("--episodes", type=whole, default=episodes, metavar="E",
                     help=f"episodes to average over (default {episodes})")
    env.add_argument("--seed", type=whole, default=0, metavar="S", help="root seed of all randomness (default 0)")
    env.add_argument("--profile", default=DEFAULT_PROFILE, metavar="NAME",
                     help=f"setting bundle: {', '.join(PROFILE_NAMES)} (default {DEFAULT_PROFILE}: paper 003's test "
                          "without its confounds; paper: as published; see: collective docs concepts)")
    env.add_argument("--observation-range", type=whole, default=None, metavar="K",
                     help="Moore neighbourhood range agents observe (default 1)")
    env.add_argument("--reward-radius", type=whole, default=None, metavar="D", help="reward radius (default 1)")
    env.add_argument("--coordination-threshold", type=whole, default=None, metavar="Q",
                     help="pay the positive reward only when Q agents are near Good (default 1 = off)")
    env.add_argument("--complexity", type=parse_complexity, default=None, metavar="K|KMIN:KMAX",
                     help="required pattern complexity K, LZ76 phrases (sound: 2:23, paper: 1:23)")
    env.add_argument("--patterns", default=None, metavar="NAME",
                     help="pattern generator: cyclic (paper) or ping_pong (reference)")
    env.add_argument("--evil", default=None, metavar="NAME",
                     help="Evil pairing: index_shift or independent (own pattern, same K); "
                          f"{PROFILE_DEFAULTS['evil_pairing']}")
    env.add_argument("--env", default=None, metavar="CLASS",
                     help="environment class: lambda_star (default) or landscape (fitness landscape, paper 003 §6.2)")
    land = parser.add_argument_group("fitness landscapes (--env landscape; paper 003 §6.2)")
    land.add_argument("--peaks", type=whole, default=None, help="local optima, one of them global (default 8)")
    land.add_argument("--peak-width", type=whole, default=None,
                      help="cells from a peak to the foot of its slope (default 1)")
    land.add_argument("--deception", type=float, default=None,
                      help="0..1: how close the secondary optima stand to the global one (default 0.5)")
    land.add_argument("--noise", type=float, default=None,
                      help="0..1: weight of uncorrelated fitness mixed in, the ruggedness: shorter correlation "
                           "length, more local optima (default 0)")
    land.add_argument("--ruggedness", default=None, help=argparse.SUPPRESS)  # renamed: refused with a message
    land.add_argument("--motion", default=None, metavar="pattern|static",
                      help="pattern: the field moves along a movement pattern of complexity K (default); static")
    group = parser.add_argument_group("agents (paper 003 §5.2)")
    group.add_argument("--behaviour", default=None, metavar="NAME",
                       help="a built-in (`collective behaviours` lists them), or your own class by import path, "
                            "MODULE:CLASS or FILE.py:CLASS (collective docs tutorial)")
    group.add_argument("--group-size", type=whole, default=None, metavar="G",
                       help=f"agents in the group (default {group_size})")
    parser.set_defaults(default_group_size=group_size)
    group.add_argument("--mix", default=None, metavar="NAME:N,...",
                       help="a mixed group instead of --behaviour/--group-size, e.g. local_search:3,q_learning:2 "
                            "or my_pkg.agents:Homing:3,local_search:7")
    group.add_argument("--behaviour-param", type=parse_param, action="append", default=[], metavar="KEY=VALUE",
                       help="a parameter a plug-in behaviour declares; repeatable")
    group.add_argument("--protocol", default=None, metavar="NAME",
                       help="how the group talks: a built-in (`collective protocols` lists them and the group sizes they "
                            "need; default none), or MODULE:CLASS")
    group.add_argument("--protocol-param", type=parse_param, action="append", default=[],
                       metavar="KEY=VALUE", help="a protocol parameter; repeatable")
    group.add_argument("--communication-control", default=None, metavar="real|sham|content_free|deaf|noise",
                       help="sham: each member keeps its own sensing and hears from the others what they said "
                            "in another episode of the same setting (same traffic, no information from the "
                            "others); content_free: the same with the others in the episode emptied, every report "
                            "saying nothing seen (the protocol's mechanics without information); deaf: learners under "
                            "stigmergy, broadcast or wisdom take part but hear nothing; noise: they hear a uniform "
                            "draw among the ten symbols instead (the same table size) (default real)")
    group.add_argument("--communication-accounting", default=None, metavar="writes|reads_and_writes",
                       help="how traffic is counted (paper, lambdastar2016: writes; sound: reads_and_writes)")
    rl = parser.add_argument_group("learners (q_learning, sarsa; paper 003 Algorithm 1)")
    rl.add_argument("--alpha", type=float, default=None, help=f"learning rate ({PROFILE_DEFAULTS['q_alpha']})")
    rl.add_argument("--gamma", type=float, default=None, help=f"discount factor ({PROFILE_DEFAULTS['q_gamma']})")
    rl.add_argument("--epsilon", type=float, default=None,
                    help=f"exploration rate while training ({PROFILE_DEFAULTS['q_epsilon']})")
    rl.add_argument("--q-initial", type=float, default=None, help=f"initial Q value ({PROFILE_DEFAULTS['q_initial']})")
    rl.add_argument("--training-passes", type=whole, default=None, help="training passes per episode (default 100)")
    rl.add_argument("--reward-scale", type=float, default=None,
                    help=f"training reward factor ({PROFILE_DEFAULTS['q_reward_scale']})")
    rl.add_argument("--learning-protocol", default=None, metavar="replay|held_out",
                    help="train on the scored episode itself (replay: paper, lambdastar2016) or on held-out "
                         "episodes of the same class, then score an unseen one (held_out: sound)")
    rl.add_argument("--training-episodes", type=whole, default=None, metavar="N",
                    help="held_out: training episodes per scored episode (per_episode) or per table, the passes "
                         f"cycling through them ({PROFILE_DEFAULTS['training_episodes']})")
    rl.add_argument("--learner-state", default=None, metavar="cell_time|window_signs",
                    help="the learners' state: cell_time, (cell, t) (paper, lambdastar2016), or window_signs, the "
                         "signs of the rewards of their 3x3 window (sound)")
    rl.add_argument("--learner-training", default=None, metavar="per_episode|pretrained|online",
                    help="a table trained and reset per scored episode (per_episode: paper, lambdastar2016); one "
                         "table per group trained once on held-out episodes, then scored greedily (pretrained: "
                         "sound); or that keeps learning in the test episodes (online)")
    rl.add_argument("--training-runs", type=whole, default=None, metavar="N",
                    help="kept tables (pretrained, online): independent table sets trained per evaluation, episode e "
                         "played by set e mod N (sound 5; paper, lambdastar2016 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _add_threads_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=positive_int, default=None, metavar="N",
                        help="kernel threads playing each batch's episodes at once (default: every CPU this process "
                             "may use); no number depends on it")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="collective", formatter_class=ExamplesFormatter, description=(
        "Measure the collective intelligence (Υ) of agent groups on the Λ* (Lambda Star) test."),
        epilog="examples:\n  collective demo --episodes 100\n  collective evaluate --help\n"
               "see `collective docs tutorial` for a tour from an agent to a paper figure")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failing plug-in")
    parser.add_argument("--version", action="version", version=f"collective {VERSION} ({DISTRIBUTION})")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    evaluate = commands.add_parser("evaluate", help="score one agent group: Υ with a 95%% CI",
                                   description="Score one agent group on Λ*: Υ (paper 003 Definition 3) "
                                               "with a 95% confidence interval.")
    _add_group_options(evaluate)
    _add_threads_option(evaluate)
    add_yes_option(evaluate)
    demo = commands.add_parser("demo", help="compare the six behaviours on one grid",
                               description="Evaluate random, local search, oracle, Q-learning, SARSA and "
                                           "imitation, each as a group of 5 over 300 episodes unless told "
                                           "otherwise, with the same environments and print a table "
                                           "(--behaviour or --mix: that group only).")
    _add_group_options(demo, group_size=5, episodes=300)
    _add_threads_option(demo)
    add_yes_option(demo)
    commands.add_parser("behaviours", help="list the behaviours and what each does",
                        description="The built-in agent behaviours (paper 003 §5.2), one line each, and how to name "
                                    "your own class instead.")
    commands.add_parser("protocols", help="list the protocols, their members and parameters",
                        description="The built-in communication protocols (paper 003 §5.2): what each does, which "
                                    "behaviours take part (a protocol needs at least 2 of them: give "
                                    "--group-size), and the parameters --protocol-param sets.")
    examples = commands.add_parser("examples", help="copy the example specs and plug-ins into a folder, to edit",
                                   description="Copy the built-in sweep specs (experiments/) and the plug-in examples "
                                               "(examples/: your own agent and protocol, NumPy plug-ins, a "
                                               "notebook) into DIR, which must not exist or be empty; run them "
                                               "from DIR.")
    examples.add_argument("dir", metavar="DIR", help="the folder to create")
    docs = commands.add_parser("docs", help="print a page of the documentation",
                               description="Print a page of the documentation the package carries (Markdown): "
                                           "without PAGE, the list of pages.")
    docs.add_argument("page", metavar="PAGE", nargs="?", help="a page, e.g. tutorial or reference/cli")
    add_sweep_parser(commands)
    add_analysis_commands(commands)
    _add_anytime_parser(commands)
    for name, command in commands.choices.items():
        command.epilog = "examples:\n" + "\n".join(f"  {example}" for example in EXAMPLES[name])
        command.formatter_class = ExamplesFormatter
    for command in commands.choices.values():  # `collective sweep s.toml --debug` as well as before the command
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the traceback of a failing plug-in")
    return parser


def check_group_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject options that would be silently ignored: a behaviour or group size beside a mix
    that sets both, landscape parameters without the landscape class."""
    def usage(option: str, message: str) -> None:
        parser.exit(2, f"collective {args.command}: error: argument {option}: {message}\n")

    if args.mix and args.behaviour:
        usage("--behaviour", "not with --mix (the mix names each agent's behaviour)")
    if args.mix and args.group_size is not None:
        from collective.config import mix_counts

        try:
            size = sum(count for _, count in mix_counts(args.mix))
        except ValueError:
            size = None  # the config names the malformed mix
        if size is not None and args.group_size != size:
            usage("--group-size", f"the mix {args.mix!r} has {size} agents (got {args.group_size}); "
                                  "leave --group-size out with --mix")
    for name, (option, message) in RENAMED_OPTIONS.items():
        if getattr(args, name) is not None:
            usage(option, message)
    if args.env != "landscape":
        for name, option in LANDSCAPE_OPTIONS.items():
            if getattr(args, name) is not None:
                usage(option, "only with --env landscape")


def check_config(parser: argparse.ArgumentParser, args: argparse.Namespace, config) -> None:
    """Reject a coordination threshold the group cannot reach: Good would never pay (spec §6.1)."""
    if config.coordination_threshold > config.group_size:
        parser.exit(2, f"collective {args.command}: error: argument --coordination-threshold: at most the "
                       f"group size {config.group_size}, or Good never pays (got {config.coordination_threshold})\n")


def check_work(parser: argparse.ArgumentParser, args: argparse.Namespace, steps: int, scope: str = "") -> None:
    """Require --yes for more than CONFIRM_AGENT_STEPS agent-steps (training passes included)."""
    if message := unconfirmed_work(steps, args.yes, scope):
        parser.exit(2, f"collective {args.command}: error: {message}\n")


def group_size_hint(args: argparse.Namespace, error) -> str:
    """GROUP_SIZE_HINT when a protocol refused a group of the default size (one agent), else ''."""
    defaulted = args.group_size is None and not args.mix and args.default_group_size == 1
    return GROUP_SIZE_HINT if defaulted and error.field == "protocol" and "needs at least" in error.message else ""


def agent_steps(config) -> int:
    """Agent-steps of an evaluation: scored steps and the learners' training passes."""
    return config.episodes * config.iterations * config.group_size + config.training_steps(config.episodes)


def config_from_args(args: argparse.Namespace, behaviour: str | None):
    """The EvaluationConfig the options describe (ConfigError names a bad field)."""
    from collective.config import EvaluationConfig

    k_min, k_max = args.complexity if args.complexity else (None, None)
    group_size = args.group_size if args.group_size is not None or args.mix else args.default_group_size
    return EvaluationConfig.from_profile(
        args.profile, behaviour=behaviour, group_size=group_size, mix=args.mix, rows=args.grid[0],
        cols=args.grid[1], iterations=args.iterations, episodes=args.episodes, seed=args.seed,
        protocol=args.protocol, protocol_params=tuple(args.protocol_param),
        behaviour_params=tuple(args.behaviour_param), communication_control=args.communication_control,
        communication_accounting=args.communication_accounting,
        observation_range=args.observation_range, reward_radius=args.reward_radius,
        coordination_threshold=args.coordination_threshold, pattern_generator=args.patterns,
        evil_pairing=args.evil, k_min=k_min, k_max=k_max, env=args.env, landscape_peaks=args.peaks,
        landscape_peak_width=args.peak_width, landscape_deception=args.deception, landscape_noise=args.noise,
        landscape_motion=args.motion,
        q_alpha=args.alpha, q_gamma=args.gamma,
        q_epsilon=args.epsilon, q_initial=args.q_initial, q_training_passes=args.training_passes,
        q_reward_scale=args.reward_scale, learning_protocol=args.learning_protocol,
        training_episodes=args.training_episodes, learner_state=args.learner_state,
        learner_training=args.learner_training, training_runs=args.training_runs)


# AnytimeConfig field -> its option; an episode's iterations are the anytime test's budget.
ANYTIME_OPTIONS = {"start_budget": "--start-budget", "start_seconds": "--start-seconds",
                   "budget_seconds": "--budget-seconds", "max_environments": "--max-environments",
                   "budget_rounding": "--budget-rounding"}


def _add_anytime_parser(commands) -> None:
    anytime = commands.add_parser(
        "anytime", help="the adaptive anytime test: Υ at any moment, Ctrl-C to stop", conflict_handler="resolve",
        description="Paper 000 Definition 19 (Definition 18 with --time-based): one fresh environment after "
                    "another, complexity ξ following the rewards, budget growing by half; Ctrl-C or "
                    "--budget-seconds stops it and prints Υ and the trace (ξ, K, budget, reward per environment).")
    _add_group_options(anytime)
    for option in ("--iterations", "--episodes"):  # replaced by the test's budget: rejected if given
        anytime.add_argument(option, default=None, help=argparse.SUPPRESS)
    test = anytime.add_argument_group("anytime test (paper 000 §5.2-5.3)")
    test.add_argument("--start-budget", type=whole, default=None, metavar="N",
                      help="iterations of the first environment (default: 1 with the ceiling rule, else 10)")
    test.add_argument("--budget-rounding", default=None, metavar="ceiling|floor",
                      help="n <- ceil(n + n/2) (Definition 19's; profile sound) or n <- n + floor(n/2) "
                           "(the interaction-count reading of Definitions 18-19; profiles paper, lambdastar2016)")
    test.add_argument("--time-based", action="store_true",
                      help="Definition 18: a time slot per environment, converted to iterations at the group's "
                           "speed on this machine (machine-dependent: not for comparisons)")
    test.add_argument("--start-seconds", type=float, default=None, metavar="S",
                      help="first time slot with --time-based, then S <- 1.5 S (default 1e-6)")
    test.add_argument("--budget-seconds", type=float, default=None, metavar="S",
                      help="stop after S seconds (Θ; default: until Ctrl-C)")
    test.add_argument("--max-environments", type=whole, default=None, metavar="M", help="stop after M environments")
    test.add_argument("--trace-out", default=None, metavar="FILE.parquet", help="write the trace as Parquet")
    add_yes_option(anytime)


def run_anytime_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`collective anytime`: stream the trace (or one JSON object at the end); exit 2 on bad input."""
    def usage(option: str, message: str) -> None:
        parser.exit(2, f"collective anytime: error: argument {option}: {message}\n")

    for option, value in (("--iterations", args.iterations), ("--episodes", args.episodes)):
        if value is not None:
            usage(option, "not used by anytime: each environment is one episode whose iterations are the "
                          "test's budget (see --start-budget)")
    if args.learner_training not in (None, "per_episode"):  # AnytimeConfig resets the tables whatever the profile
        usage("--learner-training", f"{args.learner_training} is not run by anytime: each environment has its own K "
                                    "and budget, and its learners train afresh on it (per_episode, the only choice)")
    if not (args.behaviour or args.mix):
        usage("--behaviour", "required (or give --mix)")
    check_group_args(parser, args)
    if args.start_seconds is not None and not args.time_based:
        usage("--start-seconds", "only with --time-based")
    if args.trace_out:
        trace = Path(args.trace_out)
        try:
            target = trace.resolve()
        except (OSError, RuntimeError):  # a loop of symbolic links
            usage("--trace-out", f"{args.trace_out!r} cannot be resolved (a loop of symbolic links?)")
        if target.is_dir():
            usage("--trace-out", f"{args.trace_out!r} is a directory; give a file name")
        if target.exists() and not target.is_file():
            usage("--trace-out", f"{args.trace_out!r} is not a regular file (a device, pipe or socket); "
                                 f"give a file name")
        if not target.parent.is_dir():
            usage("--trace-out", f"the directory of {args.trace_out!r} does not exist")
        if not os.access(target.parent, os.W_OK):  # the trace is written beside it, then renamed into place
            usage("--trace-out", f"the directory of {args.trace_out!r} is not writable")
    from collective.config import ConfigError
    from collective.anytime import (TRACE_HEADER, AnytimeConfig, format_step, format_summary, planned_budgets,
                                    planned_agent_steps, run_anytime, write_trace)

    settings = {name: getattr(args, name) for name in ANYTIME_OPTIONS if getattr(args, name) is not None}
    announce_compilation()  # validating the K range may compile the pattern probe
    try:
        config = AnytimeConfig(config_from_args(args, args.behaviour), time_based=args.time_based, **settings)
    except ConfigError as error:
        usage(ANYTIME_OPTIONS.get(error.field) or FIELD_OPTIONS.get(error.field, error.field),
              error.message + group_size_hint(args, error))
    check_config(parser, args, config.evaluation)
    check_work(parser, args, planned_agent_steps(config), " until the test stops by itself (at its memory limit "
                                                          "or --max-environments)")
    from collective.evaluation.compiled_code import load_compiled

    load_compiled(config.evaluation, notify=True)
    if not args.json:
        write_stdout(TRACE_HEADER)
    # with --json nothing is printed until the end: progress on stderr instead, in iterations when
    # the test's end is known
    known_end = not (config.time_based or config.budget_seconds)
    evaluation = config.evaluation
    progress = Progress(sum(planned_budgets(config)) if known_end else None, "iterations", "collective anytime",
                        f"{evaluation.mix or evaluation.behaviour} x{evaluation.group_size}", enabled=args.json,
                        bookends=True)  # a line at the start and at the end however short the run

    def on_step(step) -> None:
        if not args.json:
            write_stdout(format_step(step))
        progress.update(step.budget, f"{step.environment + 1} environments, ξ {step.xi_next:.3g}, Υ {step.upsilon:+.4f}")

    previous = signal.signal(signal.SIGINT, on_ctrl_c)  # Ctrl-C stops it, even in the background
    try:
        with progress:
            result = run_anytime(config, on_step=on_step)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopped: the results are written whole
        write_stdout(strict_json(result.as_record()) if args.json else format_summary(result))
        if args.trace_out:
            try:
                write_trace(result, args.trace_out)
            except OSError as error:  # checked up front, yet the file system may still refuse
                print(f"collective anytime: error: cannot write --trace-out {args.trace_out!r}: "
                      f"{error.strerror or error}", file=sys.stderr)
                return 1
    finally:
        signal.signal(signal.SIGINT, previous)
    return 0


def strict_json(value) -> str:
    """JSON that strict parsers read: NaN and infinities (a value not estimated) become null."""
    def finite(item):
        if isinstance(item, float) and not math.isfinite(item):
            return None
        if isinstance(item, dict):
            return {key: finite(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [finite(inner) for inner in item]
        return item

    return json.dumps(finite(value), allow_nan=False)


def _protocol_label(record: dict) -> str:
    """The protocol, marked [sham], [content_free] or [deaf] under those communication controls."""
    control = record.get("communication_control")
    return record["protocol"] + (f"[{control}]" if control not in (None, "real") else "")


def format_table(records: list[dict]) -> str:
    """`collective evaluate`'s table: a row per group; under a mixed group's, a row per behaviour with its
    agents' per-capita Υ (their mean R̄) and its interval."""
    group_width = max([24] + [len(r["mix"] or r["behaviour"]) + 2 for r in records])  # import paths are long
    protocol_width = max([14] + [len(_protocol_label(r)) + 2 for r in records])
    header = (f"{'group':<{group_width}}{'G':>4}{'protocol':>{protocol_width}}{'Υ':>9}{'95% CI':>20}{'K mean':>8}"
              f"{'H bits':>8}{'msgs/it':>9}{'M steps/s':>11}{'wall s':>8}")
    lines = [header, "-" * len(header)]
    for r in records:
        ci = f"[{r['ci95_low']:+.4f}, {r['ci95_high']:+.4f}]" if math.isfinite(r["ci95_low"]) else "none: 1 episode"
        rate = (r["agent_steps_per_second"] or 0) / 1e6
        lines.append(f"{r['mix'] or r['behaviour']:<{group_width}}{r['group_size']:>4}"
                     f"{_protocol_label(r):>{protocol_width}}"
                     f"{r['upsilon']:>+9.4f}"
                     f"{ci:>20}{r['k_mean']:>8.2f}{r['entropy_bits']:>8.2f}{r['messages_per_iteration']:>9.1f}"
                     f"{rate:>11.1f}{r['wall_seconds']:>8.2f}")
        for name, part in (r.get("upsilon_by_behaviour") or {}).items():  # a mix: each behaviour's own Υ
            ci = f"[{part['ci95_low']:+.4f}, {part['ci95_high']:+.4f}]" if math.isfinite(part["ci95_low"]) \
                else "none: 1 episode"
            lines.append(f"{'  ' + name:<{group_width}}{part['agents']:>4}{'':>{protocol_width}}"
                         f"{part['upsilon']:>+9.4f}{ci:>20}")
    first = records[0]
    lines.append(f"grid {first['grid']}, T={first['iterations']}, {first['episodes']} episodes, "
                 f"profile {first['profile']}, protocol {_protocol_label(first)}, seed {first['seed']}, "
                 f"collective {first['version']}")
    return "\n".join(lines)


def describe_protocols() -> str:
    from collective.protocols import get_protocol, protocol_names

    lines = []
    for name in protocol_names():
        protocol = get_protocol(name)
        members = ", ".join(sorted(protocol.applies_to)) or "-"
        lines.append(f"{name:<14}{protocol.description} [members: {members}]")
        for parameter in protocol.parameters:
            if parameter.name not in protocol.fixed:
                lines.append(f"{'':<16}{parameter.name}={parameter.allowed} (default {parameter.default}): "
                             f"{parameter.description}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The command line; Ctrl-C raises `CtrlC` while it runs (so a plug-in's own KeyboardInterrupt is its error),
    and SIGTERM `Terminated`, which ends the run the same way (finished work kept, one line, status 143)."""
    main_thread = threading.current_thread() is threading.main_thread()
    ours = main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler  # not where ignored
    terminate = main_thread and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    previous = signal.signal(signal.SIGINT, on_ctrl_c) if ours else None
    previous_terminate = signal.signal(signal.SIGTERM, on_terminate) if terminate else None
    try:
        return _main(argv)
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)
        if terminate:
            signal.signal(signal.SIGTERM, previous_terminate)


def _main(argv: list[str] | None) -> int:
    command, debug = "collective", False  # who reports a failed write of stdout: the command, once parsed
    try:
        try:
            parser = build_parser()
            if not (sys.argv[1:] if argv is None else argv):  # bare `collective`: what it can do, not an error
                parser.print_help()
                return 0
            args, unknown = parser.parse_known_args(argv)
            if args.command == "sweep":  # KEY=VALUE overrides given after an option: argparse leaves them over
                args.overrides += [token for token in unknown if "=" in token and not token.startswith("-")]
                unknown = [token for token in unknown if token not in args.overrides]
            if unknown:
                reject_unrecognized(parser, args, unknown)
        except KeyboardInterrupt:  # while plug-ins named on the command line load
            print("collective: interrupted", file=sys.stderr)
            return interrupted_status()
        command, debug = f"collective {args.command}", args.debug
        return _run_command(parser, args)
    except BrokenPipeError:  # `collective analyze ... | head`: the reader has what it wanted
        _discard_stdout()
        return 128 + signal.SIGPIPE
    except OSError as error:
        if debug or error.filename != STANDARD_OUTPUT:
            raise
        _discard_stdout()
        print(f"{command}: error: {STANDARD_OUTPUT}: {error.strerror}", file=sys.stderr)
        return 2


def _run_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`_run`, its plug-in errors and Ctrl-C each one line."""
    try:
        return _run(parser, args)
    except PluginError as error:
        if args.debug:
            raise
        parser.exit(2, f"collective {args.command}: error: {error} (--debug shows the traceback)\n")
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"collective {args.command}: interrupted", file=sys.stderr)
        return interrupted_status()
    except Exception:
        if args.debug or not ctrl_c_received():
            raise
        print(f"collective {args.command}: interrupted", file=sys.stderr)  # a library's error made of the Ctrl-C
        return interrupted_status()


def _run_shipped_command(args: argparse.Namespace) -> int:
    """`collective examples DIR` and `collective docs [PAGE]`: what the package carries (`collective.shipped`)."""
    from collective.shipped import builtin_specs, copy_examples, doc_pages

    if args.command == "examples":
        try:
            written = copy_examples(Path(args.dir))
        except OSError as error:
            print(f"collective examples: error: {error}", file=sys.stderr)
            return 2
        write_stdout("\n".join(map(str, written)))
        print(f"run one from {args.dir}: collective sweep experiments/quickstart.toml --out runs/quickstart "
              f"(specs: {', '.join(builtin_specs())})", file=sys.stderr)
        return 0
    pages = doc_pages()
    if args.page is None:
        write_stdout("\n".join(pages))
        return 0
    name = args.page.removesuffix(".md").removeprefix("docs/")
    if name not in pages:
        print(f"collective docs: error: argument PAGE: no page {args.page!r}{did_you_mean(name, pages)}; "
              f"allowed: {', '.join(pages)}", file=sys.stderr)
        return 2
    write_stdout(pages[name].read_text(encoding="utf-8"))
    return 0


def _discard_stdout() -> None:
    """What stdout still holds goes nowhere: no second error at exit's flush."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "behaviours":
        from collective.behaviours import behaviour_names, get_behaviour
        from collective.config import PROFILES

        width = max(map(len, behaviour_names())) + 2
        lines = [f"{name:<{width}}{get_behaviour(name).description}" for name in behaviour_names()]
        lines.append(f"{'MODULE:CLASS':<{width}}your own: any class with act(self, obs) (collective docs tutorial: bring your own agent)")
        lines.append("q_learning and sarsa coincide exactly when training is greedy (epsilon 0: profiles paper and "
                     f"lambdastar2016); they differ with epsilon > 0 (profile sound: {PROFILES['sound']['q_epsilon']})")
        write_stdout("\n".join(lines))
        return 0
    if args.command == "protocols":
        write_stdout(f"{describe_protocols()}\n{'MODULE:CLASS':<14}your own: any class with communicate(self, obs) "
                     "(collective docs tutorial: bring your own agent)")
        return 0
    if args.command in ("examples", "docs"):
        return _run_shipped_command(args)
    if args.command in ANALYSIS_COMMANDS:
        return run_analysis_command(args)
    if args.command == "sweep":
        from collective.sweeps.command import run_sweep

        return run_sweep(args)
    if args.command == "anytime":
        return run_anytime_command(parser, args)
    if args.command == "evaluate" and not (args.behaviour or args.mix):
        parser.exit(2, "collective evaluate: error: argument --behaviour: required (or give --mix)\n")
    check_group_args(parser, args)
    behaviours = [args.behaviour] if args.behaviour or args.mix else list(DEMO_BEHAVIOURS)
    from collective.config import ConfigError

    announce_compilation()  # validating the K range may compile the pattern probe
    try:
        configs = [config_from_args(args, b) for b in behaviours]
    except ConfigError as error:
        option = "--mix" if error.field == "group_size" and args.mix else FIELD_OPTIONS.get(error.field, error.field)
        parser.exit(2, f"collective {args.command}: error: argument {option}: {error.message}"
                       f"{group_size_hint(args, error)}\n")
    for config in configs:
        check_config(parser, args, config)
    check_work(parser, args, sum(map(agent_steps, configs)))
    from collective.evaluate import evaluate  # imported late: --help and bad input stay fast

    records = [evaluate(config, progress=True, threads=args.threads).as_record() for config in configs]
    if args.json:
        write_stdout(strict_json(records[0] if len(records) == 1 else records))
    else:
        write_stdout(format_table(records))
    return 0

