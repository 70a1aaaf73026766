"""Plug-in classes registered by name (behaviours, protocols), in registration order."""
from __future__ import annotations

import difflib
from typing import Generic, TypeVar

PlugIn = TypeVar("PlugIn")


class Registry(Generic[PlugIn]):
    """Classes of one kind, keyed by their `name` attribute."""

    def __init__(self, kind: str):
        self.kind = kind
        self._classes: dict[str, type[PlugIn]] = {}

    def register(self, cls: type[PlugIn]) -> type[PlugIn]:
        """Class decorator; a name may be registered once."""
        if cls.name in self._classes:
            raise ValueError(f"{self.kind} {cls.name!r} registered twice")
        self._classes[cls.name] = cls
        return cls

    def names(self) -> tuple[str, ...]:
        return tuple(self._classes)

    def get(self, name: str) -> type[PlugIn]:
        """The class registered as `name`, or KeyError naming the closest name to a mistyped one (difflib's ratio at
        least 0.6) and listing the allowed names."""
        try:
            return self._classes[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), list(self._classes), n=1)
            guess = f" (did you mean {close[0]}?)" if close else ""
            raise KeyError(f"unknown {self.kind} {name!r}{guess}; allowed: {', '.join(self._classes)}") from None
