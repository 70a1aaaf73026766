"""ConfigError and the checks every section's validation is made of: each refuses a value with one line naming
the field and what is allowed."""
from __future__ import annotations

import numpy as np


class ConfigError(ValueError):
    """An invalid setting: names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def require_int(config, name: str, minimum: int, what: str = "") -> int:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(name, f"must be an integer{what} (got {value!r})")
    if value < minimum:
        raise ConfigError(name, f"must be >= {minimum}{what} (got {value})")
    return int(value)


def require_choice(config, name: str, allowed) -> None:
    value = getattr(config, name)
    if value not in allowed:
        raise ConfigError(name, f"unknown value {value!r}; allowed: {', '.join(allowed)}")


def require_range(config, name: str, low: float, high: float, low_open: bool = False) -> None:
    value = getattr(config, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        (low < value if low_open else low <= value) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ConfigError(name, f"must be a number in {bracket}{low}, {high}] (got {value!r})")


def require_bool(config, name: str) -> None:
    if not isinstance(getattr(config, name), bool):
        raise ConfigError(name, f"must be true or false (got {getattr(config, name)!r})")


def refuse_repeated_keys(field: str, pairs) -> None:
    """ConfigError when (key, value) pairs give a key twice (the last would silently win)."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ConfigError(field, f"{key!r} is given twice; give each parameter once")
        seen.add(key)
