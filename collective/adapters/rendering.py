"""What the adapters show of a batch: the full state as arrays (`grid_state`), and one episode drawn
as text (`ansi_frame`, shown on the terminal under render_mode "human": `show_frame`) or as an RGB image
(`rgb_frame`) with the grid, ⊕, ⊖ and the agents."""
from __future__ import annotations

import sys
import time

import numpy as np

from collective.simulation.stepping import SteppingCore, observe_windows

# Channels of `grid_state`, in order.
STATE_CHANNELS = ("reward", "good", "evil", "focal_agents", "background_agents")
CELL_PIXELS = 12  # an rgb frame draws each cell as a CELL_PIXELS x CELL_PIXELS block
RING = 2  # pixels of the ⊕ / ⊖ ring at a cell's edge
GOOD_RGB, EVIL_RGB = (0, 170, 0), (200, 0, 0)
FOCAL_RGB, BACKGROUND_RGB = (0, 90, 220), (240, 150, 0)
RENDER_FPS = 4  # render_mode "human": frames a second on a terminal (metadata["render_fps"])


def grid_state(core: SteppingCore, focal: int) -> np.ndarray:
    """(E, 5, rows, cols) float32, channels STATE_CHANNELS: R of every cell at the current iteration
    (spec §1), 1 at ⊕'s cell (a landscape's global optimum), 1 at ⊖'s cell, and how many focal agents
    (the caller's, agents 0..focal-1) and background agents stand on each cell."""
    episodes, n = core.episodes, core.rows * core.cols
    rewards = np.empty((episodes, n, 1, 1))
    observe_windows(core.good, core.evil, core.landscapes, core.t, np.tile(np.arange(n, dtype=np.int64), (episodes, 1)),
                    core.rows, core.cols, 0, core.radius, False, rewards)
    state = np.zeros((episodes, len(STATE_CHANNELS), n), np.float32)
    state[:, 0] = rewards[:, :, 0, 0]
    lanes = np.arange(episodes)
    state[lanes, 1, core.good[:, core.t]] = 1
    state[lanes, 2, core.evil[:, core.t]] = 1
    for channel, cells in ((3, core.cells[:, :focal]), (4, core.cells[:, focal:])):
        np.add.at(state, (lanes[:, None], channel, cells), 1)
    return state.reshape(episodes, len(STATE_CHANNELS), core.rows, core.cols)


def ansi_frame(state: np.ndarray, t: int) -> str:
    """One episode's state (5, rows, cols) as text: 'A' a cell with a focal agent, 'b' one with only
    background agents, '⊕' and '⊖' their cells, '.' any other; a header gives t and ⊕, ⊖ as (row, col)."""
    good, evil = (tuple(int(x) for x in np.argwhere(state[c])[0]) for c in (1, 2))
    grid = np.full(state.shape[1:], ".", dtype="<U1")
    grid[state[2] > 0] = "⊖"
    grid[state[1] > 0] = "⊕"
    grid[state[4] > 0] = "b"
    grid[state[3] > 0] = "A"
    return f"t={t} ⊕={good} ⊖={evil}\n" + "\n".join("".join(row) for row in grid) + "\n"


def rgb_frame(state: np.ndarray) -> np.ndarray:
    """One episode's state (5, rows, cols) as (rows·CELL_PIXELS, cols·CELL_PIXELS, 3) uint8: each cell
    grey by R (black -1, white +1), ringed green at ⊕ and red at ⊖, with a square in its middle for
    agents (blue focal, orange background only)."""
    rows, cols = state.shape[1:]
    grey = np.round((np.clip(state[0], -1, 1) + 1) * 127.5).astype(np.uint8)
    cell = np.repeat(grey[..., None], 3, axis=2)  # (rows, cols, 3)
    image = np.repeat(np.repeat(cell, CELL_PIXELS, axis=0), CELL_PIXELS, axis=1)
    blocks = image.reshape(rows, CELL_PIXELS, cols, CELL_PIXELS, 3)
    ring = np.ones((CELL_PIXELS, CELL_PIXELS), bool)
    ring[RING:-RING, RING:-RING] = False
    middle = np.zeros((CELL_PIXELS, CELL_PIXELS), bool)
    middle[CELL_PIXELS // 3:-(CELL_PIXELS // 3), CELL_PIXELS // 3:-(CELL_PIXELS // 3)] = True
    for channel, mask, colour in ((2, ring, EVIL_RGB), (1, ring, GOOD_RGB), (4, middle, BACKGROUND_RGB),
                                  (3, middle, FOCAL_RGB)):
        for r, c in np.argwhere(state[channel] > 0):
            blocks[r, :, c][mask] = colour
    return image


def show_frame(state: np.ndarray, t: int) -> None:
    """render_mode "human": one episode's state drawn as text (`ansi_frame`) on stdout; on a terminal over the
    previous frame, RENDER_FPS frames a second, else one frame after another (a log, a notebook)."""
    frame = ansi_frame(state, t)
    if sys.stdout.isatty():
        sys.stdout.write("\x1b[H\x1b[2J" + frame)
        sys.stdout.flush()
        time.sleep(1 / RENDER_FPS)
    else:
        sys.stdout.write(frame + "\n")
