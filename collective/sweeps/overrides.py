"""KEY=VALUE overrides of a sweep spec's fields from the command line (`collective sweep SPEC episodes=2000
factors.grid=10x10,20x20`): applied to the spec's TOML before it is validated, so an override is checked like
the file's own keys and recorded in sweep.json as part of the spec (a different spec: its own sweep id)."""
from __future__ import annotations

import copy
import tomllib

EXAMPLE = "e.g. episodes=2000, factors.grid=10x10,20x20 or settings.q_alpha=0.2"


class OverrideError(ValueError):
    """A malformed override: `where` names it, `message` says what is expected (`load_spec` makes it a SpecError)."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


def _value(text: str) -> object:
    """A TOML value (2000, 0.2, true, ["a", "b"], "text"), else the text as a string (10x10, local_search)."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(source: dict, overrides: list[str] | tuple[str, ...]) -> dict:
    """A copy of the spec `source` with each KEY=VALUE set (KEY a dotted path into its tables). Where the spec
    holds a list (a factor's levels, the behaviours), a comma-separated VALUE is that list."""
    source = copy.deepcopy(source)
    for text in overrides:
        key, equals, raw = text.partition("=")
        parts = key.strip().split(".")
        if not equals or not all(part.strip() for part in parts):
            raise OverrideError(f"override {text!r}", f"expected KEY=VALUE, {EXAMPLE}")
        table = source
        for depth, part in enumerate(parts[:-1]):
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise OverrideError(f"override {text!r}", f"{'.'.join(parts[:depth + 1])} is a value, not a table")
        value = _value(raw.strip())
        if isinstance(table.get(parts[-1]), list) and not isinstance(value, list):
            value = [_value(item.strip()) for item in raw.split(",")]
        table[parts[-1]] = value
    return source
