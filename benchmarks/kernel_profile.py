"""Where the compiled kernel's time goes, instruction by instruction (Linux `perf` and binutils' `objdump`).

numba loads its compiled code into anonymous memory that `perf report` cannot name, and a virtual machine often
gives perf no hardware counters, so a plain profile shows only addresses. This script plays one group (or, with
--communication-control sham, its sham control on the stepping core) on a batch generated beforehand, in a child
process, sampled for --seconds by `perf record -e cpu-clock` (a timer, available everywhere); the child then
copies its anonymous executable memory, where numba's code lives, to files. The script maps every sample into
those copies, disassembles them (`objdump`), and prints the share of samples in compiled code and elsewhere (by
library), each compiled region's share, then for one region (--region: its rank, 0 the busiest) the hottest
256-byte blocks and the hottest instructions, and writes that region's annotated listing (samples per
instruction) to --out.

Read it knowing that timer samples skid: a sample lands on the instruction after the one that stalled (a load
that missed the cache, a multiply whose result is awaited), so read an instruction's count with the one before.
Find the source of a block by its instructions (constants such as a hash's multiplier, divisions, a loop's
stride) and confirm every guess by an A/B timing of the changed code.

    .venv/bin/python benchmarks/kernel_profile.py --behaviour local_search --protocol stigmergy \
        --profile lambdastar2016          # the side-by-side FR row's group
    .venv/bin/python benchmarks/kernel_profile.py --behaviour q_learning --profile lambdastar2016 --top 60
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import re
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BLOCK = 256  # bytes of code per line of the block table
INSTRUCTION = re.compile(r"\s+([0-9a-f]+):\s")
ANONYMOUS = re.compile(r"\[unknown\]|//anon|\[anon|perf-\d+\.map")  # how perf names memory without a file


def rank(text: str) -> int:
    """A region's rank: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be 0 or more (got {text!r})")
    return int(text)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--behaviour", default="local_search", help="the group's behaviour (default local_search)")
    parser.add_argument("--protocol", default="none", help="the group's protocol (default none)")
    parser.add_argument("--profile", default="paper", help="the configuration profile (default paper)")
    parser.add_argument("--communication-control", default="real", choices=("real", "sham"),
                        help="sham: the protocol's sham control, played on the stepping core (default real)")
    parser.add_argument("--group-size", type=int, default=10, help="agents in the group (default 10)")
    parser.add_argument("--grid", type=int, default=10, help="rows and columns of the torus (default 10)")
    parser.add_argument("--iterations", type=int, default=200, help="T (default 200)")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds of play sampled (default 8)")
    parser.add_argument("--top", type=int, default=30, help="hottest blocks and instructions shown (default 30)")
    parser.add_argument("--out", type=Path, default=Path("kernel_profile.txt"),
                        help="annotated listing of the detailed code region (default kernel_profile.txt)")
    parser.add_argument("--region", type=rank, default=0, metavar="RANK",
                        help="detail the compiled region of this rank by samples (default 0: the busiest)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # internal: play, then dump code there
    return parser.parse_args(argv)


def play_then_dump(args: argparse.Namespace) -> None:
    """The child: play the group (one thread, the batch replayed) from "ready" on stdout until a line arrives on
    stdin, then copy every anonymous executable mapping of this process to args.child/<start address>.bin."""
    import numpy as np

    from collective.config import EvaluationConfig
    from collective.evaluation.batches import batch_episodes
    from collective.evaluation.environments import generate_environments
    from collective.evaluation.play import play

    config = EvaluationConfig.from_profile(args.profile, behaviour=args.behaviour, group_size=args.group_size,
                                           protocol=args.protocol, communication_control=args.communication_control,
                                           rows=args.grid, cols=args.grid,
                                           iterations=args.iterations, episodes=1_000_000)
    batch = generate_environments(config, np.arange(batch_episodes(config)))
    play(config, batch)  # compiled or loaded before sampling starts
    print("ready", flush=True)
    calls = 0
    while not select.select([sys.stdin], [], [], 0)[0]:
        play(config, batch)
        calls += 1
    args.child.mkdir(parents=True, exist_ok=True)
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if "x" in fields[1] and len(fields) < 6:  # executable, no file behind it
            start, end = (int(x, 16) for x in fields[0].split("-"))
            (args.child / f"{start:x}.bin").write_bytes(ctypes.string_at(start, end - start))
    print(f"played {calls} calls of {len(batch)} episodes", file=sys.stderr)


def disassembly(path: Path, start: int) -> list[tuple[int, str]]:
    """(address, objdump's line) of every instruction in a copied region."""
    listing = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", f"--adjust-vma={start:#x}",
                              str(path)], capture_output=True, text=True, check=True).stdout
    return [(int(match.group(1), 16), line.strip()) for line in listing.splitlines()
            if (match := INSTRUCTION.match(line))]


def report(samples: collections.Counter, libraries: collections.Counter, code: Path, args: argparse.Namespace) -> None:
    regions = sorted((int(path.stem, 16), path) for path in code.glob("*.bin"))
    in_region = collections.Counter()
    for ip, n in samples.items():
        for start, path in regions:
            if start <= ip < start + path.stat().st_size:
                in_region[start] += n
    total = sum(samples.values())
    compiled = sum(in_region.values())
    print(f"{total:,} samples; {compiled / total:.1%} in numba's compiled code ({len(in_region)} regions)")
    outside = collections.Counter({name: n for name, n in libraries.items()})
    for name, n in outside.most_common(5):
        print(f"  {n / total:6.1%}  {name}")
    ranked = sorted(((s, p) for s, p in regions if in_region[s]), key=lambda sp: -in_region[sp[0]])
    print("compiled regions by samples: " + ", ".join(f"{start:#x} {in_region[start] / total:.1%}"
                                                      for start, _ in ranked[:8]))
    start, path = ranked[min(args.region, len(ranked) - 1)]
    lines = disassembly(path, start)
    counts = [samples.get(address, 0) for address, _ in lines]
    blocks = collections.Counter()
    for (address, _), n in zip(lines, counts):
        blocks[address - address % BLOCK] += n
    shown = in_region[start]
    print(f"\nregion {start:#x}: {shown / total:.1%} of samples; its hottest {BLOCK}-byte blocks:")
    for block, n in blocks.most_common(args.top):
        print(f"  {n / shown:6.1%}  {block:#x}")
    print("\nhottest instructions (a sample skids onto the instruction after the one that stalled):")
    for k in sorted(range(len(lines)), key=lambda k: -counts[k])[:args.top]:
        before = lines[k - 1][1] if k else ""
        print(f"  {counts[k] / shown:6.1%}  {lines[k][1]:<60.60}  after: {before.split(chr(9))[-1]:.40}")
    args.out.write_text("".join(f"{n:7d}  {line}\n" for n, (_, line) in zip(counts, lines)))
    print(f"\nannotated listing (samples, address, bytes, instruction): {args.out}")


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    if args.child:
        play_then_dump(args)
        return
    missing = [tool for tool in ("perf", "objdump") if not shutil.which(tool)]
    if missing:
        sys.exit(f"kernel_profile: needs {' and '.join(missing)} (Debian: apt-get install linux-perf binutils)")
    with tempfile.TemporaryDirectory() as folder:
        data, code = Path(folder, "perf.data"), Path(folder, "code")
        child = subprocess.Popen([sys.executable, __file__, *argv, "--child", str(code)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        if child.stdout.readline().strip() != "ready":
            sys.exit(f"kernel_profile: the group did not play (exit {child.wait()})")
        recorded = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", str(data),
                                   "-p", str(child.pid), "--", "sleep", str(args.seconds)])
        child.communicate("stop\n")
        if recorded.returncode or child.returncode:
            sys.exit(f"kernel_profile: perf record exited {recorded.returncode}, the player {child.returncode} "
                     "(perf needs /proc/sys/kernel/perf_event_paranoid <= 1, or root)")
        script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,dso"], capture_output=True, text=True,
                                check=True).stdout
        samples, libraries = collections.Counter(), collections.Counter()
        for line in script.splitlines():
            fields = line.split(maxsplit=1)
            if fields:
                samples[int(fields[0], 16)] += 1
                library = fields[1].strip("()") if len(fields) > 1 else "?"
                if not ANONYMOUS.match(Path(library).name):
                    libraries[Path(library).name] += 1
        report(samples, libraries, code, args)


if __name__ == "__main__":
    main(sys.argv[1:])
