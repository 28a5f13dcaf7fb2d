"""A running mean whose sum is emptied every k batches: the tutorial's ``running_loss = 0.0``
after each print, counted in the epoch (``(i + 1) % k == 0``) or over the run, and emptied at
each epoch's start too where it is counted in the epoch.

Where every report is the sum of the raw losses since the last reset over their number, the
logger is honest, however many earlier values its reports happen to be near (a plateau). Where
every report is that same sum over another count (the batches since the epoch began, ``i + 1``;
the batches of the run so far; k, right only once the window is full), the divisor is wrong:
the reports fall toward 0 between resets, or start low after each one.

`reread(result, raw, rep, rows, per_epoch)` is `logcount.recount`'s step for these loggers:
the logger check's disagreeing `result` turned to agree, or named as a wrong divisor; else None.
"""

from __future__ import annotations

from ...probes import ProbeResult
from .windows import cumsum, same_value

TOL = 1e-3  # relative: tighter than the logger check's, as k and the counting are searched
MAX_K = 100  # the longest window tried


def _starts(n: int, per_epoch: int, k: int, over_run: bool) -> list[int]:
    """Each step's window start: the last reset at or before it (an epoch's start included)."""
    out = []
    for t in range(n):
        epoch = t - t % per_epoch if per_epoch else 0
        index = t if over_run else t - epoch
        out.append(max(t - index % k, epoch if not over_run else 0))
    return out


def _divisors(per_epoch: int, k: int) -> dict:
    """What a window's sum may be divided by at step t, window start s, by name."""
    return {
        "since_reset": lambda t, s: t - s + 1,
        "epoch": lambda t, s: t - (t - t % per_epoch if per_epoch else 0) + 1,
        "run": lambda t, s: t + 1,
        "interval": lambda t, s: k,
    }


WORDS = {
    "epoch": "the number of batches since the epoch began (the batch index + 1)",
    "run": "the number of batches of the run so far",
    "interval": "the window's full length at every report",
}


def _fit(raw, rep, rows, per_epoch: int):
    """(k, over_run, divisor name, starts) of the first window and count that reproduce every
    report; None where none does."""
    cum, n = cumsum(raw), len(raw)
    for k in range(2, MAX_K + 1):
        for over_run in (False, True):
            if per_epoch and k >= per_epoch and not over_run:
                continue  # emptied only at the epoch's start: the epoch mean, read elsewhere
            starts = _starts(n, per_epoch, k, over_run)
            inside = [t for t in rows if t and (not per_epoch or t % per_epoch)]
            if not any(starts[t] != starts[t - 1] for t in inside):
                continue  # no reset inside an epoch among the reports: nothing new to read
            for name, d in _divisors(per_epoch, k).items():
                if all(
                    same_value(rep[t], (cum[t + 1] - cum[starts[t]]) / d(t, starts[t]), TOL)
                    for t in rows
                ):
                    return k, over_run, name, starts, d
    return None


def reread(result: ProbeResult, raw, rep, rows, per_epoch: int) -> ProbeResult | None:
    """The logger check's disagreeing `result` read again against a running mean emptied every
    k batches (see above): agree, or a wrong divisor named; None where no such window fits."""
    if len(rows) < 3:
        return None
    found = _fit(raw, rep, rows, per_epoch)
    if found is None:
        return None
    k, over_run, name, starts, d = found
    where = "of the run" if over_run else "of each epoch (and at each epoch's start)"
    window = f"a running mean emptied every {k} batches {where}"
    if name == "since_reset":
        return ProbeResult(
            result.probe,
            f"agree: the logger shows {window}, over the batches since the reset "
            f"({len(rows)} reports compared)",
            {**result.details, "agree": True, "mechanism": None, "matches": window},
        )
    t = next((t for t in rows if d(t, starts[t]) != t - starts[t] + 1), rows[0])
    held = t - starts[t] + 1
    text = (
        f"disagree: a wrong divisor: the reported value is {window}, but the sum of the batch "
        f"losses since the reset is divided by {WORDS[name]}, not by the number of batches "
        f"summed (at step {t}: {held} losses summed, divided by {d(t, starts[t])}), so the "
        f"reports read {held / d(t, starts[t]):.3g}x the honest mean there; divide by the "
        "count reset with the sum"
    )
    return ProbeResult(result.probe, text, {**result.details, "mechanism": "divisor"})
