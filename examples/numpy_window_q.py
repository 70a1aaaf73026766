"""A window-sign Q-learner as a NumPy plug-in (issue 21's 30-line learner), to compare with the built-in
`q_learning` under `learner_state` window_signs (collective/simulation/kernel.py, `window_state_base`).

State: the sign (< 0, 0, > 0) of the reward of each cell of the inner 3x3 of the agent's window, row by
row, the first cell the most significant digit (0, 1, 2): 3^9 states, the built-in's encoding. Textbook
Q-learning (Watkins 1989; paper 003 Algorithm 1): Q(s, a) += α (r + γ max Q(s', ·) − Q(s, a)), the state
after the last iteration terminal. ε-greedy while `learning`, greedy otherwise; ties broken uniformly
(`tie_break` uniform) or to the first action (`first`). One table for the agents it serves (`table`
group) or one per agent (`agent`). It is persistent: the table is kept across batches, which are played
in episode order, and updated transition by transition in (episode, agent) order within an iteration.
A group table pools the agents' experience as `shared_q` does, so the agents then learn from one another;
the class does not declare `centralised` because it is a diagnostic for benchmarks/window_q_comparison.py:
in a sweep, use table=agent, or the built-in `shared_q`, whose traffic is counted.
"""
import numpy as np

from collective import Parameter

STATES = 3 ** 9
DIGITS = 3 ** np.arange(8, -1, -1)  # the first window cell is the most significant digit


def window_signs(window):
    """(E, A) state codes of the inner 3x3 of (E, A, 2k+1, 2k+1) windows."""
    k = window.shape[-1] // 2
    inner = window[..., k - 1:k + 2, k - 1:k + 2].reshape(window.shape[:2] + (9,))
    return (np.sign(inner).astype(np.int64) + 1) @ DIGITS


class WindowQ:
    """Tabular Q-learning on the signs of the 3x3 window, the table kept across episodes."""

    persistent = True
    parameters = (
        Parameter("alpha", 0.2, "learning rate α", low=0.0, high=1.0),
        Parameter("gamma", 0.5, "discount γ", low=0.0, high=1.0),
        Parameter("epsilon", 0.1, "exploration ε while learning", low=0.0, high=1.0),
        Parameter("q_initial", 0.0, "initial value of every Q(s, a)", low=-1e6, high=1e6),
        Parameter("table", "group", "one table for the agents served, or one per agent", choices=("group", "agent")),
        Parameter("tie_break", "uniform", "greedy ties: uniform among equal Q, or the first action",
                  choices=("uniform", "first")),
    )

    def __init__(self, alpha=0.2, gamma=0.5, epsilon=0.1, q_initial=0.0, table="group", tie_break="uniform"):
        self.alpha, self.gamma, self.epsilon, self.q_initial = alpha, gamma, epsilon, q_initial
        self.per_agent, self.uniform = table == "agent", tie_break == "uniform"
        self.learning = True  # set False to score greedily with a frozen table
        self.q = None

    def reset(self, batch):
        if self.q is None:
            self.q = np.full((batch.agents if self.per_agent else 1, STATES, 9), float(self.q_initial))
        self.rng, self.iterations, self.agents = batch.rng, batch.iterations, batch.agents
        self.block = np.arange(batch.agents) if self.per_agent else np.zeros(batch.agents, np.int64)
        self.state = self.action = None

    def act(self, obs):
        state = window_signs(obs.window)
        if self.learning and self.state is not None:
            self._update(obs.reward, state)
        values = self.q[self.block[None, :], state]  # (E, A, 9)
        if self.uniform:
            ties = values == values.max(axis=2, keepdims=True)
            action = np.argmax(ties * self.rng.random(ties.shape), axis=2)
        else:
            action = np.argmax(values, axis=2)
        if self.learning:
            explore = self.rng.random(action.shape) < self.epsilon
            action = np.where(explore, self.rng.integers(0, 9, action.shape), action)
        self.state, self.action, self.t = state, action, obs.t
        return action

    def observe(self, rewards):
        if self.learning and self.t + 1 == self.iterations:  # the state after the last iteration is terminal
            self._update(rewards, None)

    def _update(self, rewards, following):
        """One update per (episode, agent) transition, in order, so a shared table sees them one by one."""
        q, alpha, gamma = self.q, self.alpha, self.gamma
        for e, a in np.ndindex(self.state.shape):
            b = self.block[a]
            target = rewards[e, a] + (0.0 if following is None else gamma * q[b, following[e, a]].max())
            here = q[b, self.state[e, a]]
            here[self.action[e, a]] += alpha * (target - here[self.action[e, a]])
