"""Playing an evaluation, one question a file; `collective.evaluate.evaluate` puts them together.

`runs` (what a played batch gives back), `environments` (which environments each episode plays),
`batches` (which episodes a batch holds, prepared ahead), `fused_kernel` (a batch on the fused kernel),
`tables` (which learner tables a group keeps), `threads` (how many threads play a batch, and their runs
joined), `stepping_group` (the members that play on the stepping core), `sham` (the sham-communication
control), `compiled_code` (which compiled code is loaded before timing), `play` (which of them plays a
batch) and `result` (what an evaluation reports). Each imports only the files listed before it that it
needs, never the one that calls it.
"""
