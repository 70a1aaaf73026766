"""Growing a finished sweep (issue 43 item 5): `collective sweep SPEC --out DIR episodes=M` on a directory holding the
same spec's sweep with fewer episodes adds the new episodes to its dataset, which then holds, row for row, what a
sweep of M episodes from the start holds (same seed, any executor); any other change is refused in one line."""
import json
import signal
import time
import tomllib

import pytest

from collective.sweeps.plan import TARGET_UNIT_AGENT_STEPS, plan
from collective.sweeps.runtime import SerialExecutor
from collective.sweeps.spec import parse_spec
from collective.sweeps.store import ResultsStore
from sweep_support import collective, rows, start_collective, write_spec

# Units of every kind: a sham control costly enough to be cut into several units of a few dozen episodes (kept
# when the sweep grows), packed cheap groups, a protocol whose message rates are a unit's averages, and
# learners keeping a pretrained table, trained per unit.
GROWING_SPEC = """
name = "growing"
seed = 11
profile = "sound"
episodes = 300
iterations = 500

[factors]
grid = ["8x8"]
group_size = [2, 10]

[groups]
behaviours = ["random", "q_learning"]
protocols = [
  { name = "none" },
  { name = "broadcast", behaviours = ["local_search"], group_sizes = [10], controls = ["real", "sham"] },
]

[settings]
learner_training = "pretrained"
q_training_passes = 20
training_episodes = 5
"""
# The same groups, cheap: every unit of it is in the plan's finer tail, so growing it plays every unit again.
CHEAP_SPEC = GROWING_SPEC.replace("episodes = 300", "episodes = 40").replace("iterations = 500", "iterations = 60")
ONLINE_SPEC = CHEAP_SPEC.replace('"pretrained"', '"online"')


def sweep(spec, out, *args):
    result = collective("sweep", str(spec), "--out", str(out), "--executor", "serial", *args)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The rows of the growing spec run with 600 episodes from the start."""
    directory = tmp_path_factory.mktemp("fresh")
    sweep(write_spec(directory, GROWING_SPEC), directory / "out", "episodes=600")
    return rows(directory / "out" / "dataset").drop(columns="sweep_id")


def growth(out):
    return [entry["episodes"] for entry in json.loads((out / "sweep.json").read_text())["growth"]]


def test_the_plan_of_a_grown_sweep_holds_the_smaller_sweeps_whole_units():
    """Units start on a grid of their block's episodes, never on the episode count: only the units the old count
    cut short, and the plan's finer tail, are not planned again."""
    source = tomllib.loads(GROWING_SPEC)
    small, large = (parse_spec(dict(source, episodes=n), "growing") for n in (600, 6000))
    before = {unit.id: unit for block in plan(small) for unit in block.units}
    after = {unit.id for block in plan(large) for unit in block.units}
    again = [unit for name, unit in before.items() if name not in after]
    assert len(again) < len(before)
    # the tail (units cut finer where less than 4 x TARGET_UNIT_AGENT_STEPS is planned after them), and a unit of
    # each cell's groups or packs cut short: here 90 M of the small sweep's 290 M searcher-steps
    assert sum(unit.cost for unit in again) < 6 * TARGET_UNIT_AGENT_STEPS
    assert all(unit.stop == 600 or unit.cost <= TARGET_UNIT_AGENT_STEPS for unit in again)


def test_a_grown_sweep_holds_the_rows_of_one_run_with_that_many_episodes(tmp_path, fresh):
    spec = write_spec(tmp_path, GROWING_SPEC)
    grown = tmp_path / "grown"
    first = sweep(spec, grown)
    sweep_id = first.stdout.split()[1].rstrip(":")
    result = sweep(spec, grown, "episodes=600")
    notice = [line for line in result.stderr.splitlines() if "growing sweep" in line]
    assert len(notice) == 1 and "from 300 to 600 episodes: adds 300 per cell and group" in notice[0], result.stderr
    assert f"sweep {sweep_id}:" in result.stdout  # the same study: its id is kept
    assert int(notice[0].split("plays ")[1].split()[0].replace(",", "")) < 600 * 6  # not all played again
    grown_rows = rows(grown / "dataset")
    assert len(grown_rows) == 600 * 6 and (grown_rows["sweep_id"] == sweep_id).all()
    assert grown_rows.drop(columns="sweep_id").equals(fresh)
    assert growth(grown) == [300, 600]
    again = sweep(spec, grown, "episodes=600")  # finished: nothing to play
    assert "(0 new in 0 chunks" in again.stdout and growth(grown) == [300, 600]


def test_an_interrupted_growth_resumes_without_losing_or_repeating_a_row(tmp_path, fresh):
    spec = write_spec(tmp_path, GROWING_SPEC)
    grown = tmp_path / "grown"
    sweep(spec, grown)
    manifest = grown / "manifest.jsonl"
    before = {json.loads(line)["unit"] for line in manifest.read_text().splitlines()}
    process = start_collective("sweep", str(spec), "--out", str(grown), "--executor", "serial", "episodes=600")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:  # a unit of the new episodes written
        if {json.loads(line)["unit"] for line in manifest.read_text().splitlines() if line.strip()} - before:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0 and "interrupted" in stderr, stderr
    files = {path: path.stat().st_mtime_ns for path in grown.rglob("*")}
    plain = collective("sweep", str(spec), "--out", str(grown), "--executor", "serial")  # episodes=600 forgotten
    assert plain.returncode == 2 and len(plain.stderr.splitlines()) == 1, plain.stderr
    assert "episodes = 300 would leave rows out: pass episodes=600 to resume or finish it" in plain.stderr
    assert {path: path.stat().st_mtime_ns for path in grown.rglob("*")} == files  # nothing written
    sweep(spec, grown, "episodes=600")
    grown_rows = rows(grown / "dataset")
    assert len(grown_rows) == 600 * 6 and grown_rows.drop(columns="sweep_id").equals(fresh)
    assert growth(grown) == [300, 600]


@pytest.mark.parametrize("spec_text, executor", [(ONLINE_SPEC, "serial"), (CHEAP_SPEC, "ray")], ids=["online", "ray"])
def test_a_sweep_grown_by_any_executor_learning_online_or_not_holds_the_rows_of_one_run(tmp_path, spec_text, executor):
    """Learners that learn online play a block's episodes in order: the block the old count cut short is played
    again whole. On Ray (2 workers) the rows are the serial executor's."""
    spec = write_spec(tmp_path, spec_text)
    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    sweep(spec, grown)
    result = collective("sweep", str(spec), "--out", str(grown), "--executor", executor, "--workers",
                        "2" if executor == "ray" else "1", "episodes=80")
    assert result.returncode == 0, result.stderr
    sweep(spec, fresh, "episodes=80")
    assert rows(grown / "dataset").drop(columns="sweep_id").equals(rows(fresh / "dataset").drop(columns="sweep_id"))
    assert growth(grown) == [40, 80]


@pytest.mark.parametrize("override, named", [
    ("iterations=400", "iterations: 60 there, 400 here"),
    ("factors.grid=9x9", "factors.grid: ['8x8'] there, ['9x9'] here"),
    ("episodes=30", "episodes = 30 would leave rows out"),
])
def test_any_other_change_is_refused_in_one_line_naming_it(tmp_path, override, named):
    spec = write_spec(tmp_path, CHEAP_SPEC)
    out = tmp_path / "out"
    sweep(spec, out)
    files = {path: path.stat().st_mtime_ns for path in out.rglob("*")}
    result = collective("sweep", str(spec), "--out", str(out), "--executor", "serial", override)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and named in result.stderr, result.stderr
    assert result.stderr.startswith("collective sweep: error: argument --out: ")
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*")} == files  # nothing written


def test_the_dry_run_of_a_growth_says_how_many_episodes_it_adds(tmp_path):
    spec = write_spec(tmp_path, CHEAP_SPEC)
    out = tmp_path / "out"
    sweep(spec, out)
    files = {path: path.stat().st_mtime_ns for path in out.rglob("*")}
    result = collective("sweep", str(spec), "--out", str(out), "--dry-run", "--executor", "serial", "episodes=100")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "growing sweep" in line)
    assert "from 40 to 100 episodes: adds 60 per cell and group (360 rows); plays " in line
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*")} == files


def written_bytes() -> int:
    """The bytes this process has written so far (Linux's /proc/self/io `wchar`: files, pipes, terminals), and
    its reaped children."""
    return next(int(line.split()[1]) for line in open("/proc/self/io") if line.startswith("wchar:"))


def test_the_worker_stamps_a_grown_sweeps_kept_chunks_not_the_driver(tmp_path):
    """No central process does work per row: the kept chunks' `episodes` column, rewritten whole when a sweep
    grows, is rewritten by the executor's worker (here the serial executor's child process). The driver (this
    process) finds them from their footers (`ResultsStore.unstamped`) and writes less than a tenth of what the
    chunks hold (their manifest lines)."""
    spec = parse_spec(tomllib.loads(CHEAP_SPEC), "stamped")
    blocks = plan(spec)
    with ResultsStore(tmp_path, spec.sweep_id, {}, planned={u.id for block in blocks for u in block.units}) as store:
        executor = SerialExecutor(spec)
        executor.writer = store.writer
        with executor:
            for _, record in executor.run(blocks):
                store.commit(record)
            chunks = sum(record.bytes for record in store.finished.values())
            stale = store.unstamped(80)
            assert sorted(stale) == sorted(store.finished) and not store.unstamped(40)
            before = written_bytes()
            records = executor.stamp(stale, 80)
            for _ in stale:
                store.commit(next(records)[1])
            assert written_bytes() - before < chunks / 10  # before the worker is reaped (Linux then adds its I/O)
            records.close()
        assert not store.unstamped(80)
    stamped = rows(tmp_path / "dataset")
    assert len(stamped) == 40 * 6 and (stamped["episodes"] == 80).all()
