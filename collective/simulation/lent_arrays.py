"""`lent`: an array handed to compiled calls without reference counts (issue 25).

numba counts a reference, with an atomic instruction, to every array argument of a compiled call that
is not inlined, at the callee's entry and exits (notes/kernel-speed.md: Reference counts out of the kernel's
loops). The kernel calls a protocol rule once per iteration with 13 arrays; lent, the same arrays cost
no atomic count: numba skips the count of an array without a meminfo (its owner's record)."""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def lent(typingctx, array):
    """The same array (data, shape, strides, type) without its meminfo: counting a reference to it does
    nothing. The caller keeps the owner alive for as long as the lent array is used (the kernel lends
    the arrays of a pass for that pass, from the arrays it was given). Never return a lent array or store it
    where it could outlive its owner: handed back to Python it would point at freed memory
    (tests/test_reference_counts.py checks that the kernel and the stepping core's rule loops are its only
    users, and that the loops lend only their arguments)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(array)(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()
    return array(array), codegen
