"""Gossip: each member hears one other member, drawn at random each iteration, and heads for the
best cell that member sees when it beats what the listener sees by `margin` (paper 003 §5.2's broadcast
with one message per member instead of m(m-1))."""
import math

import numpy as np

from collective import Messages, Parameter


class Gossip:
    """Everyone hears one random peer's best cell and follows it when it is clearly better."""

    parameters = (Parameter("margin", 0.0, "how much better the heard cell must pay", low=0.0, high=2.0),)
    minimum_members = 2

    def __init__(self, margin):
        self.margin = margin

    def reset(self, batch):
        self.streams, self.rows, self.cols, self.view = batch.streams, batch.rows, batch.cols, batch.observation_range

    def communicate(self, obs):
        episodes, members, side, _ = obs.window.shape
        flat = obs.window.reshape(episodes, members, side * side)
        best, value = flat.argmax(axis=2), flat.max(axis=2)  # (E, M)
        row, col = np.divmod(obs.cell, self.cols)
        cell = (row + best // side - self.view) % self.rows * self.cols + (col + best % side - self.view) % self.cols
        peer = (np.arange(members) + 1 + self.streams.integers(members - 1)) % members  # anyone but oneself
        heard_value = np.take_along_axis(value, peer, axis=1)
        follow = heard_value > value + self.margin
        target = np.where(follow, np.take_along_axis(cell, peer, axis=1), -1)
        bits = episodes * members * (64 + math.ceil(math.log2(self.rows * self.cols)))
        return Messages(target=target, messages=float(episodes * members), bits=float(bits))
