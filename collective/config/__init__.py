"""One frozen, validated configuration per evaluation (`EvaluationConfig`), read by concern: each module holds one
concern's fields, their documentation and their validation, and `evaluation_config` combines them into the flat
dataclass whose fields become result columns.

    checks.py             ConfigError and the checks every section's validation is made of
    environment.py        Λ* or a landscape, grid, T, patterns and K
    group.py              the group's members, mixes and plug-ins
    learners.py           Q-learning and SARSA: parameters, training, state, table life
    protocol.py           the protocol, its traffic accounting and the sham control
    statistics.py         episodes, seed, the Υ estimator, paired group sizes
    cpp_switches.py       the 2016 C++ program's behaviours, one switch each
    memory.py             what a run holds in memory, refused before it is allocated
    profiles.py           the named profiles
    evaluation_config.py  EvaluationConfig: the sections in one dataclass, `from_profile`, validation in order

Every name the rest of the package uses is importable from here.
"""
from collective.config.checks import ConfigError
from collective.config.cpp_switches import CPP_SWITCHES
from collective.config.environment import ENVIRONMENT_CLASSES
from collective.config.evaluation_config import EvaluationConfig
from collective.config.group import mix_counts, parse_mix
from collective.config.learners import LEARNER_STATES, LEARNER_TRAININGS, LEARNING_PROTOCOLS
from collective.config.memory import (BATCHES_PREPARED_AHEAD, TARGET_AGENT_STEPS_PER_BATCH, learner_table_bytes,
                                      memory_needs, physical_memory_limit, training_chunk, validate_batch_memory)
from collective.config.profiles import DEFAULT_PROFILE, PROFILES, RENAMED_FIELDS
from collective.config.protocol import COMMUNICATION_CONTROLS
from collective.config.statistics import SEED_MAX

__all__ = ["BATCHES_PREPARED_AHEAD", "COMMUNICATION_CONTROLS", "CPP_SWITCHES", "ConfigError", "DEFAULT_PROFILE",
           "ENVIRONMENT_CLASSES", "EvaluationConfig", "LEARNER_STATES", "LEARNER_TRAININGS", "LEARNING_PROTOCOLS",
           "PROFILES", "RENAMED_FIELDS", "SEED_MAX", "TARGET_AGENT_STEPS_PER_BATCH", "learner_table_bytes", "memory_needs",
           "mix_counts", "parse_mix", "physical_memory_limit", "training_chunk", "validate_batch_memory"]
