"""Which compiled code an evaluation plays on, loaded (or compiled) before anything is timed: the fused kernel
of each environment class, its generator's variant, the stepping core and the sham's rule loop, each by one
tiny episode per process."""
from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np

from collective.analysis.scores import ExactSum
from collective.config import EvaluationConfig
from collective.evaluation.environments import generate_environments, with_ceiling
from collective.evaluation.fused_kernel import play_fused
from collective.evaluation.sham import play_sham
from collective.evaluation.stepping_group import plugin_group
from collective.progress import announce_compilation, compilation_done
from collective.simulation.stepping import play_group


# The smallest episode, played once per process to load the compiled code before any timing.
TINY = EvaluationConfig(behaviour="random", rows=3, cols=3, iterations=2, episodes=1, k_min=None, k_max=None)


def load_code(config: EvaluationConfig) -> None:
    """Load (or compile) everything `config` plays on, before anything is timed: the kernel of its
    environment class in the variant it needs, and the stepping core when it plays there (a plug-in
    or the sham control)."""
    load_kernel(config.env)
    if config.on_stepping_core:
        load_stepping_core(config.env)
    if config.sham:
        load_sham(config.env)


@functools.lru_cache(maxsize=256)
def load_generator(config: EvaluationConfig) -> None:
    """Once per run, before timing (not per played batch: an anytime test plays a new T per step):
    compile what generating `config`'s environments needs by generating one episode (with its
    held-out training episodes): the `sound` profile's stratified K, K on the played paths and
    independent ⊖ run compiled functions that the tiny paper episode of `load_kernel` never calls. Pooled
    draws run in a block of one episode here: a block of the run's own (512 episodes, ~7 ms) would be drawn
    outside the run's timing and kept for it (`pooled_patterns`), so that its wall would miss that draw."""
    generate_environments(config.with_changes(pattern_pool=1) if config.pattern_pool else config, np.arange(1))


@functools.cache
def load_kernel(env: str = "lambda_star") -> None:
    """Have numba load (or compile) the simulator and the pattern generators in this process now,
    before anything is timed, so that kernel_seconds measure simulation only: one tiny episode of
    the environment class (its generator). Every class and group, mixed or not, plays one compiled
    kernel (a landscape's field travels by address, a group of one behaviour keeps no per-agent
    totals in an empty array), so only the first call compiles it; and the exact sums that score it."""
    tiny = TINY.with_changes(env=env, landscape_peaks=1)
    play_fused(tiny, with_ceiling(tiny, generate_environments(tiny, np.arange(1))), record=False)
    ExactSum().add(np.zeros(1))


# The smallest talking group of the stepping core: two searchers under a protocol.
TINY_TALKING = TINY.with_changes(behaviour="local_search", group_size=2, protocol="broadcast", landscape_peaks=1)


@functools.cache
def load_stepping_core(env: str = "lambda_star") -> None:
    """The same for the stepping core and the built-ins' compiled forms, in the processes that
    play plug-ins only: one tiny episode of searchers under a protocol in the environment class
    (its generator)."""
    talking = TINY_TALKING.with_changes(env=env)
    play_group(plugin_group(talking), generate_environments(talking, np.arange(1)))


@functools.cache
def load_sham(env: str = "lambda_star") -> None:
    """The same for the sham control, whose rule loop (`compiled_plugins.builtin_overhear`, every protocol's
    rule on an `Overheard` scene) the stepping core's tiny episode does not compile: left to the first sham,
    its ~25 s of compilation were timed as play. The tiny episode under its protocol's sham."""
    talking = TINY_TALKING.with_changes(env=env)
    sham = talking.with_changes(communication_control="sham")
    play_sham(sham, generate_environments(talking, np.arange(1)), False, plugin_group(talking))


def kernel_cached() -> bool:
    """Whether numba's cache for these sources (`numba_cache`) holds the simulator, so that
    `load_kernel` loads it rather than compiling it (about half a minute)."""
    from numba.core import config

    return any(Path(config.CACHE_DIR).rglob("*simulate_batch*.nbi"))


def load_compiled(config: EvaluationConfig, notify: bool = False) -> float:
    """Load (or compile) the code `config` plays on; returns the seconds it took. With `notify`,
    a compilation is announced on stderr as it starts (`progress.announce_compilation`) and its
    end once everything is loaded, so that the first run is not silent for a minute."""
    if notify:
        announce_compilation()
    started = time.perf_counter()
    load_code(config)
    load_generator(config)
    seconds = time.perf_counter() - started
    if notify:
        compilation_done()
    return seconds
