"""What each group of a sweep spec costs per episode, measured, beside the plan's cost model (`plan.episode_cost`).

For every (cell, group) of the spec it plays the same episodes as a sweep's worker plays a unit
(`plan._play_in_order`, one thread, the cell's environments generated beforehand and not timed) and takes the
best of REPEATS CPU times per episode (CPU time, not wall: other work on the machine slows a timing less).
It prints each group's measured cost relative to the cell's cheapest group beside the model's, and writes the
measurements to `--out` (default benchmarks/group_costs.json), which `tests/test_work_units.py` compares the
model with. The sham control (`evaluation.sham`) is what the model got wrong: 2x its protocol, really 10-40x.

    .venv/bin/python benchmarks/group_costs.py                       # experiments/communication.toml
    .venv/bin/python benchmarks/group_costs.py --spec S.toml --episodes 50
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from collective.sweeps.plan import EnvironmentBlock, _play_in_order, episode_cost, generate_block, prepare_process
from collective.sweeps.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 3


def measure(spec_path: Path, episodes: int) -> dict:
    """{"spec", "episodes", "load", "groups": [{"cell", "group", "seconds_per_episode"}]}: CPU seconds per episode."""
    spec = load_spec(spec_path)
    prepare_process(spec)
    rows = []
    for c, cell in enumerate(spec.cells):
        environments = generate_block(spec, EnvironmentBlock(c, 0, min(episodes, spec.episodes), ()))
        for g in cell.playing:
            config = cell.configs[g]
            _play_in_order(config, environments.episodes(0, 2))  # warm: the code's first call
            best = float("inf")
            for _ in range(REPEATS):
                started = time.process_time()
                _play_in_order(config, environments)
                best = min(best, time.process_time() - started)
            rows.append({"cell": dict(cell.factors), "group": spec.groups[g].label,
                         "seconds_per_episode": best / len(environments)})
    return {"spec": str(spec_path.resolve().relative_to(ROOT)), "episodes": episodes,
            "load": round(os.getloadavg()[0], 2), "groups": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=ROOT / "experiments" / "communication.toml")
    parser.add_argument("--episodes", type=int, default=100, help="episodes timed per (cell, group)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "group_costs.json")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    measured = measure(args.spec, args.episodes)
    spec = load_spec(args.spec)
    labels = [group.label for group in spec.groups]
    by_cell: dict[str, list] = {}
    for row in measured["groups"]:
        by_cell.setdefault(json.dumps(row["cell"]), []).append(row)
    for c, (cell_text, rows) in enumerate(by_cell.items()):
        cell = spec.cells[c]
        predicted = {row["group"]: episode_cost(cell.configs[labels.index(row["group"])]) for row in rows}
        cheapest = min(rows, key=lambda row: row["seconds_per_episode"])
        print(f"cell {cell_text}: cost relative to {cheapest['group']} (measured / model)")
        for row in rows:
            ratio = row["seconds_per_episode"] / cheapest["seconds_per_episode"]
            model = predicted[row["group"]] / predicted[cheapest["group"]]
            print(f"  {row['group']:<24} {row['seconds_per_episode'] * 1e3:8.3f} ms/episode  "
                  f"{ratio:7.1f}x  model {model:7.1f}x  model/measured {model / ratio:5.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} after")
    args.out.write_text(json.dumps(measured, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
