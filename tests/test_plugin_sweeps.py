"""User plug-ins in distributed sweeps (issue 16), with real Ray: the worked study on embedded Ray
and on a `ray start` cluster whose workers can import the plug-ins only through the runtime
environment; a plug-in that raises midway, then resumed once fixed; persistent learners with 1 and
2 workers; and the analysis of a dataset whose plug-ins are not installed."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from collective.sweeps.store import MANIFEST_FILE
from sweep_support import CLUSTER_ENV, kill_session, ray_cluster, rows

ROOT = Path(__file__).resolve().parent.parent
IDENTITY = ["cell", "group_key", "episode"]


def small_study(directory: Path) -> Path:
    """experiments/byo_agent.toml at a test's size, with the example package beside it, in a
    directory that is not the project (so nothing else of the project is importable from there)."""
    shutil.copytree(ROOT / "examples" / "byo_agent", directory / "examples" / "byo_agent")
    (directory / "examples" / "__init__.py").write_text("")
    source = (ROOT / "experiments" / "byo_agent.toml").read_text()
    source = source.replace("episodes = 300", "episodes = 40").replace("iterations = 100", "iterations = 30")
    source = source.replace('grid = ["8x8", "14x14"]', 'grid = ["7x7"]')
    spec = directory / "byo_small.toml"
    spec.write_text(source)
    assert tomllib.loads(source)["episodes"] == 40
    return spec


def sweep(spec: Path, out: Path, *options: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collective", "sweep", str(spec), "--out", str(out), *options],
                          capture_output=True, text=True, timeout=900, cwd=cwd, env={**os.environ, **(env or {})})


def without_timings(dataset: Path) -> pd.DataFrame:
    return rows(dataset).sort_values(IDENTITY).reset_index(drop=True)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The small worked study run serially: the reference rows."""
    directory = tmp_path_factory.mktemp("study")
    spec = small_study(directory)
    done = sweep(spec, directory / "serial", "--executor", "serial", cwd=directory)
    assert done.returncode == 0, done.stderr
    return directory, spec, without_timings(directory / "serial" / "dataset")


def test_worked_study_on_embedded_ray_equals_serial_and_records_plugins(study):
    directory, spec, reference = study
    done = sweep(spec, directory / "ray", "--executor", "ray", cwd=directory)
    assert done.returncode == 0, done.stderr
    assert without_timings(directory / "ray" / "dataset").equals(reference)
    mixed = reference[reference["mix"] != ""]
    by_behaviour = mixed["score_by_behaviour"].map(json.loads)
    members = {"examples.byo_agent.agents:MemorySearcher", "local_search"}
    assert by_behaviour.map(set).eq(members).all()
    # the group's score is the per-capita mean of its 2 + 2 members' scores
    assert (by_behaviour.map(lambda s: sum(s.values()) / 2) - mixed["score"]).abs().max() < 1e-12
    digests = reference["plugin_digests"].map(json.loads)
    assert digests[reference["protocol"].str.contains("Gossip")].map(len).ge(1).all()
    assert json.loads((directory / "ray" / "sweep.json").read_text())["plugins"].keys() >= members - {"local_search"}


def test_worked_study_on_a_ray_start_cluster_whose_workers_never_saw_the_plugins(study, tmp_path):
    """The cluster's processes start in an empty directory; the driver runs from another empty
    directory (Ray puts the driver's working directory on the workers' sys.path) and imports the
    plug-ins through its own PYTHONPATH, which the cluster does not share: the workers can import
    them only through the runtime environment the sweep ships."""
    directory, spec, reference = study
    cluster_cwd, driver_cwd = tmp_path / "cluster_cwd", tmp_path / "driver_cwd"
    cluster_cwd.mkdir()
    driver_cwd.mkdir()
    with ray_cluster(cwd=cluster_cwd) as address:
        probe = subprocess.run([sys.executable, "-c", "import examples.byo_agent"], cwd=cluster_cwd,
                               capture_output=True, env={**os.environ, "PYTHONPATH": ""})
        assert probe.returncode != 0  # the cluster's processes cannot import the plug-ins by themselves
        done = sweep(spec, tmp_path / "cluster", "--address", address, cwd=driver_cwd,
                     env={**CLUSTER_ENV, "PYTHONPATH": str(directory)})
    assert done.returncode == 0, done.stderr
    assert without_timings(tmp_path / "cluster" / "dataset").equals(reference)


def test_analysis_figures_and_dashboard_need_no_plugin_installed(study, tmp_path):
    directory, _, _ = study
    nowhere = tmp_path / "empty"
    nowhere.mkdir()
    for command in (["analyze", str(directory / "serial"), "--tables", "upsilon,gains,focal"],
                    ["figures", str(directory / "serial"), "--out", str(tmp_path / "figures")],
                    ["dashboard", str(directory / "serial"), "--out", str(tmp_path / "report.html")]):
        done = subprocess.run([sys.executable, "-m", "collective", *command], capture_output=True, text=True,
                              timeout=600, cwd=nowhere)
        assert done.returncode == 0, done.stderr
        if command[0] == "analyze":
            assert "examples.byo_agent.agents:MemorySearcher" in done.stdout and "focal" in done.stdout


FLAKY = '''
import numpy as np


class Walker:
    """Steps right."""

    def reset(self, batch):
        self.rows = batch.rows

    def act(self, obs):
        if CONDITION:
            raise ValueError("lost my way")
        return np.full(obs.cell.shape, 5)
'''


FLAKY_SPEC = """
name = "flaky"
seed = 1
profile = "paper"
episodes = 30
iterations = 10

[factors]
grid = ["5x5", "6x6", "7x7"]
group_size = [2]

[groups]
behaviours = ["random", "flaky_agents:Walker"]
"""


def write_flaky(directory: Path, broken: bool) -> None:
    """flaky_agents.py: its Walker raises in the 7x7 cell at iteration 3 when broken; fixed, it
    plays exactly the same moves (only its source differs)."""
    (directory / "flaky_agents.py").write_text(FLAKY.replace("CONDITION", "self.rows == 7 and obs.t == 3"
                                                                          if broken else "False"))


def test_a_plugin_that_raises_stops_the_sweep_keeps_rows_and_resumes_once_fixed(tmp_path):
    (tmp_path / "flaky.toml").write_text(FLAKY_SPEC)
    write_flaky(tmp_path, broken=True)
    failed = sweep(tmp_path / "flaky.toml", tmp_path / "out", "--executor", "serial", cwd=tmp_path)
    assert failed.returncode == 2
    assert "plug-in flaky_agents:Walker.act: raised ValueError: lost my way" in failed.stderr
    assert "grid=7x7" in failed.stderr and "episodes 0-29" in failed.stderr and "Traceback" not in failed.stderr
    kept = pd.read_parquet(tmp_path / "out" / "dataset")
    assert set(kept["grid"]) == {"5x5", "6x6"} and len(kept) == 2 * 2 * 30  # the failing unit wrote nothing
    write_flaky(tmp_path, broken=False)
    resumed = sweep(tmp_path / "flaky.toml", tmp_path / "out", "--executor", "serial", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "plug-in flaky_agents:Walker changed since this sweep began" in resumed.stderr
    fresh = sweep(tmp_path / "flaky.toml", tmp_path / "fresh", "--executor", "serial", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    after, uninterrupted = without_timings(tmp_path / "out" / "dataset"), without_timings(tmp_path / "fresh" / "dataset")
    # identical rows; only the rows made before the fix record the old source's digest
    assert after.drop(columns="plugin_digests").equals(uninterrupted.drop(columns="plugin_digests"))
    changed = after["plugin_digests"] != uninterrupted["plugin_digests"]
    assert set(after.loc[changed, "grid"]) == {"5x5", "6x6"} and (after.loc[changed, "behaviour"] != "random").all()


def test_a_plugin_that_ends_the_serial_sweeps_process_with_status_0_cannot_end_the_sweep_as_done(tmp_path):
    """A plug-in's `os._exit(0)` on its first step ends only the serial executor's worker process: the sweep
    exits 1 with one line saying it ended early and how to resume, never status 0 unfinished."""
    (tmp_path / "flaky.toml").write_text(FLAKY_SPEC)
    exits = FLAKY.replace('raise ValueError("lost my way")', "os._exit(0)").replace("CONDITION", "True")
    (tmp_path / "flaky_agents.py").write_text(exits.replace("import numpy", "import os\nimport numpy"))
    ended = sweep(tmp_path / "flaky.toml", tmp_path / "out", "--executor", "serial", cwd=tmp_path)
    assert ended.returncode == 1, ended.stderr
    lines = [line for line in ended.stderr.splitlines() if not line.startswith("collective sweep: progress: ")]
    assert len(lines) == 1 and lines[0].startswith("collective sweep: error: the sweep ended early: "), ended.stderr
    assert "(exit status 0)" in lines[0] and "flaky_agents:Walker" in lines[0]
    assert lines[0].endswith("rerun the same command to resume") and ended.stdout == ""


def test_a_serial_worker_dies_with_its_driver(tmp_path):
    """kill -9 of a serial sweep's driver while its worker plays a long unit (a plug-in that sleeps in the 7x7 cell)
    ends the worker too, within 10 s, where it went on to write its chunk beside a rerun."""
    (tmp_path / "flaky.toml").write_text(FLAKY_SPEC)
    sleepy = FLAKY.replace('raise ValueError("lost my way")', "time.sleep(120)").replace("CONDITION",
                                                                                         "self.rows == 7")
    (tmp_path / "flaky_agents.py").write_text(sleepy.replace("import numpy", "import time\nimport numpy"))
    out = tmp_path / "out"
    driver = subprocess.Popen([sys.executable, "-m", "collective", "sweep", str(tmp_path / "flaky.toml"), "--out",
                               str(out), "--executor", "serial"], cwd=tmp_path, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not ((out / MANIFEST_FILE).exists() and len((out / MANIFEST_FILE).read_text().splitlines()) >= 2):
            assert driver.poll() is None and time.monotonic() < deadline, "no chunk written"
            time.sleep(0.2)
        time.sleep(1)  # the worker is in the 7x7 cell's sleep
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(driver.pid, 0)  # a process of the driver's session is still there
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the serial worker outlived its killed driver by 10 s")
    finally:
        kill_session(driver)


def test_a_plugin_raising_on_a_ray_worker_stops_the_sweep_with_its_message(tmp_path):
    (tmp_path / "flaky.toml").write_text(FLAKY_SPEC)
    write_flaky(tmp_path, broken=True)
    failed = sweep(tmp_path / "flaky.toml", tmp_path / "out", "--workers", "2", "--executor", "ray", cwd=tmp_path)
    assert failed.returncode == 2
    assert "plug-in flaky_agents:Walker.act: raised ValueError: lost my way" in failed.stderr
    assert "grid=7x7" in failed.stderr and "Traceback" not in failed.stderr
    assert "7x7" not in set(pd.read_parquet(tmp_path / "out" / "dataset")["grid"])


LEARNER = '''
import numpy as np


class Drifter:
    """Persistent: remembers, across the batches it plays, which move paid most on average."""

    persistent = True
    batch_episodes = 25  # its learning curve: 25 episodes at a time, in episode order

    def __init__(self):
        self.paid, self.counts = np.zeros(9), np.ones(9)

    def reset(self, batch):
        self.streams = batch.streams
        if not self.persistent:
            self.paid, self.counts = np.zeros(9), np.ones(9)

    def act(self, obs):
        explore = self.streams.integers(9)
        best = int(np.argmax(self.paid / self.counts))
        self.last = np.where(self.streams.random() < 0.3, explore, best)
        return self.last

    def observe(self, rewards):
        np.add.at(self.paid, self.last.ravel(), rewards.ravel())
        np.add.at(self.counts, self.last.ravel(), 1)
'''

LEARNER_SPEC = """
name = "drift"
seed = 2
profile = "paper"
episodes = 300
iterations = 20

[factors]
grid = ["5x5", "6x6"]
group_size = [2]

[groups]
behaviours = ["drift_agents:Drifter"]
"""


def test_persistent_learners_give_the_same_rows_for_1_and_2_workers(tmp_path):
    """The rule: one plug-in object per (cell, environment block), playing the block's episodes in
    order in `collective evaluate`'s batches; the plan never splits such a block, so the learning
    curve does not depend on the worker count."""
    (tmp_path / "drift_agents.py").write_text(LEARNER)
    (tmp_path / "drift.toml").write_text(LEARNER_SPEC)
    runs = {}
    for workers in ("1", "2"):
        done = sweep(tmp_path / "drift.toml", tmp_path / f"w{workers}", "--workers", workers, "--executor", "ray",
                     cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runs[workers] = without_timings(tmp_path / f"w{workers}" / "dataset")
    assert runs["1"].equals(runs["2"]) and len(runs["1"]) == 2 * 300
    (tmp_path / "drift_agents.py").write_text(LEARNER.replace("persistent = True", "persistent = False"))
    done = sweep(tmp_path / "drift.toml", tmp_path / "fresh", "--executor", "serial", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # what it carried from batch to batch changed the later batches' episodes
    fresh = without_timings(tmp_path / "fresh" / "dataset")
    later = runs["1"]["episode"] >= 25
    assert (runs["1"].loc[later, "score"] != fresh.loc[later, "score"]).mean() > 0.5
