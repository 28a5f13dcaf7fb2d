"""H2 on the learner's own data: does the data carry a signal the model can learn?

A passed overfit gate does not clear the data: a model that can memorise 64 samples does
so whatever the labels say. So the data is judged on the whole training epoch:
- input checks: non-finite values, constant (or all-identical) inputs or labels, inputs whose
  feature correlations are no stronger than pure noise of the same shape gives (the
  largest eigenvalue of the feature correlation matrix within 1.2x the Marchenko-Pastur
  edge, the bound for i.i.d. noise);
- the label-shuffle control: a plain loop on the real labels against the same loop on
  labels permuted across the epoch, compared with the seed-to-seed spread on two seeds; where
  real labels beat shuffled ones on every seed by less than that spread can decide (a model
  that memorises shuffled labels too), further permutations per seed give the spread across
  permutations to compare with (`permuted_signal`);
- held-out batches, when the setup gives them: a training loss that falls while the
  held-out loss never improves on its value at init.
"""

from __future__ import annotations

import math

import torch

from ..step1_capture import setup as proto
from ..margins import above, below
from ...finding import OwnFinding

OFFSET_RATIO = 50.0  # the typical feature this many of its own SDs from 0: the rows look alike

WHITE = 1.2  # largest correlation eigenvalue / Marchenko-Pastur edge below this: noise-like
CONSTANT_SHARE = 0.99  # this share of identical input rows counts as constant inputs
REPEATED = 0.25  # at most this share of distinct input rows in an epoch: it repeats a few
PERMUTATIONS = 3  # further label permutations per seed where real beats shuffled, but closely


def _inputs_matrix(batches: list) -> tuple[torch.Tensor, list[bool]]:
    """(N, D) inputs of the batches whose rows have the most common shape (batches padded to
    other lengths are left out), and which batches were kept."""
    xs = [proto.inputs_of(b) for b in batches]
    shapes = [tuple(x.shape[1:]) for x in xs]
    common = max(set(shapes), key=shapes.count)
    kept = [s == common for s in shapes]
    return torch.cat([x.reshape(len(x), -1) for x, k in zip(xs, kept) if k]), kept


def input_checks(batches: list) -> dict:
    X, kept = _inputs_matrix(batches)  # (N, D)
    out = {
        "rows": len(X),
        "features": X.shape[1],
        "nonfinite_rows": 0,
        "constant": False,
        "identical_share": None,
        "white_ratio": None,
        "dtype": str(X.dtype).replace("torch.", ""),
    }
    if X.is_floating_point():
        bad = ~torch.isfinite(X)
        out["nonfinite_rows"] = int(bad.any(1).sum())
        out["nonfinite_features"] = torch.nonzero(bad.any(0)).flatten().tolist()[:8]
    rows = X[torch.isfinite(X.double()).all(1)] if X.is_floating_point() else X
    if len(rows) == 0:
        return out
    _, counts = torch.unique(rows, dim=0, return_counts=True)
    out["identical_share"] = float(counts.max()) / len(rows)
    out["distinct_rows"] = len(counts)  # an epoch that repeats a few rows: see REPEATED
    out["constant"] = out["identical_share"] >= CONSTANT_SHARE and len(rows) > 1
    if rows.is_floating_point() and len(rows) > 1:
        r = rows.double()
        out["constant"] |= bool((r.std(0) <= 1e-6 * (1 + r.mean(0).abs())).all())
    labels = torch.cat(
        [
            proto.labels_of(b).reshape(len(proto.labels_of(b)), -1)
            for b, k in zip(batches, kept)
            if k
        ]
    )
    _, label_counts = torch.unique(labels, dim=0, return_counts=True)
    out["labels_constant"] = len(label_counts) == 1 and len(labels) > 1
    if X.is_floating_point() and not out["constant"]:
        out["white_ratio"] = _white_ratio(rows.double()[:4096])
        sd = rows.double().std(0)
        typical = float(sd.median())
        if typical > 0 and len(sd) > 1:
            out["scale_ratio"], out["scale_feature"] = float(sd.max()) / typical, int(sd.argmax())
        # how far the typical feature sits from 0 in units of its own spread: inputs scaled
        # with another scale's statistics (0-255 ones on [0, 1] pixels) barely vary around it
        moving = sd > 0
        if bool(moving.any()):
            offset = rows.double().mean(0).abs()[moving] / sd[moving]
            out["offset_ratio"] = float(offset.median())
    return out


def _loss_and_grads(setup, model, batch) -> list[torch.Tensor]:
    """The loss on `batch` and its gradient on every parameter, the random draws (noise,
    dropout) fixed so that two calls differ only where the batch does."""
    params = [p for p in model.parameters() if p.requires_grad]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        loss = proto.loss(setup, model, batch)
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return [loss.detach()] + [g for g in grads if g is not None]


def labels_read(setup, seed: int, batch) -> bool | None:
    """Whether the loss reads the batch's labels: its value or a gradient changes when every
    label is replaced by another value (the model at init). A target the loss never reads (an
    autoencoder's placeholder, `x, _ = batch`) is not a label. None where it cannot be
    measured (labels of another value refused): then the labels count as read."""
    try:
        y = proto.labels_of(batch)
        other = torch.zeros_like(y) if bool(y.any()) else torch.ones_like(y)
        model = proto.make_model(setup, seed)
        a = _loss_and_grads(setup, model, batch)
        b = _loss_and_grads(setup, model, proto.with_labels(batch, other))
    except Exception:  # a batch, model or loss this reading cannot call: not measured
        return None
    return len(a) != len(b) or not all(torch.equal(u, v) for u, v in zip(a, b))


def constant_labels(ev) -> bool:
    """Whether the labels are one value for every example and the loss reads them (`ev`: a
    seed's evidence, `SeedEvidence`)."""
    if not ev.inputs.get("labels_constant"):
        return False
    read = ev.once("labels_read", lambda: labels_read(ev.setup, ev.seed, ev.batches[0]))
    return read is not False


def _float_rows(batches: list):
    if not batches:
        return None
    X, _ = _inputs_matrix(batches)
    if not X.is_floating_point():
        return None
    X = X.double()
    return X[torch.isfinite(X).all(1)]


def scale_shift(train: list, held_out: list) -> str | None:
    """A sentence when held-out inputs sit far outside the training inputs' range (a
    preprocessing step applied to one split only), else None."""
    a, b = _float_rows(train), _float_rows(held_out)
    if a is None or b is None or len(a) < 2 or len(b) < 2 or a.shape[1] != b.shape[1]:
        return None
    z = (b.mean(0) - a.mean(0)).abs() / (a.std(0) + 1e-8)
    k = int(z.argmax())
    if float(z[k]) < 10:
        return None
    return (
        f"the held-out inputs are on another scale than the training inputs (feature {k} "
        f"averages {float(b[:, k].mean()):.4g} there and {float(a[:, k].mean()):.4g} in training, "
        f"{float(z[k]):.0f} training standard deviations apart): a preprocessing step such as "
        "standardisation was applied to one split only"
    )


def _white_ratio(X: torch.Tensor) -> float | None:
    sd = X.std(0)
    X = X[:, sd > 1e-8 * (1 + X.mean(0).abs())]
    n, d = X.shape
    if d < 2 or n < 2 * d:
        return None
    Z = (X - X.mean(0)) / X.std(0)
    top = float(torch.linalg.eigvalsh(Z.T @ Z / (n - 1))[-1])
    return top / (1 + math.sqrt(d / n)) ** 2


def flows(result) -> bool:
    """Gradients reach the parameters and the steps move them (a plain loop's result)."""
    grads = [g for g in result.grad_norms if g is not None]
    return (
        bool(grads)
        and len(grads) == len(result.grad_norms)
        and min(grads) > 0
        and all(math.isfinite(g) for g in grads)
        and max(result.update_norms) > 0
    )


def label_signal(real: list, shuffled: list) -> dict:
    """Compare real and shuffled labels (plain loops, one pair per seed) against the spread."""
    means_r, means_s = [r.mean for r in real], [s.mean for s in shuffled]
    out = {
        "real": means_r,
        "shuffled": means_s,
        "verdict": "unclear",
        "arm": getattr(real[0], "arm", None),
    }
    if not all(map(math.isfinite, means_r + means_s)):
        out["why"] = "a plain loop reached a non-finite loss"
        return out
    if not all(flows(r) for r in real):
        out["why"] = "gradients do not flow in the plain loop, so the labels cannot be tested"
        return out
    spread = max(abs(means_r[0] - means_r[1]), abs(means_s[0] - means_s[1]))
    start = sum(r.losses[0] for r in real) / len(real)
    gaps = [s - r for r, s in zip(means_r, means_s)]
    floor = 0.02 * abs(start)
    out.update(gaps=gaps, spread=spread, floor=floor)
    if all(
        above("signal.gap_over_spread", g, max(3 * spread, floor), seed=i)
        for i, g in enumerate(gaps)
    ):
        out["verdict"] = "signal"
        return out
    # the runs' ends: a mean over the whole run carries each seed's start (an init whose
    # outputs sit far from the targets' mean), which can swamp a gap that the ends show
    levels_r, levels_s = [r.level() for r in real], [s.level() for s in shuffled]
    ends = [s - r for r, s in zip(levels_r, levels_s)]
    end_spread = max(abs(levels_r[0] - levels_r[1]), abs(levels_s[0] - levels_s[1]))
    apart = min(levels_s) - max(levels_r)  # every shuffled end above every real end by this
    real_spread = abs(levels_r[0] - levels_r[1])
    if all(map(math.isfinite, levels_r + levels_s)) and (
        all(
            above("signal.end_over_spread", g, max(3 * end_spread, floor), seed=i)
            for i, g in enumerate(ends)
        )
        or above("signal.ends_apart", apart, max(real_spread, floor))
    ):  # real ends apart from shuffled: never "no signal" (an acquittal's reading, `rules`)
        out["ends"] = (levels_r, levels_s, ends, end_spread)
        if not all(g > 3 * end_spread for g in ends):  # apart, by less than 3 spreads
            out["apart"] = (apart, real_spread)
    elif all(
        not above("signal.no_gap", abs(g), max(2 * spread, floor), seed=i)
        for i, g in enumerate(gaps)
    ):
        out["verdict"] = "none"
    return out


def close(sig: dict) -> bool:
    """Real labels beat shuffled ones on every seed, by too little against the seed spread to
    decide, and the runs' ends do not decide either (`label_signal` unclear, no "ends")."""
    return (
        sig["verdict"] == "unclear"
        and "ends" not in sig
        and all(g > 0 for g in sig.get("gaps") or [-1])
    )


def permuted_signal(sig: dict, more: list) -> dict:
    """`label_signal`'s close case read again: `more[i]`, the mean losses of further shuffled
    runs on seed i (each a fresh permutation of the labels, the same init and batch order as
    the real run). Under labels that carry no signal, the real labels are one more permutation;
    so "signal" where, on every seed, the real run sits below every shuffled one and below
    their mean by more than 3 times their spread across permutations (the standard deviation
    pooled within seeds) and the floor; else `sig`'s verdict. The runs are noted either way."""
    sets = [[s, *m] for s, m in zip(sig["shuffled"], more)]
    means = [sum(v) / len(v) for v in sets]
    df = sum(len(v) - 1 for v in sets)
    sd = math.sqrt(sum((x - m) ** 2 for v, m in zip(sets, means) for x in v) / df)
    gaps = [m - r for r, m in zip(sig["real"], means)]
    out = {**sig, "permuted": (sets, gaps, sd)}
    if all(math.isfinite(x) for v in sets for x in v) and all(
        r < min(v) and above("signal.over_permutations", g, max(3 * sd, sig["floor"]), seed=i)
        for i, (r, v, g) in enumerate(zip(sig["real"], sets, gaps))
    ):
        out["verdict"] = "signal"
    return out


def held_out_verdict(result) -> dict:
    """A training loss that fell while the held-out loss never went below its value at init."""
    evals = result.evals
    if not evals or not all(math.isfinite(v) for _, v in evals):
        return {"verdict": "unclear", "evals": evals}
    first, best = evals[0][1], min(v for _, v in evals[1:])
    start, level = result.losses[0], result.level()
    trained = below("held_out.trained", level, 0.7 * start)
    stuck = not below("held_out.improved", best, first - 0.02 * abs(first))
    verdict = "mismatch" if trained and stuck else "ok" if trained else "unclear"
    return {"verdict": verdict, "evals": evals, "train": [start, level], "held_out": [first, best]}


def describe_signal(sig: dict) -> str:
    if "gaps" not in sig:
        said = "not run" if sig.get("verdict") == "unread" else "unclear"
        return f"label-shuffle control: {said} ({sig.get('why', 'no result')})"
    r, s = sig["real"], sig["shuffled"]
    line = (
        f"label-shuffle control (plain loop, mean training loss): real labels {r[0]:.3f} / "
        f"{r[1]:.3f}, shuffled {s[0]:.3f} / {s[1]:.3f} on seeds 0 / 1; gap "
        f"{sig['gaps'][0]:+.3f} / {sig['gaps'][1]:+.3f} against a seed-to-seed spread of "
        f"{sig['spread']:.3f}"
    )
    if "ends" in sig:
        (er, es, gaps, spread) = sig["ends"]
        line += (
            f" (under 3 times it); over the last fifth of each run: real {er[0]:.3f} / "
            f"{er[1]:.3f}, shuffled {es[0]:.3f} / {es[1]:.3f}, gap {gaps[0]:+.3f} / "
            f"{gaps[1]:+.3f}, {ends_apart(sig)}"
        )
    if "permuted" in sig:
        sets, gaps, sd = sig["permuted"]
        runs = " / ".join(", ".join(f"{x:.3f}" for x in v) for v in sets)
        below_all = all(r < min(v) for r, v in zip(sig["real"], sets))
        line += (
            f" (under 3 times it); with {len(sets[0])} label permutations per seed, shuffled "
            f"{runs}: the real run is {'below every one' if below_all else 'not below every one'}"
            f" and under their mean by {gaps[0]:+.3f} / {gaps[1]:+.3f} against a spread across "
            f"permutations of {sd:.3f} (standard deviation within seeds)"
        )
    return line


def signal_words(sig: dict) -> str:
    """What the control measured when it reads "signal", in a parenthesis's words."""
    if "permuted" not in sig:
        return "real beat shuffled by more than the seed spread"
    sets, _, sd = sig["permuted"]
    return (
        f"real beat each of {len(sets[0])} label permutations per seed, by over 3 times their "
        f"spread across permutations ({sd:.3f})"
    )


def ends_apart(sig: dict) -> str:
    """How the runs' ends tell real labels from shuffled ones (`label_signal`'s "ends")."""
    spread = sig["ends"][3]
    if "apart" not in sig:
        return f"over 3 times the seed spread of {spread:.3f}"
    apart, real_spread = sig["apart"]
    return (
        f"every shuffled run ending {apart:.3f} or more above every real one, more than the "
        f"real runs' own seed spread ({real_spread:.3f})"
    )


def barely_varying(inputs: dict) -> OwnFinding | None:
    """Where a plain loop trains alike on real and shuffled labels: inputs whose typical
    feature sits far from 0 in units of its own spread, so that every row looks alike."""
    offset = inputs.get("offset_ratio")
    if offset is None or below("inputs.offset_ratio", offset, OFFSET_RATIO, log=True):
        return None
    return OwnFinding(
        "H2",
        "inputs_offset",
        f"the inputs barely vary: the typical feature sits {offset:.3g} of its own standard "
        "deviations away from 0, so every row looks alike to the model (inputs normalised "
        "with statistics of another scale, such as 0-255 ones on pixels in [0, 1], or never "
        "centred), and a plain loop then trains alike on real and on shuffled labels",
        arm="shuffled",
        variable=("labels", "as given", "permuted across the epoch"),
        expect="same",
    )


def series_order(batches: list) -> str | None:
    """Where the inputs are windows cut from one series (the window one step later is in the
    data too, for half the windows or more) and neighbouring values in them are uncorrelated
    (|lag-1 r| under 0.1): a clause saying so, as a series shuffled before it was windowed is;
    None otherwise."""
    X, _ = _inputs_matrix(batches)  # (N, T): a window a row, one value per time step
    if not X.is_floating_point() or X.shape[1] < 8 or len(X) < 32:
        return None
    X = X.double()[:4096]
    heads = {tuple(r) for r in X[:, :-1].round(decimals=6).tolist()}
    shifted = sum(tuple(r) in heads for r in X[:, 1:].round(decimals=6).tolist()) / len(X)
    a, b = X[:, :-1].flatten(), X[:, 1:].flatten()
    r = float(torch.corrcoef(torch.stack([a, b]))[0, 1])
    if shifted < 0.5 or not abs(r) < 0.1:
        return None
    return (
        f"; the inputs are windows cut from one series (for {shifted:.0%} of them, the window "
        f"one step later is in the data too), yet neighbouring values in a window are uncorrelated "
        f"(lag-1 r = {r:+.2f}): the series' order is lost before the windows are cut, as "
        "when its steps are shuffled first; cut the windows in time order, then shuffle the "
        "(window, target) pairs"
    )
