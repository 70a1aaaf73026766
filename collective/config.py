"""One frozen, validated configuration per evaluation; its fields become result columns.

Named profiles fill in what the papers leave open: `paper` (the default) follows paper 003;
`lambdastar2016` reproduces the choices of the original C++ implementation (spec §2, §5, §6),
so numbers can be compared with its published results; `sound` is paper 003's test with the
confounds of issue 12 taken out.
"""
from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from collective.analysis.scores import LEGG_HUTTER_ESTIMATORS
from collective.behaviours import learns, load_behaviour
from collective.environments.complexity import K_NORMALISATIONS
from collective.environments.lambda_star import ENTROPY_RULES, EVIL_PAIRINGS, LambdaStar
from collective.environments.landscapes import (LANDSCAPE_ENTROPIES, LANDSCAPE_MOTIONS, LANDSCAPE_NORMALISATIONS,
                                                FitnessLandscape, cone_mass_bound, landscape_field)
from collective.environments.pattern_probability import pattern_probability_unavailable
from collective.environments.patterns import (K_SAMPLINGS, PATTERN_GENERATORS, SEGMENT_CAPS, CyclicPatternGenerator,
                                              PatternGenerator, StratifiedComplexity, reachable_k, unpairable_k)
from collective.simulation.kernel import LearnerParameters, table_states
from collective.simulation.plugins import PluginClass, PluginError
from collective.protocols import COMMUNICATION_ACCOUNTINGS, NONE, SHARED_Q, load_protocol

TARGET_AGENT_STEPS_PER_BATCH = 4_000_000  # episodes per batch: about half a second of kernel time
# batches generated while one plays (`evaluation.batches.batches_ahead`): 1 + this many in memory
BATCHES_PREPARED_AHEAD = 2
COMMUNICATION_CONTROLS = ("real", "sham")  # `communication_control` (issue 14 point 4; collective.evaluation.sham)
SEED_MAX = 2**63 - 1
REACHABLE_PROBES = 2000  # episodes `reachable_k` generates to probe a K range

# Fields each profile sets; anything given explicitly overrides them.
ENVIRONMENT_CLASSES = ("lambda_star", "landscape")
# What the learners train on before the scored pass: "replay" the scored episode itself (paper 003
# §5.2.1), or "held_out" episodes of the same class never scored (paper 000 §5.2's no-reuse rule).
LEARNING_PROTOCOLS = ("replay", "held_out")
# The built-in learners' state (issue 21; paper 003 §5.2.1 names the learners, not their state): "cell_time"
# (the agent's cell and the iteration, paper 003's reading and the 2016 program's), or "window_signs": the sign
# (< 0, 0, > 0) of the reward of each cell of the agent's 3x3 window (its observation range's inner 3x3),
# 3^9 states, which transfer from one episode to another where (cell, t) cannot
LEARNER_STATES = ("cell_time", "window_signs")
# How long a learner's table lives (issue 21): "per_episode", trained before each scored episode and reset after
# it (paper 003 §5.2.1; spec §5); "pretrained", one table per group (per learner, or the shared_q table) trained
# once on the q_training_passes passes over the training_episodes held-out episodes of the cell, never reset,
# then scored greedily on every test episode; "online", the same pretrained table keeps learning, ε-greedily, in
# the test episodes, in episode order, scored as it goes (paper 000's anytime intent: it carries what it learned
# from one environment to the next), from the start of each evaluation (or sweep block) on
LEARNER_TRAININGS = ("per_episode", "pretrained", "online")

# What a run uses unless it names a profile (CLI, adapters, `from_profile`): the confound-free test
# of issue 12. The dataclass defaults stay `paper`'s, so `paper` is every new field's baseline.
DEFAULT_PROFILE = "sound"
PROFILES: dict[str, dict[str, object]] = {
    "paper": dict(
        pattern_generator="cyclic",  # paper 003 §4.2: recurrent segment of 1..⌊T/2⌋ moves
        evil_pairing="index_shift",  # spec §2 default pairing
        k_min=1, k_max=23,  # paper 003 §5.1 samples K in [2, 23]; Definition 3 allows [1, K_max]
        q_initial=0.0, q_reward_scale=1.0,  # Algorithm 1 uses the raw reward
        protocol_defaults={},
    ),
    "sound": dict(  # paper 003's test with the confounds of issue 12 removed; each key says which
        # environment (points 1-3, 8): an independent ⊖ with the collision rule and H to match
        # (1); K measured on the played paths, equal for ⊕ and ⊖ (2); K uniform on 2..23 on every
        # grid, segments of 1..⌊T/2⌋ moves as §4.2 says, K normalised by the N-cell alphabet (3)
        pattern_generator="cyclic", segment_cap="half_T", evil_pairing="independent", entropy_rule="pairing",
        lazy_segment_shuffle=True,  # issue 25: long segments (anytime test) drawn in O(moves walked), not O(T)
        pattern_pool=512,  # issue 25: a block's draws shared among its K targets: the same law given K, ~4x cheaper
        k_on_played_paths=True, k_sampling="stratified", k_min=2, k_max=23, k_normalisation="log_alphabet",
        # learners and the anytime test (points 4-6): learners train ε-greedily on held-out episodes of
        # the cell, then are scored greedily on an unseen one; the anytime budget follows Definition 19
        # (issue 21) an optimistic table, Q0 = 1 (what the best cell pays; spec §5's 2016 table is optimistic too;
        # Sutton & Barto 2018 §2.6): each action of a state is tried before the greedy choice settles. Q0 0 -> 1
        # raised q_learning's Υ / local search's after 1000 passes (10x10, G=10, seeds 1-8) by 0.054 [0.028, 0.081]
        # and after 300 on 20x20 by 0.41 [0.34, 0.48]; Q0 0.25-2 tried (docs/learner-diagnosis.md)
        q_initial=1.0, q_reward_scale=1.0, q_epsilon=0.2, learning_protocol="held_out", training_episodes=10,
        # issue 21: learners observe (the signs of their window) and keep one table, trained once on held-out
        # episodes of the cell, then scored greedily on unseen test episodes; α 0.1, γ 0.7, ε 0.2 gave the best
        # mean Υ of the settings tried (α 0.1-0.3, γ 0.3-0.9, ε 0.05-0.3) on 10x10 and 20x20, groups of 10,
        # T = 100, 1000 training passes, seeds 1-6 (issue 21's note; its reported runs use other seeds)
        learner_state="window_signs", learner_training="pretrained", q_alpha=0.1, q_gamma=0.7,
        # the anytime test draws only environments the group can score in within the budget (paper 000 Def. 10, 15)
        anytime_defaults={"budget_rounding": "ceiling", "start_budget": 1, "reward_sensitive": True},
        # landscapes (point 7): the optimum pays 1 on every grid; H counts the optimum's cells
        landscape_normalisation="optimum_one", landscape_entropy="optimum",
        # communication (issue 14 point 3): reads of shared media are messages as writes are
        communication_accounting="reads_and_writes",
        # sweeps (issue 22 point 8): cells that differ only in group size play the same ⊕/⊖ paths
        paired_group_sizes=True,
        protocol_defaults={},
    ),
    "lambdastar2016": dict(
        pattern_generator="ping_pong", evil_pairing="index_shift",
        k_min=None, k_max=None,  # whatever the ping-pong walk gives
        q_initial=2.0, q_reward_scale=10.0,  # optimistic table, rewards x10 (spec §5)
        # the 2016 code's stigmergy field and sticky bidding (spec §6)
        protocol_defaults={"stigmergy": {"form": "reference"}, "auction": {"sticky": "true"}},
        # the 2016 program's other behaviours, one switch each (issue 13; see CPP_SWITCHES)
        cpp_first_observation=True, cpp_auction=True, cpp_imitation=True, cpp_learner_bootstrap=True,
        cpp_oracle=True, cpp_binary_tree=True, cpp_groups_of_one=True,
    ),
}


# Switches that reproduce a behaviour of the 2016 C++ program (nader-chmait/LambdaStar, main.cpp
# and src/) that the papers do not describe; all on in `lambdastar2016`, all off (paper 003's
# reading) in `paper` and `sound`. Each is a boolean field of EvaluationConfig, recorded per row.
CPP_SWITCHES = ("cpp_first_observation", "cpp_auction", "cpp_imitation", "cpp_learner_bootstrap", "cpp_oracle",
                "cpp_binary_tree", "cpp_groups_of_one")

# Fields whose meaning changed: given under the old name, a setting is refused with what to use now.
RENAMED_FIELDS = {
    "landscape_ruggedness": "renamed landscape_deception: it sets how close the secondary optima stand to the "
                            "global one (their heights), not the ruggedness; ruggedness proper (shorter "
                            "correlation length, more local optima) is landscape_noise",
}


class ConfigError(ValueError):
    """An invalid setting: names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class EvaluationConfig:
    behaviour: str = "local_search"  # a registered name or an import path; "mix" when `mix` lists the group
    group_size: int = 1
    mix: str = ""  # heterogeneous group, e.g. "local_search:3,my_pkg.agents:Homing:2" (Dai et al. 2019)
    rows: int = 10
    cols: int = 10
    iterations: int = 200
    episodes: int = 1000
    seed: int = 0
    profile: str = "paper"
    env: str = "lambda_star"  # the environment class: Λ* or a fitness landscape (spec §7)
    protocol: str = "none"  # a registered name or an import path (MODULE:CLASS)
    protocol_params: tuple[tuple[str, str], ...] = ()  # (name, value) pairs, sorted
    behaviour_params: tuple[tuple[str, str], ...] = ()  # plug-in behaviours' parameters, sorted
    observation_range: int = 1
    reward_radius: int = 1
    coordination_threshold: int = 1
    pattern_generator: str = "cyclic"
    segment_cap: str = "k_max"  # cyclic segments of 1..min(⌊T/2⌋, k_max) moves, or "half_T": 1..⌊T/2⌋ (§4.2)
    # True: closed segments of more than patterns.LAZY_SHUFFLE_ABOVE moves shuffled as the walk reaches each move
    # (same distribution, other patterns, only when T > 257; `CyclicPatternGenerator`); False: shuffled whole first
    lazy_segment_shuffle: bool = False
    # Stratified K: episodes per block whose pattern draws are pooled (each drawn pattern goes to an episode of the
    # block that wants its K; the same law given K, other patterns; `patterns.pooled_patterns`); 0: every episode
    # draws alone until its own K comes up. A profile's pool gives way to 0 where its draws cannot be pooled
    # (`from_profile`, e.g. sound with segment_cap k_max); set explicitly, such a pool is refused.
    pattern_pool: int = 0
    evil_pairing: str = "index_shift"
    entropy_rule: str = "paper"  # H = log2 N(N-1) (§4.3), or "pairing": log2 N under index_shift
    k_on_played_paths: bool = False  # True: K of ⊕ and ⊖ measured on the paths played, after collisions
    k_sampling: str = "generator"  # K as the generator draws it in [k_min, k_max], or "stratified": uniform
    k_min: int | None = 1
    k_max: int | None = 23
    k_normalisation: str = "log2_length"  # c·log2(L)/L, or "log_alphabet": c·log_N(L)/L, N cells
    landscape_peaks: int = 8  # local optima, one of them global
    landscape_peak_width: int = 1  # cells from a peak's centre to the edge of its slope
    landscape_deception: float = 0.5  # 0..1: how close the secondary optima stand to the global one
    landscape_noise: float = 0.0  # 0..1: weight of the uncorrelated component, the field's ruggedness
    landscape_normalisation: str = "centre"  # "centre": mean 0; "optimum_one": mean 0 and the optimum pays 1
    landscape_entropy: str = "lambda_star"  # H of a landscape row: "lambda_star" log2 N(N-1); "optimum" log2 N
    landscape_motion: str = "pattern"  # "pattern": the field moves along a movement pattern; "static"
    q_alpha: float = 0.3
    q_gamma: float = 0.3
    q_epsilon: float = 0.0
    q_initial: float = 0.0
    q_training_passes: int = 100
    q_reward_scale: float = 1.0
    learning_protocol: str = "replay"  # see LEARNING_PROTOCOLS
    training_episodes: int = 1  # held_out: fresh episodes the training passes cycle through
    learner_state: str = "cell_time"  # see LEARNER_STATES
    learner_training: str = "per_episode"  # see LEARNER_TRAININGS
    # Legg-Hutter Υ (paper 001; `collective.analysis.scores`): "sampled_phrases" = Σ 2^-c R̄ / Σ 2^-c over the
    # sampled episodes, c in LZ76 phrases (spec §4 literally; not an estimator of paper 001's sum);
    # "importance_bits" = K in Lempel-Ziv code bits, episodes weighted by 2^-K / the pattern's probability
    legg_hutter_estimator: str = "sampled_phrases"
    # Traffic (protocols/__init__.py, spec §6): "writes" counts direct messages and writes to shared media (the
    # counts of before issue 14); "reads_and_writes" counts every read of a shared medium as a message too
    communication_accounting: str = "writes"
    # "real", or "sham": the sham-communication control (collective.evaluation.sham): each scored episode is
    # played beside a shadow episode of the same cell; each member keeps its own sensing and its own part in the
    # protocol, and what the others tell it is what they told in the shadow (issue 22 point 2): the protocol's
    # traffic and rule, with no information from the others about the episode
    communication_control: str = "real"
    # Group-size contrasts paired (issue 22 point 8): start cells are the first cells of one permutation of
    # the grid, so with the same seed agent i starts on the same cell in a group of any size
    # (`lambda_star.start_cells`), and in sweeps cells that differ only in group size share their seed word
    # (`Cell.seed_key`): the same ⊕ and ⊖ paths, and agent i the same start cell and stream, paired by (seed
    # word, episode). False (`paper`, `lambdastar2016`): start cells drawn for each size and a seed word per
    # cell, as before issue 22
    paired_group_sizes: bool = False
    # The 2016 C++ program's behaviours (CPP_SWITCHES; docs/concepts.md, "Replicating the 2016 program"):
    # the first scored observation sees the field with ⊕ and ⊖ both reset onto cell 0 (main.cpp
    # resets them after training): -0.5 on cell 0, 0 elsewhere; from the second iteration on it is right
    cpp_first_observation: bool = False
    # auction: bids in agent order, a bid >= the episode's best so far (initially -1, never reset within
    # the episode) moves the target to the bidder's local-search step, so the later agent wins ties
    cpp_auction: bool = False
    # imitation: the hidden oracle takes one step before each imitator acts (n steps per iteration) and
    # starts each episode on the last agent's start cell (the evaluation's episode 0: its own random cell)
    cpp_imitation: bool = False
    # learners: Q-learning bootstraps from max Q(s'=(c', t=0), ·); SARSA from Q((c', t), a'), a' chosen
    # at the same t and then discarded; no terminal state
    cpp_learner_bootstrap: bool = False
    # oracle (and the imitators' hidden oracle): one approach step toward ⊕'s next cell, not interception
    cpp_oracle: bool = False
    # hierarchy: every member does plain local search (the tree's reports are sent but never read)
    cpp_binary_tree: bool = False
    # every protocol accepts a group of one member (the C++ runs each group type with n = 1)
    cpp_groups_of_one: bool = False

    @classmethod
    def from_profile(cls, profile: str = DEFAULT_PROFILE, **overrides) -> "EvaluationConfig":
        """The profile's settings, then `overrides` (None values are ignored), validated."""
        if profile not in PROFILES:
            raise ConfigError("profile", f"unknown profile {profile!r}; allowed: {', '.join(PROFILES)}")
        renamed = sorted(set(overrides) & set(RENAMED_FIELDS))
        if renamed:
            raise ConfigError(renamed[0], RENAMED_FIELDS[renamed[0]])
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(sorted(unknown)[0], f"not a setting; allowed: {', '.join(f.name for f in fields(cls))}")
        for name in ("protocol_params", "behaviour_params"):  # a dict cannot repeat a key; pairs can
            if overrides.get(name) is not None and not isinstance(overrides[name], dict):
                _refuse_repeated_keys(name, overrides[name])
        settings = {**PROFILES[profile], **{k: v for k, v in overrides.items() if v is not None}}
        protocol_defaults = settings.pop("protocol_defaults")
        settings.pop("anytime_defaults", None)  # the anytime test's, read by `collective.anytime`
        params = dict(protocol_defaults.get(settings.get("protocol", "none"), {}))
        params.update(dict(settings.get("protocol_params", ())))
        settings["protocol_params"] = tuple(sorted(params.items()))
        if overrides.get("pattern_pool") is None and not _draws_pool(
                *(settings.get(name, cls.__dataclass_fields__[name].default) for name in POOL_FIELDS)):
            settings["pattern_pool"] = 0  # the profile pools its draws only where they allow it
        if "behaviour_params" in settings:
            settings["behaviour_params"] = tuple(sorted((key, str(value))
                                                        for key, value in dict(settings["behaviour_params"]).items()))
        if settings.get("mix"):
            try:
                counts = mix_counts(settings["mix"])
            except ValueError as error:
                raise ConfigError("mix", str(error)) from None
            settings["behaviour"], settings["group_size"] = "mix", sum(count for _, count in counts)
        return cls(profile=profile, **settings)

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def grid(self) -> str:
        return f"{self.rows}x{self.cols}"

    @property
    def behaviours(self) -> list[str]:
        """Each agent's behaviour, in agent order."""
        return parse_mix(self.mix) if self.mix else [self.behaviour] * self.group_size

    @functools.cached_property
    def behaviour_counts(self) -> dict[str, int]:
        """Each distinct behaviour, in agent order, and its agents: what validation reads, so that a
        group of millions of agents is never listed before its memory is checked."""
        if not self.mix:
            return {self.behaviour: self.group_size}
        counts: dict[str, int] = {}
        for name, count in mix_counts(self.mix):
            counts[name] = counts.get(name, 0) + count
        return counts

    @functools.cached_property
    def learner_count(self) -> int:
        """The group's learners, each behaviour name checked once (a group may have millions of agents)."""
        return sum(count for name, count in self.behaviour_counts.items() if learns(name))

    @property
    def protocol_values(self) -> tuple[float, ...]:
        """A built-in protocol's numeric parameters as the compiled rules take them, its 2016
        switch (`Protocol.cpp_switch`) in the last slot."""
        protocol = load_protocol(self.protocol).cls
        return protocol.kernel_values(dict(self.protocol_params),
                                      switched=bool(protocol.cpp_switch and getattr(self, protocol.cpp_switch)))

    @property
    def protocol_members(self) -> np.ndarray:
        """(agents,) bool: which agents take part in the protocol. A built-in protocol takes the
        behaviours it applies to and any plug-in behaviour whose `protocols` names it (or "*"); a
        plug-in protocol takes the behaviours its `members` names, every agent when it is None."""
        protocol = load_protocol(self.protocol)
        if protocol.builtin:
            applies = protocol.cls.applies_to
            joins = {name: load_behaviour(name).joins for name in set(self.behaviours)}
            return np.array([b in applies or bool(joins[b] & {"*", self.protocol}) for b in self.behaviours], bool)
        members = getattr(protocol.cls, "members", None)
        return np.array([members is None or b in members for b in self.behaviours], bool)

    @property
    def uses_plugins(self) -> bool:
        """Whether a behaviour or the protocol is a plug-in: the group then plays on the stepping core."""
        return not load_protocol(self.protocol).builtin or \
            not all(load_behaviour(name).builtin for name in self.behaviour_counts)

    @property
    def sham(self) -> bool:
        return self.communication_control == "sham"

    @property
    def on_stepping_core(self) -> bool:
        """Whether the group plays on the stepping core: a plug-in, or the sham control (which needs it)."""
        return self.sham or self.uses_plugins

    @property
    def accounting_offset(self) -> int:
        """Where the compiled rules count this row's accounting: (messages, bits) at comm[offset:offset + 2]."""
        return 2 * COMMUNICATION_ACCOUNTINGS.index(self.communication_accounting)

    @property
    def plugins(self) -> tuple[PluginClass, ...]:
        """The group's plug-ins (behaviours, then the protocol), built-ins left out."""
        loaded = [load_behaviour(name) for name in self.behaviour_counts] + [load_protocol(self.protocol)]
        return tuple(plugin for plugin in loaded if not plugin.builtin)

    @property
    def persistent(self) -> bool:
        """Whether a plug-in keeps what it learns across batches (`persistent = True`)."""
        return any(plugin.persistent for plugin in self.plugins)

    @property
    def centralised(self) -> bool:
        """Whether a behaviour plug-in declares `centralised = True`: its agents act on each other's
        observations, so the group's score is not that of decentralised agents (issue 24 point 4)."""
        return any(load_behaviour(name).centralised for name in self.behaviour_counts)

    def behaviour_plugin_params(self, plugin: PluginClass) -> dict[str, str]:
        """The `behaviour_params` a plug-in behaviour declares."""
        declared = {p.name for p in plugin.parameters}
        return {key: value for key, value in self.behaviour_params if key in declared}

    @property
    def trains_on_held_out(self) -> bool:
        """Whether the group's learners train on held-out episodes before each scored episode, which must then
        be generated with it (a pretrained table trains on the cell's own: `evaluation.tables.trained_tables`)."""
        return self.learning_protocol == "held_out" and self.q_training_passes > 0 and \
            self.learner_training == "per_episode" and any(map(learns, self.behaviours))

    @property
    def keeps_tables(self) -> bool:
        """Whether the group's learners keep a pretrained table across episodes (learner_training not per_episode)."""
        return self.learner_training != "per_episode" and self.learner_count > 0

    @property
    def learns_online(self) -> bool:
        """Whether the group's learners keep learning in the test episodes, which must then play in order."""
        return self.learner_training == "online" and self.learner_count > 0

    @property
    def passes_per_episode(self) -> int:
        """Training passes played before each scored episode (per_episode learners only)."""
        return self.q_training_passes if self.learner_count and self.learner_training == "per_episode" else 0

    def training_steps(self, episodes: int) -> int:
        """Learner agent-steps of training behind `episodes` scored episodes: per episode, or once per table."""
        once = self.iterations * self.learner_count * self.q_training_passes
        return once * episodes if self.learner_training == "per_episode" else once * (self.learner_count > 0)

    @property
    def learner(self) -> LearnerParameters:
        return LearnerParameters(alpha=self.q_alpha, gamma=self.q_gamma, epsilon=self.q_epsilon,
                                 q_initial=self.q_initial, training_passes=self.q_training_passes,
                                 reward_scale=self.q_reward_scale)

    def patterns(self) -> PatternGenerator:
        """The movement-pattern generator: `pattern_generator` with its segment cap and shuffle (cyclic),
        drawing K as `k_sampling` says."""
        generator = CyclicPatternGenerator(self.segment_cap, self.lazy_segment_shuffle) \
            if self.pattern_generator == "cyclic" else PATTERN_GENERATORS[self.pattern_generator]()
        return StratifiedComplexity(generator) if self.k_sampling == "stratified" else generator

    def environment(self) -> LambdaStar | FitnessLandscape:
        """The environment class that generates this configuration's episodes."""
        generator = self.patterns()
        k_min = self.k_min if self.k_min is not None else 0
        k_max = self.k_max if self.k_max is not None else np.iinfo(np.int32).max
        if self.env == "landscape":
            return FitnessLandscape(self.rows, self.cols, self.iterations, generator, peaks=self.landscape_peaks,
                                    peak_width=self.landscape_peak_width, deception=self.landscape_deception,
                                    noise=self.landscape_noise, normalisation=self.landscape_normalisation,
                                    entropy=self.landscape_entropy, motion=self.landscape_motion,
                                    k_min=k_min, k_max=k_max, nested_starts=self.paired_group_sizes,
                                    pattern_pool=self.pattern_pool)
        return LambdaStar(self.rows, self.cols, self.iterations, generator, self.evil_pairing, k_min, k_max,
                          self.entropy_rule, self.k_on_played_paths, self.paired_group_sizes, self.pattern_pool)

    def as_record(self) -> dict[str, object]:
        """Flat field -> value mapping, for JSON output and dataset columns."""
        return asdict(self)

    def with_changes(self, **changes) -> "EvaluationConfig":
        return replace(self, **changes)


def mix_counts(text: str) -> list[tuple[str, int]]:
    """'local_search:3,my_pkg.agents:Homing:2' -> [('local_search', 3), ('my_pkg.agents:Homing', 2)]
    (the count follows the last colon); ValueError when malformed. Names are not resolved here."""
    counts = []
    for part in text.split(","):
        name, _, count = part.strip().rpartition(":")
        if not name or not count.isascii() or not count.isdigit() or int(count) < 1:
            raise ValueError(f"expected NAME:COUNT with a count >= 1 (got {part.strip()!r})")
        counts.append((name, int(count)))
    return counts


def parse_mix(text: str) -> list[str]:
    """The mix's agents in order: 3 local searchers then 2 Homing agents (see `mix_counts`)."""
    return [name for name, count in mix_counts(text) for _ in range(count)]


POOL_FIELDS = ("k_sampling", "pattern_generator", "segment_cap")
MAX_PATTERN_POOL = 4096


def _draws_pool(k_sampling: str, pattern_generator: str, segment_cap: str) -> bool:
    """Whether pattern draws can be pooled (`pattern_pool`): stratified K from cyclic draws whose law does not
    depend on the K wanted (segment_cap half_T; under k_max the segment length is capped by each episode's K)."""
    return k_sampling == "stratified" and pattern_generator == "cyclic" and segment_cap == "half_T"


def _refuse_repeated_keys(field: str, pairs) -> None:
    """ConfigError when (key, value) pairs give a key twice (the last would silently win)."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ConfigError(field, f"{key!r} is given twice; give each parameter once")
        seen.add(key)


def _require_int(config, name: str, minimum: int, what: str = "") -> int:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(name, f"must be an integer{what} (got {value!r})")
    if value < minimum:
        raise ConfigError(name, f"must be >= {minimum}{what} (got {value})")
    return int(value)


def _require_choice(config, name: str, allowed) -> None:
    value = getattr(config, name)
    if value not in allowed:
        raise ConfigError(name, f"unknown value {value!r}; allowed: {', '.join(allowed)}")


def _require_range(config, name: str, low: float, high: float, low_open: bool = False) -> None:
    value = getattr(config, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        (low < value if low_open else low <= value) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ConfigError(name, f"must be a number in {bracket}{low}, {high}] (got {value!r})")


def _validate(c: EvaluationConfig) -> None:
    if c.mix:
        try:
            size = sum(count for _, count in mix_counts(c.mix))
        except ValueError as error:
            raise ConfigError("mix", str(error)) from None
        if c.behaviour != "mix" or c.group_size != size:
            raise ConfigError("mix", f"a mix sets behaviour 'mix' and group_size {size}")
    _require_choice(c, "profile", tuple(PROFILES))
    _require_choice(c, "env", ENVIRONMENT_CLASSES)
    _refuse_repeated_keys("protocol_params", c.protocol_params)
    _refuse_repeated_keys("behaviour_params", c.behaviour_params)
    _validate_plugins(c)
    _require_choice(c, "pattern_generator", tuple(PATTERN_GENERATORS))
    _require_choice(c, "segment_cap", SEGMENT_CAPS)
    _require_choice(c, "evil_pairing", EVIL_PAIRINGS)
    _require_choice(c, "entropy_rule", ENTROPY_RULES)
    _require_choice(c, "k_sampling", K_SAMPLINGS)
    _require_choice(c, "k_normalisation", K_NORMALISATIONS)
    if not isinstance(c.paired_group_sizes, bool):
        raise ConfigError("paired_group_sizes", f"must be true or false (got {c.paired_group_sizes!r})")
    if not isinstance(c.k_on_played_paths, bool):
        raise ConfigError("k_on_played_paths", f"must be true or false (got {c.k_on_played_paths!r})")
    if not isinstance(c.lazy_segment_shuffle, bool):
        raise ConfigError("lazy_segment_shuffle", f"must be true or false (got {c.lazy_segment_shuffle!r})")
    if c.k_on_played_paths and not PATTERN_GENERATORS[c.pattern_generator].k_on_positions:
        raise ConfigError("k_on_played_paths", f"the {c.pattern_generator} generator measures K on its base walk, "
                          "not on the positions it plays (spec §2); use the cyclic generator or false")
    _require_int(c, "pattern_pool", 0)
    if c.pattern_pool > MAX_PATTERN_POOL:  # every batch generates whole blocks: a block is not a run
        raise ConfigError("pattern_pool", f"must be at most {MAX_PATTERN_POOL} episodes (got {c.pattern_pool})")
    if c.pattern_pool and not _draws_pool(*(getattr(c, name) for name in POOL_FIELDS)):
        raise ConfigError("pattern_pool", "pooled draws serve stratified K (k_sampling stratified) from the cyclic "
                          "generator with segment_cap half_T, whose draws do not depend on the K wanted; set 0 "
                          f"(got k_sampling {c.k_sampling}, pattern_generator {c.pattern_generator}, "
                          f"segment_cap {c.segment_cap})")
    _require_int(c, "rows", 2, " (the grid is at least 2x2)")
    _require_int(c, "cols", 2, " (the grid is at least 2x2)")
    _require_int(c, "group_size", 1)
    _require_int(c, "iterations", 1)
    _require_int(c, "episodes", 1)
    _require_int(c, "seed", 0, f" in 0..2**63-1 = 0..{SEED_MAX}")
    if c.seed > SEED_MAX:
        raise ConfigError("seed", f"must be an integer in 0..2**63-1 = 0..{SEED_MAX} (got {c.seed})")
    _require_int(c, "reward_radius", 0)
    view = _require_int(c, "observation_range", 1)
    if 2 * view >= min(c.rows, c.cols) and view == 1:
        raise ConfigError("rows", f"a {c.grid} grid cannot hold the range-1 observation window; "
                          "the smallest grid for range k is (2k+1)x(2k+1), 3x3 for k = 1")
    if 2 * view >= min(c.rows, c.cols):
        raise ConfigError("observation_range", f"must be below half the grid's shorter side, "
                          f"at most {(min(c.rows, c.cols) - 1) // 2} on {c.grid} (got {view})")
    _require_int(c, "coordination_threshold", 1)  # above the group size, Good never pays (§6.1)
    _require_range(c, "q_alpha", 0.0, 1.0, low_open=True)
    _require_range(c, "q_gamma", 0.0, 1.0)
    _require_range(c, "q_epsilon", 0.0, 1.0)
    _require_range(c, "q_initial", -1e6, 1e6)
    _require_range(c, "q_reward_scale", 0.0, 1e6, low_open=True)
    _require_int(c, "q_training_passes", 0)
    _validate_learning_protocol(c)
    _validate_learners(c)  # before the memory estimate, which reads the learners' state
    _validate_memory(c)  # before anything that lists the agents
    _validate_protocol(c)
    _validate_communication(c)
    _validate_cpp_switches(c)
    _validate_landscape(c)
    _validate_k_range(c)
    _validate_legg_hutter(c)


def _validate_plugins(c: EvaluationConfig) -> None:
    """Every behaviour and the protocol resolve (by name or import path), plug-in parameters are
    declared and valid, and a group on the stepping core has no kernel learner: q_learning and
    sarsa train in passes inside the fused kernel and have no stepping-core form yet."""
    field = "mix" if c.mix else "behaviour"
    plugins = {}
    for name in c.behaviour_counts:
        try:
            plugins[name] = load_behaviour(name)
        except PluginError as error:
            raise ConfigError(field, str(error)) from None
    try:
        protocol = load_protocol(c.protocol)
    except PluginError as error:
        raise ConfigError("protocol", str(error)) from None
    declared = {p.name for plugin in plugins.values() if not plugin.builtin for p in plugin.parameters}
    for key, _ in c.behaviour_params:
        if key not in declared:
            raise ConfigError("behaviour_params", f"no plug-in behaviour of the group declares {key!r}; "
                              f"declared: {', '.join(sorted(declared)) or 'none'}")
    for plugin in plugins.values():
        if not plugin.builtin:
            try:
                plugin.typed_params(c.behaviour_plugin_params(plugin))
            except ValueError as error:
                raise ConfigError("behaviour_params", str(error)) from None
    if protocol.builtin and all(plugin.builtin for plugin in plugins.values()):
        return
    learners = sorted(name for name in plugins if learns(name))
    if learners or protocol.spec == "shared_q":
        raise ConfigError(field if learners else "protocol",
                          f"{', '.join(learners) or 'shared_q'} trains in passes inside the fused kernel and "
                          "cannot share a group with plug-ins yet; play the learners in a group of built-ins")


def _validate_cpp_switches(c: EvaluationConfig) -> None:
    """The 2016 switches are booleans; the reset field is Λ*'s; the C++ auction keeps its bid."""
    for name in CPP_SWITCHES:
        if not isinstance(getattr(c, name), bool):
            raise ConfigError(name, f"must be true or false (got {getattr(c, name)!r})")
    if c.cpp_first_observation and c.env != "lambda_star":
        raise ConfigError("cpp_first_observation", "reproduces the 2016 program's Λ* field with ⊕ and ⊖ reset onto "
                                                   "cell 0, and that program has no landscapes; use false with "
                                                   f"--env {c.env}")
    if c.cpp_auction and c.protocol == "auction" and dict(c.protocol_params).get("sticky", "false") != "true":
        raise ConfigError("cpp_auction", "the C++ auction keeps the episode's best bid: it needs sticky=true "
                                         "(or set cpp_auction false)")


def _validate_protocol(c: EvaluationConfig) -> None:
    """Parameters known and in range; the group has enough members the protocol applies to (spec §6)."""
    protocol = load_protocol(c.protocol)
    participants = int(c.protocol_members.sum())
    if not protocol.builtin:
        try:
            protocol.typed_params(dict(c.protocol_params))
        except ValueError as error:
            raise ConfigError("protocol_params", str(error)) from None
        minimum = int(getattr(protocol.cls, "minimum_members", 1))
        if c.cpp_groups_of_one:
            minimum = min(minimum, 1)
        if participants < minimum:
            raise ConfigError("protocol", f"{protocol.spec} needs at least {minimum} members "
                              f"(the group has {participants})")
        return
    try:
        values = protocol.cls.kernel_values(dict(c.protocol_params))
    except ValueError as error:
        raise ConfigError("protocol_params", str(error)) from None
    try:
        protocol.cls.check_group(values, participants, minimum=1 if c.cpp_groups_of_one else None)
    except ValueError as error:
        raise ConfigError("protocol", str(error)) from None


def _validate_communication(c: EvaluationConfig) -> None:
    """The accounting and the control are known; the sham control is refused where it cannot be made:
    without messages, with learners (the stepping core, where the sham plays, has none) or a shared
    table (its traffic happens inside the learners' training), or with a persistent plug-in (it would
    learn from the shadow episodes as well)."""
    _require_choice(c, "communication_accounting", COMMUNICATION_ACCOUNTINGS)
    _require_choice(c, "communication_control", COMMUNICATION_CONTROLS)
    if not c.sham:
        return
    protocol = load_protocol(c.protocol)
    code = protocol.cls.code if protocol.builtin else None
    if code == NONE:
        raise ConfigError("communication_control", "sham needs a communicating protocol: protocol none sends no "
                                                   "message to exchange between episodes")
    if code == SHARED_Q:
        raise ConfigError("communication_control", "shared_q cannot be shammed: its learners read and write the "
                                                   "table while they train inside the fused kernel, with no message "
                                                   "that could be exchanged between episodes")
    learners = sorted(name for name in c.behaviour_counts if learns(name))
    if learners:
        raise ConfigError("communication_control", f"sham plays on the stepping core, where {', '.join(learners)} "
                                                   "cannot play (it trains inside the fused kernel)")
    if c.persistent:
        raise ConfigError("communication_control", "sham cannot be played with a persistent plug-in: it would "
                                                   "learn from the shadow episodes as well")


def _validate_learning_protocol(c: EvaluationConfig) -> None:
    """Replay trains on the one scored episode; held-out episodes are each played at least once."""
    _require_choice(c, "learning_protocol", LEARNING_PROTOCOLS)
    episodes = _require_int(c, "training_episodes", 1)
    if c.learning_protocol == "replay" and episodes != 1:
        raise ConfigError("training_episodes", f"must be 1 with learning_protocol replay, which trains on the "
                                               f"scored episode itself (got {episodes}); use held_out for more")
    if c.learning_protocol == "held_out" and c.q_training_passes and episodes > c.q_training_passes:
        raise ConfigError("training_episodes", f"at most q_training_passes = {c.q_training_passes}, so that the "
                                               f"passes play every training episode (got {episodes})")


def _validate_learners(c: EvaluationConfig) -> None:
    """The learners' state and table life are known; a kept table trains on held-out episodes; the 2016
    learner switches read (cell, t) states reset every episode."""
    _require_choice(c, "learner_state", LEARNER_STATES)
    _require_choice(c, "learner_training", LEARNER_TRAININGS)
    if c.learner_training != "per_episode" and c.learning_protocol != "held_out":
        raise ConfigError("learner_training", f"{c.learner_training} trains one table on held-out episodes of the "
                                              "cell: use learning_protocol held_out (replay trains on each scored "
                                              "episode, per_episode)")
    if c.learner_state != "cell_time" and c.cpp_learner_bootstrap:
        raise ConfigError("learner_state", "cpp_learner_bootstrap bootstraps from the 2016 program's (cell, t=0) "
                                           "state: use cell_time (or set cpp_learner_bootstrap false)")
    for switch in ("cpp_first_observation", "cpp_learner_bootstrap"):
        if c.learner_training != "per_episode" and getattr(c, switch):
            raise ConfigError("learner_training", f"{switch} reproduces the 2016 program, whose tables are trained "
                                                  "and reset per episode: use per_episode (or set the switch false)")


def training_chunk(c: EvaluationConfig) -> int:
    """Training passes of a kept table played per kernel call (`evaluation.tables.trained_tables`): a batch's
    work."""
    return max(1, min(c.q_training_passes, TARGET_AGENT_STEPS_PER_BATCH // (c.iterations * c.group_size)))


def physical_memory_limit() -> int:
    """Half the physical memory: the most one run may plan to use."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def learner_table_bytes(c: EvaluationConfig) -> int:
    """Bytes of the group's learner tables: per learner, its states (cells·T, or 3^9 window signs) x 9
    float64 values and a flag."""
    return c.learner_count * table_states(LEARNER_STATES.index(c.learner_state), c.rows, c.cols, c.iterations) * (9 * 8 + 1)


def memory_needs(c: EvaluationConfig, batch: int | None = None, batches: int = 1) -> dict[str, int]:
    """Estimated bytes of the largest arrays of a run, by the field that drives them, from their
    shapes: ⊕/⊖ paths (episodes, T+1) int32 per batch and in the K-range probe, start cells, the
    landscapes (episodes, cells) float64, the protocol's grid field, the learners' Q-tables
    (cells·T states × 9 float64 + a flag), the per-agent arrays and the stepping core's windows (and
    under the sham control each member's copy of the protocol's grid field).
    `batch` is the episodes played in one call: by default an evaluation's batch (`evaluation.batches.batch_episodes`; a
    sweep's work unit may play more); `batches` the batches whose environments are in memory at once
    (an evaluation prepares BATCHES_PREPARED_AHEAD while one plays; a sweep's work unit holds one)."""
    learners = c.learner_count
    steps = c.group_size * c.iterations * (1 + c.passes_per_episode)
    if batch is None:
        batch = max(1, min(c.episodes, TARGET_AGENT_STEPS_PER_BATCH // steps))  # played (a sham: half + shadows)
    cells, agents = c.rows * c.cols, c.group_size
    probes = REACHABLE_PROBES if c.k_min is not None or c.k_max is not None else 0
    window = (2 * c.observation_range + 1) ** 2 * 8 * 2 if c.on_stepping_core else 0
    tables = learner_table_bytes(c)
    if c.keeps_tables:  # a pretrained table's training passes, one chunk of episodes at a time
        tables += training_chunk(c) * (2 * (c.iterations + 1) + c.group_size) * 8
    logs = batch * c.iterations * (2 * agents + 1) * 8 if c.on_stepping_core and c.protocol != "none" else 0
    prepared = batches * batch  # episodes whose environments are in memory
    # held-out training episodes: their paths and fields, and the kernel's (n, T+1) coordinates of them
    held_out = prepared * c.training_episodes if c.trains_on_held_out else 0
    training_paths = (held_out * 2 * 4 + c.training_episodes * 6 * 8) * (c.iterations + 1) if held_out else 0
    return {
        "iterations": 2 * 4 * max(prepared, probes) * (c.iterations + 1) + (tables if c.iterations > cells else 0)
        + training_paths,
        "rows": ((prepared + held_out) * cells * 8 if c.env == "landscape" else 0) + cells * 8
        + (tables if c.iterations <= cells else 0)
        + (batch * agents * cells * 8 if c.sham else 0),  # a sham listener's own copy of the protocol's field
        "group_size": (prepared + held_out) * agents * 8 * 5 + logs,  # + the stepping core's message symbols
        "observation_range": batch * agents * window,
    }


def _validate_memory(c: EvaluationConfig) -> None:
    """Refuse, before allocating anything, a run whose arrays would not fit in memory."""
    needs = memory_needs(c, batches=1 + BATCHES_PREPARED_AHEAD)  # as `evaluation.batches.batches_ahead` holds them
    total, limit = sum(needs.values()), physical_memory_limit()
    if total > limit:
        raise ConfigError(max(needs, key=needs.get), f"a run of {c.grid}, T={c.iterations}, group of {c.group_size} "
                          f"needs ~{total / 2**30:.1f} GiB of memory; the limit is {limit / 2**30:.1f} GiB "
                          "(half the physical memory)")


def _validate_landscape(c: EvaluationConfig) -> None:
    """Landscape parameters in range and the peaks placeable on the grid (spec §7)."""
    peaks = _require_int(c, "landscape_peaks", 1)
    width = _require_int(c, "landscape_peak_width", 0)
    _require_range(c, "landscape_deception", 0.0, 1.0)
    _require_range(c, "landscape_noise", 0.0, 1.0)
    _require_choice(c, "landscape_normalisation", LANDSCAPE_NORMALISATIONS)
    _require_choice(c, "landscape_entropy", LANDSCAPE_ENTROPIES)
    _require_choice(c, "landscape_motion", LANDSCAPE_MOTIONS)
    if c.env != "landscape":
        return
    if c.coordination_threshold > 1:
        raise ConfigError("coordination_threshold", "applies to Λ*'s Good object only; use 1 with --env landscape")
    try:
        landscape_field(np.random.default_rng(0), c.rows, c.cols, peaks, width, c.landscape_deception,
                        noise=c.landscape_noise, normalisation=c.landscape_normalisation)
    except ValueError as error:
        raise ConfigError("landscape_peaks", f"{error}; use fewer or narrower peaks") from None
    bound = cone_mass_bound(c.rows, c.cols, peaks, width)
    if c.landscape_normalisation == "optimum_one" and bound > 0.5:
        raise ConfigError("landscape_normalisation", f"'optimum_one' needs peaks that hold at most half the "
                          f"field's mass, or the lowest cells could pay below -1; {peaks} peaks of width {width} "
                          f"on {c.grid} may hold {bound:.2f}: use fewer or narrower peaks (or 'centre', as in "
                          "the paper profile)")


def _validate_k_range(c: EvaluationConfig) -> None:
    """K range checks: integers, ordered, and reachable by the generator on this grid and T (with
    stratified sampling, every K of the range; K = 1 never is, see `reachable_k`); with K on the
    played paths of an independent pair, pairs that keep their K must exist (`unpairable_k`)."""
    if c.k_sampling == "stratified" and (c.k_min is None or c.k_max is None):
        raise ConfigError("k_sampling", "stratified draws K uniformly from a closed range: set k_min and k_max")
    if c.k_min is None and c.k_max is None:
        return
    for name in ("k_min", "k_max"):
        if getattr(c, name) is not None:
            _require_int(c, name, 1)
    low = c.k_min if c.k_min is not None else 1
    high = c.k_max if c.k_max is not None else np.iinfo(np.int32).max - 1
    if low > high:
        raise ConfigError("k_min", f"must not exceed k_max (got {low}:{high})")
    reachable = reachable_k(c.patterns(), c.rows, c.cols, c.iterations, REACHABLE_PROBES, k_max=high)
    in_range = reachable[(reachable >= low) & (reachable <= high)]
    if c.k_sampling == "stratified":
        missing = sorted(set(range(low, high + 1)) - set(in_range.tolist()))
        if missing:
            why = " (K = 1 needs a one-symbol sequence: any path of T >= 2 positions has K >= 2)" \
                if missing[0] == 1 and c.iterations >= 2 else ""
            raise ConfigError("k_min" if missing[0] == low else "k_max",
                              f"stratified sampling needs every K in [{low}, {high}], but {c.pattern_generator} "
                              f"patterns on {c.grid} with {c.iterations} iterations reach {_spans(reachable)} "
                              f"(not {_spans(np.array(missing))}){why}")
    elif not len(in_range):
        raise ConfigError("k_min", f"no {c.pattern_generator} pattern on {c.grid} with {c.iterations} "
                          f"iterations has K in [{low}, {high}]; reachable K: {_spans(reachable)}")
    if c.k_on_played_paths and c.evil_pairing == "independent" and c.env == "lambda_star":
        unpairable = unpairable_k(c.patterns(), c.rows, c.cols, c.iterations, tuple(in_range.tolist()))
        if unpairable:
            raise ConfigError("k_max" if unpairable[-1] == in_range[-1] else "k_min",
                              f"on {c.grid} with {c.iterations} iterations, collisions change the K of almost every "
                              f"independent ⊕/⊖ pair with K in {_spans(np.array(unpairable))}, so no pair keeps its "
                              "K on the played paths; use a larger grid, another K range or k_on_played_paths = false")


def _spans(values: np.ndarray) -> str:
    """Sorted integers as runs, e.g. [2, 3, 4, 7] -> '2..4, 7'; 'none' when empty."""
    if len(values) == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(values) != 1)
    starts, ends = np.r_[values[0], values[breaks + 1]], np.r_[values[breaks], values[-1]]
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in zip(starts, ends))


def _validate_legg_hutter(c: EvaluationConfig) -> None:
    """The importance-weighted estimator needs the probability of every pattern the configuration draws."""
    _require_choice(c, "legg_hutter_estimator", LEGG_HUTTER_ESTIMATORS)
    if c.legg_hutter_estimator == "importance_bits":
        reason = pattern_probability_unavailable(c)
        if reason:
            raise ConfigError("legg_hutter_estimator", f"importance_bits cannot weight these episodes: {reason}; "
                              "use sampled_phrases")
