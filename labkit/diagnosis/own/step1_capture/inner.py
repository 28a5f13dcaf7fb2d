"""The loss a model computes in its own forward: nanoGPT's ``forward(idx, targets)`` returning
``(logits, loss)``, a Hugging Face model given ``labels=`` returning ``.loss``.

The loss-path audit (`own_losspath`) follows what ``loss_fn`` does *outside* the model. When
it meets no classification loss there, this module runs ``loss_fn`` once more under a mode
that also looks *inside* the model's forward: tensors derived from the labels are followed
(``targets.view(-1)``, a pad and a shift, ``.to(device)``), and the first ``cross_entropy`` /
``nll_loss`` whose target is one of them, with a prediction that is not, is the model's own
loss. Its prediction and target then feed the same target checks (the floor near chance,
the labels that are the inputs) as a loss written in ``loss_fn``.
"""

from __future__ import annotations

import warnings

import torch
from torch.overrides import TorchFunctionMode

from . import setup as proto

LOSSES = ("cross_entropy", "nll_loss")
REGRESSION = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")  # `prediction(losses=...)`


def tensors_in(value) -> list:
    """The tensors in a value: a tensor, nested tuples, lists and dicts of them, or a model
    output such as transformers' ModelOutput (its ``.logits``)."""
    if torch.is_tensor(value):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    logits = getattr(value, "logits", None)
    return [logits] if torch.is_tensor(logits) else []


class _Inside(TorchFunctionMode):
    """Follows label-derived tensors everywhere, the model's forward included."""

    def __init__(self, labels, losses=LOSSES):
        super().__init__()
        self.losses = losses
        self.label = {id(t): t for t in tensors_in(labels)}
        self.meets: list[tuple] = []  # (func, name, args, kwargs) of the first loss on the labels

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not any(id(t) in self.label for t in tensors_in(list(args)) + tensors_in(kwargs)):
            return out
        name = getattr(func, "__name__", "")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if (
            name in self.losses
            and not self.meets
            and args
            and torch.is_tensor(args[0])
            and id(args[0]) not in self.label
            and target is not None
            and id(target) in self.label
        ):
            self.meets.append((func, name, args, kwargs))
        for t in tensors_in(out):
            self.label[id(t)] = t
        return out


def own_labels(batch):
    """The batch with labels that are not the very tensor of the inputs (``y = x`` would make
    every output look label-derived); the values are unchanged."""
    x, y = proto.inputs_of(batch), proto.labels_of(batch)
    return proto.with_labels(batch, y.clone()) if y is x else batch


def meets(setup, model, batch, losses=LOSSES) -> list[tuple]:
    """[(func, name, args, kwargs)] of the first loss among `losses` (by default a
    classification's) on the labels that the model computes inside its forward, or []."""
    batch = own_labels(batch)
    mode = _Inside(proto.labels_of(batch), losses)
    try:
        with mode, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            setup.loss_fn(model, batch)
    except Exception:  # a loss function this cannot follow: nothing measured
        return []
    return mode.meets


def prediction(setup, model, batch, seed: int, losses=LOSSES):
    """The prediction the model's own loss receives on `batch` (dropout drawn as before)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        found = meets(setup, model, batch, losses)
    return found[0][2][0] if found else None
