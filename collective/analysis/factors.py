"""The factors a table is read by (`--by`): column names or aliases (k: K binned, H, G), K's bins, the grid
added to every grouping (one H per Υ), and the strata within which group types are compared.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from collective.analysis.base import DatasetError

GROUP_COLUMNS = ("group", "group_key", "behaviour", "mix", "protocol", "protocol_params")  # name a group type
K_BIN = "k_bin"  # derived column: K (raw LZ76 phrases) in bins of `k_bin_width`
K_MID = "k_mid"  # the bin's midpoint, for plotting
FACTOR_ALIASES = {"k": K_BIN, "K": K_BIN, "h": "entropy_bits", "H": "entropy_bits", "G": "group_size"}
DEFAULT_BY = ("group", "grid", "group_size")
MEASURED_COLUMNS = ("score",)  # what the tables measure, never a factor


def add_k_bins(rows: pd.DataFrame, width: int, midpoints: bool = False) -> pd.DataFrame:
    """`rows` with K binned: bins [1, w], [w+1, 2w], ... labelled "1-4" (or "7" when w = 1), and with each bin's
    midpoint (`K_MID`, for plotting) when `midpoints`."""
    if width < 1:
        raise DatasetError(f"argument --k-bin-width: must be >= 1 (got {width})")
    index = (rows["k_raw"].to_numpy() - 1) // width
    low, high = 1 + index * width, (index + 1) * width
    bins = np.unique(low)
    order = [str(a) if width == 1 else f"{a}-{a + width - 1}" for a in bins]
    rows = rows.assign(**{K_BIN: pd.Categorical.from_codes(np.searchsorted(bins, low), categories=order, ordered=True)})
    return rows.assign(**{K_MID: (low + high) / 2}) if midpoints else rows


def resolve_factors(rows: pd.DataFrame, names: list[str], on_disk: list[str] = ()) -> list[str]:
    """Column names for factor names or aliases (k -> binned K, H -> entropy_bits, G -> group_size); `on_disk`
    names every column of the dataset (`Dataset.columns`), of which `rows` may hold a part."""
    columns = []
    for name in names:
        column = FACTOR_ALIASES.get(name, name)
        if column in MEASURED_COLUMNS:
            raise DatasetError(f"argument --by: {name!r} is what the tables measure, not a factor")
        if column not in rows.columns and column in on_disk:
            raise DatasetError(f"argument --by: {name!r} was not loaded (pass it as a factor to load_dataset)")
        if column not in rows.columns:
            known = dict.fromkeys([*rows.columns, *on_disk])
            allowed = ", ".join(list(FACTOR_ALIASES) + [c for c in known if c not in (K_MID,)])
            raise DatasetError(f"argument --by: {name!r} is not a column of the dataset; allowed: {allowed}")
        if column not in columns:
            columns.append(column)
    return columns


def with_grid(by: list[str]) -> list[str]:
    """`by` with the grid appended when missing: Υ is defined for one H (paper 003 Definition 3), so no table
    pools grids."""
    return by if "grid" in by else [*by, "grid"]


def strata_of(by: list[str]) -> list[str]:
    """The factors of `by` that describe environments or cells, not group types: paired comparisons
    are made within each of their levels."""
    return [column for column in by if column not in GROUP_COLUMNS]
