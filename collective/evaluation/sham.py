"""The sham and content-free communication controls: each episode's shadow (for the sham another episode drawn
from the episode's own seeds, for the content-free control the episode emptied), and the group that hears the
others as they are in the shadow, in one call or in threads."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from collective.config import EvaluationConfig
from collective.environments.lambda_star import EnvironmentBatch
from collective.evaluation.runs import EpisodeRun, stepping_run
from collective.evaluation.stepping_group import plugin_group
from collective.evaluation.threads import joined_in_threads
from collective.simulation.stepping import Group, play_overhearing


SHADOW_BRANCH = 1  # spawn key of a shadow episode's SeedSequence under its scored episode's agent seed


def shadow_environments(config: EvaluationConfig, environments: EnvironmentBatch) -> EnvironmentBatch:
    """Each episode's shadow: another environment of the same class (pattern, ⊖, start cells, agents'
    seed) drawn from SeedSequence(the episode's agent seed, spawn_key=(SHADOW_BRANCH,)), a branch of the
    episode's own seeds, so a shadow never depends on the batch or the worker that plays it."""
    table = np.array([np.random.SeedSequence(int(seed), spawn_key=(SHADOW_BRANCH,)).generate_state(3, np.uint64)
                      for seed in environments.agent_seeds], np.uint64).reshape(-1, 3)
    return config.environment().generate(table, config.group_size)


def empty_environments(config: EvaluationConfig, environments: EnvironmentBatch) -> EnvironmentBatch:
    """Each episode emptied, the content-free control's shadow (issue 45 item 4): the same ⊕/⊖ paths, start
    cells and agents' seeds, in a world where every cell pays 0 at every iteration: a flat field of zeros
    (a scene with a field reads the field and nothing else, `collective.environments.scene.scene_reward`,
    the 2016 program's reset field included)."""
    cells = config.rows * config.cols
    return replace(environments, landscapes=np.zeros((len(environments), cells)), training=None)


def shadow_play(config: EvaluationConfig, environments: EnvironmentBatch) -> tuple[Group, EnvironmentBatch]:
    """The group that plays each episode's shadow, and the shadows: the sham's drawn ones
    (`shadow_environments`), or the content-free control's emptied ones (`empty_environments`), whose group
    plays at coordination threshold 1: the quorum rule withholds a positive part there is none of, and would
    still pay ⊖'s negative one."""
    speaker = plugin_group(config)
    if config.communication_control != "content_free":
        return speaker, shadow_environments(config, environments)
    speaker.threshold = 1
    return speaker, empty_environments(config, environments)


def play_sham(config: EvaluationConfig, environments: EnvironmentBatch, record: bool, group: Group,
              shadows: EnvironmentBatch | None = None) -> EpisodeRun:
    """The sham-communication control (issue 14 point 4, issue 22 point 2): a second copy of the group plays
    each episode's shadow for real; in the episode, each member keeps its own sensing and its own part in
    the protocol (its report, bid, deposit or write), and hears at every iteration what the protocol tells
    it when every other member is where it is in the shadow (`play_overhearing`). The group keeps the
    protocol's rule, traffic and herding, but no other member tells it about its own episode. Traffic and
    message entropy are the shadow's (what the others said). `shadows`: other shadows than the episodes'
    own (the validity suite's `sham_mechanism` gives each episode itself), played by the group as configured.

    The content-free control (communication_control = content_free, issue 45 item 4) is this sham with each
    episode's empty shadow (`shadow_play`): the others see nothing, so every report, bid, deposit or write of
    theirs says "nothing seen" (broadcast's reports all 0, no write to wisdom's map, no stigmergy deposit,
    bids and reports of 0 under auction, dictatorship and hierarchy), from where they stand, moving from the
    episode's own start cells with its own draws. What is left is the protocol's mechanics without information."""
    speaker, shadows = shadow_play(config, environments) if shadows is None else (plugin_group(config), shadows)
    return stepping_run(play_overhearing(group, speaker, environments, shadows, record), environments)


def sham_in_threads(config: EvaluationConfig, environments: EnvironmentBatch, threads: int) -> EpisodeRun:
    """A built-in group's sham (or content-free) control on `threads` runs of consecutive episodes at once, each
    with a group of its own (the stepping core's compiled steps release the GIL), joined in episode order
    (`joined_runs`): the numbers of one call, as each episode's play and shadow depend on its own seeds only."""
    return joined_in_threads(lambda part: play_sham(config, part, False, plugin_group(config)), environments,
                             threads, threads)
