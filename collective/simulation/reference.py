"""The slow, obviously-correct Λ* simulator: one episode at a time in plain Python.

It restates spec §1 and §5 (paper 003 §4.1, §5.2.1) with coordinates and dictionaries, no
vectorisation and no shortcuts: all agents act together in every pass, training passes included.
Each agent draws from its own stream per pass, seeded as the compiled kernel seeds it, so tests
can run both in lock-step and demand identical trajectories and rewards. It is for tests and
small worked examples only.
"""
from __future__ import annotations

import copy
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from collective.simulation.random_streams import SplitMix64

ACTION_MOVES = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)]  # paper 003 §5.1 order


@dataclass(frozen=True)
class ReferenceWorld:
    rows: int
    cols: int
    iterations: int
    observation_range: int = 1
    reward_radius: int = 1
    coordination_threshold: int = 1
    landscape: tuple[float, ...] | None = None  # a fitness landscape's base field, or None for Λ*
    direct_ties: bool = False  # cpp_approach_position: a half-way step goes the way that does not wrap

    def coordinates(self, cell: int) -> tuple[int, int]:
        return divmod(cell, self.cols)

    def distance(self, a: int, b: int) -> int:
        """Toroidal Chebyshev distance (spec §1)."""
        (ar, ac), (br, bc) = self.coordinates(a), self.coordinates(b)
        dr, dc = abs(ar - br), abs(ac - bc)
        return max(min(dr, self.rows - dr), min(dc, self.cols - dc))

    def moved(self, cell: int, dr: int, dc: int) -> int:
        r, c = self.coordinates(cell)
        return ((r + dr) % self.rows) * self.cols + (c + dc) % self.cols

    def window(self, cell: int) -> list[tuple[int, int, int]]:
        """(cell, dr, dc) of the range-k Moore neighbourhood, row by row (spec §1)."""
        k = self.observation_range
        return [(self.moved(cell, dr, dc), dr, dc) for dr in range(-k, k + 1) for dc in range(-k, k + 1)]

    def f(self, distance: int) -> float:
        return 1 / (distance + 1) if distance <= self.reward_radius else 0.0

    def reward(self, cell: int, good: int, evil: int) -> float:
        """R(c) = f(d(c, ⊕)) - f(d(c, ⊖)) (paper 003 §4.1.2)."""
        return self.f(self.distance(cell, good)) - self.f(self.distance(cell, evil))

    def payoffs(self, good: list[int], evil: list[int], t: int):
        """cell -> R at iteration t: Λ*'s, or the landscape's field moved as far as its global
        optimum (⊕'s path) has moved since the start (paper 003 §6.2)."""
        if self.landscape is None:
            return lambda cell: self.reward(cell, good[t], evil[t])
        (r0, c0), (rt, ct) = self.coordinates(good[0]), self.coordinates(good[t])
        return lambda cell: self.landscape[self.moved(cell, r0 - rt, c0 - ct)]

    def step_toward(self, cell: int, target: int) -> int:
        """One king step toward target, the shorter way round each axis; half-way goes forward, or with
        `direct_ties` the way that does not wrap (approachPosition in the 2016 program's src/General.cpp)."""
        (r, c), (tr, tc) = self.coordinates(cell), self.coordinates(target)
        return self.moved(cell, _axis_step(r, tr, self.rows, self.direct_ties),
                          _axis_step(c, tc, self.cols, self.direct_ties))


def _axis_step(a: int, b: int, size: int, direct_ties: bool) -> int:
    forward = (b - a) % size
    if forward == 0:
        return 0
    if direct_ties and forward == size - forward:
        return 1 if b > a else -1
    return 1 if forward <= size - forward else -1


@dataclass(frozen=True)
class ReferenceProtocol:
    """A protocol as the reference plays it (spec §6): its name, its parameters by name (with
    defaults filled in), which agents take part, and what its learners hear: "real" (the protocol), "deaf" (the
    deaf control: they take part, and hear nothing) or "noise" (the noise control: a uniform draw among the
    HEARD_SYMBOLS each step, from their noise streams, `_noise_streams`)."""

    name: str = "none"
    params: dict = field(default_factory=dict)
    members: tuple[bool, ...] = ()
    hearing: str = "real"


@dataclass
class Traffic:
    """A protocol's traffic (protocols/__init__.py): (messages, bits) under each accounting in the scored pass,
    and the contents of the scored pass's messages of `reads_and_writes`, one tuple per message."""

    counts: dict = field(default_factory=lambda: {"writes": [0, 0], "reads_and_writes": [0, 0]})
    contents: list = field(default_factory=list)

    def add(self, messages, bits, accountings=("writes", "reads_and_writes")):
        for accounting in accountings:
            self.counts[accounting][0] += messages
            self.counts[accounting][1] += bits

    def entropy_bits(self) -> float:
        """Plug-in entropy of the contents with the Miller-Madow correction, bits per message (NaN for none)."""
        n = len(self.contents)
        if not n:
            return math.nan
        counts = Counter(self.contents).values()
        plug_in = -sum(c / n * math.log2(c / n) for c in counts)
        return plug_in + (len(counts) - 1) / (2 * n * math.log(2))

    def distinct(self) -> float:
        """The distinct contents among the messages (NaN for none)."""
        return float(len(set(self.contents))) if self.contents else math.nan


@dataclass
class LearnerSettings:
    alpha: float = 0.3
    gamma: float = 0.3
    epsilon: float = 0.0
    q_initial: float = 0.0
    training_passes: int = 100
    reward_scale: float = 1.0
    state: str = "cell_time"  # `learner_state`: "cell_time" or "window_signs"


@dataclass(frozen=True)
class TrainingEpisode:
    """An episode the learners train on instead of the scored one (`learning_protocol` held_out):
    its world (a landscape's own field), ⊕/⊖ paths, start cells, and the seed of its world stream
    (the hidden oracle's start)."""

    world: ReferenceWorld
    good: list[int]
    evil: list[int]
    starts: list[int]
    seed: int


def _hidden_start(world: ReferenceWorld, behaviours: list[str], seed: int, starts: list[int],
                  on_last_start: bool) -> int | None:
    """The hidden oracle's start cell (imitators only): drawn from the episode's world stream, or
    with `on_last_start` the last agent's start cell, where main.cpp's resetAll loop leaves it."""
    if "imitation" not in behaviours:
        return None
    return starts[-1] if on_last_start else SplitMix64.for_stream(seed, stream_id=0, pass_index=0).uniform_int(
        world.rows * world.cols)


def reference_episode(world: ReferenceWorld, behaviours: list[str], good: list[int], evil: list[int],
                      starts: list[int], seed: int, learner: LearnerSettings | None = None,
                      protocol: ReferenceProtocol | None = None, training: list[TrainingEpisode] | None = None,
                      cpp: frozenset[str] = frozenset(), first_episode: bool = False,
                      kept_tables: dict | None = None, online: bool = False
                      ) -> tuple[list[list[int]], list[list[float]], Traffic]:
    """Play one episode; returns the scored pass's positions [T+1][agents], rewards [T][agents],
    and traffic (the training passes' is not counted). Training pass p plays training[p mod n] (held-out
    episodes), or the scored episode itself when `training` is None (paper 003 §5.2.1). `cpp` names the 2016
    switches on (collective.config.CPP_SWITCHES); `first_episode`: this is the evaluation's episode
    0, whose hidden oracle keeps its own random cell under cpp_imitation. With `kept_tables`
    (`learner_tables`; learner_training pretrained or online) the learners play with those tables,
    no training pass, and keep them; `online`: the scored pass learns (ε-greedily) as training does."""
    learner = learner or LearnerSettings()
    protocol = protocol or ReferenceProtocol(members=tuple(False for _ in behaviours))
    cost = Traffic()
    imitation = "cpp_imitation" in cpp
    hidden_start = _hidden_start(world, behaviours, seed, starts, imitation and not first_episode)
    training = training or [TrainingEpisode(world, good, evil, starts, seed)]
    tables = learner_tables(behaviours, learner, protocol) if kept_tables is None else kept_tables
    passes = learner.training_passes if tables and kept_tables is None else 0
    # Training passes (spec §5): under a coordination threshold rewards depend on everyone, and learners that
    # hear the protocol learn what it tells them, so the whole group trains; otherwise only the learners move,
    # and only a shared table links them.
    together = world.coordination_threshold > 1 or _hears(behaviours, protocol)
    trainees = list(range(len(behaviours))) if together else sorted(tables)
    training_protocol = protocol if together or protocol.name == "shared_q" else \
        ReferenceProtocol(members=tuple(False for _ in behaviours))
    for p in range(passes):
        episode = training[p % len(training)]
        streams = [SplitMix64.for_stream(seed, i + 1, pass_index=p + 1) for i in trainees]
        _play(episode.world, [behaviours[i] for i in trainees], episode.good, episode.evil,
              [episode.starts[i] for i in trainees],
              _hidden_start(episode.world, behaviours, episode.seed, episode.starts, imitation)
              if len(trainees) == len(behaviours) else None,
              streams, {k: tables[i] for k, i in enumerate(trainees) if i in tables}, learner,
              _restrict(training_protocol, trainees), Traffic(), cpp, learning=True,
              noise=_noise_streams(protocol, seed, trainees, p + 1))
    streams = [SplitMix64.for_stream(seed, i + 1, pass_index=0) for i in range(len(behaviours))]
    # the traffic is the scored pass's (its columns are per scored iteration): the training passes' is dropped
    positions, rewards = _play(world, behaviours, good, evil, starts, hidden_start, streams, tables, learner,
                               protocol, cost, cpp, learning=online,
                               noise=_noise_streams(protocol, seed, list(range(len(behaviours))), 0))
    return positions, rewards, cost


def reference_sham_episode(world: ReferenceWorld, behaviours: list[str], good: list[int], evil: list[int],
                           starts: list[int], seed: int, shadow: TrainingEpisode, protocol: ReferenceProtocol,
                           cpp: frozenset[str] = frozenset(), first_episode: bool = False
                           ) -> tuple[list[list[int]], list[list[float]], Traffic]:
    """The sham-communication control (issue 22 point 2) for groups without learners: the group plays
    `shadow` for real; then, in the episode, each member i keeps its own sensing and its own part in the
    protocol, and hears what the protocol says with the other members as they stood, saw and drew in the
    shadow at that iteration (`_overheard_targets`). The episode's scored positions and rewards, and the
    shadow's traffic."""
    imitation = "cpp_imitation" in cpp
    heard, cost = [], Traffic()
    streams = [SplitMix64.for_stream(shadow.seed, i + 1, pass_index=0) for i in range(len(behaviours))]
    _play(shadow.world, behaviours, shadow.good, shadow.evil, shadow.starts,
          _hidden_start(shadow.world, behaviours, shadow.seed, shadow.starts, imitation), streams, {},
          LearnerSettings(), protocol, cost, cpp, learning=False, heard=heard)
    streams = [SplitMix64.for_stream(seed, i + 1, pass_index=0) for i in range(len(behaviours))]
    positions, rewards = _play(world, behaviours, good, evil, starts,
                               _hidden_start(world, behaviours, seed, starts, imitation and not first_episode),
                               streams, {}, LearnerSettings(), protocol, Traffic(), cpp, learning=False,
                               overheard=heard)
    return positions, rewards, cost


def _overheard_targets(world, protocol, here, pays, streams, heard, memory, cpp):
    """Each member i's target under the sham control: the protocol's rule with i where it is in its own
    episode (its cell, payoffs and stream) and every other member as in the shadow (`heard`: their cells,
    the shadow's payoffs and copies of their streams before the shadow's protocol spoke), with i's own copy
    of the protocol's state in memory[i]."""
    heard_here, heard_pays, heard_streams = heard
    targets = {}
    for i, takes_part in enumerate(protocol.members):
        if takes_part:
            mixed_here, mixed_pays = list(heard_here), [heard_pays] * len(here)
            mixed_streams = [copy.copy(stream) for stream in heard_streams]
            mixed_here[i], mixed_pays[i], mixed_streams[i] = here[i], pays, streams[i]
            targets[i] = _targets(world, protocol, mixed_here, mixed_pays, mixed_streams, memory.setdefault(i, {}),
                                  Traffic(), cpp)[i]
    return targets


def learner_tables(behaviours: list[str], learner: LearnerSettings, protocol: ReferenceProtocol) -> dict:
    """agent -> its Q-table (state -> 9 values, Q0 until written); under shared_q one table for all."""
    learners = [i for i, b in enumerate(behaviours) if b in ("q_learning", "sarsa")]
    if protocol.name == "shared_q":  # one table object for every learner
        shared = defaultdict(lambda: [learner.q_initial] * 9)
        return {i: shared for i in learners}
    return {i: defaultdict(lambda: [learner.q_initial] * 9) for i in learners}


LEARNERS = ("q_learning", "sarsa")
NOTHING_HEARD = 9  # what a hearing learner without a target hears (its king moves are 0..8, ACTION_MOVES)
HEARD_SYMBOLS = 10  # what a hearing learner may hear: a king move or nothing
NOISE_STREAMS = 1 << 32  # agent i's noise stream in a pass has stream id NOISE_STREAMS + i


def _noise_streams(protocol: ReferenceProtocol, seed: int, agents: list[int], pass_index: int):
    """Under the noise control, each agent's noise stream in the pass (`SplitMix64.for_stream`), which the
    learners draw their symbol from, one uniform draw among the HEARD_SYMBOLS each iteration; None otherwise."""
    if protocol.hearing != "noise":
        return None
    return [SplitMix64.for_stream(seed, NOISE_STREAMS + i, pass_index) for i in agents]


def _hears(behaviours: list[str], protocol: ReferenceProtocol) -> bool:
    """Whether a learner is a member of a talking protocol, and so hears it (issue 45)."""
    return protocol.name not in ("none", "shared_q") and \
        any(member and behaviour in LEARNERS for behaviour, member in zip(behaviours, protocol.members))


def _heard(world: ReferenceWorld, cell: int, target: int | None) -> int:
    """What a hearing learner at `cell` hears: the index in ACTION_MOVES of its king step toward the target the
    protocol gives it (`step_toward`), or NOTHING_HEARD without one."""
    if target is None:
        return NOTHING_HEARD
    (r, c), (tr, tc) = world.coordinates(cell), world.coordinates(target)
    return ACTION_MOVES.index((_axis_step(r, tr, world.rows, world.direct_ties), _axis_step(c, tc, world.cols, world.direct_ties)))


def _state(world: ReferenceWorld, learner: LearnerSettings, cell: int, t: int, pays, heard: int | None = None):
    """A learner's state: (cell, t), or the signs (-1, 0, +1) of the rewards of its 3x3 window, row by row; paired
    with what it hears (`_heard`) when it hears a protocol."""
    if learner.state == "window_signs":
        own = tuple(int(pays(world.moved(cell, dr, dc)) > 0) - int(pays(world.moved(cell, dr, dc)) < 0)
                    for dr in (-1, 0, 1) for dc in (-1, 0, 1))
    else:
        own = (cell, t)
    return own if heard is None else (own, heard)


def _table_states(world: ReferenceWorld, learner: LearnerSettings) -> int:
    return 3 ** 9 if learner.state == "window_signs" else world.rows * world.cols * world.iterations


def _restrict(protocol: ReferenceProtocol, agents: list[int]) -> ReferenceProtocol:
    members = tuple(protocol.members[i] for i in agents) if protocol.members else ()
    return ReferenceProtocol(protocol.name, protocol.params, members, protocol.hearing)


def _oracle_target(world, cell, t, good, cpp):
    """The oracle's target: the earliest interception, or with cpp_oracle ⊕'s next cell (main.cpp
    passes goodObjPositions.at(t) to Oracle::performAction, one approachPosition step)."""
    return good[t + 1] if "cpp_oracle" in cpp else _earliest_interception(world, cell, t, good)


def _reset_field(world):
    """main.cpp's field after ⊕ and ⊖ are both reset onto cell 1 (cell 0 here): updateCellRewards
    writes +0.5 then -0.5 on the shared cell and adds +0.5 and -0.5 over the shared neighbourhood."""
    return lambda cell: -0.5 if cell == 0 else 0.0


def _earliest_interception(world, cell, t, good):
    """The oracle's target (paper 003 §5.2.1): the earliest τ > t with d(cell, ⊕_τ) <= τ - t."""
    for tau in range(t + 1, world.iterations + 1):
        if world.distance(cell, good[tau]) <= tau - t:
            return good[tau]
    return good[world.iterations]


def _best_observed(world, cell, pays, stream):
    """The local searcher's choice: (best observed cell, its reward), uniform tie-break (one draw)."""
    observed = [(pays(c), c) for c, _, _ in world.window(cell)]
    best = max(value for value, _ in observed)
    ties = [c for value, c in observed if value == best]
    return ties[stream.uniform_int(len(ties))], best


def _local_search(world, cell, pays, stream):
    return world.step_toward(cell, _best_observed(world, cell, pays, stream)[0])


def _greedy(values, stream):
    best = max(values)
    ties = [a for a in range(9) if values[a] == best]
    return ties[stream.uniform_int(len(ties))]


def _cell_bits(world) -> int:
    return math.ceil(math.log2(world.rows * world.cols))


def _targets(world, protocol, here, pays, streams, memory, cost, cpp=frozenset()):
    """Each participating searcher's target cell this iteration (spec §6; protocols/*.py), and its traffic;
    searcher i stands at here[i] and sees the payoffs pays[i]."""
    members = [i for i, takes_part in enumerate(protocol.members) if takes_part]
    params, name = protocol.params, protocol.name
    window_bits = (2 * world.observation_range + 1) ** 2 * 64
    observed = {i: [(c, pays[i](c)) for c, _, _ in world.window(here[i])] for i in members}
    m = len(members)
    if name == "stigmergy":
        if params["form"] == "paper":  # Algorithm 2: a fresh field each iteration, deposits add up
            fake = defaultdict(float)
            for i in members:
                values = [v for _, v in observed[i]]
                deposit = params["gamma"] * max(values) + (1 - params["gamma"]) * min(values)
                for c, _ in observed[i]:
                    fake[c] += deposit
                cost.add(1, window_bits, ("writes",))  # every searcher's deposit, of nothing too
                if deposit != 0:
                    cost.add(1, window_bits, ("reads_and_writes",))
                    cost.contents.append(("deposit",) + (deposit,) * len(observed[i]))
            field = fake
            scores = {i: [(c, v + fake[c]) for c, v in observed[i]] for i in members}
        else:  # the 2016 code: one persistent field, updated agent by agent
            field = memory.setdefault("field", defaultdict(float))
            for i in members:
                values = [v for _, v in observed[i]]
                deposit = params["weight"] * (max(values) + min(values))
                if deposit != 0:
                    for c, v in observed[i]:
                        field[c] = (field[c] + v + deposit) / params["divisor"]
                    cost.add(1, window_bits)
                    cost.contents.append(("deposit",) + tuple(field[c] for c, _ in observed[i]))
            scores = {i: [(c, field[c]) for c, _ in observed[i]] for i in members}
        for i in members:  # every searcher reads its window of the field
            cost.contents.append(("field read",) + tuple(field[c] for c, _ in observed[i]))
        cost.add(m, m * window_bits, ("reads_and_writes",))
        targets = {}
        for i in members:
            best = max(v for _, v in scores[i])
            ties = [c for c, v in scores[i] if v == best]
            targets[i] = ties[streams[i].uniform_int(len(ties))]
        return targets
    if name in ("broadcast", "wisdom"):
        if name == "wisdom" or params["memory"] == "true":
            shared = memory.setdefault("map", [0.0] * (world.rows * world.cols))
            for i in members:
                written = []
                for c, v in observed[i]:
                    if v != 0:
                        shared[c] = (shared[c] + v) / 2
                        written += [c, v]
                if written:
                    cost.add(1, len(written) // 2 * (_cell_bits(world) + 64))
                    cost.contents.append(("map write",) + tuple(written))
            cost.add(m, m * len(shared) * 64, ("reads_and_writes",))  # every searcher reads the map
            cost.contents += [("map read",) + tuple(shared)] * m
            best = max(shared)
            candidates = [c for c in range(len(shared)) if shared[c] == best]
        else:
            reported = {c: v for i in members for c, v in observed[i]}
            best = max(reported.values())
            candidates = sorted(c for c, v in reported.items() if v == best)
            cost.add(m * (m - 1), m * (m - 1) * (window_bits + _cell_bits(world)))
            cost.contents += [("report", here[i]) + tuple(v for _, v in observed[i]) for i in members]
        return {i: candidates[streams[i].uniform_int(len(candidates))] for i in members}
    own = {i: _best_observed(world, here[i], pays[i], streams[i]) for i in members}
    if name == "auction" and "cpp_auction" in cpp:  # BiddingLocalSearchAgent::updateMyBid, agent by agent
        for i in members:
            if own[i][1] >= memory.get("bid", -math.inf):  # main.cpp starts at -1; bids are >= -1
                memory["bid"], memory["target"] = own[i][1], world.step_toward(here[i], own[i][0])
        cost.add(m * (m - 1), m * (m - 1) * (64 + _cell_bits(world)))
        cost.contents += [("bid",) + own[i] for i in members]
        return {i: memory["target"] for i in members}
    if name == "auction":
        winner = max(members, key=lambda i: (own[i][1], -i))  # the highest bid; first agent on ties
        target = own[winner][0]
        if params["sticky"] == "true":
            if own[winner][1] > memory.get("bid", -math.inf):
                memory["bid"], memory["target"] = own[winner][1], target
            target = memory["target"]
        cost.add(m * (m - 1), m * (m - 1) * (64 + _cell_bits(world)))
        cost.contents += [("bid",) + own[i] for i in members]
        return {i: target for i in members}
    if name == "dictatorship":
        target = own[members[int(params["dictator"])]][0]
        cost.add(m - 1, (m - 1) * _cell_bits(world))
        cost.contents.append(("order", target))
        return {i: target for i in members}
    if name == "hierarchy":  # rank k (1-based) reports to rank k // 2
        targets = {}
        for rank, i in enumerate(members, start=1):
            best = i
            for child in (2 * rank, 2 * rank + 1):
                if "cpp_binary_tree" not in cpp and child <= m and own[members[child - 1]][1] > own[best][1]:
                    best = members[child - 1]
            targets[i] = own[best][0]
        cost.add(m - 1, (m - 1) * (64 + _cell_bits(world)))
        cost.contents += [("choice report",) + own[i] for i in members[1:]]
        return targets
    raise ValueError(f"the reference does not know protocol {name!r}")


def _play(world, behaviours, good, evil, starts, hidden_start, streams, tables, learner, protocol, cost, cpp,
          learning, heard=None, overheard=None, noise=None):
    """One pass. `heard`, when given, receives per iteration the cells, payoffs and copies of the streams
    the protocol spoke from; with `overheard` (another pass's `heard`) the members hear the sham control's
    messages (`_overheard_targets`) instead of their own protocol's. `noise`: the agents' noise streams
    (`_noise_streams`), under the noise control."""
    T = world.iterations
    world = replace(world, direct_ties="cpp_approach_position" in cpp)
    hears = _hears(behaviours, protocol)  # the learners hear the protocol (their state pairs it with their own)
    memory = {}  # protocol state that lasts the pass
    positions = [list(starts)]
    rewards = []
    hidden = hidden_start
    pending = {}  # SARSA: agent -> (state, action, scaled reward) awaiting the next action
    for t in range(T):
        here = positions[-1]
        pays = world.payoffs(good, evil, t)
        if "cpp_first_observation" in cpp and t == 0 and not learning:
            pays = _reset_field(world)
        chosen_actions = {}
        moved = []
        targets = {}
        if protocol.name not in ("none", "shared_q"):
            if heard is not None:
                heard.append((list(here), pays, [copy.copy(stream) for stream in streams]))
            if overheard is None:
                targets = _targets(world, protocol, here, [pays] * len(here), streams, memory, cost, cpp)
            else:
                targets = _overheard_targets(world, protocol, here, pays, streams, overheard[t], memory, cpp)
        for i, behaviour in enumerate(behaviours):
            cell, stream = here[i], streams[i]
            if i in targets and behaviour not in LEARNERS:
                moved.append(world.step_toward(cell, targets[i]))
            elif behaviour == "random":
                dr, dc = ACTION_MOVES[stream.uniform_int(9)]
                moved.append(world.moved(cell, dr, dc))
            elif behaviour == "local_search":
                moved.append(_local_search(world, cell, pays, stream))
            elif behaviour == "oracle":
                moved.append(world.step_toward(cell, _oracle_target(world, cell, t, good, cpp)))
            elif behaviour == "imitation":
                if "cpp_imitation" in cpp:  # main.cpp: the hidden oracle steps before each imitator acts
                    hidden = world.step_toward(hidden, _oracle_target(world, hidden, t, good, cpp))
                if world.distance(cell, hidden) <= world.observation_range:
                    moved.append(world.step_toward(cell, hidden))
                else:
                    moved.append(_local_search(world, cell, pays, stream))
            else:
                q = tables[i]
                symbol = None
                if hears and noise is not None:  # the noise control: a draw in the symbol's place
                    symbol = noise[i].uniform_int(HEARD_SYMBOLS)
                elif hears and protocol.hearing == "real":
                    symbol = _heard(world, cell, targets.get(i))
                state = _state(world, learner, cell, t, pays, symbol)
                if learning and hears and behaviour == "q_learning" and i in pending:  # s' known: the last update
                    s0, a0, r0 = pending.pop(i)
                    q[s0][a0] += learner.alpha * (r0 + learner.gamma * max(q[state]) - q[s0][a0])
                if protocol.name == "shared_q" and learning:  # protocols/shared_q.py: a table that learns
                    address = math.ceil(math.log2(max(2, _table_states(world, learner) * 9)))
                    bootstraps = behaviour == "q_learning" and t + 1 < T
                    cost.add(1 + bootstraps, (1 + bootstraps) * (9 * 64 + address), ("reads_and_writes",))
                    cost.add(1, 64 + address)
                if learning and learner.epsilon > 0 and stream.uniform_float() < learner.epsilon:
                    action = stream.uniform_int(9)
                else:
                    action = _greedy(q[state], stream)
                if learning and behaviour == "sarsa" and i in pending and "cpp_learner_bootstrap" not in cpp:
                    s0, a0, r0 = pending.pop(i)
                    q[s0][a0] += learner.alpha * (r0 + learner.gamma * q[state][action] - q[s0][a0])
                chosen_actions[i] = (state, action)
                dr, dc = ACTION_MOVES[action]
                moved.append(world.moved(cell, dr, dc))
        if hidden is not None and "cpp_imitation" not in cpp:
            hidden = world.step_toward(hidden, _oracle_target(world, hidden, t, good, cpp))
        good_next, evil_next = good[t + 1], evil[t + 1]
        near_good = sum(world.distance(c, good_next) <= world.reward_radius for c in moved)
        paid = world.coordination_threshold <= 1 or near_good >= world.coordination_threshold  # paper 003 §6.1
        pays_next = world.payoffs(good, evil, t + 1)
        step_rewards = []
        for i, cell in enumerate(moved):
            # without coordination the positive part of Λ*'s reward is withheld (§6.1; Λ* only)
            reward = pays_next(cell) if paid else -world.f(world.distance(cell, evil_next))
            step_rewards.append(reward)
            if learning and i in chosen_actions:
                q = tables[i]
                state, action = chosen_actions[i]
                scaled = reward * learner.reward_scale
                if "cpp_learner_bootstrap" in cpp and behaviours[i] == "q_learning":  # from (cell, t=0)
                    q[state][action] += learner.alpha * (scaled + learner.gamma * max(q[(cell, 0)]) - q[state][action])
                elif "cpp_learner_bootstrap" in cpp:  # SARSA: a' at (cell, t), the same t, then dropped
                    following = q[(cell, t)]
                    if learner.epsilon > 0 and streams[i].uniform_float() < learner.epsilon:
                        next_action = streams[i].uniform_int(9)
                    else:
                        next_action = _greedy(following, streams[i])
                    q[state][action] += learner.alpha * (scaled + learner.gamma * following[next_action]
                                                         - q[state][action])
                elif behaviours[i] == "q_learning" and not hears:
                    future = max(q[_state(world, learner, cell, t + 1, pays_next)]) if t + 1 < T else 0.0
                    q[state][action] += learner.alpha * (scaled + learner.gamma * future - q[state][action])
                elif t + 1 < T:  # SARSA, or a Q-learner that hears: the update waits for the next state
                    pending[i] = (state, action, scaled)
                else:
                    q[state][action] += learner.alpha * (scaled - q[state][action])
        positions.append(moved)
        rewards.append(step_rewards)
    return positions, rewards
