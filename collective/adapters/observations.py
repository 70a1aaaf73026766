"""What the adapters hand an RL agent, computed from what the plug-in seam hands a behaviour: one function
both use, so a policy trained on the adapters and then scored as a plug-in behaviour
(`examples/sb3_policy`) sees, step for step, the observations it was trained on.

Alone (no protocol) an agent observes R over its (2k+1)² window, row by row, own cell in the middle (spec §1);
so does a model trained so when it is scored under a protocol (it never saw a field; its teammates hear it).
Under a protocol it observes the window plus the protocol's additive field, then three numbers: 1 if the
protocol gave it a target cell (else 0), and the target's row and column offsets the shorter way round the
torus (0 without a target).
"""
from __future__ import annotations

import numpy as np

from collective.simulation.plugins import Observation

TARGET_FEATURES = 3  # under a protocol: whether a target was given, and its row and column offsets


def torus_offset(a: np.ndarray, b: np.ndarray, size: int) -> np.ndarray:
    """From a to b along a torus axis of `size` cells, the shorter way round (half-way: forward)."""
    forward = (b - a) % size
    return np.where(2 * forward <= size, forward, forward - size)


def observation_size(observation_range: int, hears: bool) -> int:
    """D, the length of one agent's observation: (2k+1)², plus TARGET_FEATURES under a protocol."""
    return (2 * observation_range + 1) ** 2 + (TARGET_FEATURES if hears else 0)


def agent_observations(obs: Observation, rows: int, cols: int, hears: bool) -> np.ndarray:
    """(E, A, D) float32, a fresh array: each agent's observation (see the module's docstring) from the seam's
    `obs` (arrays (E, A, ...)); `hears`: whether the agents are under a protocol (D = (2k+1)² + 3)."""
    episodes, agents = obs.cell.shape
    if not hears:  # the plain window: an agent trained alone never saw a field
        return obs.window.reshape(episodes, agents, -1).astype(np.float32)
    seen = (obs.window + obs.field).reshape(episodes, agents, -1)  # (E, A, S²)
    told = obs.target >= 0  # (E, A)
    d_row = np.where(told, torus_offset(obs.cell // cols, obs.target // cols, rows), 0)
    d_col = np.where(told, torus_offset(obs.cell % cols, obs.target % cols, cols), 0)
    return np.concatenate([seen, np.stack([told, d_row, d_col], axis=2)], axis=2).astype(np.float32)
