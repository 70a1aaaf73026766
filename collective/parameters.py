"""A declared plug-in parameter (protocols and behaviours, built-in or user): its default, what it
means and what values it allows, so `--protocol-param`/`--behaviour-param` are checked before
any work starts."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    """One parameter: a number in [low, high], or one of `choices`."""

    name: str
    default: object
    description: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def parse(self, text: str) -> float:
        """The compiled kernel's value of `text` (a choice becomes its index), or ValueError naming
        what is allowed."""
        if self.choices:
            if text not in self.choices:
                raise ValueError(f"{self.name} must be one of {', '.join(self.choices)} (got {text!r})")
            return float(self.choices.index(text))
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low = -math.inf if self.low is None else self.low  # a bound left out: no limit on that side
        high = math.inf if self.high is None else self.high
        if not low <= value <= high or not math.isfinite(value):
            raise ValueError(f"{self.name} must be a number in {self.allowed} (got {text!r})")
        return value

    def typed(self, text: str) -> str | int | float:
        """The Python value a plug-in's constructor receives: the choice itself, or the number
        (an int when the default is an int)."""
        value = self.parse(text)
        if self.choices:
            return text
        return int(value) if isinstance(self.default, int) and value == int(value) else value

    @property
    def allowed(self) -> str:
        if self.choices:
            return "|".join(self.choices)
        return f"[{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}]"
