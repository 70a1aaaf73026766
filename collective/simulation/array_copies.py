"""`copy_into`: one array row copied into another inside compiled code, shared by the kernel, the
pattern generator and the LZ76 counts."""
from __future__ import annotations

from numba import njit


@njit(cache=True)
def copy_into(destination, source):
    """destination[:] = source for 1-D arrays of one length, as a loop: numba compiles a slice
    assignment with its shape-mismatch error path and its message formatting, ~2.5 s of the first
    compile per module that has one (notes/compile-time.md: One kernel variant). Lengths that differ raise, as the
    slice would (a constant message: no formatting to compile)."""
    if destination.shape[0] != source.shape[0]:
        raise ValueError("copy_into: the arrays' lengths differ")
    for i in range(source.shape[0]):
        destination[i] = source[i]
