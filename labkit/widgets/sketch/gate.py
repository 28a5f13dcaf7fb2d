"""A sketch's seal across re-runs and restarts, and the run cell's wait for it.

`restore`: a sketch made again (the cell re-run, or a new kernel after a restart) comes back
sealed with the curves the learner last sealed for the same key, quantity, series and setups,
read from the learner store, so a Restart and Run All needs no redraw. It happens when a front
end first draws the widget (`watch`): where a learner sees it, never in a headless run, which
takes its curves from code or is refused. `redraw` (the "Draw again" button) opens a new
attempt; the old seal stays in the store.

`require`: the first line of a run cell. Curves given in code are sealed there (the headless
path); a hand-drawn seal leaves its curves in the cell's output for a grader
(`labkit.forecast.carry`); otherwise the cell waits for the Seal in a kernel whose front end
shows the widget, and refuses at once anywhere else (`labkit.forecast.gate`).
"""

from __future__ import annotations

import time
import weakref

from ...core.learner import pending
from ...forecast.carry import payload, show
from ...forecast.forecast import SHAPES, Forecast
from ...forecast.gate import SketchNotSealed, wait_for
from .series import label, note_for


def setup_hash(config, bug) -> str:
    """The config hash a series would be sealed for (as `Forecast.seal` computes it)."""
    if isinstance(config, str):
        return config
    from ...bugs.inject import resolve
    from ...core.train import config_hash

    config, _, bug_name = resolve(config, bug, None, {})
    return config_hash(config, bug_name)


def last_sealed(sketch) -> dict | None:
    """{series name: Forecast} last sealed for this sketch in its store, or None."""
    if not sketch.key:
        return None
    want = {n: (note_for(sketch, n), setup_hash(*sketch._setups[n])) for n in sketch.series_names}
    latest: dict = {}
    try:
        entries = sketch.history.entries()
    except (ValueError, OSError):  # a store that cannot be read restores nothing
        return None
    for entry in entries:
        if not entry.get("drawn"):  # curves given in code (a headless run) never come back
            continue
        f = entry["forecast"]
        for name, (note, config_hash) in want.items():
            if (f.get("note"), f.get("config_hash")) == (note, config_hash) and f[
                "sealed_at"
            ] >= latest.get(name, {}).get("sealed_at", float("-inf")):
                latest[name] = f
    if set(latest) != set(want):
        return None
    return {n: Forecast.from_dict(latest[n]) for n in sketch.series_names}


def clock(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def restore(sketch) -> bool:
    """Seal `sketch` with its last sealed curves from the store; False when there are none."""
    found = last_sealed(sketch)
    if found is None or not all(f.is_intact() for f in found.values()):
        return False
    for name, f in found.items():
        sketch._drawn[name] = {
            "points": [list(p) for p in f.points],
            "nan_step": f.nan_step,
            "shape": f.shape if f.shape in SHAPES[:-1] else "",
        }
    first = sketch._drawn[sketch.series_names[0]]
    sketch._ready = False
    sketch.shape, sketch.points, sketch.nan_step = (
        first["shape"],
        first["points"],
        first["nan_step"],
    )
    sketch.others = sketch._others(0)
    sketch._ready = True
    sketch._sealed, sketch.restored = found, True
    sketch.sealed_hash = next(iter(found.values())).content_hash[:12]
    sketch.message = (
        f"Sealed at {clock(max(f.sealed_at for f in found.values()))} "
        f"({sketch.sealed_hash}), restored from your store. Press Draw again "
        "to start a new attempt."
    )
    sketch.sealed = True
    return True


_LIVE: weakref.WeakSet = weakref.WeakSet()  # the sketches of this kernel


def live(key: str) -> list:
    """The sketches of this kernel made for exercise `key`."""
    return [s for s in list(_LIVE) if s.key == key]


def watch(sketch) -> None:
    """Restore on the first view a front end draws (curves not given in code); Draw again."""
    _LIVE.add(sketch)
    if sketch.gates_runs:  # every run of this kernel waits for its seal
        names = tuple(sketch.series_names)
        pending.hold(("sketch", sketch.key, sketch.quantity, names, sketch.note), sketch)

    def shown(change):
        if change["old"] == 0 and not sketch._from_code and not sketch.sealed:
            restore(sketch)

    sketch.observe(shown, "rendered")
    sketch.observe(lambda change: redraw(sketch), "redraw_requested")


def redraw(sketch) -> None:
    """Unseal for a new attempt, starting from the sealed curves; the old seal stays kept."""
    if sketch._sealed is None:
        return
    sketch._sealed, sketch.restored, sketch._shown = None, False, False
    sketch.sealed = False
    sketch.sealed_hash = ""
    sketch.message = "A new attempt: change the curves, then press Seal."


def _what(sketch) -> str:
    names = sketch.series_names
    return f"of the {label(sketch.quantity)} above" + (
        f" ({', '.join(map(repr, names[:-1]))} and {names[-1]!r})" if len(names) > 1 else ""
    )


def refusal(sketch) -> SketchNotSealed:
    """The one sentence of a run refused because `sketch` is not sealed."""
    return SketchNotSealed(
        f"Draw your forecast {_what(sketch)} and press Seal, then run "
        "this cell and the ones below it (Run > Run Selected Cell "
        "and All Below). The run waits for your sketch, so the "
        "comparison afterwards is honest."
    )


def require(sketch):
    """The run cell's gate for `sketch` (see the module docstring)."""
    if not sketch.sealed and sketch._from_code:
        sketch.seal()
    if not sketch.sealed:
        wait_for(
            lambda: sketch.sealed,
            lambda: sketch.rendered > 0,
            what=f"your sealed forecast {_what(sketch)}",
        )
        if not sketch.sealed:
            raise refusal(sketch)
    if not sketch._from_code and not sketch._shown:
        sketch._shown = True  # drawn by hand: keep the curves in the notebook for a grader
        show(
            payload(
                sketch.key, sketch.quantity, {n: sketch._current(n) for n in sketch.series_names}
            )
        )
    return sketch
