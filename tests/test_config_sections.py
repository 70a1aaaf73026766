"""The config is read by concern (issue 44 item 3): each section module holds its fields and their validation,
imports no other part of the config but the checks they share, and the flat `EvaluationConfig` combines them
with its fields in the dataset's column order."""
from dataclasses import fields

from collective.config.cpp_switches import CppSwitchesSection
from collective.config.environment import EnvironmentSection
from collective.config.evaluation_config import DATASET_ORDER, EvaluationConfig
from collective.config.group import GroupSection
from collective.config.learners import LearnersSection
from collective.config.protocol import ProtocolSection
from collective.config.statistics import StatisticsSection
from test_layers import imports, module_files

SECTIONS = (EnvironmentSection, GroupSection, LearnersSection, ProtocolSection, StatisticsSection, CppSwitchesSection)
# What each module of collective.config may import of it: the sections and the profiles only the shared checks;
# the memory estimate the sections it reads constants of; the combining module everything; none of them the
# package's __init__, which re-exports them.
ALLOWED = {"checks": set(), "environment": {"checks"}, "group": {"checks"}, "learners": {"checks"},
           "protocol": {"checks"}, "statistics": {"checks"}, "cpp_switches": {"checks"}, "profiles": set(),
           "memory": {"checks", "environment", "learners"},
           "evaluation_config": {"checks", "cpp_switches", "environment", "group", "learners", "memory", "profiles",
                                 "protocol", "statistics"}}


def test_each_field_belongs_to_one_section_and_the_columns_keep_their_order():
    owners = {}
    for section in SECTIONS:
        for field in fields(section):
            owners.setdefault(field.name, []).append(section.__name__)
    assert all(len(names) == 1 for names in owners.values()), owners
    assert set(owners) | {"profile"} == set(DATASET_ORDER)
    assert [f.name for f in fields(EvaluationConfig)] == list(DATASET_ORDER)
    assert list(EvaluationConfig.from_profile("paper").as_record()) == list(DATASET_ORDER)


def test_each_config_module_imports_only_what_lies_below_it():
    modules = module_files()
    found = {name.rpartition(".")[2]: {other.rpartition(".")[2] for other in imports(name, path, modules)
                                       if other.startswith("collective.config")}
             for name, path in modules.items() if name.startswith("collective.config.")}
    assert set(found) == set(ALLOWED)
    for name, imported in found.items():
        assert imported <= ALLOWED[name], (name, sorted(imported - ALLOWED[name]))
