"""Heading search: the local searcher (paper 003 §5.2.1) that keeps its heading while it sees nothing, the
isolated baseline of issue 45 (item 4). A searcher needs no communication to gain from persistence: on a large
grid most windows are blind, where local search steps uniformly at random and so diffuses, while a searcher that
keeps going sweeps new ground. A protocol's gain is then worth its name only above this searcher's.

A built-in written on the public plug-in interface (`collective.simulation.plugins`), so it adds no compiled code:
it plays on the stepping core, alone, in a mix or with a protocol, and is checked by `collective.testing`.
"""
import numpy as np

STAY = 4  # the action 'stay' (spec §1: actions in row-major order of the 3x3 steps)


class HeadingSearch:
    """Local search, except that an agent whose window is blind repeats its last step.

    Choices, each one documented in docs/concepts.md:
    - not blind: exactly `local_search`, move for move: one step per axis toward the best cell of the window plus
      any protocol field, a uniform tie-break among equal cells in row-major order, one draw from the agent's own
      stream (`batch.streams`, the compiled searcher's streams);
    - an agent its protocol gives a target steps toward it, the shorter way round each axis, as local search does;
    - blind: every cell it chooses among (its window plus any protocol field) reads 0, all that an agent can know
      of "sees nothing" (local search then draws uniformly among the window's cells);
    - blind, it repeats the last action it took, whichever rule chose it (a step toward a target included);
    - blind at its first iteration, or when its last action was 'stay', it draws as local search does (there is
      no heading to keep);
    - it draws from its stream at every iteration exactly as local search does, kept heading or not, so its
      draws stay in step with a local searcher's on the same episode (a paired comparison with common draws);
    - it keeps nothing across episodes or batches (`reset` starts every agent with no heading).
    """

    name = "heading_search"
    description = "local search that repeats its last step while its window is blind (an isolated baseline)"
    protocols = ("*",)  # its agents take part in any protocol, as the local searcher's do

    def reset(self, batch):
        self.streams, self.rows, self.cols, self.view = batch.streams, batch.rows, batch.cols, batch.observation_range
        self.last = np.full((batch.episodes, batch.agents), STAY, np.int64)

    def act(self, obs):
        episodes, agents, side, _ = obs.window.shape
        values = (obs.window + obs.field).reshape(episodes, agents, side * side)
        ties = values == values.max(axis=2, keepdims=True)  # (E, A, S²)
        searching = obs.target < 0
        pick = self.streams.integers(ties.sum(axis=2), where=searching)  # (E, A): which tie, 0-based
        chosen = np.argmax(np.cumsum(ties, axis=2) > pick[..., None], axis=2)  # the pick-th tie's index
        local = (np.sign(chosen // side - self.view) + 1) * 3 + np.sign(chosen % side - self.view) + 1
        keeps = searching & ~values.any(axis=2) & (self.last != STAY)
        row, col = np.divmod(obs.cell, self.cols)
        target_row, target_col = np.divmod(obs.target, self.cols)
        toward = (axis_step(row, target_row, self.rows) + 1) * 3 + axis_step(col, target_col, self.cols) + 1
        self.last = np.where(searching, np.where(keeps, self.last, local), toward)
        return self.last


def axis_step(a, b, size):
    """-1, 0 or +1 per element: one step from a toward b the shorter way round; half-way goes +1."""
    forward = (b - a) % size
    return np.where(forward == 0, 0, np.where(2 * forward <= size, 1, -1))
