"""A class graded at once: `grade` runs `grade_notebook` over many notebooks, `jobs` at a time
(`labkit.learn.grade.pool`), keeps each grading in the learner store as it is done, says
progress per notebook (done, with a check not passed, time left), and writes the table and
reports at the end. Stopped by Ctrl-C, SIGTERM or SIGHUP, it ends every kernel and raises
`Interrupted`, whose sentence names what was graded and kept, as the store has it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

from . import pool
from .formats import format_table, summary
from .read import Unreadable, exercises_in, notebooks_in
from .run import GradeError, KernelNotStarted
from .sandbox import UNTRUSTED
from .manual import keep_grading


def grade(
    paths,
    grade_notebook,
    unreadable_row,
    *,
    json_path=None,
    timeout=None,
    write=None,
    hidden=None,
    out=None,
    err=None,
    sandbox: str = "none",
    jobs: int | None = None,
    notebook_timeout: float | None = None,
) -> int:
    """Grade several notebooks (or the exercise notebooks of a folder) with `grade_notebook`
    (one that cannot be read or started: `unreadable_row(path, exc)`) into one table, `jobs`
    at a time (default: this machine's cores), each kernel in `sandbox` ("bwrap" or "none");
    0 when every check passed, else 1. `write(rows)`, if given, writes the rows in other
    formats (`labkit.learn.grade.formats`). Stopped (Ctrl-C, SIGTERM, SIGHUP), it raises
    `Interrupted`, whose sentence says which notebooks were graded and kept."""
    out, err = out or sys.stdout, err or sys.stderr
    notebooks = notebooks_in(paths)
    from ...store.outputs import check_command

    check_command({"json_path": json_path}, {"notebook": notebooks})
    jobs = check_jobs(jobs)
    if hidden is not None:
        hidden.refuse_unmatched(exercises_in(notebooks))
        hidden.define()
    preload()  # all the grader will run, imported before any kernel starts
    if sandbox == "none":
        err.write(f"labkit grade: {UNTRUSTED}.\n")
    tty = err.isatty() and jobs == 1 and len(notebooks) == 1

    def one(path):
        def progress(done, total):
            if tty:
                err.write(f"\rgrading {path.name}: cell {done}/{total}")
                err.flush()

        started = time.perf_counter()
        got = grade_notebook(
            path,
            timeout=timeout,
            progress=progress,
            hidden=hidden,
            sandbox=sandbox,
            notebook_timeout=notebook_timeout,
        )
        return got, time.perf_counter() - started

    by, unread, kept, not_kept, began = {}, [], [], None, time.monotonic()
    try:
        for path, result in pool.graded(notebooks, one, jobs):
            if isinstance(result, (Unreadable, KernelNotStarted)):  # a row; the others go on
                unread.append(result)
                by[path] = [unreadable_row(path, result)]
                continue
            if isinstance(result, BaseException):
                raise result
            got, seconds = result
            with _signals_held():  # kept in the store and said as kept: both, or neither
                by[path] = got
                why = keep_grading(path, got)
                not_kept = not_kept or why
                if why is None:
                    kept.append(path)
            err.write(("\r" if tty else "") + _progress(path, got, seconds, by, notebooks, began))
    except KeyboardInterrupt as exc:
        pool.stop()
        raise Interrupted(_interrupted(notebooks, by, kept), exc) from None
    rows = [r for path in notebooks for r in by[path]]
    if len(unread) == len(notebooks):
        raise unread[0]  # nothing was graded: one sentence, as for any bad input
    out.write(format_table(rows, hidden=hidden))
    if sandbox == "none":
        out.write(f"({UNTRUSTED})\n")
    if json_path:
        from ...store.outputs import write_json
        from .formats import grades_document

        doc = grades_document(rows, summary(rows), sandbox=sandbox)
        write_json(json_path, doc, parameter="json_path")
    if write is not None:
        write(rows)
    if not_kept:
        raise GradeError(
            f"The grades were not kept in the learner store ({not_kept}); the "
            "table and every report asked for were written."
        )
    return 0 if all(r.status == "passed" for r in rows) else 1


class Interrupted(KeyboardInterrupt):
    """Grading stopped by a signal; `said` tells which notebooks were graded and kept."""

    def __init__(self, said: str, by: KeyboardInterrupt | None = None):
        super().__init__(said)
        self.said = said
        self.signum = getattr(by, "signum", signal.SIGINT)  # the shell's status: 128 + it


def check_jobs(jobs) -> int:
    """`jobs`, checked (None: this machine's cores)."""
    from ...errors import check_number

    if jobs is None:
        return max(1, os.cpu_count() or 1)
    check_number("--jobs", jobs, minimum=1, maximum=MAX_JOBS, integer=True)
    return jobs


def _names(paths) -> str:
    names = [p.name for p in paths]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _interrupted(notebooks, by, kept) -> str:
    """What a stopped grading kept, e.g. "A was graded and kept; B was not graded"."""
    parts = []
    lost = [p for p in notebooks if p in by and p not in kept]
    never = [p for p in notebooks if p not in by]
    for group, what in (
        (kept, "graded and kept"),
        (lost, "graded, not kept"),
        (never, "not graded"),
    ):
        if group:
            parts.append(f"{_names(group)} {'was' if len(group) == 1 else 'were'} {what}")
    return "; ".join(parts) + "; the notebooks were not changed"


def _progress(path, got, seconds, by, notebooks, began) -> str:
    """One line per notebook graded, with the count done, failures so far, time left."""
    passed = sum(r.status == "passed" for r in got)
    done = len(by)
    failing = sum(any(r.status != "passed" for r in rows) for rows in by.values())
    line = f"graded {path.name}: {passed}/{len(got)} checks passed in {seconds:.1f} s"
    if len(notebooks) > 1:
        left = (time.monotonic() - began) / done * (len(notebooks) - done)
        line += f" ({done}/{len(notebooks)} done, {failing} with a check not passed"
        line += f", about {_duration(left)} left)" if done < len(notebooks) else ")"
    return line + "\n"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


@contextmanager
def _signals_held():
    """Hold Ctrl-C, SIGTERM and SIGHUP back while the block runs (in the main thread, where
    Python runs signal handlers), then stop as they would have."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    held = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            raise KeyboardInterrupt


def preload() -> None:
    """Import every module the grader runs after kernels start (the checks, the answers'
    classes, the reports), so a module changed on disk by a kernel is never read by it."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name, __package__)


PRELOAD = (
    "labkit.learn.check",
    "labkit.learn.check._predict",
    "labkit.learn.curves.quiz",
    "labkit.core.run",
    "labkit.diagnosis.probes._common",
    "labkit.diagnosis.record.triage",
    "labkit.forecast.forecast",
    "labkit.store.learner",
    "labkit.store.outputs",
    "labkit.learn.grade.formats",
    "labkit.learn.grade.verdict",
    "labkit.learn.grade.sandbox",
    "labkit.learn.grade.truth",
    "labkit.learn.check.ex.seams",  # and what training the runs again needs: the zoo, the loop
    "labkit.bugs.inject",
    "torch._dynamo",  # imported by the first optimizer's construction
    "IPython.core.inputtransformer2",
    "nbclient",
    "jupyter_client.manager",
    "numpy",
    "torch",
)
MAX_JOBS = 512  # threads, each waiting on one kernel; far beyond any machine's cores
