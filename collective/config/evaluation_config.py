"""One frozen, validated configuration per evaluation: the sections of every concern in one flat dataclass, so
every field is read as `config.field` and becomes a result column."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from collective.config.checks import ConfigError, refuse_repeated_keys, require_choice
from collective.config.cpp_switches import CPP_SWITCHES, CppSwitchesSection, validate_cpp_switches
from collective.config.environment import (POOL_FIELDS, EnvironmentSection, draws_pool, validate_environment_fields,
                                           validate_k_range, validate_landscape)
from collective.config.group import GroupSection, mix_counts, validate_group_fields, validate_plugins
from collective.config.learners import LearnersSection, validate_learners
from collective.config.memory import validate_memory
from collective.config.profiles import DEFAULT_PROFILE, PROFILES, RENAMED_FIELDS
from collective.config.protocol import (ProtocolSection, validate_communication, validate_protocol,
                                        validate_protocol_fields)
from collective.config.statistics import StatisticsSection, validate_legg_hutter, validate_statistics_fields

# The fields in the order of the dataset's columns (`sweeps.store.row_schema`) and of `as_record`: that of the one
# flat dataclass the sections were cut from (0fd329a), so the rows of earlier sweeps resume unchanged
# (tests/test_config_resume.py). A new field goes at the end.
DATASET_ORDER = ("behaviour", "group_size", "mix", "rows", "cols", "iterations", "episodes", "seed", "profile", "env",
                 "protocol", "protocol_params", "behaviour_params", "observation_range", "reward_radius",
                 "coordination_threshold", "pattern_generator", "segment_cap", "lazy_segment_shuffle", "pattern_pool",
                 "evil_pairing", "entropy_rule", "k_on_played_paths", "k_sampling", "k_min", "k_max",
                 "k_normalisation", "landscape_peaks", "landscape_peak_width", "landscape_deception",
                 "landscape_noise", "landscape_normalisation", "landscape_entropy", "landscape_motion", "q_alpha",
                 "q_gamma", "q_epsilon", "q_initial", "q_training_passes", "q_reward_scale", "learning_protocol",
                 "training_episodes", "learner_state", "learner_training", "legg_hutter_estimator",
                 "communication_accounting", "communication_control", "paired_group_sizes", *CPP_SWITCHES,
                 "training_runs")


def _in_dataset_order(cls):
    """The dataclass's fields (`dataclasses.fields`, `asdict`) put in DATASET_ORDER: inheritance lists them
    section by section, but the dataset's columns interleave the concerns."""
    declared = cls.__dataclass_fields__
    if len(DATASET_ORDER) != len(declared) or set(DATASET_ORDER) != set(declared):
        raise TypeError(f"{cls.__name__}'s fields and DATASET_ORDER differ: "
                        f"{', '.join(sorted(set(DATASET_ORDER) ^ set(declared))) or 'a name repeated'}")
    cls.__dataclass_fields__ = {name: declared[name] for name in DATASET_ORDER}
    return cls


@_in_dataset_order
@dataclass(frozen=True)
class EvaluationConfig(EnvironmentSection, GroupSection, LearnersSection, ProtocolSection, StatisticsSection,
                       CppSwitchesSection):
    """Every section's fields, their properties and the profile they started from; validated when made."""
    profile: str = "paper"  # the profile the settings started from (`from_profile`; collective.config.profiles)

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
                refuse_repeated_keys(name, overrides[name])
        settings = {**PROFILES[profile], **{k: v for k, v in overrides.items() if v is not None}}
        protocol_defaults = settings.pop("protocol_defaults")
        settings.pop("anytime_defaults", None)  # the anytime test's, read by `collective.anytime`
        params = dict(protocol_defaults.get(settings.get("protocol", "none"), {}))
        params.update(dict(settings.get("protocol_params", ())))
        settings["protocol_params"] = tuple(sorted(params.items()))
        if overrides.get("pattern_pool") is None and not draws_pool(
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

    def as_record(self) -> dict[str, object]:
        """Flat field -> value mapping, for JSON output and dataset columns."""
        return asdict(self)

    def with_changes(self, **changes) -> "EvaluationConfig":
        return replace(self, **changes)


def _validate(c: EvaluationConfig) -> None:
    """Each section's validation, ordered so that a check reads only fields checked before it: the sections' own
    fields (no agent listed, nothing generated), the memory estimate, then what lists the agents or generates
    environments."""
    validate_group_fields(c)
    require_choice(c, "profile", tuple(PROFILES))
    validate_protocol_fields(c)
    validate_plugins(c)
    validate_environment_fields(c)
    validate_statistics_fields(c)
    validate_learners(c)  # before the memory estimate, which reads the learners' state
    validate_memory(c)  # before anything that lists the agents
    validate_protocol(c)
    validate_communication(c)
    validate_cpp_switches(c)
    validate_landscape(c)
    validate_k_range(c)
    validate_legg_hutter(c)
