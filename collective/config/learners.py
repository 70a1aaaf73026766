"""The learners (Q-learning, SARSA; paper 003 §5.2.1): their parameters, what they train on, their state and how
long their table lives; the fields, what they tell of the training, and their validation."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from collective.behaviours import learns
from collective.config.checks import ConfigError, require_choice, require_int, require_range
from collective.simulation.kernel import LearnerParameters

# What the learners train on before the scored pass: "replay" the scored episode itself (paper 003
# §5.2.1), or "held_out" episodes of the same class never scored (paper 000 §5.2's no-reuse rule).
LEARNING_PROTOCOLS = ("replay", "held_out")
# The built-in learners' state (issue 21; paper 003 §5.2.1 names the learners, not their state): "cell_time"
# (the agent's cell and the iteration, paper 003's reading and the 2016 program's), or "window_signs": the sign
# (< 0, 0, > 0) of the reward of each cell of the agent's 3x3 window (its observation range's inner 3x3),
# 3^9 states, which transfer from one episode to another where (cell, t) cannot
LEARNER_STATES = ("cell_time", "window_signs")
# How long a learner's table lives (issue 21): "per_episode", trained before each scored episode and reset after
# it (paper 003 §5.2.1; spec §5); "pretrained", one table per group (per learner, or the shared_q table) trained
# once on the q_training_passes passes over the training_episodes held-out episodes of the cell, never reset,
# then scored greedily on every test episode; "online", the same pretrained table keeps learning, ε-greedily, in
# the test episodes, in episode order, scored as it goes (paper 000's anytime intent: it carries what it learned
# from one environment to the next), from the start of each evaluation (or sweep block) on
LEARNER_TRAININGS = ("per_episode", "pretrained", "online")
# Independent table sets a kept table trains per evaluation or sweep cell (issue 45 item 3): a learner's score
# varies with its table's luck as much as with its episodes, so Υ's interval must count tables, not episodes
# alone (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice", §3: runs are the unit of
# replication). Episode e plays the tables of run e mod training_runs (`evaluation.tables.episode_runs`).


@dataclass(frozen=True)
class LearnersSection:
    """How the group's learners learn; read only where the group has learners (the group's `behaviour_counts`)."""
    q_alpha: float = 0.3
    q_gamma: float = 0.3
    q_epsilon: float = 0.0
    q_initial: float = 0.0
    q_training_passes: int = 100
    q_reward_scale: float = 1.0
    learning_protocol: str = "replay"  # see LEARNING_PROTOCOLS
    training_episodes: int = 1  # held_out: fresh episodes the training passes cycle through
    learner_state: str = "cell_time"  # see LEARNER_STATES
    learner_training: str = "per_episode"  # see LEARNER_TRAININGS
    training_runs: int = 1  # kept tables: independent training runs per cell, episode e on run e mod this

    @functools.cached_property
    def learner_count(self) -> int:
        """The group's learners, each behaviour name checked once (a group may have millions of agents)."""
        return sum(count for name, count in self.behaviour_counts.items() if learns(name))

    @property
    def trains_on_held_out(self) -> bool:
        """Whether the group's learners train on held-out episodes before each scored episode, which must then
        be generated with it (a pretrained table trains on the cell's own: `evaluation.tables.trained_tables`)."""
        return self.learning_protocol == "held_out" and self.q_training_passes > 0 and \
            self.learner_training == "per_episode" and any(map(learns, self.behaviours))

    @property
    def keeps_tables(self) -> bool:
        """Whether the group's learners keep a pretrained table across episodes (learner_training not per_episode)."""
        return self.learner_training != "per_episode" and self.learner_count > 0

    @property
    def learns_online(self) -> bool:
        """Whether the group's learners keep learning in the test episodes, which must then play in order."""
        return self.learner_training == "online" and self.learner_count > 0

    @property
    def passes_per_episode(self) -> int:
        """Training passes played before each scored episode (per_episode learners only)."""
        return self.q_training_passes if self.learner_count and self.learner_training == "per_episode" else 0

    def training_steps(self, episodes: int) -> int:
        """Learner agent-steps of training behind `episodes` scored episodes: per episode, or once per table."""
        once = self.iterations * self.learner_count * self.q_training_passes
        return once * episodes if self.learner_training == "per_episode" else once * self.runs_played(episodes)

    def runs_played(self, episodes: int) -> int:
        """Kept table sets that `episodes` consecutive episodes play (episode e on run e mod training_runs);
        0 without kept tables."""
        return min(self.training_runs, episodes) if self.keeps_tables else 0

    @property
    def learner(self) -> LearnerParameters:
        return LearnerParameters(alpha=self.q_alpha, gamma=self.q_gamma, epsilon=self.q_epsilon,
                                 q_initial=self.q_initial, training_passes=self.q_training_passes,
                                 reward_scale=self.q_reward_scale)


def validate_learners(c: LearnersSection) -> None:
    """Parameters in range; replay trains on the one scored episode, held-out episodes are each played at least
    once; the learners' state and table life are known, and a kept table trains on held-out episodes; the 2016
    learner switches read (cell, t) states reset every episode."""
    require_range(c, "q_alpha", 0.0, 1.0, low_open=True)
    require_range(c, "q_gamma", 0.0, 1.0)
    require_range(c, "q_epsilon", 0.0, 1.0)
    require_range(c, "q_initial", -1e6, 1e6)
    require_range(c, "q_reward_scale", 0.0, 1e6, low_open=True)
    require_int(c, "q_training_passes", 0)
    require_choice(c, "learning_protocol", LEARNING_PROTOCOLS)
    episodes = require_int(c, "training_episodes", 1)
    if c.learning_protocol == "replay" and episodes != 1:
        raise ConfigError("training_episodes", f"must be 1 with learning_protocol replay, which trains on the "
                                               f"scored episode itself (got {episodes}); use held_out for more")
    if c.learning_protocol == "held_out" and c.q_training_passes and episodes > c.q_training_passes:
        raise ConfigError("training_episodes", f"at most q_training_passes = {c.q_training_passes}, so that the "
                                               f"passes play every training episode (got {episodes})")
    require_choice(c, "learner_state", LEARNER_STATES)
    require_choice(c, "learner_training", LEARNER_TRAININGS)
    require_int(c, "training_runs", 1, " (independent kept-table sets per cell)")
    if c.learner_training != "per_episode" and c.learning_protocol != "held_out":
        raise ConfigError("learner_training", f"{c.learner_training} trains one table on held-out episodes of the "
                                              "cell: use learning_protocol held_out (replay trains on each scored "
                                              "episode, per_episode)")
    if c.learner_state != "cell_time" and c.cpp_learner_bootstrap:
        raise ConfigError("learner_state", "cpp_learner_bootstrap bootstraps from the 2016 program's (cell, t=0) "
                                           "state: use cell_time (or set cpp_learner_bootstrap false)")
    for switch in ("cpp_first_observation", "cpp_learner_bootstrap"):
        if c.learner_training != "per_episode" and getattr(c, switch):
            raise ConfigError("learner_training", f"{switch} reproduces the 2016 program, whose tables are trained "
                                                  "and reset per episode: use per_episode (or set the switch false)")
