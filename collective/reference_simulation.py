"""The slow, obviously-correct Λ* simulator: one episode at a time in plain Python.

It restates spec §1 and §5 (paper 003 §4.1, §5.2.1) with coordinates and dictionaries, no
vectorisation and no shortcuts: all agents act together in every pass, training passes included.
Each agent draws from its own stream per pass, seeded as the compiled kernel seeds it, so tests
can run both in lock-step and demand identical trajectories and rewards. It is for tests and
small worked examples only.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from collective.random_streams import SplitMix64

ACTION_MOVES = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)]  # paper 003 §5.1 order


@dataclass(frozen=True)
class ReferenceWorld:
    rows: int
    cols: int
    iterations: int
    observation_range: int = 1
    reward_radius: int = 1
    coordination_threshold: int = 1

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

    def step_toward(self, cell: int, target: int) -> int:
        """One king step toward target, the shorter way round each axis; half-way goes forward."""
        (r, c), (tr, tc) = self.coordinates(cell), self.coordinates(target)
        return self.moved(cell, _axis_step(r, tr, self.rows), _axis_step(c, tc, self.cols))


def _axis_step(a: int, b: int, size: int) -> int:
    forward = (b - a) % size
    if forward == 0:
        return 0
    return 1 if forward <= size - forward else -1


@dataclass
class LearnerSettings:
    alpha: float = 0.3
    gamma: float = 0.3
    epsilon: float = 0.0
    q_initial: float = 0.0
    training_passes: int = 100
    reward_scale: float = 1.0


def reference_episode(world: ReferenceWorld, behaviours: list[str], good: list[int], evil: list[int],
                      starts: list[int], seed: int, learner: LearnerSettings | None = None
                      ) -> tuple[list[list[int]], list[list[float]]]:
    """Play one episode; returns the scored pass's positions [T+1][agents] and rewards [T][agents]."""
    learner = learner or LearnerSettings()
    n_cells = world.rows * world.cols
    world_stream = SplitMix64.for_stream(seed, stream_id=0, pass_index=0)
    hidden_start = world_stream.uniform_int(n_cells) if "imitation" in behaviours else None
    tables = {i: defaultdict(lambda: [learner.q_initial] * 9)
              for i, b in enumerate(behaviours) if b in ("q_learning", "sarsa")}
    passes = learner.training_passes if tables else 0
    for p in range(passes):
        streams = [SplitMix64.for_stream(seed, i + 1, pass_index=p + 1) for i in range(len(behaviours))]
        _play(world, behaviours, good, evil, starts, hidden_start, streams, tables, learner, learning=True)
    streams = [SplitMix64.for_stream(seed, i + 1, pass_index=0) for i in range(len(behaviours))]
    return _play(world, behaviours, good, evil, starts, hidden_start, streams, tables, learner, learning=False)


def _earliest_interception(world, cell, t, good):
    """The oracle's target (paper 003 §5.2.1): the earliest τ > t with d(cell, ⊕_τ) <= τ - t."""
    for tau in range(t + 1, world.iterations + 1):
        if world.distance(cell, good[tau]) <= tau - t:
            return good[tau]
    return good[world.iterations]


def _local_search(world, cell, good_now, evil_now, stream):
    observed = [(world.reward(c, good_now, evil_now), dr, dc) for c, dr, dc in world.window(cell)]
    best = max(value for value, _, _ in observed)
    ties = [(dr, dc) for value, dr, dc in observed if value == best]
    dr, dc = ties[stream.uniform_int(len(ties))]
    return world.moved(cell, (dr > 0) - (dr < 0), (dc > 0) - (dc < 0))


def _greedy(values, stream):
    best = max(values)
    ties = [a for a in range(9) if values[a] == best]
    return ties[stream.uniform_int(len(ties))]


def _play(world, behaviours, good, evil, starts, hidden_start, streams, tables, learner, learning):
    T = world.iterations
    positions = [list(starts)]
    rewards = []
    hidden = hidden_start
    pending = {}  # SARSA: agent -> (state, action, scaled reward) awaiting the next action
    for t in range(T):
        here = positions[-1]
        chosen_actions = {}
        moved = []
        for i, behaviour in enumerate(behaviours):
            cell, stream = here[i], streams[i]
            if behaviour == "random":
                dr, dc = ACTION_MOVES[stream.uniform_int(9)]
                moved.append(world.moved(cell, dr, dc))
            elif behaviour == "local_search":
                moved.append(_local_search(world, cell, good[t], evil[t], stream))
            elif behaviour == "oracle":
                moved.append(world.step_toward(cell, _earliest_interception(world, cell, t, good)))
            elif behaviour == "imitation":
                if world.distance(cell, hidden) <= world.observation_range:
                    moved.append(world.step_toward(cell, hidden))
                else:
                    moved.append(_local_search(world, cell, good[t], evil[t], stream))
            else:
                q = tables[i]
                state = (cell, t)
                if learning and learner.epsilon > 0 and stream.uniform_float() < learner.epsilon:
                    action = stream.uniform_int(9)
                else:
                    action = _greedy(q[state], stream)
                if learning and behaviour == "sarsa" and i in pending:
                    s0, a0, r0 = pending.pop(i)
                    q[s0][a0] += learner.alpha * (r0 + learner.gamma * q[state][action] - q[s0][a0])
                chosen_actions[i] = (state, action)
                dr, dc = ACTION_MOVES[action]
                moved.append(world.moved(cell, dr, dc))
        if hidden is not None:
            hidden = world.step_toward(hidden, _earliest_interception(world, hidden, t, good))
        good_next, evil_next = good[t + 1], evil[t + 1]
        near_good = sum(world.distance(c, good_next) <= world.reward_radius for c in moved)
        paid = near_good >= world.coordination_threshold  # paper 003 §6.1
        step_rewards = []
        for i, cell in enumerate(moved):
            positive = world.f(world.distance(cell, good_next)) if paid else 0.0
            reward = positive - world.f(world.distance(cell, evil_next))
            step_rewards.append(reward)
            if learning and i in chosen_actions:
                q = tables[i]
                state, action = chosen_actions[i]
                scaled = reward * learner.reward_scale
                if behaviours[i] == "q_learning":
                    future = max(q[(cell, t + 1)]) if t + 1 < T else 0.0
                    q[state][action] += learner.alpha * (scaled + learner.gamma * future - q[state][action])
                elif t + 1 < T:
                    pending[i] = (state, action, scaled)
                else:
                    q[state][action] += learner.alpha * (scaled - q[state][action])
        positions.append(moved)
        rewards.append(step_rewards)
    return positions, rewards
