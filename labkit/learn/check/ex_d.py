"""Exercise D's answer checks: the order of the three losses, its cause, eval() vs no_grad()."""

from __future__ import annotations

import re

from ._base import CheckFailed, answer_check

NAMES = {"online": "online", "loss_reported": "online", "train_eval": "train_eval", "val": "val"}
CLOSE = 0.2  # two losses within 20% of each other count as ≈


def _three(run) -> dict:
    """online (the logger's epoch mean), train_eval and val at the run's last evaluation."""
    step = run.evals["step"][-1]
    return {"online": run.table["loss_reported"][run.table["step"].index(step)],
            "train_eval": run.evals["train_eval_loss"][-1], "val": run.evals["val_loss"][-1]}


def _chain(names: list, near: list) -> list:
    """Names from highest to lowest loss as groups; near[i] joins names i and i+1 with ≈."""
    groups = [{names[0]}]
    for joined, name in zip(near, names[1:]):
        groups[-1].update({name}) if joined else groups.append({name})
    return groups


def _parse(ordering: str) -> list:
    parts = re.split(r"\s*([<>≈~=])\s*", str(ordering).strip())
    names, ops = [NAMES.get(p.lower().removesuffix("_loss")) for p in parts[::2]], parts[1::2]
    if sorted(map(str, names)) != ["online", "train_eval", "val"] or {"<", ">"} <= set(ops):
        raise CheckFailed("Write each of online, train_eval and val once, joined by '>' and "
                          f"'≈', e.g. 'val > online ≈ train_eval'; got {ordering!r}.")
    if "<" in ops:
        names, ops = names[::-1], ops[::-1]
    return _chain(names, [op in "≈~=" for op in ops])


@answer_check
def ex_d_ordering(ordering: str, run) -> str:
    """The order of online, train_eval and val loss at the last evaluation."""
    said, losses = _parse(ordering), _three(run)
    names = sorted(losses, key=losses.get, reverse=True)
    truth = _chain(names, [losses[a] - losses[b] <= CLOSE * losses[a]
                           for a, b in zip(names, names[1:])])
    if said != truth:
        numbers = ", ".join(f"{k} {v:.3f}" for k, v in losses.items())
        raise CheckFailed(f"{ordering!r} does not match the last evaluation ({numbers}): use "
                          f"'>' for losses more than {CLOSE:.0%} apart and '≈' for closer ones.")
    return f"ok: {ordering} at step {run.evals['step'][-1]}"


@answer_check
def ex_d_cause(cause: str, run, control) -> str:
    """Why val sits below online train loss; `control` is the same run with dropout=0."""
    (o, te, v), (co, cte, _) = _three(run).values(), _three(control).values()
    gap, timing = o - te, co - cte  # the control has no dropout: its gap is timing alone
    truth = "split" if te - v > CLOSE * te else "dropout" if timing < 0.5 * gap else "timing"
    if cause == truth:
        return f"ok: {cause} (online - train_eval: {gap:.3f}; with dropout=0: {timing:.3f})"
    why = {"split": f"train_eval ({te:.3f}) and val ({v:.3f}) agree in eval() mode, so the two "
                    "splits are equally hard: the gap is between online and train_eval",
           "timing": f"the dropout=0 control measures timing alone, and its online - train_eval "
                     f"gap ({timing:.3f}) is a small part of this run's ({gap:.3f})",
           "dropout": f"the dropout=0 control has about the same gap ({timing:.3f} vs {gap:.3f})"}
    if cause not in why:
        raise CheckFailed(f"cause must be one of {', '.join(map(repr, why))}; got {cause!r}.")
    if truth == "split":
        why[cause] = f"train_eval ({te:.3f}) is above val ({v:.3f}) even in eval() mode"
    raise CheckFailed(f"Not {cause!r}: {why[cause]}.")


@answer_check
def ex_d_eval_vs_no_grad(dropout_under_no_grad: bool, graph_under_eval: bool) -> str:
    """model.eval() switches layer behaviour; torch.no_grad() switches graph recording."""
    if dropout_under_no_grad is not True:
        raise CheckFailed("In train() mode under no_grad() one input gave two different outputs, "
                          "so dropout was on: no_grad() does not touch model.training.")
    if graph_under_eval is not True:
        raise CheckFailed("In eval() mode without no_grad() the output still had a grad_fn: "
                          "eval() changes dropout, not autograd, so evaluation needs both.")
    return "ok: eval() turns dropout off; no_grad() stops the graph; evaluation uses both"
