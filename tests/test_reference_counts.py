"""The kernel's hottest call counts no references (issue 25): numba counts a reference, atomically, for
every array argument of a compiled call and every array view, and those counts took about half of the
kernel's time. The local searcher's decision (`local_best`, called once per searcher per iteration by
the kernel and by the protocols' rules) therefore takes scalars only: the stream as its state."""
import ast
import re
from pathlib import Path

import numba
import numpy as np
from numba import types

from collective.behaviours.decisions import local_best, search_table
from collective.environments.scene import FieldRef, Scene
from collective.simulation.lent_arrays import lent


def test_local_search_decision_counts_no_references():
    fresh = numba.njit(local_best.py_func)  # compiled here, not loaded from numba's cache, so its IR is readable
    # the kernel's scene: numbers only (a landscape's field by address, none for Λ*)
    scene = numba.typeof(Scene(2, 2, 7, 7, FieldRef(np.uintp(0), 0), 0, 0, 10, 10, 1))
    signature = (types.int64, types.int64, scene, types.int64, types.uint64)
    fresh.compile(signature)
    ir = fresh.inspect_llvm(signature)
    assert "define" in ir and "local_best" in ir  # the IR is the function's, not an empty placeholder
    assert "call void @NRT_incref" not in ir and "call void @NRT_decref" not in ir


def _rule_arguments(rows, cols, view, members):
    """A protocol rule's arguments (protocols/kernel_support.py) for `members` searchers on a rows x cols Λ*
    scene, ⊕ in sight of the first."""
    from collective.protocols.kernel_support import COMM_SLOTS, table_log

    agents, side = members.shape[0], 2 * view + 1
    positions = np.arange(agents, dtype=np.int64) * 3 % (rows * cols)
    scene = Scene(int(positions[0] // cols), int(positions[0] % cols) + 1, rows - 1, cols - 1,
                  FieldRef(np.uintp(0), 0), 0, 0, rows, cols, 1)
    streams = np.arange(1, agents + 1, dtype=np.uint64).reshape(agents, 1)
    return (positions // cols, positions % cols, scene, view, streams,
            np.empty(max(side * side, rows * cols), np.int64), np.zeros(rows * cols), np.array([-np.inf, -1.0]),
            np.zeros((agents, 3)), np.zeros((agents, side * side)), np.full(agents, -1, np.int64),
            np.zeros(COMM_SLOTS), table_log(4, agents))


def test_broadcast_and_wisdom_allocate_nothing_per_iteration():
    """The kernel calls a protocol rule every iteration; broadcast and wisdom used to allocate three arrays
    per call (the reports, the comparison with the best, its indices), each an allocation and a free
    with atomic counts. numba's allocation statistics over a compiled loop of 1 and of 6 calls (the
    call from Python allocates a record for each array argument; the loop's calls must add none)."""
    from numba.core.runtime import _nrt_python, rtsys

    from collective.protocols.broadcast import broadcast_rule

    @numba.njit
    def repeat(calls, values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed,
               targets, comm, log, search):
        for _ in range(calls):
            broadcast_rule(values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice,
                           observed, targets, comm, log, search)

    members = np.arange(6, dtype=np.int64)
    _nrt_python.memsys_enable_stats()
    try:
        for memory in (0.0, 1.0):
            arguments = (np.array([memory, 0.0, 0.0, 0.0]), members, *_rule_arguments(7, 7, 1, members),
                         search_table(7, 7, 1))
            repeat(1, *arguments)  # compiles
            allocations = []
            for calls in (1, 6):
                before = rtsys.get_allocation_stats().alloc
                repeat(calls, *arguments)
                allocations.append(rtsys.get_allocation_stats().alloc - before)
            assert allocations[1] == allocations[0], f"memory={memory}: {allocations} allocations for 1 and 6 calls"
            assert (arguments[-4][members] >= 0).all()  # the rule did run: every member has a target
    finally:
        _nrt_python.memsys_disable_stats()


def test_a_lent_array_is_the_same_memory():
    """`lent` (the kernel's arrays for the protocol rules) hands over the same data, shape and strides:
    a compiled function writing through the lent array writes the owner's."""
    from collective.simulation.lent_arrays import lent

    @numba.njit
    def write_through(a):
        b = lent(a)
        for i in range(b.shape[0]):
            b[i, 1] = i + 1.0
        return b.shape[0], b.shape[1], b.strides[0]

    owner = np.zeros((4, 3))
    assert write_through(owner) == (4, 3, owner.strides[0])
    assert owner[:, 1].tolist() == [1.0, 2.0, 3.0, 4.0] and owner[:, [0, 2]].sum() == 0.0


@numba.njit
def _rule_like(a, b):  # a callee numba does not inline: its array arguments are counted at the call
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            total += np.sin(a[i] * b[j])
    a[0] = total


@numba.njit
def _calls_with_lent(a, b, n):
    from_a, from_b = lent(a), lent(b)
    for _ in range(n):
        _rule_like(from_a, from_b)


@numba.njit
def _calls_with_owned(a, b, n):
    for _ in range(n):
        _rule_like(a, b)


def test_calls_with_lent_arrays_count_no_references():
    """Known answer from the IR: a loop calling a compiled function with the owner's arrays counts
    references (the control: increments in the caller's IR), the same loop with the arrays lent counts none;
    and only the kernel and the stepping core's rule loops (`compiled_plugins._communicate`, `_overhear`) lend
    arrays, each nothing but arrays it was given (`lent` appears there only)."""
    a, b = np.zeros(3), np.ones(3)
    counts = {}
    for caller in (_calls_with_lent, _calls_with_owned):
        caller(a, b, 2)
        ir = caller.inspect_llvm(caller.signatures[0])
        counts[caller.__name__] = ir[ir.find("define"):].count("NRT_incref")
    assert counts["_calls_with_owned"] > 0 and counts["_calls_with_lent"] == 0, counts
    root = Path(__file__).parent.parent
    sources = [*(root / "collective").rglob("*.py"), *(root / "protocols").glob("*.py")]
    users = [path.name for path in sources if re.search(r"\blent\(", path.read_text())]
    assert sorted(users) == ["compiled_plugins.py", "kernel.py", "lent_arrays.py"], users
    loops = ast.parse((root / "collective" / "simulation" / "compiled_plugins.py").read_text())
    for function in (node for node in ast.walk(loops) if isinstance(node, ast.FunctionDef)):
        parameters = {argument.arg for argument in function.args.args}
        for call in (node for node in ast.walk(function) if isinstance(node, ast.Call)
                     and getattr(node.func, "id", None) == "lent"):
            lent_value = call.args[0].value if isinstance(call.args[0], ast.Attribute) else call.args[0]
            assert isinstance(lent_value, ast.Name) and lent_value.id in parameters, (
                f"{function.name} lends {ast.unparse(call.args[0])}, not one of its arguments")
