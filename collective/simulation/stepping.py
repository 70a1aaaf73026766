"""The open stepping core: a batch of episodes advanced one iteration at a time for any plug-in
(spec §1, §5-6; paper 003 §4.1, §5.2).

`SteppingCore` holds the state of E episodes of one group of A agents as arrays shaped
(episodes, agents, ...): cells, last rewards, the protocol's targets and fields, and each agent's
splitmix64 stream (the kernel's, `random_streams.derive_stream_seed`). Its environment work,
observing windows and moving and paying agents, is compiled. `play_group` runs a `Group` of
plug-ins through it, one Python call per plug-in per iteration for the whole batch, in the fused
kernel's order (`collective.simulation.kernel`): every agent observes, the protocol speaks to its
members, every behaviour acts, all move, ⊕/⊖ take their next step and rewards come from the new
cells. Kernel built-ins join such groups through `collective.simulation.compiled_plugins`.

The sham-communication control (`play_overhearing`) steps two copies of a group in lock-step: one
plays each scored episode's shadow for real; in the scored episodes, each member of the other keeps its
own sensing and its own part in the protocol, and hears from the others what they said in the shadow.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from collective.environments.scene import Scene, field_ref, reset_scene, scene_reward
from collective.environments.torus import wrap
from collective.simulation.kernel import NO_SWITCHES, SCORED_PASS, KernelSwitches, quorum_pays, step_reward
from collective.simulation.plugins import Batch, Messages, Observation, PluginClass, PluginError, plugin_code
from collective.simulation.random_streams import AgentStreams, derive_stream_seed
from collective.protocols.kernel_support import READS_AND_WRITES, episode_distinct, episode_entropies, list_logs, log_deliveries


@njit(cache=True)
def scene_at(good, evil, landscapes, e, t, rows, cols, radius):
    """Episode e's scene at iteration t (a landscape moved as far as ⊕, its global optimum, has)."""
    gr, gc = np.int64(good[e, t]) // cols, np.int64(good[e, t]) % cols
    shift_r = (gr - np.int64(good[e, 0]) // cols) % rows
    shift_c = (gc - np.int64(good[e, 0]) % cols) % cols
    return Scene(gr, gc, np.int64(evil[e, t]) // cols, np.int64(evil[e, t]) % cols, field_ref(landscapes[e]),
                 shift_r, shift_c, rows, cols, radius)


@njit(cache=True)
def observed_scene(good, evil, landscapes, e, t, rows, cols, radius, reset_first_observation):
    """What agents observe at iteration t: the scene, or at t = 0 under `cpp_first_observation` the
    2016 program's reset field (`collective.environments.scene.reset_scene`)."""
    if reset_first_observation and t == 0:
        return reset_scene(field_ref(landscapes[e]), rows, cols)
    return scene_at(good, evil, landscapes, e, t, rows, cols, radius)


@njit(cache=True, nogil=True)
def observe_windows(good, evil, landscapes, t, cells, rows, cols, view, radius, reset_first_observation, out):
    """out[e, i] = R over agent i's range-`view` Moore window at iteration t, row by row (spec §1).
    good, evil (E, T+1) cells; landscapes (E, N), (E, 0) for Λ*; cells (E, A); out (E, A, 2k+1, 2k+1)."""
    for e in range(cells.shape[0]):
        scene = observed_scene(good, evil, landscapes, e, t, rows, cols, radius, reset_first_observation)
        for i in range(cells.shape[1]):
            r, c = cells[e, i] // cols, cells[e, i] % cols
            for dr in range(-view, view + 1):
                row = wrap(r + dr, rows)
                for dc in range(-view, view + 1):
                    out[e, i, dr + view, dc + view] = scene_reward(scene, row, wrap(c + dc, cols))


@njit(cache=True, nogil=True)
def advance(cells, actions, good, evil, landscapes, t, rows, cols, radius, threshold, rewards, totals, agent_totals):
    """Move every agent by its action (a // 3 - 1 rows, a % 3 - 1 columns), then pay R at t+1
    into rewards (E, A); under a coordination threshold the positive part is paid only when enough
    agents stand near Good (paper 003 §6.1, Λ* only). totals (E,) accumulates the rewards in the
    kernel's order (iteration, then agent), so R̄ matches the kernel's to the bit; agent_totals
    (E, A) each agent's."""
    episodes, agents = cells.shape
    for e in range(episodes):
        for i in range(agents):
            a = actions[e, i]
            r = wrap(cells[e, i] // cols + a // 3 - 1, rows)
            c = wrap(cells[e, i] % cols + a % 3 - 1, cols)
            cells[e, i] = r * cols + c
        after = scene_at(good, evil, landscapes, e, t + 1, rows, cols, radius)
        # (the rows and columns are made only under a quorum)
        paid = quorum_pays(cells[e] // cols, cells[e] % cols, agents, after, threshold) if threshold > 1 else True
        for i in range(agents):
            reward = step_reward(after, cells[e, i] // cols, cells[e, i] % cols, paid)
            rewards[e, i] = reward
            totals[e] += reward
            agent_totals[e, i] += reward


@njit(cache=True, nogil=True)
def seed_streams(agent_seeds, agents, pass_index, streams):
    """streams[e, i, 0] = the kernel's seed of agent i's stream in episode e (`derive_stream_seed`)."""
    for e in range(agent_seeds.shape[0]):
        for i in range(agents):
            streams[e, i, 0] = derive_stream_seed(agent_seeds[e], i + 1, pass_index)


class SteppingCore:
    """E episodes of one group of A agents, stepped together (state arrays shaped (episodes, agents))."""

    def __init__(self, environments, group_size: int, rows: int, cols: int, iterations: int, view: int,
                 radius: int, threshold: int, switches: KernelSwitches = NO_SWITCHES):
        self.rows, self.cols, self.iterations, self.view = rows, cols, iterations, view
        self.radius, self.threshold = radius, threshold
        self.switches = switches  # the 2016 program's (its first_episode is unused: see episode_index)
        self.episode_index = environments.episode_index  # (E,) or None
        self.episodes, self.agents = len(environments), group_size
        self.good = np.ascontiguousarray(environments.good, np.int64)  # (E, T+1) ⊕ cells
        self.evil = np.ascontiguousarray(environments.evil, np.int64)  # (E, T+1) ⊖ cells
        self.landscapes = environments.fields()  # (E, N) base fields, (E, 0) for Λ*
        self.agent_seeds = environments.agent_seeds  # (E,)
        self.cells = np.array(environments.starts, np.int64)  # (E, A)
        self.reward = np.zeros((self.episodes, group_size))  # (E, A) the last reward
        self.totals = np.zeros(self.episodes)  # (E,) rewards so far
        self.agent_totals = np.zeros((self.episodes, group_size))  # (E, A) each agent's rewards so far
        self.streams = np.empty((self.episodes, group_size, 1), np.uint64)  # (E, A, 1) splitmix64 states
        seed_streams(self.agent_seeds, group_size, SCORED_PASS, self.streams)
        self.t = 0

    def observe(self) -> Observation:
        """Every agent's observation at the current iteration, before its protocol speaks."""
        side = 2 * self.view + 1
        window = np.empty((self.episodes, self.agents, side, side))
        observe_windows(self.good, self.evil, self.landscapes, self.t, self.cells, self.rows, self.cols, self.view,
                        self.radius, bool(self.switches.first_observation), window)
        return read_only(Observation(window, self.cells.copy(), self.t, self.reward.copy(),
                                     np.full((self.episodes, self.agents), -1, np.int64), np.zeros(window.shape)))

    @staticmethod
    def hear(obs: Observation, said: Messages, members) -> Observation:
        """A new observation with the protocol's targets and fields delivered to its members (`obs` is
        read-only: what a protocol hands its members goes through its Messages, counted)."""
        target, field = obs.target.copy(), obs.field.copy()
        if said.target is not None:
            target[:, members] = said.target
        if said.field is not None:
            field[:, members] = said.field
        return read_only(Observation(obs.window, obs.cell, obs.t, obs.reward, target, field))

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Move everyone by actions (E, A) in 0..8 and pay them; returns the rewards (E, A)."""
        rewards = np.empty((self.episodes, self.agents))
        advance(self.cells, actions, self.good, self.evil, self.landscapes, self.t, self.rows, self.cols,
                self.radius, self.threshold, rewards, self.totals, self.agent_totals)
        self.reward = rewards
        self.t += 1
        return rewards


def _call(instance, spec: str, method: str, *args):
    """A plug-in's method; anything it raises becomes a PluginError naming it and the method (`plugin_code`)."""
    with plugin_code(spec, method):
        return getattr(instance, method)(*args)


def checked_actions(actions, spec: str, shape: tuple[int, int]) -> np.ndarray:
    """The actions if they are integers 0..8 shaped (E, A); else a PluginError saying what is wrong."""
    array = np.asarray(actions)
    if array.shape != shape:
        raise PluginError(spec, "act", f"returned actions shaped {array.shape}; expected (episodes, agents) = {shape}")
    if array.dtype.kind not in "iu":
        raise PluginError(spec, "act", f"returned actions of dtype {array.dtype}; expected integers 0..8")
    if array.size and (array.min() < 0 or array.max() > 8):
        raise PluginError(spec, "act", f"returned actions in {array.min()}..{array.max()}; the nine actions are 0..8")
    return array


def checked_messages(messages, spec: str, shape: tuple[int, int], side: int, n_cells: int) -> Messages:
    """The protocol's Messages if valid (targets -1..N-1, finite fields, counts >= 0); else a PluginError."""
    def fail(message: str):
        raise PluginError(spec, "communicate", message)

    if not isinstance(messages, Messages):
        fail(f"returned {type(messages).__name__}; expected collective.Messages")
    if messages.target is not None:
        target = np.asarray(messages.target)
        if target.shape != shape or target.dtype.kind not in "iu":
            fail(f"target must be integers shaped (episodes, members) = {shape} (got {target.dtype} {target.shape})")
        if target.size and (target.min() < -1 or target.max() >= n_cells):
            fail(f"target must hold cells 0..{n_cells - 1}, or -1 for none (got {target.min()}..{target.max()})")
    if messages.field is not None:
        field = np.asarray(messages.field)
        if field.shape != shape + (side, side) or field.dtype.kind not in "fiu":
            fail(f"field must be numbers shaped {shape + (side, side)} (got {field.dtype} {field.shape})")
        if not np.isfinite(field).all():
            fail("field holds NaN or infinite values")
    for name in ("messages", "bits"):
        value = getattr(messages, name)
        if not isinstance(value, (int, float, np.number)) or not np.isfinite(value) or value < 0:
            fail(f"{name} must be a finite number >= 0 (got {value!r})")
    return messages


def _agents_index(agents: np.ndarray) -> slice | np.ndarray:
    """A slice when the agents are contiguous (observations are then views), else the index array."""
    if agents.size and np.array_equal(agents, np.arange(agents[0], agents[0] + agents.size)):
        return slice(int(agents[0]), int(agents[0]) + agents.size)
    return agents


def read_only(obs: Observation) -> Observation:
    """`obs` with its arrays made read-only (issue 24 point 4): a plug-in that writes into what it is
    handed (a protocol steering agents through obs.window, uncounted) raises ValueError instead.
    Views of a read-only array cannot be made writeable again."""
    for array in (obs.window, obs.cell, obs.reward, obs.target, obs.field):
        array.flags.writeable = False
    return obs


def agents_part(obs: Observation, agents) -> Observation:
    """The agents' part of a read-only observation: views when `agents` is a slice, read-only copies else."""
    return read_only(Observation(obs.window[:, agents], obs.cell[:, agents], obs.t, obs.reward[:, agents],
                                 obs.target[:, agents], obs.field[:, agents]))


@dataclass
class Member:
    """One plug-in object of a group and the group's agents it serves (a behaviour's agents, or a
    protocol's members)."""

    plugin: PluginClass
    instance: object
    agents: np.ndarray  # (A_m,) indices into the group

    def reset(self, core: SteppingCore, lanes: np.ndarray | None = None) -> None:
        """Start a batch: built-ins bind to the core; then the plug-in's own `reset(batch)`, its streams
        the core's, or `lanes` (E, A) when given."""
        if hasattr(self.instance, "bind_core"):
            self.instance.bind_core(core, self.agents)
        if callable(getattr(self.instance, "reset", None)):
            index = _agents_index(self.agents)
            seeds = [int(s) for s in core.agent_seeds] + [int(a) for a in self.agents]
            batch = Batch(core.episodes, self.agents.size, core.rows, core.cols, core.iterations, core.view,
                          self.agents.copy(), AgentStreams(core.streams[:, :, 0] if lanes is None else lanes, index),
                          np.random.default_rng(np.random.SeedSequence(seeds)))
            _call(self.instance, self.plugin.spec, "reset", batch)


class Group:
    """A group as the stepping core plays it: behaviour plug-ins over their agents and an optional
    protocol over its members. Built from a validated config by
    `collective.evaluation.stepping_group.plugin_group`."""

    def __init__(self, behaviours: list[Member], protocol: Member | None, size: int, rows: int, cols: int,
                 iterations: int, view: int, radius: int, threshold: int, switches: KernelSwitches = NO_SWITCHES):
        self.behaviours, self.protocol, self.size = behaviours, protocol, size
        self.rows, self.cols, self.iterations, self.view = rows, cols, iterations, view
        self.radius, self.threshold, self.switches = radius, threshold, switches

    @property
    def persistent(self) -> bool:
        """Whether a plug-in keeps what it learned across batches (they are then played in order)."""
        members = self.behaviours + ([self.protocol] if self.protocol else [])
        return any(m.plugin.persistent for m in members)


@dataclass(frozen=True)
class GroupRun:
    """One batch played through the stepping core."""

    mean_rewards: np.ndarray  # (E,) R̄ per episode (paper 003 Definition 2)
    seconds: float
    messages: float
    bits: float
    agent_scores: np.ndarray  # (E, A) each agent's mean reward per iteration
    positions: np.ndarray | None = None  # (E, T+1, A) with record
    rewards: np.ndarray | None = None  # (E, T, A) with record
    transfers: float = 0.0  # messages under the reads_and_writes accounting (a plug-in's own count)
    message_entropy: np.ndarray | None = None  # (E,) bits per message (NaN: no messages)
    distinct_messages: np.ndarray | None = None  # (E,) distinct messages of the episode (NaN: no messages)


class DeliveryLog:
    """The message symbols of a plug-in protocol, whose own messages the core cannot see: one symbol
    per member per iteration for what it is handed (target and field), logged per episode."""

    def __init__(self, episodes: int, iterations: int, members: int):
        self.logs = list_logs(episodes, iterations * members)  # (E, HEADER + T·M)

    def add(self, said: Messages, shape: tuple[int, int]) -> None:
        no_target, no_field = np.empty((0, 0), np.int64), np.empty((0, 0, 0))
        target = no_target if said.target is None else np.ascontiguousarray(said.target, np.int64)
        field = no_field if said.field is None else \
            np.ascontiguousarray(np.asarray(said.field, np.float64).reshape(shape + (-1,)))
        if said.target is not None or said.field is not None:
            log_deliveries(target, field, self.logs)

    def entropy(self) -> np.ndarray:
        out = np.empty(self.logs.shape[0])
        episode_entropies(self.logs, out)
        return out

    def distinct(self) -> np.ndarray:
        out = np.empty(self.logs.shape[0])
        episode_distinct(self.logs, out)
        return out


class Playing:
    """One group on its own core, iteration by iteration: the loop of `play_group`, split so that the
    sham control can step two groups in lock-step and the RL adapters one with the caller's actions. `speaks`: the group's protocol talks (else its
    members only hear what they are handed)."""

    def __init__(self, group: Group, environments, record: bool, speaks: bool = True):
        self.core = core = SteppingCore(environments, group.size, group.rows, group.cols, group.iterations, group.view,
                                        group.radius, group.threshold, group.switches)
        for member in group.behaviours + ([group.protocol] if group.protocol and speaks else []):
            member.reset(core)
        self.indices = [(m, _agents_index(m.agents)) for m in group.behaviours]
        self.observers = [(m, i) for m, i in self.indices if callable(getattr(m.instance, "observe", None))]
        self.protocol = group.protocol
        self.members = _agents_index(group.protocol.agents) if group.protocol else None
        self.speaks = speaks and group.protocol is not None
        self.builtin = self.speaks and hasattr(group.protocol.instance, "message_entropy")
        self.deliveries = DeliveryLog(core.episodes, core.iterations, group.protocol.agents.size) \
            if self.speaks and not self.builtin else None
        self.record = record
        self.positions = np.empty((core.episodes, core.iterations + 1, core.agents), np.int32) if record else None
        self.rewards = np.empty((core.episodes, core.iterations, core.agents)) if record else None
        if record:
            self.positions[:, 0] = core.cells
        self.actions = np.empty((core.episodes, core.agents), np.int64)
        self.messages = self.bits = 0.0

    def speak(self, obs: Observation) -> Messages:
        """The protocol's messages for this iteration, checked, logged and counted."""
        core, protocol = self.core, self.protocol
        said = _call(protocol.instance, protocol.plugin.spec, "communicate", agents_part(obs, self.members))
        said = checked_messages(said, protocol.plugin.spec, (core.episodes, protocol.agents.size), 2 * core.view + 1,
                                core.rows * core.cols)
        if self.deliveries:
            self.deliveries.add(said, (core.episodes, protocol.agents.size))
        self.messages, self.bits = self.messages + float(said.messages), self.bits + float(said.bits)
        return said

    def move(self, obs: Observation, said: Messages | None) -> None:
        """The members hear `said`; every behaviour acts; all move and are paid."""
        core = self.core
        if said is not None:
            obs = core.hear(obs, said, self.members)
        for member, index in self.indices:
            acted = _call(member.instance, member.plugin.spec, "act", agents_part(obs, index))
            self.actions[:, index] = checked_actions(acted, member.plugin.spec, (core.episodes, member.agents.size))
        rewards = core.step(self.actions)
        handed = rewards.copy()  # read-only, as observations are
        handed.flags.writeable = False
        for member, index in self.observers:
            _call(member.instance, member.plugin.spec, "observe", handed[:, index])
        if self.record:
            self.positions[:, core.t] = core.cells
            self.rewards[:, core.t - 1] = rewards

    def result(self, seconds: float, traffic: "Playing | None" = None) -> GroupRun:
        """This group's run, with the traffic of `traffic`'s protocol (default its own)."""
        core, talker = self.core, traffic or self
        if talker.builtin:
            transfers = float(talker.protocol.instance.comm[READS_AND_WRITES])
            entropy, distinct = talker.protocol.instance.message_entropy(), talker.protocol.instance.distinct_messages()
        else:
            transfers = talker.messages
            entropy, distinct = (talker.deliveries.entropy(), talker.deliveries.distinct()) if talker.deliveries \
                else (np.full(core.episodes, np.nan), np.full(core.episodes, np.nan))
        return GroupRun(core.totals / (core.agents * core.iterations), seconds, talker.messages, talker.bits,
                        core.agent_totals / core.iterations, self.positions, self.rewards, transfers, entropy, distinct)


def play_group(group: Group, environments, record: bool = False) -> GroupRun:
    """Play a batch of episodes (an `EnvironmentBatch`) with the group; R̄ per episode, the
    protocol's traffic and message entropy and, with `record`, the trajectories."""
    playing = Playing(group, environments, record)
    started = time.perf_counter()
    for _ in range(playing.core.iterations):
        obs = playing.core.observe()
        playing.move(obs, playing.speak(obs) if playing.speaks else None)
    return playing.result(time.perf_counter() - started)


class _Overhearing:
    """What the members of a listening group hear under the sham control (issue 22 point 2): each member i
    hears what the protocol would tell it were i where it is in its own episode (its observation, its
    stream, its own report, bid, deposit or write) and every other member where it is in the shadow
    episode (their observations, and their streams as they were when the shadow's protocol spoke). Each
    member has its own copy of the protocol's state: a built-in's fields (`CompiledProtocol.overhear`), or
    a plug-in's whole object, one deep copy per member made before the batch's reset, drawing from its
    own copy of the streams (the shadow's lanes, the member's own lane the core's)."""

    def __init__(self, protocol: Member, core: SteppingCore):
        self.protocol, self.core = protocol, core
        self.builtin = hasattr(protocol.instance, "overhear")
        if self.builtin:
            protocol.reset(core)
        else:
            self.lanes = np.repeat(core.streams[None, :, :, 0], protocol.agents.size, axis=0)  # (M, E, A)
            self.copies = [Member(protocol.plugin, copy.deepcopy(protocol.instance), protocol.agents)
                           for _ in protocol.agents]
            for member, lanes in zip(self.copies, self.lanes):
                member.reset(core, lanes)

    def hear(self, obs: Observation, heard: Observation, heard_streams: np.ndarray, shadow: SteppingCore) -> Messages:
        """The members' messages at this iteration: obs the group's observation, heard the shadow group's and
        heard_streams (E, A, 1) its streams, both taken before the shadow's protocol spoke."""
        core, protocol = self.core, self.protocol
        if self.builtin:
            return protocol.instance.overhear(obs.t, heard.cell, heard_streams, shadow)
        members = protocol.agents
        episodes, side = core.episodes, 2 * core.view + 1
        target, field = np.full((episodes, members.size), -1, np.int64), np.zeros((episodes, members.size, side, side))
        told = np.zeros(2, bool)  # whether any copy gave a target, a field
        for k, (member, lanes) in enumerate(zip(self.copies, self.lanes)):
            listener = members[k]
            mixed = Observation(heard.window[:, members], heard.cell[:, members], obs.t, heard.reward[:, members],
                                obs.target[:, members], obs.field[:, members])  # nothing delivered yet
            for name in ("window", "cell", "reward"):
                getattr(mixed, name)[:, k] = getattr(obs, name)[:, listener]
            read_only(mixed)
            lanes[:] = heard_streams[:, :, 0]
            lanes[:, listener] = core.streams[:, listener, 0]
            said = checked_messages(_call(member.instance, protocol.plugin.spec, "communicate", mixed),
                                    protocol.plugin.spec, (episodes, members.size), side, core.rows * core.cols)
            core.streams[:, listener, 0] = lanes[:, listener]
            if said.target is not None:
                target[:, k], told[0] = np.asarray(said.target)[:, k], True
            if said.field is not None:
                field[:, k], told[1] = np.asarray(said.field)[:, k], True
        return Messages(target=target if told[0] else None, field=field if told[1] else None)


def play_overhearing(group: Group, speaker: Group, environments, shadows, record: bool = False) -> GroupRun:
    """The sham-communication control: `speaker`, a second copy of the group, plays the shadow episodes
    `shadows` for real, protocol included; in `environments`, each member of `group` keeps its own sensing
    and its own part in the protocol, and what the other members tell it is what they told in the shadow
    (`_Overhearing`). The run of `group` on `environments`, with the traffic and message entropy of the
    shadows' protocol (what the others said)."""
    listening, speaking = Playing(group, environments, record, speaks=False), Playing(speaker, shadows, False)
    overhearing = _Overhearing(group.protocol, listening.core)
    started = time.perf_counter()
    for _ in range(listening.core.iterations):
        shadow = speaking.core.observe()
        streams = speaking.core.streams.copy()
        said = speaking.speak(shadow)
        speaking.move(shadow, said)
        obs = listening.core.observe()
        listening.move(obs, overhearing.hear(obs, shadow, streams, speaking.core))
    return listening.result(time.perf_counter() - started, traffic=speaking)
