"""Plug-in classes registered by name (behaviours, protocols), in registration order."""
from __future__ import annotations

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
        """The class registered as `name`, or KeyError listing the allowed names."""
        try:
            return self._classes[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; allowed: {', '.join(self._classes)}") from None
