"""`collective.progress`: the plain progress lines off a terminal (cadence, arithmetic, bookends)
on a hand-driven clock, and the compile notice on a function numba has never compiled."""
import re
from types import SimpleNamespace

import pytest
from numba import njit

from collective import progress
from collective.progress import COMPILE_NOTICE, Progress, announce_compilation, compilation_done


@pytest.fixture
def clock(monkeypatch):
    """The progress module's clock, set by hand (seconds)."""
    now = SimpleNamespace(seconds=0.0)
    monkeypatch.setattr(progress, "time", SimpleNamespace(perf_counter=lambda: now.seconds))
    return now


def lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_lines_come_at_most_every_interval_with_done_rate_and_eta(clock, capsys):
    with Progress(1000, "episodes", "collective", "random x5") as bar:
        clock.seconds = 4.0
        bar.update(100)
        assert lines(capsys) == []  # a short run says nothing
        clock.seconds = 10.0
        bar.update(100)  # 200 done in 10 s: 20 episodes/s, 800 left: 40 s
        clock.seconds = 15.0
        bar.update(100)  # not yet 10 s since the last line
        assert lines(capsys) == ["collective: progress: random x5: 200/1,000 episodes (20%), 20 episodes/s, "
                                 "elapsed 10 s, ETA 40 s"]
        clock.seconds = 20.0
        bar.update(200)
        assert lines(capsys) == ["collective: progress: random x5: 500/1,000 episodes (50%), 25 episodes/s, "
                                 "elapsed 20 s, ETA 20 s"]
        clock.seconds = 25.0
        bar.update(500)
    assert lines(capsys) == ["collective: progress: random x5: 1,000/1,000 episodes (100%), 40 episodes/s, "
                             "elapsed 25 s, ETA 0 s"]  # a run that printed lines ends with one


def test_bookends_status_resumed_work_and_no_last_line_after_an_error(clock, capsys):
    with pytest.raises(RuntimeError):
        with Progress(40_000_000, "agent-steps", "collective sweep", "tiny", initial=10_000_000, bookends=True) as bar:
            bar.update(0, "cells 1/4")
            clock.seconds = 12.0
            bar.update(6_000_000, "cells 2/4")  # 6 M in 12 s this run (the resumed 10 M do not count)
            raise RuntimeError
    assert lines(capsys) == [
        "collective sweep: progress: tiny: 10,000,000/40,000,000 agent-steps (25%), cells 1/4, 0 agent-steps/s, "
        "elapsed 0 s, ETA ?",
        "collective sweep: progress: tiny: 16,000,000/40,000,000 agent-steps (40%), cells 2/4, 500 k agent-steps/s, "
        "elapsed 12 s, ETA 48 s"]
    with Progress(None, "iterations", "collective anytime", bookends=True) as bar:
        clock.seconds = 14.0
        bar.update(2_000, "3 environments")  # 14 s after the previous bar's start: 2000 in 2 s
    assert lines(capsys)[-1] == "collective anytime: progress: 2,000 iterations, 3 environments, 1 k iterations/s, " \
                                "elapsed 2 s"


def test_nothing_when_disabled(clock, capsys):
    with Progress(10, "episodes", "collective", enabled=False, bookends=True) as bar:
        clock.seconds = 60.0
        bar.update(10)
    assert lines(capsys) == []


def test_compile_notice_comes_as_numba_starts_compiling_and_once_until_done(capsys):
    announce_compilation()
    compilation_done()  # ends any phase an earlier test in this process began
    capsys.readouterr()

    @njit
    def never_compiled(x):
        return x + 1

    compilation_done()  # nothing compiled yet: says nothing
    assert lines(capsys) == []
    assert never_compiled(1) == 2
    assert never_compiled(1.5) == 2.5  # a second compilation in the same phase: no second notice
    assert lines(capsys) == [COMPILE_NOTICE]
    compilation_done()
    assert re.fullmatch(r"collective: \.\.\. done in \d+ s", lines(capsys)[0])
    assert never_compiled(2) == 3  # loaded: no notice
    assert lines(capsys) == []
    never_compiled(1j)  # compiled after `compilation_done`: announced again
    assert lines(capsys) == [COMPILE_NOTICE]
    compilation_done()


def _eta_seconds(line: str) -> float:
    minutes, seconds = re.search(r"ETA (?:(\d+) min )?(\d+) s", line).groups()
    return 60 * int(minutes or 0) + int(seconds)


def test_phases_print_at_once_and_the_eta_after_a_tenth_is_within_2x_of_the_truth(clock, capsys):
    """The issue's sweep: 40 s of start-up (Ray, the workers' kernels), then 10 s of steady work. The
    ETA counts the work from PLAYING on (counting the start-up, it said minutes for seconds left)."""
    with Progress(1000, "agent-steps", "collective sweep", bookends=True) as bar:
        bar.update(0)
        bar.phase(progress.STARTING_RAY)
        clock.seconds = 30.0
        bar.phase(progress.LOADING_KERNELS)
        clock.seconds = 40.0
        bar.phase(progress.PLAYING)
        started = lines(capsys)
        assert [line.split(": ")[2].split(",")[0] for line in started[1:]] == [
            "starting Ray", "loading kernels", "playing"]
        for step in range(1, 11):  # 100 agent-steps a second
            clock.seconds = 40.0 + step
            bar.update(100)
            if step == 1:
                eta = _eta_seconds(progress_line := bar.line())
                assert "playing" in progress_line and 9 / 2 <= eta <= 9 * 2, progress_line
