"""Plug-ins that cheat the count (issue 24 point 4), for tests/test_plugin_integrity.py: each passed the
conformance kit before the kit checked integrity."""
import numpy as np

from collective import Messages


class SteersThroughWindow:
    """A protocol that says nothing (0 messages, 0 bits) but writes into its members' windows in place:
    every member then sees, at its own cell, the best reward any member sees."""

    def communicate(self, obs):
        side = obs.window.shape[-1]
        best = obs.window.max(axis=(1, 2, 3))  # (E,)
        obs.window[:, :, side // 2, side // 2] = best[:, None]
        return Messages()


def _toward_best_of_group(obs) -> np.ndarray:
    """(E, A) actions: every agent takes the step that leads the agent seeing the group's best cell to it."""
    episodes, agents, side, _ = obs.window.shape
    values = obs.window.reshape(episodes, agents * side * side)
    best = values.argmax(axis=1) % (side * side)  # (E,) the best cell's index in its agent's window
    view = side // 2
    action = (np.sign(best // side - view) + 1) * 3 + np.sign(best % side - view) + 1
    return np.repeat(action[:, None], agents, axis=1).astype(np.int64)


class CentralCoordinator:
    """A behaviour that moves all its agents as one, toward the best cell any of them sees, while the
    group is labelled protocol none."""

    def act(self, obs):
        return _toward_best_of_group(obs)


class DeclaredCentralCoordinator:
    """The same coordinator, declaring that its agents act on each other's observations."""

    centralised = True

    def act(self, obs):
        return _toward_best_of_group(obs)
