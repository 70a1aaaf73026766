"""Ends an embedded Ray's processes when the sweep that started them ends, even by kill -9.

`RayExecutor` runs this file as a script (standard library only: `python -I ray_watchdog.py DIRECTORY PID
SID`, the sweep's process and its session) in a session of its own, its stdin a pipe that only the sweep's
process holds open, before it starts Ray in DIRECTORY, a temporary directory of its own (Ray's sockets, logs
and its processes' working directory). End of file on stdin means that process is gone, or done with Ray:
every process of its session (Ray's stay in it) whose working directory or an open file lies in DIRECTORY,
which are that Ray's and no one else's, is then killed, and DIRECTORY removed.
Without it, Ray's gcs_server and raylet die with the driver (a parent-death signal), but its workers take a
few seconds and its two agents a minute (they wait for the dead GCS before they exit).
"""
import os
import shutil
import signal
import sys
import time

KILL_SECONDS = 10.0  # at most, to kill what the dead Ray leaves (the raylet may start a worker meanwhile)


def session_processes(directory: str, sweep: int, session: int) -> list[int]:
    """The processes of `session` with their working directory or an open file in `directory`, but for the
    sweep's process (alive when it closed the pipe: done with Ray, which it has shut down)."""
    inside = directory.rstrip("/") + "/"
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == sweep:
            continue
        try:
            if os.getsid(int(entry.name)) != session:
                continue
            links = [os.readlink(f"/proc/{entry.name}/cwd")]
            for fd in os.listdir(f"/proc/{entry.name}/fd"):
                try:
                    links.append(os.readlink(f"/proc/{entry.name}/fd/{fd}"))
                except OSError:  # closed meanwhile
                    pass
        except OSError:  # another user's, or gone
            continue
        if any((link + "/").startswith(inside) for link in links):
            found.append(int(entry.name))
    return found


def main(directory: str, sweep: int, session: int) -> None:
    """Wait for the end of stdin, then end the processes of `sweep`'s Ray (see the module's docstring)."""
    sys.stdin.buffer.read()  # until the sweep's process closes the pipe, or dies
    deadline = time.monotonic() + KILL_SECONDS
    while os.path.isdir("/proc") and (pids := session_processes(directory, sweep, session)) \
            and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the sweep's to handle; its end is ours
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
