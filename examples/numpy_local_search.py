"""Local search (paper 003 §5.2.1) as a NumPy plug-in: the built-in `local_search`, written against
the public plug-in interface (`collective.simulation.plugins`).

Each agent steps toward the best cell of its window plus any protocol field (one step per axis),
breaking ties uniformly among equal cells in row-major order with one draw from its own stream;
an agent its protocol gives a target steps toward that cell instead, the shorter way round each
axis, exactly half-way going forward (paper 003 §5.2). It draws from `batch.streams`, the streams the
compiled built-in draws from, so it reproduces `local_search` move for move (tested).
"""
import numpy as np


class LocalSearch:
    """Step toward the best observed cell, uniform tie-break; follow a protocol's target."""

    protocols = ("*",)  # its agents take part in any protocol, as the built-in local searcher does

    def reset(self, batch):
        self.streams, self.rows, self.cols, self.view = batch.streams, batch.rows, batch.cols, batch.observation_range

    def act(self, obs):
        episodes, agents, side, _ = obs.window.shape
        values = (obs.window + obs.field).reshape(episodes, agents, side * side)
        ties = values == values.max(axis=2, keepdims=True)  # (E, A, S²)
        searching = obs.target < 0
        pick = self.streams.integers(ties.sum(axis=2), where=searching)  # (E, A): which tie, 0-based
        chosen = np.argmax(np.cumsum(ties, axis=2) > pick[..., None], axis=2)  # the pick-th tie's index
        local = (np.sign(chosen // side - self.view) + 1) * 3 + np.sign(chosen % side - self.view) + 1
        row, col = np.divmod(obs.cell, self.cols)
        target_row, target_col = np.divmod(obs.target, self.cols)
        toward = (axis_step(row, target_row, self.rows) + 1) * 3 + axis_step(col, target_col, self.cols) + 1
        return np.where(searching, local, toward)


def axis_step(a, b, size):
    """-1, 0 or +1 per element: one step from a toward b the shorter way round; half-way goes +1."""
    forward = (b - a) % size
    return np.where(forward == 0, 0, np.where(2 * forward <= size, 1, -1))
