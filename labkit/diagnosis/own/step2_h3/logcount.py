"""A logged mean whose count is off by one: a sum of n losses divided by n - 1 (or n + 1).

The classic case is PyTorch's word_language_model: ``total_loss += loss``, and
``if batch % log_interval == 0 and batch > 0:`` print ``total_loss / log_interval``. The
first report of each epoch comes after log_interval + 1 batches, so it is the sum of 11
losses over 10: 10% high, while every later report is honest. It is not stale (every
report is fresh) and not a constant divisor gone wrong everywhere: it is a wrong count.

`recount(run, per_epoch, result)` takes the logger check's result and, when the reports
disagree with the raw loss, first tests one more honest logger (the mean of the last k
raw losses, a sliding window), then whether every report is (sum over a window) / d with d
an integer within one of that window's true count, and at least one d off by one. If so,
the mechanism is named as that, with how much it moves the reports (k/(k-1) or (k+1)/k).
Before the count, a running mean emptied every k batches (`resets`) and an exponential moving
average with a bias correction that does not count its own updates (`ema`) are read.
"""

from __future__ import annotations

import math

from .. import averaged, terms
from . import ema, resets, smoothing, weights
from .logger import check_logger
from .windows import Windows, cumsum, same_value
from ...probes import ProbeResult

TOL = 2e-3  # how close (relative) sum / report must be to an integer count
WINDOWS = ("log+epoch", "log", "epoch", "run")
MAX_WINDOW = 200


def _counts(rep, rows, win: Windows):
    """(window, [(step, true count, divisor used)]) for the first window where every report
    is a sum over it divided by a count within one of the truth, with one off; else None."""
    for window in WINDOWS:
        used = []
        for t in rows:
            total, n = win.total("v", window, t), win.count(window, t)
            if not rep[t] or not math.isfinite(rep[t]):
                break
            d = total / rep[t]
            k = round(d)
            if k < 1 or abs(d - k) > TOL * k or abs(k - n) > 1:
                break
            used.append((t, n, k))
        else:
            if any(n != k for _, n, k in used):
                return window, used
    return None


def _sliding(raw, rep, rows, per_epoch: int = 0) -> tuple[int, bool] | None:
    """(k, within the epoch) for which every report is the mean of the last k raw losses (a
    sliding window, as a deque(maxlen=k) or a smoothed progress bar keeps), over the run or
    emptied at each epoch's start (a window made inside the epoch loop), if one is."""
    cum = cumsum(raw)

    def first(t, k, epoch):  # the window's first step
        lo = max(0, t + 1 - k)
        return max(lo, t - t % per_epoch) if epoch else lo

    for k in range(2, MAX_WINDOW + 1):
        for epoch in (False, True) if per_epoch > 0 else (False,):
            if all(
                same_value(
                    rep[t], (cum[t + 1] - cum[first(t, k, epoch)]) / (t + 1 - first(t, k, epoch))
                )
                for t in rows
            ):
                return k, epoch
    return None


def recount(run, per_epoch: int, result: ProbeResult) -> ProbeResult:
    """`result`, or a sharper one when the reports are honest sums over a miscounted number."""
    if result.details.get("agree", True):
        return result
    raw = [float(v) for v in run.table["loss_raw"]]
    rep_col = run.table.get("loss_reported") or []
    rows = [t for t, v in enumerate(rep_col) if v is not None and math.isfinite(raw[t])]
    if len(rows) < 2:
        return result
    rep = [float(v) if v is not None else math.nan for v in rep_col]
    found = _sliding(raw, rep, rows, per_epoch)
    if found is not None:
        k, epoch = found
        return ProbeResult(
            result.probe,
            f"agree: the logger shows the mean of the last {k} raw losses (a "
            f"sliding window{', emptied at each epoch' if epoch else ''}; {len(rows)} reports "
            "compared)",
            {**result.details, "agree": True, "mechanism": None, "matches": f"last {k} mean"},
        )
    reset = resets.reread(result, raw, rep, rows, per_epoch)  # a mean emptied every k batches
    if reset is not None:
        return reset
    smoothed = ema.reread(result, raw, rep, rows, per_epoch)  # an EMA and its bias correction
    if smoothed is not None:
        return smoothed
    sizes = [1.0] * len(raw)
    found = _counts(rep, rows, Windows(raw, per_epoch, set(rows), sizes))
    if found is None:
        return result
    window, used = found
    off = [(t, n, k) for t, n, k in used if n != k]
    t, n, k = off[0]
    where = {
        "log+epoch": "since the previous report in this epoch",
        "log": "since the previous report",
        "epoch": "over this epoch",
        "run": "over the run",
    }[window]
    text = (
        f"disagree: the logged mean has a wrong count (off by one): at {len(off)} of {len(used)} reports "
        f"the sum of the batch losses {where} is divided by {'one less' if k < n else 'one more'} than "
        f"their number (at step {t}: {n} losses summed, divided by {k}), so those reports read "
        f"{n / k:.3g}x the honest mean ({(n / k - 1):+.0%}); the others are right. A report condition "
        "such as `i % interval == 0 and i > 0` sums interval + 1 losses at the first report of each "
        "epoch, and a counter started at 1 or 0 divides by one too many or too few"
    )
    details = {**result.details, "mechanism": "count_off_by_one", "off_by_one": off[:10]}
    return ProbeResult(result.probe, text, details)


def _series(ev) -> dict:
    """Per step, the gradient norm after its last backward() and the largest group's LR (the
    numbers a report may show in the loss's place); {} where the replay is not here."""
    try:
        backs, steps = ev.replay.backwards, ev.replay.steps
    except Exception:  # the ranks keep their backward calls (`single.NotOnRanks`)
        return {}
    if len(steps) != len(ev.run):
        return {}
    last = {b["step"]: b.get("grad_norm_after") for b in backs}
    lrs = [max(st["lr"]) if st.get("lr") else None for st in steps]
    groups = [g["lr"] for o in ev.replay.optimizers.values() for g in o.param_groups]
    final = max(groups) if groups else None  # after the last step's scheduler update
    return {
        "grad_norm": [last.get(t) for t in range(len(steps))],
        "lr": lrs,
        "lr_next": lrs[1:] + [final],
        **_columns(ev.replay.forwards, len(steps)),
        **averaged.series(ev.replay),
        **smoothing.series(ev.replay.forwards, [float(v) for v in ev.run.table["loss_raw"]]),
    }


BROADCAST = ("broadcast_mse", "broadcast_l1")


def _columns(forwards, steps: int) -> dict:
    """Per step, each output column's error (`replay._columns`) on its last forward with grad
    on, by key ``column<c>of<K>_<mse|l1>``, or the batch's accuracy and error rate (class
    ids); {} unless every step has one."""
    last = {f["step"]: f["columns"] for f in forwards if f.get("columns")}
    if len(last) < steps or any(t not in last for t in range(steps)):
        return {}
    if all("accuracy" in last[t] for t in range(steps)):  # class ids: the batch's accuracy
        accuracy = [last[t]["accuracy"] for t in range(steps)]
        return {"accuracy": accuracy, "error_rate": [1 - a for a in accuracy]}
    if all("broadcast_mse" in last[t] for t in range(steps)):  # (B, 1) against (B,)
        return {key: [last[t][key] for t in range(steps)] for key in BROADCAST}
    if any("mse" not in last[t] for t in range(steps)):
        return {}
    k = len(last[0]["mse"])
    if any(len(last[t]["mse"]) != k for t in range(steps)):
        return {}
    return {
        f"column{c}of{k}_{kind}": [last[t][kind][c] for t in range(steps)]
        for kind in ("mse", "l1")
        for c in range(k)
    }


def _reweighed(ev, result):
    """`weights.reread` on the terms the replay read from a loss that sums weighted terms."""
    try:
        parts = terms.per_step(ev.replay, len(ev.run))
    except Exception:  # the ranks keep their replay (`single.NotOnRanks`)
        return None
    raw = [float(v) for v in ev.run.table["loss_raw"]]
    rep_col = ev.run.table.get("loss_reported") or []
    rows = [t for t, v in enumerate(rep_col) if v is not None and math.isfinite(raw[t])]
    rep = [float(v) if v is not None else math.nan for v in rep_col]
    return weights.reread(result, raw, rep, rows, ev.rows_per_epoch, parts)


def logger_check(ev):
    """The logger check on one seed's own run (`check_logger`, then `recount`), once. A report
    of an averaged copy's loss (`own.averaged`) is honest where the copy follows the model."""
    steps = ev.replay.steps
    after = [s["loss_after"] for s in steps] if len(steps) == len(ev.run) else None

    def make():
        series = _series(ev)
        result = recount(
            ev.run,
            ev.rows_per_epoch,
            check_logger(
                ev.run,
                per_epoch=ev.rows_per_epoch,
                sizes_by_position=ev.sizes,
                after_step=after,
                counts=ev.counts,
                series=series,
            ),
        )
        if result.details["mechanism"] in ("other_tensor", "stale"):  # the loss's terms reweighed
            result = _reweighed(ev, result) or result
        if result.details["mechanism"] != "averaged_copy_shown":
            return result
        what, follows = averaged.words(ev.replay)
        if follows:
            details = {**result.details, "agree": True, "mechanism": None, "matches": what}
            return ProbeResult(result.probe, f"agree: the logger shows {what}", details)
        rep = ev.run.table["loss_reported"]
        last = max(t for t, v in enumerate(rep) if v is not None)
        return ProbeResult(
            result.probe,
            f"disagree: the reported value is {what}: the last report is {float(rep[last]):.3g} "
            f"where the raw loss at that step is {float(ev.run.table['loss_raw'][last]):.3g}; "
            "show the trained model's loss, or an average whose horizon is short against the "
            "run (or warm its decay up)",
            result.details,
        )

    return ev.once("logger", make)
