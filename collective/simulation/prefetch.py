"""A hint to the processor to bring an array element's cache line closer (LLVM's `llvm.prefetch`)."""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Prefetch `array[index]` for reading (a 1-d contiguous array; no bounds check, no effect on values)."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        pointer = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32]), "llvm.prefetch.p0i8")
        builder.call(function, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(array, index), codegen
