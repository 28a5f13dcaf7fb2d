"""SIGTERM and SIGHUP end a `labkit` command as Ctrl-C does: cleanly, and saying what was kept.

Their default action ends the process where it stands: no ``finally`` runs, so a temporary
file beside an output stays, and the ranks a command started are left to the kernel's
parent-death signal. Within `stopping()`, the first of them raises `Stopped` (a
KeyboardInterrupt, so that no ``except Exception`` in labkit or in the learner's code
swallows it) in the main thread; every ``finally`` on the way out runs (temporary files are
removed, ranks ended), and `main` says what was kept, with the shell's status for that
signal (128 + its number). Further SIGTERM or SIGHUP while the command cleans up are
ignored; Ctrl-C stays Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The command was stopped by `signum` (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def status(exc: KeyboardInterrupt) -> int:
    """The shell's exit status for the signal that stopped the command (130 for Ctrl-C)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def name(exc: KeyboardInterrupt) -> str:
    """Ctrl-C, or the name of the signal that stopped the command (a `Stopped`, or grading's
    `Interrupted`, which carries the signal it was stopped by)."""
    signum = getattr(exc, "signum", signal.SIGINT)
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


@contextmanager
def stopping():
    """SIGTERM and SIGHUP raise `Stopped` inside the block (main thread only; elsewhere the
    block runs as it is); the handlers before it are put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        for s in SIGNALS:  # once: the clean-up that follows is not cut short again
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    before = {s: signal.signal(s, stop) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def outputs_kept(args, started: float) -> str:
    """What became of the command's output files, in words: each was written by this run
    (it is whole: outputs are written to a temporary file and renamed), or was not, and a
    file already there is as it was."""
    said = []
    for flag in ("json", "gradescope", "csv"):
        path = getattr(args, flag, None)
        if not isinstance(path, str) or path == "-":
            continue
        try:
            found = os.stat(os.path.expanduser(path))
        except OSError:
            found = None
        if found is not None and not stat.S_ISREG(found.st_mode):
            continue  # a FIFO, a device, a terminal: what reached it is not labkit's to say
        written = found is not None and found.st_mtime >= started - 1e-3
        said.append(
            f"--{flag} {path} was written whole"
            if written
            else f"--{flag} {path} was not written (a file already there is unchanged)"
        )
    return "; ".join(said)
