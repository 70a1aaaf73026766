"""The issue-21 comparison plug-in (examples/numpy_window_q.py) sees the state the built-in learners see:
its sign code of an observed window equals the fused kernel's `window_state_base` of the same scene and
cell, for windows of range 1 and 2 (the inner 3x3), so comparisons between the two measure learning,
not encoding."""
import numpy as np
import pytest

from collective.config import EvaluationConfig
from collective.evaluation.environments import generate_environments
from collective.simulation.kernel import window_state_base
from collective.simulation.stepping import observe_windows, scene_at
from examples.numpy_window_q import window_signs


@pytest.mark.parametrize("view", [1, 2])
def test_the_plugin_encodes_a_window_as_the_kernel_does(view):
    config = EvaluationConfig.from_profile("sound", behaviour="local_search", rows=7, cols=9, iterations=30,
                                           observation_range=view, episodes=6, seed=5)
    env = generate_environments(config, np.arange(6), training=False)
    cells = np.random.default_rng(0).integers(0, 63, (6, 40))
    side = 2 * view + 1
    seen = set()
    fields = env.fields()  # alive while scenes refer to it
    for t in range(config.iterations):
        windows = np.empty((6, 40, side, side))
        observe_windows(env.good, env.evil, fields, t, cells, 7, 9, view, config.reward_radius, False, windows)
        codes = window_signs(windows)
        for e in range(6):
            scene = scene_at(env.good, env.evil, fields, e, t, 7, 9, config.reward_radius)
            kernel = [window_state_base(scene, c // 9, c % 9, 0) // 9 for c in cells[e]]
            assert codes[e].tolist() == kernel
        seen.update(codes.ravel().tolist())
    assert len(seen) > 20  # windows with ⊕ and ⊖ in sight in many positions, not only blank ones
