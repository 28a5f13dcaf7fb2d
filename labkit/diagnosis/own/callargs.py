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


# ---- quantile levels against the loss's own asymmetry (a pinball loss's residual flipped)
LEVEL_CALLS = ("mul", "__mul__", "__rmul__")


def levels(name: str, args, pred, known) -> list:
    """A constant tensor of per-output levels, each strictly inside (0, 1), multiplied with a
    prediction-derived tensor whose last dim it matches (`QUANTILES * e`), or []. `known`:
    dicts keyed by the ids of prediction- and label-derived tensors (not constants)."""
    if name not in LEVEL_CALLS or pred.dim() < 2 or pred.shape[-1] < 2:
        return []
    for t in args:
        if (
            torch.is_tensor(t)
            and not any(id(t) in k for k in known)
            and t.is_floating_point()
            and t.numel() == pred.shape[-1] == t.shape[-1]  # (K,) or (1, K)
            and bool(((t > 0) & (t < 1)).all())
        ):
            return [t.detach().float().reshape(-1).clone()]
    return []


def asymmetry(q, output, labels, loss) -> dict | None:
    """Per output j, the level its loss gradient implies: on the rows where output j sits below
    the label, the gradient's size a_j, above it b_j, and tau_j = a_j / (a_j + b_j) (a pinball
    loss of level q gives tau = q). Read only where every side's gradient has one size (a
    pinball loss's, to 1e-3), each side has 2 rows at least, and the labels are one real value
    per row; else None."""
    if not (torch.is_tensor(output) and output.dim() == 2 and output.shape[1] == len(q)):
        return None
    if not (torch.is_tensor(labels) and labels.is_floating_point() and len(labels) == len(output)):
        return None
    y = labels.detach().float().reshape(len(labels), -1)
    if y.shape[1] != 1 or not output.requires_grad:
        return None
    try:
        (g,) = torch.autograd.grad(loss, output, retain_graph=True)
    except RuntimeError:  # the loss does not reach the output through autograd: not read
        return None
    p, g, tau = output.detach().float(), g.detach().float(), []
    for j in range(p.shape[1]):
        below, above = g[p[:, j] < y[:, 0], j].abs(), g[p[:, j] > y[:, 0], j].abs()
        if len(below) < 2 or len(above) < 2 or min(below.mean(), above.mean()) <= 0:
            return None
        if max(below.std() / below.mean(), above.std() / above.mean()) > 1e-3:
            return None
        tau.append(float(below.mean() / (below.mean() + above.mean())))
    return {"levels": [float(v) for v in q], "tau": tau, "rows": len(p)}


def flipped(found: list) -> bool:
    """Whether, on every seed, every output whose level is not 0.5 is weighed as 1 - its level
    (within 0.02) and not as its level (more than 0.1 away)."""
    if not found or any(f is None for f in found):
        return False
    ends = [(q, t) for f in found for q, t in zip(f["levels"], f["tau"]) if abs(q - 0.5) > 0.05]
    return bool(ends) and all(abs(t - (1 - q)) < 0.02 and abs(t - q) > 0.1 for q, t in ends)


def flipped_words(f: dict) -> str:
    pairs = ", ".join(
        f"output {j} (level {q:.2g}) as {t:.2g}"
        for j, (q, t) in enumerate(zip(f["levels"], f["tau"]))
    )
    return (
        f"the quantile (pinball) loss weighs each output as the opposite quantile of the level "
        f"it is given: the levels {[round(q, 3) for q in f['levels']]} multiply the residual, "
        f"but the loss's gradient on the {f['rows']} rows of the first batch, its size where an "
        f"output sits below the label over the sum of its sizes below and above, reads "
        f"{pairs}, 1 - level on every output, on both seeds: the residual's sign is flipped "
        "(pred - y where y - pred belongs), so the output given the low level is pushed toward "
        "the high quantile and the high one toward the low. Write e = y - pred"
    )
