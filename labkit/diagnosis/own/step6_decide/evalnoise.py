"""H1, the model: something random stays on after `model.eval()`.

The model the learner's run trained (the replay's first), in eval mode under no_grad, is called
twice on the same training batches through the learner's `loss_fn`, with two different seeds.
A model whose eval mode is deterministic (nn.Dropout, BatchNorm in eval, plain layers) gives the
same outputs twice, to the last bit on one machine; one that gives outputs apart by more than
NOISE of their size keeps something random on. The calls are followed op by op: a dropout
(`F.dropout`, `alpha_dropout`, `dropout2d`, ...) called with `training=True` while the model is
in eval mode names the source (the functional form's `training` defaults to True and does not
follow `model.eval()`). Randomness from another op (a sampling layer, as a VAE draws its code)
is measured and not named here: it may be the model's design. A `loss_fn` that puts the model
back in train mode is not read (its dropout is meant to be on).
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import inner, setup as proto
from ..step1_capture.loops import learner_model

NOISE = 1e-3  # outputs apart by more than this share of their size: not float noise
BATCHES = 4  # the training batches read
DROPS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


class _Drops(TorchFunctionMode):
    """Records each dropout op called with training on: (name, p)."""

    def __init__(self):
        super().__init__()
        self.seen: list[tuple[str, float]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in DROPS:
            p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            on = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else True))
            if on and float(p) > 0 and (name, float(p)) not in self.seen:
                self.seen.append((name, float(p)))
        return func(*args, **kwargs)


def _outputs(setup, model, batches, seed: int) -> tuple[list, float, list]:
    """(the model's output tensors, the mean loss, the dropouts on) of one pass over `batches`."""
    outs: list = []
    hook = model.register_forward_hook(lambda m, i, o: outs.extend(inner.tensors_in(o)))
    torch.manual_seed(seed)
    mode, losses = _Drops(), []
    try:
        with torch.no_grad(), mode:
            losses = [float(proto.loss(setup, model, b, i)) for i, b in enumerate(batches)]
    finally:
        hook.remove()
    return [o.detach().float() for o in outs], sum(losses) / max(1, len(losses)), mode.seen


def repeat(setup, model, batches, seed: int) -> dict | None:
    """{relative, losses, drops} of two eval-mode passes over the first BATCHES batches with two
    seeds: the outputs' difference over their size, each pass's mean loss, the dropouts called
    with training on; None where a pass fails or its outputs do not pair up."""
    was = model.training
    model.eval()
    try:
        one, first, drops = _outputs(setup, model, batches[:BATCHES], seed)
        two, second, _ = _outputs(setup, model, batches[:BATCHES], seed + 1)
        if any(m.training for m in model.modules()):  # loss_fn put it back in train mode
            return None
    except Exception:  # a loss this reading cannot call twice (a carried state): nothing read
        return None
    finally:
        model.train(was)
    if not one or len(one) != len(two) or any(a.shape != b.shape for a, b in zip(one, two)):
        return None
    size = sum(float(a.norm()) ** 2 for a in one) ** 0.5
    apart = sum(float((a - b).norm()) ** 2 for a, b in zip(one, two)) ** 0.5
    return {"relative": apart / size if size else 0.0, "losses": (first, second), "drops": drops}


def eval_random_rule(evs) -> OwnFinding | None:
    """H1 where, on every seed, the trained model in eval mode gives the same batches outputs
    apart by more than NOISE and a dropout ran with training on."""
    got = []
    for ev in evs:
        found = ev.once(
            "evalnoise", lambda ev=ev: repeat(ev.setup, learner_model(ev), ev.batches, ev.seed)
        )
        if (
            found is None
            or not found["drops"]
            or not above("evalnoise.relative", found["relative"], NOISE, seed=ev.seed)
        ):
            return None
        got.append(found)
    name, p = got[0]["drops"][0]
    rel = " / ".join(f"{g['relative']:.1%}" for g in got)
    losses = " / ".join(f"{g['losses'][0]:.3g} and {g['losses'][1]:.3g}" for g in got)
    return OwnFinding(
        "H1",
        "dropout_at_eval",
        f"your model's dropout stays on after model.eval(): F.{name}(..., p={p:g}) runs with "
        "training=True (the functional form's default, which does not follow model.eval()), so "
        f"your trained model, in eval mode under no_grad, gives the same batches outputs "
        f"{rel} apart (of their size) on two calls (seeds {evs[0].seed} / {evs[1].seed}), and "
        f"mean losses of {losses}: every use of the trained model drops {p:.0%} of those "
        f"units; pass training=self.training (or use nn.Dropout, which follows model.eval()); "
        "if that is deliberate (MC dropout), average several passes and say so",
        arm=None,
        variable=None,
    )
