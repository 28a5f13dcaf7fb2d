"""A reference learner that shares nothing with the learner's setup, for real-valued targets
that the learner's own loss finds no signal in.

The label-shuffle control trains the learner's model with the learner's loss. Where that loss
cannot reward what the inputs say about the targets, real and shuffled labels train alike
and the control reads "no signal", the reading a data bug gives. Targets whose mean is the
same for every input while their distribution is not (an inverse problem with two branches,
elbow up and elbow down) are such a case, and so is a loss that scores them wrongly (a
mixture's likelihood written as a sum of logs). So, before the labels are called
decorrelated, k nearest neighbours (standardised inputs, two halves of the rows, each scored
on the other) predict which quartile of the targets each row falls in: its cross-entropy on
the real targets against the same on shuffled ones, in nats. A gap of GAP or more says the
inputs tell the targets' distribution apart; then the learner's loss, not the data, is what
reads nothing (H1). Where the learner's optimizer reads signal at the runs' ends and the
reference optimizer reads none, the neighbours decide between the two (`places`).
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto
from ..step1_capture.graph import nodes_of

K, BINS, ROWS = 16, 4, 4096  # neighbours, target quartiles, rows read at most
GAP = 0.1  # nats: real targets this much easier to place than shuffled ones


def _rows(batches):
    """(N, D) standardised float inputs and (N,) float targets, one a row; None otherwise."""
    try:
        xs = [proto.inputs_of(b) for b in batches]
        ys = [proto.labels_of(b) for b in batches]
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    if not all(torch.is_tensor(t) and t.is_floating_point() for t in xs + ys):
        return None
    if len({tuple(x.shape[1:]) for x in xs}) != 1 or any(y.numel() != len(y) for y in ys):
        return None
    x = torch.cat([t.reshape(len(t), -1) for t in xs]).double()[:ROWS]
    y = torch.cat([t.reshape(-1) for t in ys]).double()[:ROWS]
    if len(x) != len(y) or len(y) < 8 * K or not bool(torch.isfinite(x).all()):
        return None
    sd = x.std(0)
    x, sd = x[:, sd > 0], sd[sd > 0]
    if x.shape[1] == 0:
        return None
    return (x - x.mean(0)) / sd, y


def _cross_entropy(near: torch.Tensor, codes: torch.Tensor) -> float:
    """Mean -log of each row's quartile share among its neighbours (add-one smoothed)."""
    hits = (codes[near] == codes[:, None]).sum(1).double()  # (N,)
    return float(-torch.log((hits + 1) / (K + BINS)).mean())


def reading(batches) -> dict | None:
    """{"real", "shuffled"}: the neighbours' cross-entropy on the targets' quartiles, real and
    shuffled (nats; ln 4 = 1.386 is a guess), or None where the targets are not one real value
    per row of real-valued inputs."""
    rows = _rows(batches)
    if rows is None:
        return None
    x, y = rows
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(len(y), generator=g)
    half = [order[0::2], order[1::2]]
    codes = torch.bucketize(y, torch.quantile(y, torch.tensor([0.25, 0.5, 0.75]).double()))
    near = torch.empty(len(y), K, dtype=torch.long)
    for a, b in (half, half[::-1]):  # each half scored by its neighbours in the other
        d = torch.cdist(x[a], x[b])
        near[a] = b[d.topk(K, largest=False).indices]
    shuffled = [codes[torch.randperm(len(y), generator=g)] for _ in range(3)]
    return {
        "real": _cross_entropy(near, codes),
        "shuffled": sum(_cross_entropy(near, c) for c in shuffled) / len(shuffled),
        "rows": len(y),
    }


def _graph_ops(setup, seed, batch) -> set[str]:
    """The autograd node names of the learner's loss on one batch at init."""
    try:
        model = proto.make_model(setup, seed)
        loss = setup.loss_fn(model, batch)
    except Exception:  # a loss this reading cannot call: no names
        return set()
    return {type(node).__name__ for node in nodes_of(loss)}


def places(evs) -> bool:
    """Whether the neighbours place the real targets GAP or more better than shuffled ones."""
    r = evs[0].once("neighbours", lambda: reading(evs[0].batches))
    return r is not None and above("neighbours.gap", r["shuffled"] - r["real"], GAP)


def loss_blind_rule(evs, sig: dict) -> OwnFinding | None:
    """H1 where the label-shuffle control read no signal with the learner's loss while the
    neighbours place the real targets GAP or more better than shuffled ones (see above)."""
    if not places(evs):
        return None
    r = evs[0].once("neighbours", lambda: reading(evs[0].batches))
    ops = _graph_ops(evs[0].setup, evs[0].seed, evs[0].batches[0])
    mixture = "LogSoftmaxBackward0" in ops and "LogsumexpBackward0" not in ops
    nan = [float("nan")] * 2
    real, shuf = sig.get("real") or nan, sig.get("shuffled") or nan
    return OwnFinding(
        "H1",
        "loss_blind_to_signal",
        f"your loss reads no signal where the data hold one: the label-shuffle control, a "
        f"plain loop with your model, loss and optimizer, reads none (mean loss on real "
        f"labels {real[0]:.3g} / {real[1]:.3g}, on shuffled {shuf[0]:.3g} / {shuf[1]:.3g}, "
        f"seeds 0 / 1), "
        f"while a reference learner that shares nothing with your setup ({K} nearest "
        f"neighbours on the standardised inputs, each row placed among the targets' "
        f"quartiles by rows it did not see) scores the real targets at {r['real']:.3f} nats "
        f"against {r['shuffled']:.3f} on shuffled ones: the inputs tell the targets' "
        "distribution apart, and your loss does not reward a model for reading it (the "
        "targets' mean may be the same for every input, as in an inverse problem with two "
        "branches)"
        + (
            "; your loss's graph holds a log_softmax and no logsumexp: a mixture's "
            "log-likelihood is the logsumexp over its components of log-weight plus "
            "log-density, the log of their sum; a sum of those logs (the log of a product) "
            "fits every component to every point"
            if mixture
            else ""
        ),
    )
