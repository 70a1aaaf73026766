"""The kernel's largest compiled callees with the argument types the kernel calls them with, so that a second
warm-up process can compile them (`compile_callees`) while the first compiles the kernel: numba caches each
`@njit(cache=True)` function on its own, and a caller whose callee is in the cache loads it and links it
(the kernel's pass compiled in 5.9 s of CPU with the protocol rules in the cache, 23.3 s without;
notes/compile-time.md). Built from types only (nothing plays). Types that drift from the kernel's compile a
variant nobody plays: tests/test_compile_budget.py then counts a second signature of the callee."""
from __future__ import annotations

import numpy as np
from numba import typeof

from collective.behaviours.decisions import SearchTable
from collective.environments.scene import FieldRef, Scene
from collective.protocols.auction import auction_rule
from collective.protocols.broadcast import broadcast_rule
from collective.protocols.dictatorship import dictatorship_rule
from collective.protocols.hierarchy import hierarchy_rule
from collective.protocols.stigmergy import stigmergy_rule
from collective.simulation.kernel import (CellMoves, EpisodePaths, Rules, Scratch, TrainingSet, _lone_training_passes,
                                          _search_pass, _shared_training_passes, _side_by_side_q_passes)


def _array(dtype, ndim: int = 1) -> np.ndarray:
    return np.zeros((1,) * ndim, dtype)


I64, I32, F64, U64, U8, BOOL = np.int64, np.int32, np.float64, np.uint64, np.uint8, np.bool_


def signatures() -> list[tuple]:
    """(function, argument types) in the order a helper compiles them: the protocol rules, which the kernel's
    pass reaches first, the stigmergy rule last (the pass reaches it first: the kernel's process may compile
    it meanwhile), then the passes in the reverse of the order the kernel's typing reaches them."""
    rules = Rules(*(1,) * 6, *(0.0,) * 4, *(1,) * 8)
    paths = EpisodePaths(*(_array(I64),) * 4, _array(F64), *(_array(I64),) * 2)
    training = TrainingSet(*(_array(I64, 2),) * 4, _array(F64, 2), *(_array(I64, 2),) * 2, _array(I32, 2),
                           _array(I64))
    scratch = Scratch(*(_array(I64),) * 10, _array(F64), _array(U64, 2))
    search = SearchTable(_array(U8), 1, _array(U8), _array(U8), _array(F64), _array(F64))
    moves = CellMoves(*(_array(I64),) * 3)
    scene = Scene(1, 1, 1, 1, FieldRef(np.uint64(0), 1), 1, 1, 1, 1, 1)
    rule = (_array(F64), *(_array(I64),) * 3, scene, 1, _array(U64, 2), _array(I64), *(_array(F64),) * 2,
            *(_array(F64, 2),) * 2, _array(I64), _array(F64), _array(U64), search)
    table = (_array(F64), _array(BOOL), _array(I64), _array(I64))  # q, dirty, written, n_written
    seed, passes = np.uint64(0), 1
    strided_starts = np.zeros((2, 2), I32)[:, 0]  # a column of the training starts: layout 'A'
    arguments = (
        (broadcast_rule, rule), (auction_rule, rule), (dictatorship_rule, rule), (hierarchy_rule, rule),
        (stigmergy_rule, rule),
        (_lone_training_passes, (1, 1, 1, strided_starts, rules, training, seed, passes, *table, moves,
                                 _array(F64, 3))),
        (_search_pass, (_array(I64), _array(I32), rules, paths, seed, True, scratch, True, _array(I32, 2),
                        _array(F64, 2), _array(F64), search)),
        (_side_by_side_q_passes, (_array(I64), _array(I64), _array(I32, 2), rules, training, seed, passes, *table,
                                  moves, _array(F64, 3))),
        (_shared_training_passes, (_array(I64), _array(I64), _array(I32, 2), rules, training, seed, passes, True,
                                   *table, _array(F64), moves, _array(F64, 3))),
    )
    return [(function, tuple(typeof(value) for value in values)) for function, values in arguments]


def compile_callees() -> None:
    """Compile (or load from the cache) each callee of `signatures`."""
    for function, types in signatures():
        function.compile(types)
