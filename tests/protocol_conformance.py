"""The conformance checks every protocol plug-in must pass; `test_protocols.py` applies them to
each registered protocol with a group it fits."""
import numpy as np

from collective.config import EvaluationConfig
from collective.evaluate import generate_environments, play
from collective.simulation.reference import ReferenceWorld


def check_protocol_conformance(name: str, mix: str, params: tuple = ()) -> None:
    config = EvaluationConfig.from_profile("paper", mix=mix, protocol=name, protocol_params=params, rows=7,
                                           cols=9, iterations=30, episodes=8, seed=21, q_training_passes=4)
    agents = config.group_size
    environments = generate_environments(config, np.arange(8))
    run = play(config, environments, record=True)
    # batch shapes: (episodes,), (episodes, T+1, agents), (episodes, T, agents)
    assert run.mean_rewards.shape == (8,)
    assert run.positions.shape == (8, 31, agents) and run.rewards.shape == (8, 30, agents)
    # determinism under a seed
    again = play(config, generate_environments(config, np.arange(8)), record=True)
    assert np.array_equal(run.positions, again.positions) and (run.messages, run.bits) == (again.messages, again.bits)
    # no effect on the real reward: every reward is R of the agent's cell from ⊕/⊖'s cells (spec §1, §6)
    world = ReferenceWorld(7, 9, 30)
    for e in range(8):
        for t in range(30):
            good, evil = environments.good[e, t + 1], environments.evil[e, t + 1]
            expected = [world.reward(int(cell), int(good), int(evil)) for cell in run.positions[e, t + 1]]
            assert np.array_equal(run.rewards[e, t], expected)
    # isolation between the episodes of a batch, and no state leaking from one episode to the next
    for order in ([5], [7, 6, 5], [0, 1, 2, 3, 4, 5]):
        alone = play(config, generate_environments(config, np.array(order)), record=True)
        position = order.index(5)
        assert np.array_equal(alone.positions[position], run.positions[5])
    # communication is counted, and never negative
    assert run.messages >= 0 and run.bits >= 0
    assert (run.messages > 0) == (name != "none")
