"""Forecasts still open in this kernel: every run waits for their seal, or is refused.

A forecast widget (the sketch, an exercise's prediction form) holds a slot here from the
moment it is made. Every call that produces a run or a probe's numbers (`Trainer`, and so
``train``, Lab 15's mysteries and pipelines; the distributed lesson's ranks) first calls
`consult()`, which asks each widget still unsealed for its own ``require()``: that waits for
the Seal where a front end shows the widget, and refuses with the widget's one sentence
anywhere else. So no cell, whatever the order it is run in (Run All, one at a time, after a
stopped wait), shows a number of a run whose forecast is still open.

A cell below a refused run reads names that run never made (`healthy`, a record's row): while
a forecast is open, its NameError or KeyError is shown as that forecast's sentence, not as a
traceback (`_unmade`).

A widget made again for the same slot (its cell re-run) takes the slot over; the old one no
longer holds anything. Only an IPython shell (a notebook's kernel, papermill, nbval,
`labkit grade`'s kernels) is gated: a script or a test process has no one to draw a sketch.
"""

from __future__ import annotations

import sys
import weakref

_SLOTS: dict = {}  # slot -> weak reference to the widget that holds it


def hold(slot: tuple, widget) -> None:
    """`widget` (with ``sealed``, ``require()`` and ``refusal()``) holds `slot` until sealed."""
    _SLOTS[slot] = weakref.ref(widget)
    shell = _shell()
    if shell is not None and getattr(shell, "custom_exceptions", ()) == ():
        shell.set_custom_exc((NameError, KeyError), _unmade)


def open_forecasts() -> list:
    """The widgets of this kernel whose forecast is not sealed yet, oldest slot first."""
    alive = [(slot, ref()) for slot, ref in list(_SLOTS.items())]
    for slot, widget in alive:
        if widget is None:
            _SLOTS.pop(slot, None)
    return [w for _, w in alive if w is not None and not w.sealed]


def _shell():
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def consult() -> None:
    """Before a run: every open forecast's ``require()`` (waits for its Seal, or refuses)."""
    if _shell() is None:
        return
    for widget in open_forecasts():
        widget.require()


def _unmade(shell, etype, value, tb, tb_offset=None) -> list[str]:
    """IPython's handler for a NameError or KeyError: while a forecast is open, the cell read
    what a refused run never made, so it says the forecast's sentence; else the usual trace."""
    still_open = open_forecasts()
    if not still_open:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    else:
        first = still_open[0].refusal()
        stb = type(first)(
            f"This cell reads a run that has not happened yet ({etype.__name__}: {value}), "
            f"because a forecast above is not sealed. {first}"
        )._render_traceback_()
    shell._showtraceback(etype, value, stb)  # IPython leaves showing it to the handler
    return stb
