"""Checks shared by the one-episode and the batched adapters' tests: what a rendered frame must show given the
episode's state (channels R, ⊕, ⊖, focal agents, background agents; collective.adapters), and where a local
searcher told a target steps."""
import numpy as np

from collective.adapters.rendering import CELL_PIXELS, FOCAL_RGB, GOOD_RGB, RING


def assert_frames_show_the_state(state: np.ndarray, image: np.ndarray, text: str, t: int, side: int) -> None:
    """The RGB frame has ⊕'s ring at ⊕ and a focal square at each focal agent's cell; the ANSI frame's header
    names t, ⊕ and ⊖, its `A`s stand exactly at the focal agents' cells, its `b`s at the cells of background
    agents only, and ⊕ shows where no agent stands on it."""
    [good], [evil] = np.argwhere(state[1] > 0), np.argwhere(state[2] > 0)
    assert image.shape == (side * CELL_PIXELS, side * CELL_PIXELS, 3) and image.dtype == np.uint8
    assert tuple(image[good[0] * CELL_PIXELS, good[1] * CELL_PIXELS + RING]) == GOOD_RGB
    middle = CELL_PIXELS // 2
    for r, c in np.argwhere(state[3] > 0):
        assert tuple(image[r * CELL_PIXELS + middle, c * CELL_PIXELS + middle]) == FOCAL_RGB
    header, *grid = text.splitlines()
    assert header == f"t={t} ⊕=({good[0]}, {good[1]}) ⊖=({evil[0]}, {evil[1]})" and len(grid) == side
    assert [(r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == "A"] == \
        [tuple(x) for x in np.argwhere(state[3] > 0)]
    assert [(r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == "b"] == \
        [tuple(x) for x in np.argwhere((state[4] > 0) & (state[3] == 0))]
    if state[3:, good[0], good[1]].sum() == 0:  # no agent on ⊕'s cell
        assert grid[good[0]][good[1]] == "⊕"


def stepped_toward(cell: int, target: int, rows: int, cols: int) -> int:
    """One king step from cell toward target, the shorter way round each axis (spec §5; half-way: forward)."""
    def step(a, b, size):
        forward = (b - a) % size
        return 0 if forward == 0 else (1 if 2 * forward <= size else -1)

    (r, c), (tr, tc) = divmod(cell, cols), divmod(target, cols)
    return (r + step(r, tr, rows)) % rows * cols + (c + step(c, tc, cols)) % cols
