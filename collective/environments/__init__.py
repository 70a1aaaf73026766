"""Environment classes (spec §1-2, §7): the torus, the reward scene, movement patterns and their
complexity, Λ* and fitness landscapes."""
