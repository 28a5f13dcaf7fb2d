"""A loss call's arguments read against the space the loss reads them in.

Some losses read an argument as log-probabilities: ``nll_loss``'s input (``nn.NLLLoss``),
``kl_div``'s input (``nn.KLDivLoss``) and, with ``log_target=True``, its target. Given
probabilities there (every value in [0, 1], every row summing to 1 along the class dim: a
softmax taken where a log_softmax belongs), the loss still runs and still falls, but it
measures something else. ``kl_div``'s target with ``log_target=False`` is read as
probabilities: given log-probabilities (every value at most 0, every row's logsumexp 0), the
loss is NaN. What the values show (their range, the rows' sums, the dim) is measured on the
call's own arguments; what the loss then computes is the function's definition.

`read(name, args, kwargs)` is called by the loss-path audit (`step4_h1.losspath`) on every
call it sees; it costs nothing on the calls it does not name.
"""

from __future__ import annotations

import torch

TOL = 1e-3  # a row "sums to 1" within this
CALLS = ("nll_loss", "kl_div")  # the calls `read` looks at
KEY_PROBS, KEY_LOGS = "probabilities_as_log", "log_as_probabilities"
_WHAT = {
    "nll_loss": "nll_loss returns -input[label], so on probabilities it is -p(label), which "
    "lies in [-1, 0], and its gradient does not grow as p(label) falls toward 0 (on "
    "log-probabilities, -log p(label) would)",
    "kl_div": "kl_div computes sum target * (log target - input), so with probabilities as "
    "input it is no KL divergence: it has no floor at 0 and is lowest when all the input's "
    "mass sits on the target's largest class, not when the input matches the target",
}


def _arg(args, kwargs, i: int, name: str, default=None):
    return args[i] if len(args) > i else kwargs.get(name, default)


def _dims(name: str, t) -> tuple:
    """The dims a row of classes may lie along: nll_loss's dim 1 (0 unbatched); kl_div's last
    dim, or dim 1."""
    if name == "nll_loss":
        return (1,) if t.dim() >= 2 else (0,)
    return (-1, 1) if t.dim() >= 2 else (-1,)


def _values(t):
    if not (torch.is_tensor(t) and t.is_floating_point() and t.dim() >= 1 and t.numel() > 1):
        return None
    v = t.detach().float()
    return v if bool(torch.isfinite(v).all()) else None


def probability_rows(t, dims) -> dict | None:
    """The range, dim and row count of `t` where every value lies in [0, 1] and every row sums
    to 1 (within TOL) along one of `dims`; else None."""
    v = _values(t)
    if v is None or v.min() < 0 or v.max() > 1:
        return None
    for d in dims:
        s = v.sum(d)
        if s.numel() and bool(((s - 1).abs() <= TOL).all()) and v.shape[d] > 1:
            return _stats(v, d, s, "sum")
    return None


def log_probability_rows(t, dims) -> dict | None:
    """The same for log-probabilities: every value at most 0, every row's logsumexp 0."""
    v = _values(t)
    if v is None or v.max() > 0:
        return None
    for d in dims:
        s = v.logsumexp(d)
        if s.numel() and bool((s.abs() <= TOL).all()) and v.shape[d] > 1:
            return _stats(v, d, s.exp(), "sum of exp")
    return None


def _stats(v, d, sums, how) -> dict:
    return {
        "min": float(v.min()),
        "max": float(v.max()),
        "dim": d,
        "rows": sums.numel(),
        "how": how,
        "spread": float((sums - 1).abs().max()),
    }


def _shown(what: str, name: str, st: dict) -> str:
    return (
        f"{name}'s {what} holds values in [{st['min']:.3g}, {st['max']:.3g}] and the "
        f"{st['how']} of each of its {st['rows']} rows along dim {st['dim']} is 1 (at most "
        f"{st['spread']:.1g} off)"
    )


def read(name: str, args, kwargs) -> list[tuple[str, str]]:
    """(key, sentence) for each argument of this loss call in the wrong space; [] for a call
    it does not name, or arguments in the right one."""
    if name not in CALLS:
        return []
    found = []
    x = _arg(args, kwargs, 0, "input")
    st = probability_rows(x, _dims(name, x)) if torch.is_tensor(x) else None
    if st is not None:
        said = (
            f"{_shown('input (its first argument)', name, st)}: probabilities, where "
            f"{name} wants log-probabilities; {_WHAT[name]}. Take log_softmax, not "
            "softmax, before it"
        )
        found.append((KEY_PROBS, said))
    if name != "kl_div":
        return found
    y = _arg(args, kwargs, 1, "target")
    log_target = bool(_arg(args, kwargs, 5, "log_target", False))
    if not torch.is_tensor(y):
        return found
    if log_target and (st := probability_rows(y, _dims(name, y))) is not None:
        said = (
            f"{_shown('target', name, st)}: probabilities, where kl_div with "
            "log_target=True wants log-probabilities; it reads exp(target) as the target "
            "distribution, so the distribution it fits is not the one given. Pass "
            "target.log(), or log_target=False"
        )
        found.append((KEY_PROBS, said))
    elif not log_target and (st := log_probability_rows(y, _dims(name, y))) is not None:
        said = (
            f"{_shown('target', name, st)}: log-probabilities, where kl_div with "
            "log_target=False wants probabilities; it computes target * log(target) on "
            "values below 0, which is NaN. Pass log_target=True, or target.exp()"
        )
        found.append((KEY_LOGS, said))
    return found
