"""The kernel's built-ins as stepping-core plug-ins: the compiled decision rules (spec §5) and
protocol rules (spec §6) applied to the core's arrays and the agents' own streams, so that built-in
and user plug-ins mix in one group, and a group of built-ins plays here exactly as in the fused
kernel (`tests/test_stepping_core.py` checks it step by step).

They take the same seam as any plug-in (`reset`, `act`, `communicate`) and one more hook,
`bind_core(core, agents)`, through which the stepping core hands them what a user plug-in never
sees: ⊕'s future path (the oracle), the hidden oracle (imitation), the streams as the kernel holds
them. The learners (q_learning, sarsa, shared_q) train in passes inside the fused kernel and have
no stepping-core form: a group that would need one is refused while its config is validated.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from collective.behaviours import IMITATION, ORACLE, RANDOM
from collective.behaviours.decisions import SearchTable, oracle_step, searched_best, untabled
from collective.environments.torus import axis_step_toward, chebyshev, wrap
from collective.simulation.kernel import SCORED_PASS, WORLD_STREAM
from collective.simulation.lent_arrays import lent
from collective.simulation.plugins import Messages
from collective.simulation.random_streams import derive_stream_seed, uniform_int
from collective.environments.scene import Overheard
from collective.simulation.stepping import observed_scene
from collective.protocols import AUCTION, BROADCAST, DICTATORSHIP, HIERARCHY, STIGMERGY
from collective.protocols.auction import auction_rule
from collective.protocols.broadcast import broadcast_rule
from collective.protocols.dictatorship import dictatorship_rule
from collective.protocols.hierarchy import hierarchy_rule
from collective.protocols.kernel_support import (COMM_SLOTS, HEADER, episode_distinct, episode_entropies, list_logs,
                                                 log_capacity, observe_window)
from collective.protocols.stigmergy import stigmergy_rule


@njit(cache=True, inline="always")
def _action(dr, dc):
    return (dr + 1) * 3 + dc + 1


@njit(cache=True, inline="always")
def _window_search(window, field, with_field, e, k, view, stream):
    """Local search over an observation (paper 003 §5.2.1): the action toward the best cell of
    the window (plus the protocol's field when `with_field`), uniform tie-break among equal cells
    in row-major order (one draw), as the kernel's `local_best` draws."""
    side = 2 * view + 1
    best = -np.inf
    ties = 0
    for i in range(side):
        for j in range(side):
            value = window[e, k, i, j] + (field[e, k, i, j] if with_field else 0.0)
            if value > best:
                best, ties = value, 0
            if value == best:
                ties += 1
    pick = uniform_int(stream, ties)
    for i in range(side):
        for j in range(side):
            if window[e, k, i, j] + (field[e, k, i, j] if with_field else 0.0) == best:
                if pick == 0:
                    return _action(np.sign(i - view), np.sign(j - view))
                pick -= 1
    return 4


@njit(cache=True, inline="always")
def _oracle_move(r, c, t, path_r, path_c, iterations, rows, cols, pointer, slot, approach, ties):
    """The kernel's oracle step (`kernel._oracle_move`): interception, or under `cpp_oracle` one
    approach step toward ⊕'s next cell; half-way ties as `cpp_approach_position` (`ties`) says."""
    if approach:
        return axis_step_toward(r, path_r[t + 1], rows, ties), axis_step_toward(c, path_c[t + 1], cols, ties)
    return oracle_step(r, c, t, path_r, path_c, iterations, rows, cols, pointer, slot, ties)


@njit(cache=True, nogil=True)
def builtin_actions(code, agents, t, cells, window, field, target, good, rows, cols, iterations, view, streams,
                    pointer, hidden, oracle_approach, imitation_steps, approach_ties, out):
    """A kernel built-in's actions out (E, A_b) for its agents (group indices `agents`), from the
    observation arrays (window, field, target sliced to those agents) and the core's streams
    (E, A, 1), with the kernel's rules and draws (spec §5). pointer (E, A_b + 1): the oracles'
    interception pointers, the last slot the hidden oracle's; hidden (E, 2) the hidden oracle that
    imitators follow, moved once per iteration after they decide, or under `cpp_imitation` once
    before each imitator decides; `oracle_approach`: `cpp_oracle`; `approach_ties`: `cpp_approach_position`, how
    every step toward a cell breaks a half-way tie."""
    for e in range(cells.shape[0]):
        for k in range(agents.shape[0]):
            stream = streams[e, agents[k]]
            r, c = cells[e, k] // cols, cells[e, k] % cols
            if code == RANDOM:
                out[e, k] = uniform_int(stream, 9)
            elif code == ORACLE:
                dr, dc = _oracle_move(r, c, t, good[0, e], good[1, e], iterations, rows, cols, pointer[e], k,
                                      oracle_approach, approach_ties)
                out[e, k] = _action(dr, dc)
            elif code == IMITATION:
                if imitation_steps:  # the kernel's cpp_imitation: rescan from t+1 at every step
                    pointer[e, agents.shape[0]] = 0
                    hdr, hdc = _oracle_move(hidden[e, 0], hidden[e, 1], t, good[0, e], good[1, e], iterations,
                                            rows, cols, pointer[e], agents.shape[0], oracle_approach, approach_ties)
                    hidden[e, 0], hidden[e, 1] = wrap(hidden[e, 0] + hdr, rows), wrap(hidden[e, 1] + hdc, cols)
                if chebyshev(r, c, hidden[e, 0], hidden[e, 1], rows, cols) <= view:
                    out[e, k] = _action(axis_step_toward(r, hidden[e, 0], rows, approach_ties),
                                        axis_step_toward(c, hidden[e, 1], cols, approach_ties))
                else:  # the kernel's imitator searches the bare window (no protocol field)
                    out[e, k] = _window_search(window, field, False, e, k, view, stream)
            else:  # LOCAL_SEARCH: the protocol's target, else the best of window + field
                if target[e, k] >= 0:
                    tr, tc = target[e, k] // cols, target[e, k] % cols
                    out[e, k] = _action(axis_step_toward(r, tr, rows, approach_ties),
                                        axis_step_toward(c, tc, cols, approach_ties))
                else:
                    out[e, k] = _window_search(window, field, True, e, k, view, stream)
        if code == IMITATION and not imitation_steps:
            hdr, hdc = _oracle_move(hidden[e, 0], hidden[e, 1], t, good[0, e], good[1, e], iterations, rows, cols,
                                    pointer[e], agents.shape[0], oracle_approach, approach_ties)
            hidden[e, 0], hidden[e, 1] = wrap(hidden[e, 0] + hdr, rows), wrap(hidden[e, 1] + hdc, cols)


@njit(cache=True, nogil=True)
def hidden_starts(agent_seeds, n_cells, out):
    """Each episode's hidden oracle start: the world stream's first draw, as the kernel draws it."""
    world = np.empty(1, np.uint64)
    for e in range(agent_seeds.shape[0]):
        world[0] = derive_stream_seed(agent_seeds[e], WORLD_STREAM, SCORED_PASS)
        out[e] = uniform_int(world, n_cells)


@njit(cache=True)
def _rule(code, values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed, targets,
          comm, log, search):
    """The rule of protocol `code` (protocols/kernel_support.py states the signature), every window computed
    (`search` is `untabled()`, made once by the caller: the stepping core is the fused kernel's twin, tables
    included; made per call, its five arrays cost more than a broadcast's rule on 10x10). Called, not inlined:
    the stepping core compiles faster and plays as fast (notes/compile-time.md: Inlining)."""
    arguments = (values, members, pos_r, pos_c, scene, view, streams, window, field, state, choice, observed, targets,
                 comm, log, search)
    if code == STIGMERGY:
        stigmergy_rule(*arguments)
    elif code == BROADCAST:
        broadcast_rule(*arguments)
    elif code == AUCTION:
        auction_rule(*arguments)
    elif code == DICTATORSHIP:
        dictatorship_rule(*arguments)
    elif code == HIERARCHY:
        hierarchy_rule(*arguments)


@njit(cache=True, inline="always")
def _lent_search(search):
    """A `SearchTable` with its arrays lent (`lent_arrays`). Inlined into its caller, which holds `search` (an
    argument) for as long as it uses the lent copy: the one place a lent array is returned."""
    return SearchTable(lent(search.reach), search.keys, lent(search.ties), lent(search.best), lent(search.pays),
                       lent(search.parts))


@njit(cache=True, nogil=True)
def builtin_communicate(code, values, members, t, cells, good, evil, landscapes, rows, cols, view, radius, streams,
                        window, fields, states, choice, observed, targets, comm, logs, reset_first_observation):
    """A kernel protocol rule (protocols/*.py) for every episode at iteration t: writes the members'
    targets (E, A), adds messages and bits to comm (COMM_SLOTS,) and appends each episode's message
    symbols to its list, logs (E, HEADER + capacity); fields (E, N) and states (E, 2) keep the
    protocol's per-episode state."""
    _communicate(code, values, members, t, cells, good, evil, landscapes, rows, cols, view, radius, streams, window,
                 fields, states, choice, observed, targets, comm, logs, reset_first_observation,
                 np.empty(cells.shape[1], np.int64), np.empty(cells.shape[1], np.int64), untabled())


@njit(cache=True)
def _communicate(code, values, members, t, cells, good, evil, landscapes, rows, cols, view, radius, streams, window,
                 fields, states, choice, observed, targets, comm, logs, reset_first_observation, pos_r, pos_c, search):
    """`builtin_communicate`'s loop, pos_r and pos_c (A,) its scratch, search `untabled()`. Every array is lent
    (`lent_arrays`), as the fused kernel lends them to its rules: counted, their references cost more than a
    rule on a small grid. The caller holds them (this call's arguments) until the loop is done."""
    values, members, streams, window, fields, states, choice, observed, targets, comm, logs = (
        lent(values), lent(members), lent(streams), lent(window), lent(fields), lent(states), lent(choice),
        lent(observed), lent(targets), lent(comm), lent(logs))
    good, evil, landscapes, pos_r, pos_c, search = (lent(good), lent(evil), lent(landscapes), lent(pos_r),
                                                    lent(pos_c), _lent_search(search))
    for e in range(cells.shape[0]):
        for i in range(cells.shape[1]):
            pos_r[i], pos_c[i] = cells[e, i] // cols, cells[e, i] % cols
        scene = observed_scene(good, evil, landscapes, e, t, rows, cols, radius, reset_first_observation)
        _rule(code, values, members, pos_r, pos_c, scene, view, streams[e], window, fields[e], states[e], choice,
              observed, targets[e], comm, logs[e], search)


@njit(cache=True, nogil=True)
def builtin_overhear(code, values, members, t, cells, good, evil, landscapes, heard_cells, heard_good, heard_evil,
                     heard_landscapes, rows, cols, view, radius, streams, heard_streams, window, fields, states, choice,
                     observed, targets, reset_first_observation):
    """The sham-communication control's rule (issue 22 point 2): for every episode and every member i,
    the rule of protocol `code` with i in its own episode (its cell, scene and stream: cells, good, evil,
    landscapes, streams (E, A, 1), advanced by its own draws) and every other member as it stood, saw and
    drew in the shadow episode (heard_cells, heard_good, ..., heard_streams: the shadow's state when its
    protocol spoke, left untouched); i hears the target the rule gives it, targets[e, i]. fields (E, A, N)
    and states (E, A, 2) keep each member's own copy of the protocol's state. The traffic is not counted
    here (the shadow's own run counts it)."""
    agents = cells.shape[1]
    _overhear(code, values, members, t, cells, good, evil, landscapes, heard_cells, heard_good, heard_evil,
              heard_landscapes, rows, cols, view, radius, streams, heard_streams, window, fields, states, choice,
              observed, targets, reset_first_observation, untabled(), np.empty(agents, np.int64),
              np.empty(agents, np.int64), np.empty((agents, 1), np.uint64), np.full(agents, -1, np.int64),
              np.zeros(COMM_SLOTS), np.zeros(HEADER, np.uint64), np.zeros((agents, 2)), np.zeros((agents, 2), np.int64),
              np.zeros(agents), np.zeros(agents, np.uint64), np.empty(observed.shape[1]))


@njit(cache=True)
def _overhear(code, values, members, t, cells, good, evil, landscapes, heard_cells, heard_good, heard_evil,
              heard_landscapes, rows, cols, view, radius, streams, heard_streams, window, fields, states, choice,
              observed, targets, reset_first_observation, search, pos_r, pos_c, lanes, said, comm, log, bounds,
              offsets, rewards, chosen, shadow_window):
    """`builtin_overhear`'s loop. Its scratch: search `untabled()`; pos_r, pos_c (A,), lanes (A, 1) and said (A,)
    the rule's positions, streams and targets; comm (COMM_SLOTS,) and log (HEADER,) a list without room
    (nothing is logged); bounds (A, 2) each member's shadow window's lowest and highest reward, offsets (A, 2),
    rewards (A,) and chosen (A,) each member's shadow choice (row and column offsets, reward, its stream after);
    shadow_window (side²,) the listener's shadow window, put back after its rule.

    The rule runs once per listener, members x episodes calls an iteration, each handed ~20 arrays: all are
    lent (`lent_arrays`; counted, their references took 60% of a sham's time), the caller holding them. What
    another member observes and chooses in the shadow does not depend on the listener: the protocols that
    observe windows (stigmergy, broadcast, wisdom) have every member's shadow window observed into `observed`
    once per episode, those that choose (auction, dictatorship, hierarchy) every member's `searched_best` made
    once from its shadow stream, and each listener's rule reads them from its `Overheard` (`member_observe`,
    `member_best`), computing the listener's own alone."""
    values, members, window, fields, states, choice, observed, comm, log = (
        lent(values), lent(members), lent(window), lent(fields), lent(states), lent(choice), lent(observed),
        lent(comm), lent(log))
    good, evil, landscapes, heard_good, heard_evil, heard_landscapes = (
        lent(good), lent(evil), lent(landscapes), lent(heard_good), lent(heard_evil), lent(heard_landscapes))
    pos_r, pos_c, lanes, said, bounds, offsets, rewards, chosen, search = (
        lent(pos_r), lent(pos_c), lent(lanes), lent(said), lent(bounds), lent(offsets), lent(rewards), lent(chosen),
        _lent_search(search))
    agents, side2 = cells.shape[1], observed.shape[1]
    observes = code == STIGMERGY or code == BROADCAST  # rules that read windows (`member_observe`)
    chooses = code == AUCTION or code == DICTATORSHIP or code == HIERARCHY  # rules that choose (`member_best`)
    if not (observes or chooses):
        raise ValueError("builtin_overhear: a protocol whose members' shadow part is not worked out here")
    for e in range(cells.shape[0]):
        own = observed_scene(good, evil, landscapes, e, t, rows, cols, radius, reset_first_observation)
        others = observed_scene(heard_good, heard_evil, heard_landscapes, e, t, rows, cols, radius,
                                reset_first_observation)
        for j in members:  # what every member observes or chooses in the shadow, once for every listener
            r, c = heard_cells[e, j] // cols, heard_cells[e, j] % cols
            if observes:
                bounds[j, 0], bounds[j, 1] = observe_window(r, c, others, view, observed, j, search.reach,
                                                            search.keys, search.parts)
            else:
                chosen[j], offsets[j, 0], offsets[j, 1], rewards[j] = searched_best(
                    r, c, others, view, heard_streams[e, j, 0], search.reach, search.keys, search.ties, search.best,
                    search.parts)
        for i in members:
            for j in range(agents):
                pos_r[j], pos_c[j] = heard_cells[e, j] // cols, heard_cells[e, j] % cols
                lanes[j, 0] = heard_streams[e, j, 0]
            pos_r[i], pos_c[i] = cells[e, i] // cols, cells[e, i] % cols
            lanes[i, 0] = streams[e, i, 0]
            for k in range(side2):
                shadow_window[k] = observed[i, k]
            _rule(code, values, members, pos_r, pos_c, Overheard(rows, cols, i, own, others, bounds, offsets, rewards,
                                                                 chosen),
                  view, lanes, window, fields[e, i], states[e, i], choice, observed, said, comm, log, search)
            for k in range(side2):
                observed[i, k] = shadow_window[k]
            streams[e, i, 0] = lanes[i, 0]
            targets[e, i] = said[i]


class CompiledBehaviour:
    """A kernel built-in behaviour (random, local_search, oracle, imitation) on the stepping core."""

    def __init__(self, code: int):
        self.code = code

    def bind_core(self, core, agents: np.ndarray) -> None:
        self.core, self.agents = core, agents
        self.pointer = np.zeros((core.episodes, agents.shape[0] + 1), np.int64)  # oracles' interception
        self.paths = np.stack([core.good // core.cols, core.good % core.cols])  # (2, E, T+1) ⊕ rows, columns
        self.hidden = np.zeros((core.episodes, 2), np.int64)  # the imitators' hidden oracle
        if self.code == IMITATION:
            starts = np.empty(core.episodes, np.int64)
            hidden_starts(core.agent_seeds, core.rows * core.cols, starts)
            if core.switches.imitation:  # the kernel's: the last agent's start, but in the evaluation's episode 0
                later = np.ones(core.episodes, bool) if core.episode_index is None else core.episode_index != 0
                starts[later] = core.cells[later, -1]
            self.hidden[:, 0], self.hidden[:, 1] = starts // core.cols, starts % core.cols

    def act(self, obs) -> np.ndarray:
        """The rule over contiguous writeable copies of the read-only observation (strided views in a
        mixed group): one compiled specialisation serves every group (a strided or read-only one would
        compile for half a minute)."""
        core = self.core
        out = np.empty(obs.cell.shape, np.int64)
        window, field, cell, target = (np.require(a, requirements=("C", "W"))
                                       for a in (obs.window, obs.field, obs.cell, obs.target))
        builtin_actions(self.code, self.agents, obs.t, cell, window, field, target, self.paths, core.rows, core.cols,
                        core.iterations, core.view, core.streams, self.pointer, self.hidden,
                        bool(core.switches.oracle), bool(core.switches.imitation), int(core.switches.approach), out)
        return out


class CompiledProtocol:
    """A kernel built-in protocol (stigmergy, broadcast, wisdom, auction, dictatorship, hierarchy)
    on the stepping core; its per-episode state lives for the batch, as for a pass of the kernel.
    `communicate` reports the traffic of the accounting at offset `accounting` of comm
    (protocols.kernel_support.WRITES or READS_AND_WRITES); `comm` keeps the batch's traffic under
    both, and `message_entropy` each episode's entropy, as the fused kernel measures them."""

    def __init__(self, code: int, values: tuple[float, ...], accounting: int):
        self.code, self.values, self.accounting = code, np.asarray(values, np.float64), accounting

    def bind_core(self, core, members: np.ndarray) -> None:
        self.core, self.members = core, members
        side = 2 * core.view + 1
        self.fields = np.zeros((core.episodes, core.rows * core.cols))  # (E, N)
        self.states = np.empty((core.episodes, 2))  # (E, 2): the sticky auction's best bid and cell
        self.states[:, 0], self.states[:, 1] = -np.inf, -1.0
        self.targets = np.full((core.episodes, core.agents), -1, np.int64)  # (E, A)
        self.window = np.empty(max(side * side, core.rows * core.cols), np.int64)  # the rules' tie lists
        self.choice = np.zeros((core.agents, 3))
        self.observed = np.zeros((core.agents, side * side))
        self.comm = np.zeros(COMM_SLOTS)  # the batch's traffic, both accountings
        self.logs = list_logs(core.episodes, log_capacity(core.iterations, members.shape[0]))  # per episode
        self.own_fields = self.own_states = None  # each listener's copy of fields and states (`overhear`)

    def communicate(self, obs) -> Messages:
        core = self.core
        comm = np.zeros(COMM_SLOTS)
        builtin_communicate(self.code, self.values, self.members, obs.t, core.cells, core.good, core.evil,
                            core.landscapes, core.rows, core.cols, core.view, core.radius, core.streams, self.window,
                            self.fields, self.states, self.choice, self.observed, self.targets, comm, self.logs,
                            bool(core.switches.first_observation))
        self.comm += comm
        return Messages(target=self.targets[:, self.members], messages=float(comm[self.accounting]),
                        bits=float(comm[self.accounting + 1]))

    def overhear(self, t: int, heard_cells: np.ndarray, heard_streams: np.ndarray, heard) -> Messages:
        """What each member hears under the sham control (`builtin_overhear`): `heard` the shadow's core,
        heard_cells (E, A) and heard_streams (E, A, 1) its cells and streams when its protocol spoke at
        iteration t. Each member's copy of the protocol's state starts with the batch (t = 0) as the
        protocol's own does in `bind_core`."""
        core = self.core
        if t == 0:
            self.own_fields = np.zeros((core.episodes, core.agents, core.rows * core.cols))
            self.own_states = np.empty((core.episodes, core.agents, 2))
            self.own_states[..., 0], self.own_states[..., 1] = -np.inf, -1.0
        builtin_overhear(self.code, self.values, self.members, t, core.cells, core.good, core.evil, core.landscapes,
                         heard_cells, heard.good, heard.evil, heard.landscapes, core.rows, core.cols, core.view,
                         core.radius, core.streams, heard_streams, self.window, self.own_fields, self.own_states,
                         self.choice, self.observed, self.targets, bool(core.switches.first_observation))
        return Messages(target=self.targets[:, self.members])

    def message_entropy(self) -> np.ndarray:
        """(E,) each episode's message entropy, bits per message (NaN for an episode without messages)."""
        out = np.empty(self.logs.shape[0])
        episode_entropies(self.logs, out)
        return out

    def distinct_messages(self) -> np.ndarray:
        """(E,) each episode's distinct messages (NaN for an episode without messages)."""
        out = np.empty(self.logs.shape[0])
        episode_distinct(self.logs, out)
        return out
