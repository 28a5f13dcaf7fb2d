"""The words of an acquittal: what was checked, in the learner's terms, and what could not be.

"No defect found" is a claim about everything the loss and the report depend on. The line
lists the checks that ran on this setup and names the ones that could not run (no reference
loss for this output, no token grid to measure an offset on), instead of claiming they passed.
"""

from __future__ import annotations

import math

import torch

from . import channels
from ..step3_h2 import features
from ..step3_h2.data import ends_apart, signal_words
from ..step4_h1 import audit, leaves
from ..step4_h1.flow import param_names


def _lr(ev) -> str | None:
    lrs = [max(st["lr"]) for st in ev.replay.steps if st["lr"]]
    groups = [g for o in ev.replay.optimizers.values() for g in o.param_groups]
    base = max((float(g.get("initial_lr", g["lr"])) for g in groups), default=None)
    if not lrs or not base:
        return None
    return f"the LR reaches {max(lrs):.2g} (base {base:.2g})"


def never_grad(rp) -> list[tuple[str, int, bool]]:
    """(name, values, whether its module ran in a forward) of each parameter that the optimizer
    holds and that requires grad, yet had no gradient after any backward(): the loss never
    depends on it (built and never used in forward). A frozen parameter (requires_grad off),
    one left out of the optimizer, or one tied to a used one (the same tensor) is not listed."""
    names = param_names(rp.models.values())
    held = {id(p) for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]}
    return sorted(
        (names[id(p)][0], p.numel(), names[id(p)][1] in rp.called)
        for p in rp.watched()
        if p.requires_grad and id(p) in held and id(p) not in rp.ever_grad and id(p) in names
    )


def zero_grad(rp) -> list[tuple[str, int, bool]]:
    """(name, values, whether it is a recurrent layer's hidden-to-hidden weight) of each
    parameter that the optimizer holds and that had a gradient after a backward(), exactly 0
    after every one, while another parameter's was not: the loss never reads what it computes.
    A recurrent layer's `weight_hh` gets exactly 0 where only its first time step is read (the
    state before it is 0)."""
    if not getattr(rp, "ever_nonzero", None):
        return []
    names = param_names(rp.models.values())
    held = {id(p) for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]}
    recurrent = {
        id(p)
        for m in rp.models.values()
        for mod in m.modules()
        if isinstance(mod, torch.nn.RNNBase)
        for n, p in mod.named_parameters(recurse=False)
        if n.startswith("weight_hh")
    }
    return sorted(
        (names[id(p)][0], p.numel(), id(p) in recurrent)
        for p in rp.watched()
        if id(p) in held
        and id(p) in rp.ever_grad
        and id(p) not in rp.ever_nonzero
        and id(p) in names
    )


def beside(evs, line: str) -> str:
    """The acquittal's `line` with the findings it states beside itself, if any: parameters the
    loss never reads (`never_grad`, `zero_grad`, on the first seed); input channels that are
    copies of each other in every row (`channels`)."""
    rp, backwards = evs[0].replay, len(evs[0].replay.backwards)
    found, zero, same = never_grad(rp), zero_grad(rp), channels.copied(evs[0].batches)
    line += "; " + unused_words(found, backwards) if found else ""
    line += "; " + channels.words(same) if same else ""
    return line + "; " + zero_words(zero, backwards) if zero else line


def zero_words(found: list, backwards: int) -> str:
    """The finding about the parameters `zero_grad` found."""
    parts = [f"{name} ({n} values)" for name, n, _ in found[:4]]
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    one = len(found) == 1
    line = (
        f"finding: {', '.join(parts)}{more} had a gradient of exactly 0 after every one of the "
        f"{backwards} backward() calls, while the other parameters' gradients were not: your "
        f"loss never reads what {'it computes' if one else 'they compute'}"
    )
    if any(rec for _, _, rec in found):
        line += (
            " (a recurrent layer's hidden-to-hidden weight gets exactly 0 where only its first "
            "time step is read, its state before that step being 0: a one-way RNN's summary of the "
            "sequence is its last step's output (out[:, -1] batch-first), not its first)"
        )
    return line


def unused_words(found: list, backwards: int) -> str:
    """The finding about the parameters `never_grad` found."""
    parts = [
        f"{name} ({n} values{'' if ran else ', its module never ran in a forward'})"
        for name, n, ran in found[:4]
    ]
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    one = len(found) == 1
    return (
        f"finding: the optimizer holds {len(found)} parameter{'' if one else 's'} that "
        f"require{'s' if one else ''} grad and had no gradient after any of the "
        f"{backwards} backward() calls: {', '.join(parts)}{more}; your loss never "
        "depends on "
        + ("it" if one else "them")
        + " (built and never used in forward?): use "
        + ("it" if one else "them")
        + " where the model was meant to, or leave "
        + ("it" if one else "them")
        + " out"
    )


def checked(evs, plain_level: float) -> str:
    """The acquittal's line (see above)."""
    ev = evs[0]
    logger = ev.results.get("logger")  # the logger check, made by the H3 step
    shown = (getattr(logger, "details", None) or {}).get("matches") or ""
    done = [
        f"the logger is honest (every report rebuilt: {shown})"
        if "averaged copy" in shown  # `own.averaged`: not the raw losses
        else "the logger is honest (every report rebuilt from the raw losses)"
    ]
    missing = []
    for said, unsaid in (features.describe(ev), leaves.describe(ev), audit.describe(ev)):
        done += [said] if said else []
        missing += [unsaid] if unsaid else []
    ends = (ev.results.get("signal") or {}).get("ends")
    done.insert(
        2,
        "your loss reads no labels (the batches' labels are one value, and another value "
        "changes neither the loss nor a gradient): no label-shuffle control applies"
        if (ev.results.get("signal") or {}).get("verdict") == "unread"
        else f"the labels carry signal ({signal_words(ev.results['signal'])})"
        if ends is None
        else "the labels carry signal (over the last fifth of each run, real beat shuffled by "
        f"{ends[2][0]:+.3f} / {ends[2][1]:+.3f}, {ends_apart(ev.results['signal'])}; "
        "over the whole run, by under 3 times its spread)",
    )
    rel = ev.results.get("loss_relation")
    if rel:
        done.append(
            f"your loss stays within the range of a {rel[0]['kind']} (never below 0), read beside "
            "labkit's reference loss on the same outputs"
        )
    else:
        missing.append(
            "the loss's range (no reference loss applies to this output and these labels)"
        )
    m = ev.results.get("offset")
    if m is not None:
        done.append(
            f"each output is scored against input token t{m['offset']:+d} (measured through your "
            "loss call)"
        )
    lr = _lr(ev)
    if lr:
        done.append(lr)
    own = ev.facts["own_level"]
    if math.isfinite(own) and math.isfinite(plain_level) and own < plain_level:
        done.append(
            "your loop learns at least as well as a plain loop with the same model, data, loss "
            "and optimizer"
        )
    else:
        done.append(
            "your loop learns like a plain loop with the same model, data, loss and optimizer"
        )
    line = "no defect found: " + ", ".join(done)
    if missing:
        line += "; not checked: " + ", ".join(missing)
    return line
