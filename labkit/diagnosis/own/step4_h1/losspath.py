"""H1 in the loss path: what the learner's ``loss_fn`` does between the model's output and
the labels, watched call by call on one batch at init.

A `TorchFunctionMode` sees every torch call the loss function makes outside the model's
own forward. Tensors that come from the model's output and from the labels are followed
through those calls, and four defects are measured, not guessed:

- **broadcast**: a call that combines the prediction with the labels at shapes that
  broadcast to more elements than either has, such as (32, 1) against (32,) giving
  (32, 32): every prediction is compared with every label, so the labels stop mattering;
- **probabilities into a loss on logits**: ``binary_cross_entropy_with_logits`` given
  values that all lie in [0, 1] (a sigmoid already applied), ``cross_entropy`` given rows
  that are non-negative and sum to 1 (a softmax already applied); and a loss that reads an
  argument as log-probabilities (``nll_loss``, ``kl_div``) given probabilities, or
  ``kl_div``'s target given as log-probabilities without ``log_target`` (`callargs`);
- **no gradient**: the prediction passes through a piecewise-constant call (round, floor,
  sign, argmax, a comparison, a cast to an integer type) and backward() then gives every
  parameter a gradient of exactly zero;
- **unpaired**: the loss is the same when the labels are permuted within the batch (while
  other label values, and other outputs per example, do change it): it compares aggregates,
  not each example with its own label, as ``(pred - y).mean() ** 2`` does;
- and, in `targets`, what the first classification loss's targets allow: a floor near
  chance (label smoothing 0.9), token labels that are a causal model's own inputs.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch.overrides import TorchFunctionMode

from .. import callargs
from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..step1_capture import inner
from . import targets

FLAT = {
    "round",
    "floor",
    "ceil",
    "trunc",
    "sign",
    "argmax",
    "argmin",
    "gt",
    "ge",
    "lt",
    "le",
    "eq",
    "ne",
    "__gt__",
    "__ge__",
    "__lt__",
    "__le__",
    "__eq__",
    "__ne__",
    "heaviside",
    "long",
    "int",
    "bool",
    "frac",
}
INTEGER = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool)
LOSSES = ("cross_entropy", "nll_loss")  # the calls whose targets the floor and copy checks read


def _name(func) -> str:
    name = getattr(func, "__name__", str(func))
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name  # round_ -> round


_tensors = inner.tensors_in


class _Audit(TorchFunctionMode):
    """Follows prediction- and label-derived tensors through the calls of loss_fn."""

    def __init__(self, labels):
        super().__init__()
        self.pred: dict[int, torch.Tensor] = {}
        self.label: dict[int, torch.Tensor] = {id(t): t for t in _tensors(labels)}
        self.inside = 0  # > 0 while the model's own forward runs
        self.broadcasts: list[str] = []
        self.flat_ops: list[str] = []
        self.probabilities: list[str] = []
        self.log_space: list[tuple] = []  # (key, sentence): an argument in the wrong space
        self.levels: list = []  # per-output levels in (0, 1) times the prediction (quantiles)
        self.meets: list[tuple] = []  # (func, name, args, kwargs) of the first classification loss
        self.batch_softmax: list[str] = []  # softmax calls that normalise over the batch
        self.weighted: list[tuple] = []  # (name, args, kwargs) of the first loss given weights
        self.regression: list[str] = []  # the first regression loss on the labels, by name
        self.outside: list[tuple] = []  # (loss, low, high): binary targets outside [0, 1]
        self.clamps: dict[int, tuple] = {}  # id of a clamped prediction -> (low, high)
        self.clamped: list[tuple] = []  # (loss, low, high, shape): a clamped logit scored

    def mark_output(self, output) -> None:
        for t in _tensors(output):
            self.pred[id(t)] = t

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.inside:
            return out
        given = _tensors(list(args)) + _tensors(kwargs)
        pred = [t for t in given if id(t) in self.pred]
        label = [t for t in given if id(t) in self.label and id(t) not in self.pred]
        name = _name(func)
        if (pred or label) and name in callargs.CALLS and not self.log_space:
            self.log_space += callargs.read(name, args, kwargs)
        if pred and label:
            self._broadcast(name, pred[0], label[0])
            if name in targets.REGRESSION and not self.regression:
                self.regression.append(name)
            if name in targets.BINARY and not self.outside:
                self.outside += targets.outside_unit(name, label[0])
        if pred:
            self._probabilities(name, pred[0], args)
            if not self.levels:
                self.levels += callargs.levels(name, args, pred[0], (self.pred, self.label))
            if name in LOSSES and not self.meets and args and args[0] is pred[0]:
                self.meets.append((func, name, args, kwargs))
            if id(pred[0]) in self.clamps and name in targets.ON_LOGITS and not self.clamped:
                self.clamped.append((name, *self.clamps[id(pred[0])], pred[0].shape))
            if name in targets.WEIGHTED and not self.weighted and args and args[0] is pred[0]:
                self.weighted.append((name, args, kwargs))
            if name in ("softmax", "log_softmax") and args and args[0] is pred[0]:
                self.batch_softmax += targets.over_batch(name, pred[0], args, kwargs)
            if name in FLAT or (
                name == "to" and any(a in INTEGER for a in list(args[1:]) + list(kwargs.values()))
            ):
                self.flat_ops.append(f"torch.{name}" if name != "to" else ".to(an integer dtype)")
            for t in _tensors(out):
                self.pred[id(t)] = t
            bounds = targets.clamp_bounds(name, args, kwargs)
            if bounds is not None and torch.is_tensor(out):
                self.clamps[id(out)] = bounds
        elif label:
            for t in _tensors(out):
                self.label[id(t)] = t
        return out

    def _broadcast(self, name, p, y) -> None:
        try:
            shape = torch.broadcast_shapes(p.shape, y.shape)
        except RuntimeError:
            return
        if shape.numel() > max(p.numel(), y.numel()) and name not in ("getitem", "__getitem__"):
            self.broadcasts.append(
                f"{name} combines the prediction {tuple(p.shape)} with the labels "
                f"{tuple(y.shape)}, which broadcast to {tuple(shape)}"
            )

    def _probabilities(self, name, p, args) -> None:
        if not (args and args[0] is p and p.is_floating_point() and p.numel() > 1):
            return
        v = p.detach().float()
        if name == "binary_cross_entropy_with_logits" and v.min() >= 0 and v.max() <= 1:
            self.probabilities.append(
                "binary_cross_entropy_with_logits gets values that all lie in "
                "[0, 1]: a sigmoid was already applied, and the loss applies its "
                "own sigmoid again"
            )
        elif (
            name == "cross_entropy"  # nll_loss on probabilities: `callargs`
            and v.dim() >= 2
            and v.min() >= 0
            and torch.allclose(v.sum(1), torch.ones(()), atol=1e-3)
        ):
            self.probabilities.append(
                "cross_entropy gets rows that are non-negative and sum to 1: a softmax "
                "was already applied, and cross_entropy applies its own log-softmax again"
            )


def audit(setup, seed: int, batches) -> dict:
    """What the loss function does with the prediction and the labels, on the first batch."""
    torch.manual_seed(seed)
    model = proto.make_model(setup, seed)
    proto.make_optimizer(setup, model)  # it may change the model, as the loop sees it
    model = copy.deepcopy(model)
    batch = batches[0]
    mode, loss = _follow(setup, model, batch)
    if not mode.meets:  # the model may compute its loss in its own forward (own_inner)
        mode.meets = inner.meets(setup, model, batch)
    zero, unpaired, quantiles = None, None, None
    if torch.is_tensor(loss) and loss.numel() == 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            unpaired = _unpaired(setup, model, batch, float(loss.detach()))
    if mode.levels and torch.is_tensor(loss) and loss.requires_grad and loss.numel() == 1:
        out = next(iter(mode.pred.values()))  # the first marked: the model's output
        quantiles = callargs.asymmetry(mode.levels[0], out, proto.labels_of(batch), loss)
    if torch.is_tensor(loss) and loss.requires_grad and loss.numel() == 1:
        params = [p for p in model.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        zero = all(g is None or not g.any() for g in grads)
    floor = copies = multi = None
    if mode.meets:
        func, name, args, kwargs = mode.meets[0]
        target = args[1] if len(args) > 1 else kwargs.get("target")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            floor = targets.floor(func, name, args, kwargs, target)
            multi = targets.multi_hot(name, args[0], target)
            if targets.same_tokens(target, batch, kwargs):
                copies = targets.causal(lambda b: _first_prediction(setup, model, b, seed), batch)
    return {
        "broadcasts": mode.broadcasts,
        "flat_ops": sorted(set(mode.flat_ops)),
        "probabilities": mode.probabilities,
        "log_space": mode.log_space,
        "quantiles": quantiles,
        "zero_grads": zero,
        "unpaired": unpaired,
        "floor": floor,
        "copies": copies,
        "multi_hot": multi,
        "batch_softmax": mode.batch_softmax,
        "weights": targets.class_weights(mode.weighted[0], batch, batches)
        if mode.weighted
        else None,
        "truncated": targets.truncated(mode.regression[0], batches) if mode.regression else None,
        "outside": mode.outside[0] if mode.outside else None,
        "clamped": mode.clamped[0] if mode.clamped else None,
    }


def _follow(setup, model, batch):
    """Run `loss_fn` once under a fresh `_Audit`; the model's own forward is not followed."""
    mode = _Audit(proto.labels_of(batch))

    def enter(module, args):
        mode.inside += 1

    def leave(module, args, output):
        mode.inside -= 1
        if not mode.inside:
            mode.mark_output(output)

    handles = [model.register_forward_pre_hook(enter), model.register_forward_hook(leave)]
    try:
        with mode, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the learner's own warnings belong to their run
            loss = setup.loss_fn(model, batch)
    finally:
        for h in handles:
            h.remove()
    return mode, loss


def _first_prediction(setup, model, batch, seed):
    """The prediction that the first classification loss in `loss_fn` receives on `batch`."""
    torch.manual_seed(seed)  # dropout draws the same masks on both calls
    with torch.no_grad():
        mode, _ = _follow(setup, model, batch)
    return mode.meets[0][2][0] if mode.meets else inner.prediction(setup, model, batch, seed)


def _same_output(model, batch, n: int) -> bool:
    try:
        out = (
            model(batch[0])
            if isinstance(batch, (tuple, list)) and torch.is_tensor(batch[0])
            else None
        )
    except Exception:  # a model called otherwise by loss_fn: not measured here
        return False
    return torch.is_tensor(out) and len(out) == n and torch.allclose(out, out[:1].expand_as(out))


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) + 1e-9


@torch.no_grad()
def _unpaired(setup, model, batch, value: float) -> float | None:
    """The loss when the labels are permuted within the batch, if it equals `value` although
    the loss does read the labels (another label value changes it); else None."""
    y = proto.labels_of(batch)
    if not torch.is_tensor(y) or y.dim() == 0 or len(y) < 4:
        return None
    rolled = y.roll(1, 0)
    if torch.equal(rolled, y) or _same_output(model, batch, len(y)):  # a permutation tells nothing
        return None
    other = torch.zeros_like(y) if y.any() else torch.ones_like(y)
    try:
        permuted = float(setup.loss_fn(model, proto.with_labels(batch, rolled)))
        changed = float(setup.loss_fn(model, proto.with_labels(batch, other)))
    except Exception:  # labels of another value may be refused: then nothing is measured
        return None
    if (
        _same(permuted, value)
        and not _same(changed, value)
        and _reads_inputs(setup, model, batch, value)
    ):
        return permuted
    return None


def _reads_inputs(setup, model, batch, value: float) -> bool:
    """Whether the loss changes when every row's input is the first row's: where it does not
    (a gate or a layer at 0 at init, outside the model or in it), the predictions do not yet
    depend on the inputs, and labels permuted among identical predictions tell nothing."""
    try:
        x = proto.inputs_of(batch)
        if not torch.is_tensor(x) or x.dim() == 0 or len(x) < 2:
            return True  # not measured: as before
        alike = proto.with_inputs(batch, x[:1].expand_as(x).clone())
        return not _same(float(setup.loss_fn(model, alike)), value)
    except Exception:  # an input this check cannot rewrite: as before
        return True


def loss_path(evs) -> OwnFinding | None:
    """An H1 finding when the same loss-path defect is measured on both seeds."""
    found = []
    for ev in evs:
        try:
            found.append(ev.once("loss_path", lambda ev=ev: audit(ev.setup, ev.seed, ev.batches)))
        except Exception:  # a loss function this audit cannot follow: no finding, no guess
            return None
    a = found[0]
    also = []
    if all(f["zero_grads"] and f["flat_ops"] for f in found):
        ops = ", ".join(a["flat_ops"])
        key, text = (
            "no_gradient",
            (
                f"the loss passes the model's output through {ops}, which is "
                "piecewise constant: its gradient is 0 almost everywhere, so "
                "backward() gives every parameter a zero gradient and nothing "
                "learns"
            ),
        )
        also = a["broadcasts"][:1]
    elif all(f["probabilities"] for f in found):
        key, text = (
            "probabilities",
            (
                f"{a['probabilities'][0]}; the loss is computed on "
                "probabilities instead of logits, so it has a floor above 0 "
                "and weak gradients"
            ),
        )
    elif all(f.get("log_space") for f in found):
        key, text = a["log_space"][0]
    elif all(f["broadcasts"] for f in found):
        key, text = (
            "broadcast",
            (
                f"a shape mismatch in the loss: {a['broadcasts'][0]}, so every "
                "prediction is compared with every label in the batch and the "
                "labels stop mattering; make the shapes equal (squeeze or view)"
            ),
        )
    elif all(f["unpaired"] is not None for f in found):
        key, text = (
            "unpaired",
            (
                f"the loss does not pair each prediction with its own label: with the "
                f"labels permuted within the batch it is unchanged ({a['unpaired']:.4g}), "
                "so it compares batch-level aggregates (a mean or sum taken before the "
                "error is squared or compared) and the model cannot learn which output "
                "belongs to which input"
            ),
        )
    elif callargs.flipped([f.get("quantiles") for f in found]):
        key, text = "quantile_flipped", callargs.flipped_words(a["quantiles"])
    else:
        return targets.finding(found)
    if also:
        text += f" (also: {also[0]})"
    return OwnFinding("H1", key, text)
