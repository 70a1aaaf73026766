"""What a long run says on stderr while it works: its progress, and a first run's compilation.

`Progress` is the progress of `collective evaluate`/`demo` (episodes), `collective sweep`
(agent-steps) and `collective anytime --json` (iterations): a tqdm bar on a terminal; elsewhere (a
log file, `nohup`, CI), where a bar draws nothing readable, a plain line at most every
PROGRESS_SECONDS with done/total, the rate and the ETA. `announce_compilation` makes numba's first
compilation in a process say so before it starts (a cold cache compiles for about half a minute).
"""
from __future__ import annotations

import sys
import time


PROGRESS_SECONDS = 10.0  # plain progress lines (stderr not a terminal) come at most this often
# the install's warm-up compiles everything in 54 s on 2 idle cores (88 s in one process; notes/compile-time.md)
COMPILE_NOTICE = "collective: compiling kernels (once per code version; up to about a minute on 2 idle cores) ..."
CONFIRM_AGENT_STEPS = 10**12  # a larger evaluate, demo, anytime or sweep needs --yes
AGENT_STEPS_PER_SECOND = 10e6  # the kernel's rough speed, for the time a large run would take
STARTING_RAY, LOADING_KERNELS, PLAYING = "starting Ray", "loading kernels", "playing"  # a sweep's phases


def add_yes_option(parser) -> None:
    """The `--yes` option of every command that can start a large run (see `unconfirmed_work`)."""
    parser.add_argument("--yes", action="store_true",
                        help=f"run even above {CONFIRM_AGENT_STEPS:.0e} agent-steps (training passes included)")


def unconfirmed_work(steps: int, yes: bool, scope: str = "") -> str | None:
    """The `--yes` error for more than CONFIRM_AGENT_STEPS agent-steps without it, else None."""
    if steps <= CONFIRM_AGENT_STEPS or yes:
        return None
    hours = steps / AGENT_STEPS_PER_SECOND / 3600
    return (f"argument --yes: required for {steps:.2e} agent-steps{scope} (above {CONFIRM_AGENT_STEPS:.0e}; "
            f"~{hours:,.0f} h at ~10 M agent-steps/s)")


def duration(seconds: float) -> str:
    """'2 h 5 min', '3 min 4 s' or '12 s'."""
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def _rate(value: float) -> str:
    """Three significant digits with an SI prefix: '812', '5.43 k', '21.3 M'."""
    for factor, prefix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= factor:
            return f"{value / factor:.3g}{prefix}"
    return f"{value:.3g}"


class Progress:
    """Progress of `total` units of work (None: open-ended, no percentage or ETA), `initial` of
    them done before this run (a resumed sweep; the rate counts this run's work only). `update`
    adds work done and an optional status ("cells 3/9, ..."). Off a terminal, a line
    "PREFIX: progress: LABEL: done/total UNIT (pct%), status, rate UNIT/s, elapsed, ETA" comes at
    most every PROGRESS_SECONDS, and a last one at the end of a run that printed any; with
    `bookends` (a batch job's log) also one at the first `update` and one at the end of any run.
    A run that ends by an exception prints no last line. `phase` names what the run is doing
    ("starting Ray", "loading kernels", "playing"): off a terminal a line at once; the rate and the
    ETA count the work from the start of PLAYING on, so that a slow start-up does not inflate them."""

    def __init__(self, total: int | None, unit: str, prefix: str, label: str = "", *, initial: int = 0,
                 enabled: bool = True, bookends: bool = False):
        self.total, self.unit, self.prefix, self.label, self.bookends = total, unit, prefix, label, bookends
        self.done = self.initial = initial
        self.status = self.phase_name = ""
        self.started = self.shown = time.perf_counter()
        self.rate_started, self.rate_initial = self.started, initial  # the rate's origin (`phase`)
        self.shown_done: int | None = None
        terminal = sys.stderr.isatty()
        self.lines = enabled and not terminal
        scaled = total is None or total >= 100_000  # '12.3M/40.0M'; smaller counts exactly
        from tqdm import tqdm  # imported by the work, not by `--help`

        self.bar = tqdm(total=total, initial=initial, unit=f" {unit}", unit_scale=scaled, desc=label or None,
                        leave=False, dynamic_ncols=True, disable=not (enabled and terminal))

    def update(self, amount: int = 0, status: str | None = None) -> None:
        self.done += amount
        if status is not None:
            self.status = status
            self.bar.set_postfix_str(status, refresh=False)
        self.bar.update(amount)
        first = self.bookends and self.shown_done is None
        if self.lines and (first or time.perf_counter() - self.shown >= PROGRESS_SECONDS):
            self._line()

    def phase(self, name: str) -> None:
        """The run now does `name`; PLAYING restarts the rate's clock (start-up is not work)."""
        self.phase_name = name
        self.bar.set_description(f"{self.label} [{name}]" if self.label else f"[{name}]", refresh=True)
        if name == PLAYING:
            self.rate_started, self.rate_initial = time.perf_counter(), self.done
            self.bar.unpause()  # tqdm's rate and ETA too start from here
        if self.lines:
            self._line()

    def close(self, finished: bool = True) -> None:
        self.bar.close()
        if self.lines and finished and (self.bookends or self.shown_done is not None) and self.shown_done != self.done:
            self._line()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, error_type, *exc) -> None:
        self.close(finished=error_type is None)

    def line(self) -> str:
        """The plain progress line as of now."""
        now = time.perf_counter()
        elapsed, working = now - self.started, now - self.rate_started
        rate = (self.done - self.rate_initial) / working if working > 0 else 0.0
        amount = f"{self.done:,} {self.unit}"
        if self.total is not None:
            percent = 100 * self.done // self.total if self.total else 100
            amount = f"{self.done:,}/{self.total:,} {self.unit} ({percent}%)"
        parts = ([self.phase_name] if self.phase_name else []) + [amount] + ([self.status] if self.status else []) + [
            f"{_rate(rate)} {self.unit}/s", f"elapsed {duration(elapsed)}"]
        if self.total is not None:
            parts.append(f"ETA {duration((self.total - self.done) / rate) if rate else '?'}")
        return f"{self.prefix}: progress: {self.label + ': ' if self.label else ''}{', '.join(parts)}"

    def _line(self) -> None:
        self.shown, self.shown_done = time.perf_counter(), self.done
        print(self.line(), file=sys.stderr, flush=True)


class _CompileNotice:
    """Whether COMPILE_NOTICE stands (since when) and whether numba's compile events print it."""

    def __init__(self):
        self.since: float | None = None
        self.registered = False


_NOTICE = _CompileNotice()


def announce_compilation() -> None:
    """From now on in this process, numba's first compilation prints COMPILE_NOTICE on stderr
    before it starts, whatever triggers it (validating a K range, loading a kernel; a cache miss:
    loading from the cache fires no event). numba is imported here, not with the module: `--help`
    stays fast."""
    if not _NOTICE.registered:
        from numba.core import event

        class Listener(event.Listener):
            def on_start(self, _event) -> None:
                announce_compiling()

            def on_end(self, _event) -> None:
                pass

        event.register("numba:compile", Listener())
        _NOTICE.registered = True


def announce_compiling() -> None:
    """Print COMPILE_NOTICE now, unless it stands since the last `compilation_done` (for code
    compiled in other processes, e.g. a sweep's Ray workers)."""
    if _NOTICE.since is None:
        _NOTICE.since = time.perf_counter()
        print(COMPILE_NOTICE, file=sys.stderr, flush=True)


def compilation_done() -> None:
    """Once what a run needs is loaded: '... done in N s' after a COMPILE_NOTICE, else nothing."""
    if _NOTICE.since is not None:
        print(f"collective: ... done in {time.perf_counter() - _NOTICE.since:.0f} s", file=sys.stderr, flush=True)
        _NOTICE.since = None
