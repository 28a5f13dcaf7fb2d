"""The time budget of `labkit.diagnose` on a learner's own setup.

``with budget(60), bounded(setup): ...`` gives every call into the learner's code inside it
(make_model, make_optimizer, batches, val_batches, loss_fn, train, ...) the time left of
60 s; `within` runs one call and stops it when that time runs out, with a `BudgetExceeded`
sentence naming the call. A call inside another (the learner's train() calling its own
loss_fn) shares the outer call's timer. A watchdog thread alone cannot stop Python code, so:
- in the main thread (a script, the CLI, a notebook cell), a SIGALRM timer raises in the
  learner's loop, which also cuts short a ``time.sleep`` or a wait on I/O;
- in any other thread, a timer thread raises in it with ``PyThreadState_SetAsyncExc``,
  which lands at the next Python instruction (a loop of torch ops, ``while True: pass``).
What stops the loop is a BaseException, so the learner's ``except Exception`` cannot
swallow it. A single C call that never returns (a deadlock inside a library) is the one
thing neither can stop.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from contextlib import contextmanager

from ....errors import check_number

DEFAULT_BUDGET_S = 600.0  # a whole triage of a small setup takes seconds; this is a wide margin
MAX_BUDGET_S = 1e7  # about 115 days: far beyond any triage, well inside what the timers hold
GRACE_S = 3.0  # a call other than train() (labkit's own loops call loss_fn, batches, ...) may run
# this long past the budget: the triage's own work finishes on a slow machine, a call that
# never returns is still stopped within the budget plus GRACE_S (the bar: plus 5 s)
_STATE = {"deadline": None, "budget": None, "calls": [], "stopped": None}


class BudgetExceeded(ValueError):
    """The setup's train() ran past the triage's time budget and was stopped."""


class _Stop(BaseException):
    pass


class _Late(BaseException):
    """A call stopped by the deadline, on its way out of the triage: a BaseException, so no
    ``except Exception`` (the learner's or labkit's own) can swallow it; `budget` turns it
    into BudgetExceeded."""


def check_budget(seconds, parameter: str = "budget_s") -> None:
    """Refuse a budget that is not a positive number of seconds labkit's timer can hold."""
    check_number(parameter, seconds, minimum=0, strict_min=True, allow_none=True)
    if seconds is not None and seconds > MAX_BUDGET_S:
        raise ValueError(
            f"{parameter}={seconds!r} is more than labkit's own timer can hold (at "
            f"most {MAX_BUDGET_S:g} s, about 115 days); give a smaller {parameter}, "
            f"or leave it out for the default {DEFAULT_BUDGET_S:g} s."
        )


@contextmanager
def budget(seconds):
    """Calls of `within` inside this block share `seconds` (None: no limit)."""
    check_budget(seconds)
    saved = dict(_STATE, calls=[])
    _STATE.update(deadline=None if seconds is None else time.monotonic() + seconds, budget=seconds)
    try:
        yield
    except _Late as exc:
        raise BudgetExceeded(str(exc)) from None
    finally:
        _STATE.update(saved)


def within(fn, what: str, grace: float = 0.0):
    """`fn()`, stopped with BudgetExceeded when the budget's time, plus `grace` seconds, runs
    out first."""
    deadline, calls = _STATE["deadline"], _STATE["calls"]
    if deadline is None:
        return fn()
    calls.append(what)
    try:
        if len(calls) > 1:  # inside another call: its timer covers this one
            return fn()
        left = deadline - time.monotonic()
        left = left if not grace else max(left, 0.0) + grace
        try:
            if left <= 0:
                _STATE["stopped"] = what
                raise _Stop
            with _alarm(left):
                return fn()
        except _Stop:
            raise _Late(_late(_STATE["stopped"] or what)) from None
    finally:
        calls.pop()


def _late(what: str) -> str:
    hint = (
        "make train() shorter (fewer epochs or steps, a smaller model), check that its loop ends"
        if ".train(" in what
        else "check that it returns (a loop that ends, data that arrives)"
    )
    return (
        f"{what} was still running when the triage's time budget of budget_s="
        f"{_STATE['budget']:g} s ran out, so labkit stopped it; {hint}, or pass a larger "
        "budget_s to labkit.diagnose (--budget for `labkit triage`)."
    )


def _ring() -> None:
    _STATE["stopped"] = _STATE["calls"][-1] if _STATE["calls"] else None


@contextmanager
def _alarm(seconds: float):
    armed = {"on": True}
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):

        def ring(signum, frame):
            if armed["on"]:
                _ring()
                raise _Stop

        old = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            armed["on"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        return
    target, lock = threading.get_ident(), threading.Lock()

    def ring():
        with lock:
            if armed["on"]:
                _ring()
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(target), ctypes.py_object(_Stop)
                )

    timer = threading.Timer(seconds, ring)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            armed["on"] = False
        timer.cancel()
