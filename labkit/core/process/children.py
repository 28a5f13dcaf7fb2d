"""The processes labkit starts (gloo ranks), owned and ended on every way out.

    ctx = start(fn, args, nprocs)     # `nprocs` spawned processes, each running fn(i, *args)
    with owned(ctx): ...              # however the block ends, every one of them has ended

A child starts by `adopt`ing its place: it leads a process group of its own, so that one
signal to that group ends the child and whatever it started (a DataLoader's workers, a
learner's subprocess), and the terminal's Ctrl-C reaches only labkit's command, which then
ends the group; the kernel sends it SIGKILL when the thread that started it dies
(``PR_SET_PDEATHSIG``), which covers the one way out no ``finally`` sees: the parent killed
with SIGKILL; and a watcher forked into its group ends the group once the child has died,
so what the child started goes with it even then. `end` sends SIGKILL to each child's group,
waits for it, and removes the error files torch.multiprocessing leaves in the temporary
folder.

What this cannot end: a process that leaves its group on purpose (``setsid``) and outlives
the rank that started it; only a PID namespace ends that (see `labkit.learn.grade`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import multiprocessing.util  # noqa: F401 (its exit hook first, so that ours runs before it)
import os
import signal
import threading
import time
import weakref

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # what a user or a supervisor sends
WATCH_S = 0.2  # how often a group's watcher looks whether the child it watches still runs
END_WAIT_S = 5.0  # SIGKILL takes effect at once; this only bounds the wait for the kernel


def adopt(parent: int) -> None:
    """In a child, first: a process group of its own, SIGKILL when its parent dies, and a
    watcher that ends the group once the child has died. A child whose parent died before
    this ran exits at once (nobody would end it)."""
    os.setpgid(0, 0)
    _die_with_parent()
    _watch_group()
    for s in STOPS:  # one sent to labkit's group before this (Ctrl-C) was not for the child:
        signal.signal(s, signal.SIG_IGN)  # ignoring a pending signal discards it
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)  # blocked by `start` while it spawned
    if os.getppid() != parent:
        os._exit(1)


def _die_with_parent() -> None:
    """SIGKILL when the parent dies (``PR_SET_PDEATHSIG``); nothing where there is no prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's `end` is what remains
        pass


def _watch_group() -> None:
    """Fork a watcher into the child's group: once the child has died, however it died (the
    kernel's SIGKILL on its parent's death included), the watcher ends the child's group:
    what the child started, and itself. Forked before anything is imported (one thread)."""
    leader = os.getpid()
    if os.fork() != 0:
        return
    try:  # the watcher: no handler, no clean-up of the child's, only the wait
        for s in STOPS:
            signal.signal(s, signal.SIG_IGN)  # a signal for the child's group is not for it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        while os.getppid() == leader:
            time.sleep(WATCH_S)
        os.killpg(leader, signal.SIGKILL)
    finally:
        os._exit(0)


def _then(fn, i: int, *args) -> None:
    _die_with_parent()  # torch's _wrap sets SIGINT, which a rank's `except BaseException` eats
    fn(i, *args)


def _adopted(parent: int, i: int, payload: bytes, error_file: str) -> None:
    adopt(parent)  # before the payload's imports (torch: seconds a parent's death went unseen)
    import pickle

    from torch.multiprocessing.spawn import _wrap

    fn, args = pickle.loads(payload)
    _wrap(functools.partial(_then, fn), i, args, error_file)  # torch's: errors reach join()


def start(fn, args: tuple, nprocs: int):
    """`nprocs` processes started with the "spawn" method, each running ``fn(i, *args)`` in a
    group of its own (`adopt`); torch.multiprocessing's ProcessContext, not joined. As
    ``torch.multiprocessing.start_processes``, but each child adopts its place before it
    imports anything of `fn`'s, and a start cut short ends the processes already started.
    Whatever is still running when the interpreter exits is ended then (`_at_exit`)."""
    import multiprocessing
    import tempfile
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing.spawn import ProcessContext

    spawn, payload = multiprocessing.get_context("spawn"), bytes(ForkingPickler.dumps((fn, args)))
    started = _Started()
    _LIVE.add(started)
    try:
        for i in range(nprocs):
            with tempfile.NamedTemporaryFile(prefix="pytorch-errorfile-", suffix=".pickle") as tf:
                started.error_files.append(tf.name)  # a name only: a failing child writes it
            p = spawn.Process(target=_adopted, args=(os.getpid(), i, payload, tf.name))
            with _held():  # a child cut off mid-handshake prints a traceback
                p.start()
                started.processes.append(p)
    except BaseException:
        end(started)
        raise
    ctx = ProcessContext(started.processes, started.error_files)
    _LIVE.discard(started)
    _LIVE.add(ctx)
    return ctx


class _Started:
    """The processes of a start in progress (a ProcessContext needs them all started)."""

    def __init__(self):
        self.processes, self.error_files = [], []


_LIVE: weakref.WeakSet = weakref.WeakSet()  # every context started here and not yet ended


@atexit.register
def _at_exit() -> None:
    """At the interpreter's exit, before multiprocessing joins its children (it would wait
    for a rank that waits for work): every child still running is ended."""
    for ctx in list(_LIVE):
        end(ctx)


@contextlib.contextmanager
def _held():
    """SIGINT, SIGTERM and SIGHUP held back for the block, then delivered. Blocking them in
    this thread is not enough: another thread (torch's, a timer's) takes the signal and
    Python runs the handler in the main thread all the same, so in the main thread the
    handlers are also swapped for one that notes the signal. The children started here
    inherit the block; `adopt` lifts it."""
    noted, before = [], {}
    if threading.current_thread() is threading.main_thread():
        for s in STOPS:
            handler = signal.getsignal(s)
            if handler is not None:  # None: set outside Python, and cannot be put back
                before[s] = signal.signal(s, lambda signum, frame: noted.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for s, handler in before.items():
            signal.signal(s, handler)
        for signum in noted:
            os.kill(os.getpid(), signum)  # now: its own handler, or its default action


def _kill_group(pid: int) -> None:
    """SIGKILL to the group `pid` leads (the child and what it started), or to the child
    alone while it has not yet left labkit's own group."""
    try:
        if os.getpgid(pid) == pid and pid != os.getpgrp():
            os.killpg(pid, signal.SIGKILL)
            return
    except (ProcessLookupError, PermissionError):
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # what the child started after it led a group, if any


def end(ctx) -> None:
    """End every process of `ctx` (a ProcessContext) and its group; remove the error files."""
    processes = [p for p in getattr(ctx, "processes", []) if p is not None]
    for p in processes:
        if p.pid is not None:
            _kill_group(p.pid)
    deadline = time.monotonic() + END_WAIT_S
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for path in getattr(ctx, "error_files", None) or []:
        with contextlib.suppress(OSError, TypeError):
            os.unlink(path)
    _LIVE.discard(ctx)


SCRATCH = "labkit-ranks-"  # + this process's id + "-": one launch's folder in $TMPDIR


def scratch() -> str:
    """A new folder for one launch's files (rendezvous, results, progress), named with this
    process's id; the caller removes it. A folder a killed process left is removed by the
    next launch (`sweep`), since no ``finally`` of the killed one ran."""
    import tempfile

    sweep()
    return tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-")


@contextlib.contextmanager
def scratch_folder():
    """`scratch()` for the block, removed however it ends."""
    import shutil

    folder = scratch()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep(root: str | None = None) -> list[str]:
    """Remove the launch folders in `root` ($TMPDIR) whose process no longer runs."""
    import re
    import shutil
    import tempfile

    from ...store.files import _alive

    root, removed = root or tempfile.gettempdir(), []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        found = re.match(rf"{SCRATCH}(\d+)-", name)
        if found and not _alive(int(found[1])):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed.append(name)
    return removed


@contextlib.contextmanager
def owned(ctx):
    """`ctx` for the block; on every way out of it (a return, an error, Ctrl-C, a signal
    turned into an exception), every process it started has ended."""
    try:
        yield ctx
    finally:
        end(ctx)
