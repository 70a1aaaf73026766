"""What every cell pays at one iteration: the reward function the kernels and protocols observe.

A `Scene` is either a Λ* moment, where R(c) = f(d(c, ⊕)) - f(d(c, ⊖)) (paper 003 §4.1.2), or a
fitness-landscape moment, where R(c) is the episode's base field read at c shifted back by the
field's displacement so far (paper 003 §6.2; see `collective.environments.landscapes`). Scenes are built per
iteration inside the kernel.

A scene refers to its landscape's base field by address (`FieldRef`), not as an array: one scene type
for Λ* (no field, 0 cells) and landscapes, so every compiled function is compiled once rather than once
per environment class (issue 23), and a scene holds numbers only, so passing it to a called function
counts no array references (an array in the scene made the Λ* kernel 30-50% slower, A/B). The field's
array must outlive its scenes: the kernels build scenes from the arrays they were given.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import errors, njit, types
from numba.extending import intrinsic, overload

from collective.environments.torus import axis_distance, branchless_proximity, chebyshev, proximity, wrap

# good/evil: ⊕ and ⊖ cells (row, column); landscape: the base field (a FieldRef); shift: the
# landscape's displacement (rows, columns) since the episode began.
Scene = namedtuple("Scene", "good_r good_c evil_r evil_c landscape shift_r shift_c rows cols radius")
# A float64 field of `cells` values at memory `address` (its first value); cells 0 for Λ* (no field).
FieldRef = namedtuple("FieldRef", "address cells")

# A Λ* scene whose radius is RESET_RADIUS is the 2016 program's field with ⊕ and ⊖ both reset onto
# its first cell (`cpp_first_observation`): Environment::updateCellRewards writes +0.5 then -0.5 on
# the objects' shared cell, then adds +0.5 and -0.5 over their one neighbourhood, which leaves
# RESET_CELL_VALUE on cell 0 and 0 everywhere else (LambdaStar src/Environment.cpp, main.cpp).
RESET_RADIUS = -1
RESET_CELL_VALUE = -0.5

# What one listener of the sham-communication control hears (issue 22 point 2): the protocol's rule run
# with the listener (an agent index) in its own scene `own` and every other member in the shadow
# episode's scene `others` (`collective.simulation.stepping.play_overhearing`). Protocol rules read each
# member's scene with `member_scene`, so a plain Scene is every member's scene. What the other members
# observe and choose in the shadow is the same for every listener of an episode, so it is worked out once
# per episode and read here (`collective.protocols.kernel_support.member_observe`, `member_best`):
# bounds (A, 2) the (lowest, highest) reward of each member's window (its rewards in the rule's `observed`
# scratch), offsets (A, 2) int64, rewards (A,) and streams (A,) uint64 each member's `searched_best`.
Overheard = namedtuple("Overheard", "rows cols listener own others bounds offsets rewards streams")


def is_overheard(scene) -> bool:
    """Whether a compiled function's `scene` argument is typed as an `Overheard` (for overloads)."""
    return isinstance(scene, types.BaseNamedTuple) and scene.instance_class is Overheard


@njit(cache=True, inline="always")
def reset_scene(landscape, rows, cols):
    """The 2016 program's field at the first scored observation (see RESET_RADIUS)."""
    return Scene(0, 0, 0, 0, landscape, 0, 0, rows, cols, RESET_RADIUS)


@njit(cache=True, inline="always")
def is_reset(scene):
    return scene.radius < 0


def is_field_array(field) -> None:
    """Refuses, when its caller compiles, an array a FieldRef would misread: a FieldRef reads 8-byte
    values one after another from the first, so a field is a 1-D C-contiguous float64 array."""


@overload(is_field_array)
def _is_field_array_compiled(field):
    if not (isinstance(field, types.Array) and field.ndim == 1 and field.dtype == types.float64
            and field.layout == "C"):
        raise errors.TypingError(f"field_ref: a field is a 1-D C-contiguous float64 array, got {field}")
    return lambda field: None


@njit(cache=True, inline="always")
def field_ref(field):
    """A FieldRef to a field (`is_field_array`), (0,) for Λ*. The array must outlive the FieldRef:
    the kernels take it from the arrays they were given."""
    is_field_array(field)
    return FieldRef(field.ctypes.data, field.shape[0])


@intrinsic
def _load_float64(typingctx, address, index):
    """The float64 at memory address + 8·index, unchecked: callers read cells of the field's own grid."""
    if not isinstance(address, types.Integer) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(context.cast(builder, args[0], signature.args[0], types.uintp),
                                   ir.DoubleType().as_pointer())
        offset = context.cast(builder, args[1], signature.args[1], types.intp)
        return builder.load(builder.gep(pointer, [offset]))
    return types.float64(address, index), codegen


@njit(cache=True, inline="always")
def field_value(landscape, index):
    """Value `index` of the field a FieldRef refers to."""
    return _load_float64(landscape.address, index)


@njit(cache=True, inline="always")
def has_field(landscape):
    """Whether a FieldRef refers to a landscape's field rather than Λ*'s none."""
    return landscape.cells > 0


def member_scene(scene, member):
    """The scene member `member` sees: `scene` itself, or in an `Overheard` the listener's own scene
    for the listener and the shadow's for every other member."""
    if isinstance(scene, Overheard):
        return scene.own if member == scene.listener else scene.others
    return scene


@overload(member_scene)
def _member_scene_compiled(scene, member):
    if is_overheard(scene):
        def overheard(scene, member):
            if member == scene.listener:
                return scene.own
            return scene.others
        return overheard
    return lambda scene, member: scene


def shadow_worked_out(scene, member):
    """Whether member `member`'s window and choice were worked out before its rule ran: never in a `Scene`; in an
    `Overheard`, every member's but the listener's (its shadow ones, once for the episode: `shadow_bounds`,
    `shadow_choice`)."""
    return isinstance(scene, Overheard) and member != scene.listener


@overload(shadow_worked_out)
def _shadow_worked_out_compiled(scene, member):
    if is_overheard(scene):
        return lambda scene, member: member != scene.listener
    return lambda scene, member: False


def shadow_bounds(scene, member):
    """A member's shadow window's (lowest, highest) reward in an `Overheard` (`shadow_worked_out`); never read
    in a `Scene`, where it is (0.0, 0.0)."""
    if isinstance(scene, Overheard):
        return scene.bounds[member, 0], scene.bounds[member, 1]
    return 0.0, 0.0


@overload(shadow_bounds)
def _shadow_bounds_compiled(scene, member):
    if is_overheard(scene):
        return lambda scene, member: (scene.bounds[member, 0], scene.bounds[member, 1])
    return lambda scene, member: (0.0, 0.0)


def shadow_choice(scene, member):
    """A member's shadow choice in an `Overheard` (`shadow_worked_out`), as `searched_best` returns it: (its
    stream after the choice, row offset, column offset, reward); never read in a `Scene`."""
    if isinstance(scene, Overheard):
        return (scene.streams[member], int(scene.offsets[member, 0]), int(scene.offsets[member, 1]),
                scene.rewards[member])
    return np.uint64(0), 0, 0, 0.0


@overload(shadow_choice)
def _shadow_choice_compiled(scene, member):
    if is_overheard(scene):
        return lambda scene, member: (scene.streams[member], scene.offsets[member, 0], scene.offsets[member, 1],
                                      scene.rewards[member])
    return lambda scene, member: (np.uint64(0), np.int64(0), np.int64(0), 0.0)


def target_read(scene, member):
    """Whether the target a protocol's rule gives member `member` is read: always in a `Scene`; in an `Overheard`
    only the listener's (the sham keeps no other member's target, draw or log), so a rule may skip the rest of
    another member's part there."""
    return not isinstance(scene, Overheard) or member == scene.listener


@overload(target_read)
def _target_read_compiled(scene, member):
    if is_overheard(scene):
        return lambda scene, member: member == scene.listener
    return lambda scene, member: True


@njit(cache=True, inline="always")
def is_landscape(scene):
    return has_field(scene.landscape)


@njit(cache=True, inline="always")
def scene_reward(scene, r, c):
    """R of the cell at (r, c) in this scene."""
    if is_landscape(scene):
        return field_value(scene.landscape,
                           wrap(r - scene.shift_r, scene.rows) * scene.cols + wrap(c - scene.shift_c, scene.cols))
    rows, cols, radius = scene.rows, scene.cols, scene.radius
    if radius < 0:  # the 2016 reset field (RESET_RADIUS)
        return RESET_CELL_VALUE if r == 0 and c == 0 else 0.0
    return (proximity(chebyshev(r, c, scene.good_r, scene.good_c, rows, cols), radius)
            - proximity(chebyshev(r, c, scene.evil_r, scene.evil_c, rows, cols), radius))


@njit(cache=True, inline="always")
def scene_blind(scene, r, c, view):
    """True when every cell of the range-`view` window around (r, c) pays exactly 0: in Λ*, when
    both objects are beyond view + radius (triangle inequality); a landscape is never blank."""
    if is_landscape(scene) or is_reset(scene):
        return False
    reach = view + scene.radius
    return (chebyshev(r, c, scene.good_r, scene.good_c, scene.rows, scene.cols) > reach
            and chebyshev(r, c, scene.evil_r, scene.evil_c, scene.rows, scene.cols) > reach)


@njit(cache=True, inline="always")
def window_reach(scene, r, c, view):
    """Which objects of a Λ* scene can pay a cell of the range-`view` window around (r, c): (⊕ can,
    ⊖ can). An object beyond view + radius pays 0 to every cell of the window (triangle inequality,
    as in `scene_blind`: both False there). Meaningless for a landscape or the reset field."""
    reach = view + scene.radius
    return (chebyshev(r, c, scene.good_r, scene.good_c, scene.rows, scene.cols) <= reach,
            chebyshev(r, c, scene.evil_r, scene.evil_c, scene.rows, scene.cols) <= reach)


@njit(cache=True, inline="always")
def window_reward(scene, r, c, good_reaches, evil_reaches):
    """`scene_reward` of the cell at (r, c) of a window whose objects reach it as `window_reach` says,
    to the bit: an object that cannot pay contributes the 0.0 `proximity` would give, unread (half the
    work when one object is near, the usual case)."""
    if is_landscape(scene) or is_reset(scene):
        return scene_reward(scene, r, c)
    rows, cols, radius = scene.rows, scene.cols, scene.radius
    paid = 0.0
    lost = 0.0
    if good_reaches:
        paid = proximity(chebyshev(r, c, scene.good_r, scene.good_c, rows, cols), radius)
    if evil_reaches:
        lost = proximity(chebyshev(r, c, scene.evil_r, scene.evil_c, rows, cols), radius)
    return paid - lost


@njit(cache=True, inline="always")
def _axis_proximities(x, target, size, radius):
    """`branchless_proximity` of the axis distances from x - 1, x and x + 1 (on the ring) to `target`: one
    object's view of a 3x3 window's rows, or of its columns."""
    return (branchless_proximity(axis_distance(wrap(x - 1, size), target, size), radius),
            branchless_proximity(axis_distance(x, target, size), radius),
            branchless_proximity(axis_distance(wrap(x + 1, size), target, size), radius))


@njit(cache=True, inline="always")
def moore_rewards(scene, r, c, good_reaches, evil_reaches):
    """`scene_reward` of the 3x3 window around (r, c) of a Λ* scene (neither landscape nor reset), row by
    row, to the bit, with its objects reaching it as `window_reach` says. f(max(a, b)) = min(f(a), f(b))
    for f = `proximity` (non-increasing, and the min returns one of the two values), so each object
    needs f of three row and three column distances, not nine Chebyshev distances."""
    rows, cols, radius = scene.rows, scene.cols, scene.radius
    zeros = (0.0, 0.0, 0.0)
    g_rows, g_cols, e_rows, e_cols = zeros, zeros, zeros, zeros
    if good_reaches:
        g_rows = _axis_proximities(r, scene.good_r, rows, radius)
        g_cols = _axis_proximities(c, scene.good_c, cols, radius)
    if evil_reaches:
        e_rows = _axis_proximities(r, scene.evil_r, rows, radius)
        e_cols = _axis_proximities(c, scene.evil_c, cols, radius)
    return (min(g_rows[0], g_cols[0]) - min(e_rows[0], e_cols[0]),
            min(g_rows[0], g_cols[1]) - min(e_rows[0], e_cols[1]),
            min(g_rows[0], g_cols[2]) - min(e_rows[0], e_cols[2]),
            min(g_rows[1], g_cols[0]) - min(e_rows[1], e_cols[0]),
            min(g_rows[1], g_cols[1]) - min(e_rows[1], e_cols[1]),
            min(g_rows[1], g_cols[2]) - min(e_rows[1], e_cols[2]),
            min(g_rows[2], g_cols[0]) - min(e_rows[2], e_cols[0]),
            min(g_rows[2], g_cols[1]) - min(e_rows[2], e_cols[1]),
            min(g_rows[2], g_cols[2]) - min(e_rows[2], e_cols[2]))
