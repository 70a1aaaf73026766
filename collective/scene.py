"""What every cell pays at one iteration: the reward function the kernels and protocols observe.

A `Scene` is either a Λ* moment, where R(c) = f(d(c, ⊕)) - f(d(c, ⊖)) (paper 003 §4.1.2), or a
fitness-landscape moment, where R(c) is the episode's base field read at c shifted back by the
field's displacement so far (paper 003 §6.2; see `collective.landscapes`). Scenes are built per
iteration inside the kernel; an empty `landscape` array marks a Λ* scene.
"""
from __future__ import annotations

from collections import namedtuple

from numba import njit

from collective.torus import chebyshev, proximity, wrap

# good/evil: ⊕ and ⊖ cells (row, column); landscape (cells,) base field or empty; shift: the
# landscape's displacement (rows, columns) since the episode began.
Scene = namedtuple("Scene", "good_r good_c evil_r evil_c landscape shift_r shift_c rows cols radius")


@njit(cache=True, inline="always")
def is_landscape(scene):
    return scene.landscape.shape[0] > 0


@njit(cache=True, inline="always")
def scene_reward(scene, r, c):
    """R of the cell at (r, c) in this scene."""
    if is_landscape(scene):
        return scene.landscape[wrap(r - scene.shift_r, scene.rows) * scene.cols + wrap(c - scene.shift_c, scene.cols)]
    rows, cols, radius = scene.rows, scene.cols, scene.radius
    return (proximity(chebyshev(r, c, scene.good_r, scene.good_c, rows, cols), radius)
            - proximity(chebyshev(r, c, scene.evil_r, scene.evil_c, rows, cols), radius))


@njit(cache=True, inline="always")
def scene_blind(scene, r, c, view):
    """True when every cell of the range-`view` window around (r, c) pays exactly 0: in Λ*, when
    both objects are beyond view + radius (triangle inequality); a landscape is never blank."""
    if is_landscape(scene):
        return False
    reach = view + scene.radius
    return (chebyshev(r, c, scene.good_r, scene.good_c, scene.rows, scene.cols) > reach
            and chebyshev(r, c, scene.evil_r, scene.evil_c, scene.rows, scene.cols) > reach)
