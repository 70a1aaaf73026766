"""A declared plug-in parameter (protocols and behaviours, built-in or user): its default, what it
means and what values it allows, so `--protocol-param`/`--behaviour-param` are checked before
any work starts."""
from __future__ import annotations

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
            raise ValueError(f"{self.name} must be a number in [{self.low}, {self.high}] (got {text!r})") from None
        if not self.low <= value <= self.high:
            raise ValueError(f"{self.name} must be a number in [{self.low}, {self.high}] (got {text!r})")
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
        return "|".join(self.choices) if self.choices else f"[{self.low}, {self.high}]"
