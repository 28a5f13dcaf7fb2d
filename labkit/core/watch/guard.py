"""labkit's own measuring never breaks the learner's loop.

Every piece of `labkit.watch` that runs inside the learner's calls (the optimizer's step
hooks, the wrapper around ``clip_grad_norm_``, a GradScaler's ``step``, the hooks of a loop
without an optimizer) goes through `guarded`. Should one of them raise (a labkit bug, a
parameter of a kind it cannot measure), the watch stops: every hook does nothing from then on
(those torch is looping over are removed at `close()` or when the next watch is made), the steps
measured so far stay readable (trimmed to the last complete one), and one warning names the
step and the error. The learner's ``optimizer.step()`` and ``backward()`` go on unchanged.
"""

from __future__ import annotations

import functools
import warnings


class WatchStopped(RuntimeWarning):
    """Said once, when `labkit.watch` stopped measuring after an error of its own."""


def safely(w, fn, *args, **kwargs):
    """`fn(*args, **kwargs)` for watch `w` inside the learner's calls: None once `w` stopped,
    and an error stops `w` instead of reaching the learner."""
    if w.stopped is not None:
        return None
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - whatever it is, the learner's loop goes on
        stop(w, exc)
        return None


def guarded(method):
    """`method` of a Watch, made safe to run inside the learner's calls (`safely`, inlined:
    the optimizer's hooks run it at every step)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if self.stopped is not None:
            return None
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the learner's loop goes on
            stop(self, exc)
            return None

    return run


def _rows(w) -> int:
    done = sum(b.shape[0] for _, blocks, _ in w._done for b in blocks)
    return done + sum(b.shape[0] for b in w._blocks) + len(w._rows)


def stop(w, exc: Exception) -> None:
    """Unhook (`Watch._unhook`, inside a step), keep the complete steps, and say so once."""
    try:  # the ring's rows first, as a block; if that fails, dropped (and trimmed below)
        w.fold()
    except Exception:  # noqa: BLE001 - the steps it held are lost
        w._ring.n = 0
    per_step = [w._present, w._lrs, w._skipped] + ([w._scales] if w.scaler is not None else [])
    rows = _rows(w)
    n = min([rows] + [len(x) for x in per_step])
    for x in per_step:
        del x[n:]
    extra = rows - n  # rows of a step not complete: the last ones, in rows then blocks
    while extra > 0 and w._rows:
        w._rows.pop()
        extra -= 1
    while extra > 0 and w._blocks:
        keep = max(w._blocks[-1].shape[0] - extra, 0)
        extra -= w._blocks[-1].shape[0] - keep
        w._blocks[-1:] = [w._blocks[-1][:keep]] if keep else []
    w._pending, w._marked = None, min(w._marked, n)
    w.stopped = f"{type(exc).__name__}: {exc}"
    try:
        w._unhook(inside_step=True)
    finally:
        warnings.warn(
            f"labkit.watch stopped measuring at step {n} after an error of its own "
            f"({w.stopped}); your training goes on unchanged, and the {n} step(s) "
            "measured so far stay readable (watch.run(), watch.columns()). Please "
            "report this as a labkit bug, with the error above.",
            WatchStopped,
            stacklevel=3,
        )
