"""A local searcher with a short memory (paper 003 §5.2.1's local search, plus recall).

Each agent steps toward the best cell of its window plus any protocol field, like `local_search`;
when its window shows nothing better than 0 it heads back to the best positive cell it saw in the
last `memory` iterations (Good moves, so the memory fades). A protocol's target overrides both.
"""
import numpy as np

from collective import Parameter


def axis_step(a, b, size):
    """-1, 0 or +1 per element: one step from a toward b the shorter way round; half-way goes +1."""
    forward = (b - a) % size
    return np.where(forward == 0, 0, np.where(2 * forward <= size, 1, -1))


class MemorySearcher:
    """Local search that returns to the best cell seen recently when nothing good is in view."""

    parameters = (Parameter("memory", 5, "iterations a seen reward is remembered", low=0, high=1000),)
    protocols = ("*",)  # its agents join any protocol

    def __init__(self, memory):
        self.memory = memory

    def reset(self, batch):
        self.streams, self.rows, self.cols, self.view = batch.streams, batch.rows, batch.cols, batch.observation_range
        self.best_cell = np.full((batch.episodes, batch.agents), -1)  # (E, A) remembered cell, -1 for none
        self.best_value = np.zeros((batch.episodes, batch.agents))  # (E, A) its reward when seen
        self.seen_at = np.zeros((batch.episodes, batch.agents), np.int64)  # (E, A) when

    def act(self, obs):
        episodes, agents, side, _ = obs.window.shape
        values = (obs.window + obs.field).reshape(episodes, agents, side * side)
        best = values.max(axis=2)
        ties = values == best[..., None]
        pick = self.streams.integers(ties.sum(axis=2))  # one tie-break draw per agent, from its own stream
        chosen = np.argmax(np.cumsum(ties, axis=2) > pick[..., None], axis=2)
        row, col = np.divmod(obs.cell, self.cols)
        seen = (row + chosen // side - self.view) % self.rows * self.cols + (col + chosen % side - self.view) % self.cols
        forgotten = obs.t - self.seen_at > self.memory
        better = (best > 0) & ((best >= self.best_value) | forgotten)
        self.best_cell = np.where(better, seen, np.where(forgotten, -1, self.best_cell))
        self.best_value = np.where(better, best, np.where(forgotten, 0.0, self.best_value))
        self.seen_at = np.where(better, obs.t, self.seen_at)
        recall = (best <= 0) & (self.best_cell >= 0)
        goal = np.where(obs.target >= 0, obs.target, np.where(recall, self.best_cell, seen))
        goal_row, goal_col = np.divmod(goal, self.cols)
        return (axis_step(row, goal_row, self.rows) + 1) * 3 + axis_step(col, goal_col, self.cols) + 1
