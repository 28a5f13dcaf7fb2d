"""A class graded in parallel: `jobs` threads, each grading one notebook at a time (its kernel
a process of its own, in its own sandbox), results handed back to the main thread as each
notebook is done, in the order they finish.

The main thread only waits: Ctrl-C, SIGTERM or SIGHUP reaches it at once, whatever the kernels
do. `stop` then ends every kernel still running (its process group, and with it the sandbox
and all it started) and removes its folder, without waiting for any thread: the threads are
daemons, and a kernel's clean-up that hangs holds nothing up.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import signal
import threading

LIVE: dict = {}  # NotebookClient -> its submission's folder, while its kernel may run
_LOCK = threading.Lock()


def started(client, work: str) -> None:
    with _LOCK:
        LIVE[client] = work


def ended(client) -> None:
    with _LOCK:
        LIVE.pop(client, None)


def stop() -> None:
    """End every kernel still running and remove its folder (and connection file)."""
    with _LOCK:
        live = list(LIVE.items())
        LIVE.clear()
    for client, work in live:
        atexit.unregister(client._cleanup_kernel)  # nbclient's, at exit: the kernel is gone
        process = getattr(getattr(getattr(client, "km", None), "provisioner", None), "process", 0)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        shutil.rmtree(work, ignore_errors=True)
        try:
            os.remove(client.km.connection_file)
        except (OSError, AttributeError, TypeError):
            pass
    from .sandbox import release

    for _, work in live:  # each sandbox's cgroup, once its killed tasks are gone
        release(work)


def graded(items: list, grade_one, jobs: int):
    """Yield (item, result or exception) for each of `items` as `grade_one(item)` finishes,
    at most `jobs` at a time."""
    todo: queue.Queue = queue.Queue()
    done: queue.Queue = queue.Queue()
    for item in items:
        todo.put(item)

    def work():
        while True:
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((item, grade_one(item)))
            except BaseException as exc:  # noqa: BLE001 -- handed to the main thread, raised there
                done.put((item, exc))

    for _ in range(max(1, min(jobs, len(items)))):
        threading.Thread(target=work, daemon=True).start()
    for _ in items:
        while True:
            try:
                yield done.get(timeout=0.5)  # a short wait: signals reach the main thread
                break
            except queue.Empty:
                continue
