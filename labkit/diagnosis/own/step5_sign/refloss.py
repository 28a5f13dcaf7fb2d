"""A reference loss on the model's own output: labkit's intervention for a mechanism in the loss.

labkit cannot edit a learner's ``loss_fn``, but it can let the learner's code run the model on
the batch exactly as it does, catch the model's output with a forward hook, and replace only
what happens to that output. `reference(output, batch)` is the textbook loss for the output's
and the labels' shapes and dtypes, or None when none applies:

- class ids with one more dim on the output: cross-entropy over the last dim; for token ids
  that are the model's own inputs, shifted by one (``logits[:, :-1]`` against ``ids[:, 1:]``);
- one logit per example against 0/1 labels: binary cross-entropy with logits;
- real-valued targets with as many values as the output: mean squared error.

For a mechanism in the alignment of targets (`step3_h2.offset`), the reference is the causal
LM's own objective, whatever the labels carry: the output at position t against input token
t+1 along the time axis the offset was measured on (`next_token`), so a sequence-first grid, a
flattened output, and labels shifted the wrong way are all scored as the model sees its inputs.
For padding counted in the loss (`step4_h1.padding`), it is the loss over the real tokens only
(`unpadded`): both runs are scored on what the learner wants learned, not on the pad targets.
`ruled(out, batch, ruler)` picks one by name, so a learner's fix is judged on the same ruler.

`Swapped(setup, mode)` is the learner's setup with that one method changed:
- ``"reference"``: the reference loss trains and is logged (the intervention);
- ``"scored"``: the learner's loss trains, the reference loss is logged (the baseline, on the
  same ruler as the intervention).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ....core.run import Run
from ..step1_capture import setup as proto
from ..step1_capture.loops import plain_loop
from ..scored import cross_entropy

MODES = ("reference", "scored")


def _tensor(out):
    if torch.is_tensor(out):
        return out
    if isinstance(out, dict) or hasattr(out, "logits"):
        return getattr(out, "logits", None) if not isinstance(out, dict) else out.get("logits")
    if isinstance(out, (tuple, list)):
        return next((o for o in out if torch.is_tensor(o)), None)
    return None


def reference(out, batch) -> torch.Tensor | None:
    """The textbook loss of the model's output `out` against the batch's labels (see above)."""
    y, x = proto.labels_of(batch), proto.inputs_of(batch)
    if not torch.is_tensor(out) or not out.is_floating_point() or len(out) != len(y):
        return None
    out = out.float()
    if not y.is_floating_point():
        ids = y[y != -100]  # cross_entropy's default ignore_index
        if (
            out.dim() == y.dim() + 1
            and out.shape[:-1] == y.shape
            and out.shape[-1] > 1
            and (ids.numel() == 0 or 0 <= int(ids.min()) <= int(ids.max()) < out.shape[-1])
        ):
            if y.dim() == 2 and y.shape[1] > 1 and x.shape == y.shape and torch.equal(x, y):
                return F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), y[:, 1:].reshape(-1))
            return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        if out.numel() == y.numel() and bool(((y == 0) | (y == 1)).all()):
            return F.binary_cross_entropy_with_logits(out.reshape(y.shape), y.float())
        return None
    if out.numel() == y.numel():
        return F.mse_loss(out.reshape(y.shape), y.float())
    return None


def next_token(out, batch, axis: int) -> torch.Tensor | None:
    """Cross-entropy of the output at position t against input token t+1 along `axis` of the
    inputs' (a, b) grid of token ids; None when the output does not line up with that grid."""
    from ..step1_capture.shapes import grid

    x = proto.inputs_of(batch)
    if not torch.is_tensor(x) or x.dim() != 2 or x.is_floating_point() or not torch.is_tensor(out):
        return None
    g = grid(out, x) if out.is_floating_point() else None
    n = x.shape[axis]
    if g is None or g.shape[-1] <= int(x.max()) or n < 2:
        return None
    logits = g.float().narrow(axis, 0, n - 1)
    return F.cross_entropy(logits.reshape(-1, g.shape[-1]), x.narrow(axis, 1, n - 1).reshape(-1))


def unpadded(out, batch, pad: int) -> torch.Tensor | None:
    """Cross-entropy over the real tokens only: the targets equal to `pad` (or out of range, as
    -100) ignored, each output position against its own target (against the next input token
    where the labels are the inputs themselves); None when the output does not line up with the
    token grid."""
    from ..step1_capture.shapes import grid

    x, y = proto.inputs_of(batch), proto.labels_of(batch)
    if not (torch.is_tensor(out) and torch.is_tensor(x) and torch.is_tensor(y)):
        return None
    if x.dim() != 2 or y.shape != x.shape or y.is_floating_point() or not out.is_floating_point():
        return None
    g = grid(out, x)
    if g is None or g.shape[-1] <= int(y.max()):
        return None
    g = g.float()
    if torch.equal(x, y):
        g, y = g[:, :-1], y[:, 1:]
    return cross_entropy(g, y, ignore=pad)  # the labels the loss ignores (-100) left out too


def pinball(out, batch, levels: list) -> torch.Tensor | None:
    """The mean pinball loss of a (B, K) output at K `levels` against one real label per row,
    the residual taken as label minus output; None where the shapes do not line up."""
    y = proto.labels_of(batch)
    if not (torch.is_tensor(out) and out.dim() == 2 and out.shape[1] == len(levels)):
        return None
    if not (torch.is_tensor(y) and y.is_floating_point() and y.numel() == len(out)):
        return None
    q, e = torch.tensor(levels), y.float().reshape(-1, 1) - out.float()
    return torch.maximum(q * e, (q - 1) * e).mean()


def ruled(out, batch, ruler: str = ""):
    """The reference loss a `ruler` names: "" the textbook one (`reference`), "next:<axis>" the
    next-token loss along that axis (`next_token`), "pad:<id>" the real tokens only
    (`unpadded`), "pinball:<q1,q2,...>" the pinball loss at those levels (`pinball`)."""
    kind, _, arg = ruler.partition(":")
    if kind == "pinball":
        return pinball(out, batch, [float(v) for v in arg.split(",")])
    if kind == "next":
        return next_token(out, batch, int(arg))
    if kind == "pad":
        return unpadded(out, batch, int(arg))
    return reference(out, batch)


class NoReference(ValueError):
    pass


class Swapped:
    """The learner's setup with ``loss_fn`` changed as `mode` says; every other method is theirs."""

    def __init__(self, setup, mode: str, ruler: str = ""):
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} is not a mode; choose one of {', '.join(MODES)}.")
        self.setup, self.mode, self.ruler = setup, mode, ruler  # ruler: see `ruled`

    def __getattr__(self, name):
        return getattr(self.setup, name)

    def loss_fn(self, model, batch):
        outs = []
        hook = model.register_forward_hook(lambda m, a, o: outs.append(o))
        try:
            yours = self.setup.loss_fn(model, batch)
        finally:
            hook.remove()
        ref = ruled(_tensor(outs[0]), batch, self.ruler) if outs else None
        if ref is None:
            raise NoReference("no reference loss applies to this model's output and labels")
        if self.mode == "reference" or not torch.is_tensor(yours):
            return ref
        yours = yours.reshape(()).float()
        return yours + (ref - yours).detach()  # the value is the reference's, the gradient yours


def applies(setup, seed: int, batches: list, ruler: str = "") -> bool:
    """Whether a reference loss can be read off the model's output on the first batch."""
    torch.manual_seed(seed)
    model = proto.make_model(setup, seed)
    try:
        with torch.no_grad():
            value = Swapped(setup, "reference", ruler).loss_fn(model, batches[0])
    except Exception:  # the learner's loss or model may refuse anything: then nothing applies
        return False
    return math.isfinite(float(value))


def run(setup, seed: int, steps: int, mode: str, batches: list, ruler: str = "") -> Run:
    """A plain loop with the learner's optimizer, its loss swapped as `mode` says."""
    return plain_loop(Swapped(setup, mode, ruler), seed, steps, "own", batches=batches).run


def level(run_, step: int) -> float:
    """The loss a forecast reads at `step`: the mean over the ten steps ending there."""
    from ...record.prediction import Prediction

    return Prediction(f"loss < 0 by step {step}").judge(
        run_.table["step"], run_.column("loss_raw")
    )[1]


def plan(evs, ruler: str = ""):
    """(forecast, run(seed) -> Run, variable) for the reference loss on both seeds, or None when
    no reference loss applies or it does not beat yours on seed 0 (measured on its own scale).
    `ruler`: which reference (`ruled`); the run function carries it as ``.ruler``, so a
    learner's fix is judged on the same one."""
    ev = evs[0]
    if not applies(ev.setup, ev.seed, ev.batches, ruler):
        return None
    step, by_seed = ev.steps - 1, {e.seed: e.batches for e in evs}
    try:
        before = [
            level(run(e.setup, e.seed, ev.steps, "scored", e.batches, ruler), step) for e in evs
        ]
        fixed = run(ev.setup, ev.seed, ev.steps, "reference", ev.batches, ruler)
    except ValueError:  # the learner's loss refused a batch: labkit does not guess
        return None
    after, worst = level(fixed, step), min(before)
    if not math.isfinite(worst):  # yours ends non-finite: the reference must finish, and learn
        worst = fixed.column("loss_raw")[0]
    if not (math.isfinite(after) and math.isfinite(worst) and after < worst):
        return None
    target = after + 0.5 * (worst - after)
    from .intervene import _num  # plain decimals: the forecast parser reads no 'e+05'

    kind, _, arg = ruler.partition(":")
    what = {
        "next": "the next-token loss: the output at position t against input token t+1 "
        + ("along the batches' first axis (sequence-first)" if arg == "0" else "along each row"),
        "pad": f"the same cross-entropy with the pad id {arg} ignored (ignore_index={arg})",
        "pinball": f"the pinball loss at the levels {arg} with the residual y - pred",
    }.get(kind, "the reference loss on the same model output and labels")

    def fixed_run(seed):
        return run(ev.setup, seed, ev.steps, "reference", by_seed[seed], ruler)

    fixed_run.ruler = ruler
    return f"loss < {_num(target)} by step {step}", fixed_run, ("loss_fn", "yours", what)
