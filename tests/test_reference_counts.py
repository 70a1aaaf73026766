"""The kernel's hottest call counts no references (issue 25): numba counts a reference, atomically, for
every array argument of a compiled call and every array view, and those counts took about half of the
kernel's time. The local searcher's decision (`local_best`, called once per searcher per iteration by
the kernel and by the protocols' rules) therefore takes scalars only: the stream as its state."""
import numba
import numpy as np
from numba import types

from collective.behaviours.decisions import local_best
from collective.environments.scene import FieldRef, Scene


def test_local_search_decision_counts_no_references():
    fresh = numba.njit(local_best.py_func)  # compiled here, not loaded from numba's cache, so its IR is readable
    # the kernel's scene: numbers only (a landscape's field by address, none for Λ*)
    scene = numba.typeof(Scene(2, 2, 7, 7, FieldRef(np.uintp(0), 0), 0, 0, 10, 10, 1))
    signature = (types.int64, types.int64, scene, types.int64, types.uint64)
    fresh.compile(signature)
    ir = fresh.inspect_llvm(signature)
    assert "define" in ir and "local_best" in ir  # the IR is the function's, not an empty placeholder
    assert "call void @NRT_incref" not in ir and "call void @NRT_decref" not in ir
