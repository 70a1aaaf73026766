"""What a row of a sweep dataset may hold, and the check of a chunk file every command that reads a dataset makes.

The columns and their Arrow types are the writer's (`sweeps.store.row_schema`: the result columns, then one per
`EvaluationConfig` field); `RULES` adds what the values of the columns the analysis reads may be: ranges, the
names a setting allows, and the identifiers that must parse (grid "RxC", mix "NAME:COUNT,...", names without
spaces). Parquet files are shared, copied, edited and merged by hand, so a dataset is input like any other:
`check_chunk` refuses a file whose column has another type, a value out of range, a missing value where none
is allowed, or an identifier that does not parse, with one line naming the file, the column and what was
expected. It reads the Arrow schema, the Parquet column statistics (min, max) and the distinct values of text
columns (their dictionaries), never the rows one by one in Python. Rows without a score (NaN) are not refused:
`analysis.dataset.load_dataset` leaves them out with a notice. docs/reference/cli.md lists the rules.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from collective.analysis.base import DatasetError
from collective.analysis.scores import LEGG_HUTTER_ESTIMATORS
from collective.config import (COMMUNICATION_CONTROLS, ENVIRONMENT_CLASSES, LEARNER_STATES, LEARNER_TRAININGS,
                               LEARNING_PROTOCOLS, PROFILES, SEED_MAX)
from collective.environments.motion import MOTION_KINDS
from collective.protocols import COMMUNICATION_ACCOUNTINGS
from collective.sweeps.store import row_schema

MAX_GROUP_SIZE = 10**6  # agents: far above any group a sweep plays; a mix's counts are expanded agent by agent
NAME = r"[^\s,]+"  # a registered name or an import path (MODULE:CLASS, FILE.py:CLASS)
COUNT = r"0*[1-9][0-9]{0,5}"  # a mix's count, 1..999999 (`config.mix_counts`)
SMALL_DICTIONARY = 64  # distinct values of a text column remembered once found good (settings, names; not scores)
ROUNDING = 1e-9  # a range's bounds are met within this (a mean of rewards in [-1, 1] may end 1 + 2**-52)


@dataclass(frozen=True)
class Rule:
    """What one column's values may be, beyond its type: a closed range (numbers), whether NaN and missing
    values (null) may occur, and for text the choices or the pattern every distinct value must match whole."""

    low: float = -math.inf  # an int where the bound is whole (printed, and compared, exactly)
    high: float = math.inf
    nan: bool = False  # NaN allowed, and missing (null) too: pandas writes NaN as null
    nulls: bool = False
    choices: tuple[str, ...] = ()
    pattern: str = ""
    expected: str = ""  # the pattern in words, for the refusal

    def describe(self) -> str:
        """The rule in words (refusals and the reference table)."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.pattern:
            return self.expected
        bounds = [f">= {_number(self.low)}" if self.low > -math.inf else "",
                  f"<= {_number(self.high)}" if self.high < math.inf else ""]
        text = " and ".join(filter(None, bounds)) or "any finite value"
        return text + (", or NaN (or missing)" if self.nan else "")


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _whole(low: float, high: float = math.inf, nulls: bool = False) -> Rule:
    return Rule(low=low, high=high, nulls=nulls)


_TEXT = Rule(pattern=r"[^\x00-\x1f\x7f]+", expected="non-empty text without control characters")
_NAME = Rule(pattern=NAME, expected="a name without spaces or commas")
_JSON_LIST = Rule(pattern=r"\[.*\]", expected="a JSON list")
# The analysis reads these columns (analysis.dataset.ANALYSIS_COLUMNS); a column of the writer's schema not named
# here has its type checked only. Numbers are finite unless `nan`.
RULES: dict[str, Rule] = {
    "sweep_id": _TEXT, "cell": Rule(), "group": _TEXT, "group_key": Rule(), "episode": _whole(0),
    "grid": Rule(pattern=r"[1-9][0-9]{0,5}x[1-9][0-9]{0,5}", expected="ROWSxCOLS, e.g. 10x10"),
    # R̄ averages rewards in [-1, 1] (Λ*, and landscapes: `environments.landscapes`); NaN or missing (pandas writes
    # NaN as null): a row without a score, left out with a notice
    "score": Rule(low=-1, high=1, nan=True),
    "k_raw": _whole(0), "k_normalised": Rule(low=0), "entropy_bits": Rule(low=0),
    "pattern_log2_probability": Rule(high=0, nan=True), "upsilon_best": Rule(low=-1, high=1, nan=True),
    "messages_per_iteration": Rule(low=0), "bits_per_iteration": Rule(low=0),
    "message_entropy_bits": Rule(low=0, nan=True), "information_bits_per_iteration": Rule(low=0, nan=True),
    "distinct_messages_per_iteration": Rule(low=0, nan=True),
    "distinct_information_bits_per_iteration": Rule(low=0, nan=True),
    "score_by_behaviour": Rule(pattern=r"\{.*\}", expected="a JSON object"),
    "wall_seconds": Rule(low=0), "kernel_seconds": Rule(low=0), "version": _TEXT,
    "motion": Rule(choices=MOTION_KINDS), "behaviour": _NAME, "group_size": _whole(1, MAX_GROUP_SIZE),
    "mix": Rule(pattern=rf"|{NAME}:{COUNT}(,{NAME}:{COUNT})*",
                expected="empty or NAME:COUNT,... with counts 1..999999, e.g. local_search:3,random:2"),
    "rows": _whole(2), "cols": _whole(2), "iterations": _whole(1), "episodes": _whole(1), "seed": _whole(0, SEED_MAX),
    "profile": Rule(choices=tuple(PROFILES)), "env": Rule(choices=ENVIRONMENT_CLASSES), "protocol": _NAME,
    "protocol_params": _JSON_LIST, "behaviour_params": _JSON_LIST, "observation_range": _whole(1),
    "coordination_threshold": _whole(1), "k_min": _whole(0, nulls=True), "k_max": _whole(0, nulls=True),
    "landscape_peaks": _whole(1), "landscape_peak_width": _whole(0), "q_training_passes": _whole(0),
    "training_episodes": _whole(0), "learning_protocol": Rule(choices=LEARNING_PROTOCOLS),
    "learner_state": Rule(choices=LEARNER_STATES), "learner_training": Rule(choices=LEARNER_TRAININGS),
    "legg_hutter_estimator": Rule(choices=LEGG_HUTTER_ESTIMATORS),
    "communication_accounting": Rule(choices=COMMUNICATION_ACCOUNTINGS),
    "communication_control": Rule(choices=COMMUNICATION_CONTROLS),
    "training_run": _whole(-1), "training_runs": _whole(1),  # issue 45 item 3 (`base.run_ids`); -1: no kept table
}


def _value_type(kind: pa.DataType) -> pa.DataType:
    return kind.value_type if pa.types.is_dictionary(kind) else kind


@functools.cache
def _declared() -> dict[str, pa.DataType]:
    """The writer's type of each column."""
    return {field.name: field.type for field in row_schema()}


@functools.cache
def _kind(kind: pa.DataType) -> str:
    """The family of an Arrow type, as the check compares them: a file written by another tool may use int32 for
    int64, large_string for string, and a float column may hold whole numbers."""
    kind = _value_type(kind)
    if pa.types.is_integer(kind):
        return "a whole number"
    if pa.types.is_floating(kind):
        return "a number"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "text"
    if pa.types.is_boolean(kind):
        return "true or false"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return "a list of " + _kind(kind.value_type) + "s"
    return str(kind)


@functools.cache
def _accepts(declared: pa.DataType, found: pa.DataType) -> bool:
    return _kind(declared) == _kind(found) or (_kind(declared) == "a number" and _kind(found) == "a whole number")


def _refuse(part: Path, name: str, found: str, expected: str) -> DatasetError:
    return DatasetError(f"{part}: column {name} {found}; expected {expected}")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_chunk(part: Path, metadata: pq.FileMetaData, table: pa.Table, seen: dict) -> None:
    """DatasetError (one line naming `part`, the column and what was expected) when a column of `table` (the
    chunk file's columns as read, text as dictionaries) breaks the schema: its type, its nulls, its range (from
    `metadata`'s row-group statistics where the file has them), its text's distinct values, or a group name
    that names another group type (group_key) than in the files checked before with the same `seen` (what they
    held: their group types, and the text values found good, not checked again)."""
    if "schema" not in seen or not table.schema.equals(seen["schema"]):  # a sweep's files share one: checked once
        declared = _declared()
        for field in table.schema:
            if field.name in declared and not _accepts(declared[field.name], field.type):
                raise _refuse(part, field.name, f"holds {_kind(field.type)} ({_value_type(field.type)})",
                              f"{_kind(declared[field.name])} ({declared[field.name]})")
        seen["schema"] = table.schema
    if not table.num_rows:
        return
    statistics = {name: index for index, name in enumerate(metadata.schema.names)}  # a list's leaf: "element"
    present = set(table.column_names)
    for name, rule in RULES.items():
        if name not in present:
            continue
        column = table[name]
        if column.null_count and not (rule.nulls or rule.nan):
            raise _refuse(part, name, f"has {column.null_count} missing value(s)", "a value in every row")
        if _kind(column.type) == "text":
            _check_text(part, name, column, rule, seen)
        else:
            _check_range(part, name, column, rule, metadata, statistics.get(name))
    if "group" in table.column_names and "group_key" in table.column_names:
        _check_group_types(part, table["group"], table["group_key"], seen)


def _check_group_types(part: Path, groups: pa.ChunkedArray, keys: pa.ChunkedArray, seen: dict) -> None:
    """Each group name one group type (group_key) and each group type one name, across the files `seen` holds
    (("group", name) -> ("group_key", key), file; and the reverse): the tables and figures tell group types apart
    by name. Each name's key is taken from one of its rows and compared with every row's, in numpy."""
    groups = groups.combine_chunks()
    groups = groups if pa.types.is_dictionary(groups.type) else pc.dictionary_encode(groups)
    names, indices, keys = groups.dictionary.to_pylist(), groups.indices.to_numpy(), keys.to_numpy()
    row_of = np.full(len(names), -1)
    row_of[indices] = np.arange(len(indices))  # a row of each name (whichever write numpy keeps)
    mixed = keys != keys[row_of[indices]]
    pairs = [(names[indices[row]], keys[row]) for row in np.flatnonzero(mixed)[:1]] + \
        [(names[index], keys[row]) for index, row in enumerate(row_of) if row >= 0]
    for name, key in pairs[::-1]:  # a name of two keys in this file: its first key, then the other
        key = int(key)
        for this, other in ((("group", name), ("group_key", key)), (("group_key", key), ("group", name))):
            first_seen, where = seen.setdefault(this, (other, part))
            if first_seen != other:
                raise _refuse(part, this[0], f"holds {_shown(this[1])} with {other[0]} {_shown(other[1])}",
                              f"one {this[0]} per {other[0]}, and {where} holds it with {_shown(first_seen[1])}")


def _check_range(part: Path, name: str, column: pa.ChunkedArray, rule: Rule, metadata: pq.FileMetaData,
                 index: int | None) -> None:
    """The column's least and greatest values (the row groups' statistics; computed where a row group has
    none, or NaN among them) within the rule's range, and no NaN unless the rule allows it."""
    bounds = [metadata.row_group(g).column(index).statistics for g in range(metadata.num_row_groups)] \
        if index is not None else [None]
    floating = pa.types.is_floating(column.type)
    if not rule.nan and floating and any(np.isnan(chunk.to_numpy(zero_copy_only=False)).any()
                                         for chunk in column.chunks):
        raise _refuse(part, name, "holds NaN", rule.describe())
    known = all(stats is not None and stats.has_min_max for stats in bounds)
    low, high = (min(stats.min for stats in bounds), max(stats.max for stats in bounds)) if known else (math.nan,) * 2
    if low != low or high != high:  # no statistics, or NaN among them
        found = pc.min_max(column)  # Arrow's leaves NaN out
        low, high = found["min"].as_py(), found["max"].as_py()
    for value in (low, high):
        if value is not None and value == value and not (rule.low - ROUNDING <= value <= rule.high + ROUNDING and
                                                         (not floating or math.isfinite(value))):
            raise _refuse(part, name, f"holds {value!r}", rule.describe())


def _check_text(part: Path, name: str, column: pa.ChunkedArray, rule: Rule, seen: dict) -> None:
    """Each distinct value of the column (its chunks' dictionaries) one of the rule's choices, or matching its
    pattern whole; of a small dictionary, only the values not found good in the files before (`seen`)."""
    values = [chunk.dictionary for chunk in column.chunks] if pa.types.is_dictionary(column.type) \
        else [pc.unique(column)]
    good_before = seen.setdefault(("text", name), set())
    for distinct in values:
        small = len(distinct) <= SMALL_DICTIONARY
        if small:
            new = set(distinct.to_pylist()) - good_before
            if not new:
                continue
            distinct = pa.array(sorted(new), pa.string())
        if rule.choices:
            good = pc.is_in(distinct, value_set=pa.array(rule.choices))
        else:
            good = pc.match_substring_regex(distinct, f"^(?:{rule.pattern})$")
        if not pc.all(good).as_py():
            bad = distinct.filter(pc.invert(good))[0].as_py()
            raise _refuse(part, name, f"holds {_shown(bad)}", rule.describe())
        if small:
            good_before.update(new)
