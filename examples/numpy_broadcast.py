"""Broadcast (paper 003 §5.2) as a NumPy plug-in: the built-in `broadcast`, written against the public
plug-in interface (`collective.simulation.plugins`).

Every member sends its whole window to every other member; each member then heads for the best
cell anyone reported, ties broken uniformly among the reported cells in cell order with one draw
from the member's own stream. Traffic per episode and iteration: m(m-1) messages of (2k+1)²
64-bit rewards plus the sender's cell. It reproduces `broadcast` draw for draw (tested).
"""
import math

import numpy as np

from collective import Messages


class Broadcast:
    """Everyone hears every observation and heads for the best cell reported."""

    members = None  # every agent of the group takes part

    def reset(self, batch):
        self.streams, self.rows, self.cols, view = batch.streams, batch.rows, batch.cols, batch.observation_range
        offsets = np.arange(-view, view + 1)
        self.row_offsets, self.col_offsets = offsets[:, None], offsets[None, :]  # (S, 1), (1, S)

    def communicate(self, obs):
        episodes, members, side, _ = obs.window.shape
        row, col = np.divmod(obs.cell[..., None, None], self.cols)  # (E, M, 1, 1)
        cells = (row + self.row_offsets) % self.rows * self.cols + (col + self.col_offsets) % self.cols
        reported = np.full((episodes, self.rows * self.cols), -np.inf)  # (E, N)
        reported[np.arange(episodes)[:, None, None, None], cells] = obs.window
        candidates = reported == reported.max(axis=1, keepdims=True)  # (E, N)
        counts = candidates.sum(axis=1)  # (E,)
        pick = self.streams.integers(np.repeat(counts[:, None], members, axis=1))  # (E, M)
        listed = np.flatnonzero(candidates) % candidates.shape[1]  # the candidate cells, episode by episode
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))  # (E,) where each episode's list starts
        target = listed[first[:, None] + pick]
        pairs = episodes * members * (members - 1)
        cell_bits = math.ceil(math.log2(self.rows * self.cols))
        return Messages(target=target, messages=float(pairs), bits=float(pairs * (side * side * 64 + cell_bits)))
