"""The discriminating test of each gallery case, run for real, and the lines that report it.

``PROBES[key](trainer, run, rebuild)`` gets the finished `Trainer` (its model is the
trained one), its `Run`, and `rebuild()`, which returns the same setup untrained; it
returns the evidence as plain numbers. `evidence_lines` and `confirm_lines` word them.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

from ...core.metrics import confusion_matrix, per_class_recall
from ...core.seams import batch_indices
from ...diagnosis.probes import (
    first_nonfinite,
    gradient_audit,
    label_shuffle_control,
    overfit_probe,
    replay_batch,
    save_checkpoint,
)

LN10 = math.log(10)


def _xy(batch: dict) -> dict:
    return {"x": batch["x"], "y": batch["y"]}


@torch.no_grad()
def _predict(model, x) -> torch.Tensor:
    was = model.training
    model.eval()
    try:
        return torch.softmax(model(x), dim=-1)  # (N, C)
    finally:
        model.train(was)


def spike_steps(losses: list, ratio: float = 2.5, window: int = 10) -> list[int]:
    """Steps whose loss is more than `ratio` times the median of the `window` steps before."""
    return [
        i
        for i in range(2 * window, len(losses))
        if losses[i] > ratio * statistics.median(losses[i - window : i])
    ]


def overfitting(t, run, rebuild) -> dict:
    train, val, ev = t.ctx.data.train, t.ctx.data.val, run.evals
    dup = int((val["x"][:, None, :] == train["x"][None]).all(-1).any(1).sum())
    share = lambda y: torch.bincount(y, minlength=t.ctx.data.n_classes).float() / len(y)  # noqa: E731
    wrong = t.ctx.data.info["wrong_label"]
    i = min(range(len(ev["val_loss"])), key=ev["val_loss"].__getitem__)

    def fitted(model) -> float:  # share of the wrong training labels the model reproduces
        return float(
            (_predict(model, train["x"]).argmax(1)[wrong] == train["y"][wrong]).float().mean()
        )

    at_min = rebuild()
    at_min.run(steps=ev["step"][i] + 1)  # the weights of the best val loss
    return {
        "duplicates": dup,
        "share_gap": float((share(train["y"]) - share(val["y"])).abs().max()),
        "val_min_step": ev["step"][i],
        "val_min": ev["val_loss"][i],
        "val_end": ev["val_loss"][-1],
        "train_eval_at_min": ev["train_eval_loss"][i],
        "train_eval_end": ev["train_eval_loss"][-1],
        "wrong_labels": int(wrong.sum()),
        "wrong_labels_fitted": fitted(t.ctx.model),
        "wrong_labels_fitted_at_min": fitted(at_min.ctx.model),
    }


def high_flat(t, run, rebuild) -> dict:
    fresh = rebuild()
    forward, loss_fn = fresh.pipeline()
    batch = _xy(fresh.batch(0))
    real = overfit_probe(fresh.ctx.model, batch, forward=forward, loss_fn=loss_fn)
    control = label_shuffle_control(
        fresh.ctx.model, batch, real=real, forward=forward, loss_fn=loss_fn
    )
    return {
        "one_batch_first": real.details["loss_first"],
        "one_batch_last": real.details["loss_last"],
        "one_batch_reached": real.details["reached"],
        "real_mean": control.details["real_mean"],
        "shuffled_mean": control.details["shuffled_mean"],
        "same": control.details["same"],
        "median_update_norm": statistics.median(run.table["update_norm"]),
    }


def spiking(t, run, rebuild) -> dict:
    spikes = spike_steps(run.table["loss_raw"])
    last = spikes[-1]
    normal = next(s for s in range(last + 1, len(run)) if s not in spikes)
    fresh = rebuild()
    fresh.run(steps=last)  # the weights just before the spiking step
    model, batch = fresh.ctx.model, _xy(fresh.batch(last))
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = save_checkpoint(model, Path(tmp) / "before_spike.pt")
        replay = replay_batch(model, ckpt, {"spiking": batch, "normal": _xy(fresh.batch(normal))})
    with torch.no_grad():  # the raw examples: which row of the spiking batch costs the most?
        per_row = F.cross_entropy(model(batch["x"]), batch["y"], reduction="none")  # (B,)
    rows = batch_indices(
        fresh.config, len(fresh.ctx.data), *divmod(last, fresh.ctx.steps_per_epoch)
    )
    worst = int(per_row.argmax())
    per_epoch, culprit = fresh.ctx.steps_per_epoch, int(rows[worst])
    in_spikes = [
        culprit in batch_indices(fresh.config, len(fresh.ctx.data), *divmod(s, per_epoch))
        for s in spikes
    ]
    return {
        "spikes": spikes,
        "replay_step": last,
        "normal_step": normal,
        "replay_spiking": replay.details["rows"]["spiking"]["loss"],
        "replay_normal": replay.details["rows"]["normal"]["loss"],
        "culprit_row": culprit,
        "culprit_loss": float(per_row[worst]),
        "others_median": float(per_row.median()),
        "culprit_size": float(batch["x"][worst].abs().max()),
        "culprit_in_every_spike": all(in_spikes),
    }


def val_below_train(t, run, rebuild) -> dict:
    step = run.evals["step"][-1]
    return {
        "step": step,
        "online": run.table["loss_reported"][step],
        "train_eval": run.evals["train_eval_loss"][-1],
        "val": run.evals["val_loss"][-1],
    }


def flat_train(t, run, rebuild) -> dict:
    fresh = rebuild()
    forward, loss_fn = fresh.pipeline()
    batch = fresh.batch(0)
    loss = loss_fn(forward(fresh.ctx.model, batch), batch)
    fresh.ctx.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    audit = gradient_audit(fresh.ctx.model, fresh.ctx.optimizer, loss)
    rows = audit.details["rows"]
    return {
        "has_graph": loss.grad_fn is not None,
        "verdict": audit.verdict,
        "none_grads": sum(r["grad"] == "none" for r in rows),
        "params": len(rows),
        "max_from_ln10": max(abs(v - LN10) for v in run.table["loss_raw"]),
    }


def nan(t, run, rebuild) -> dict:
    step = run.first_nonfinite_step()
    fresh = rebuild()
    fresh.run(steps=step)  # every step before the first NaN
    found = first_nonfinite(fresh.ctx.model, _xy(fresh.batch(step)))
    return {
        "step": step,
        "finite_before": all(map(math.isfinite, run.table["loss_raw"][:step])),
        "where": found.details["where"],
        "note": found.details.get("note", ""),
    }


def metric_flat(t, run, rebuild) -> dict:
    val, ev = t.ctx.data.val, run.evals
    rare = val["y"] == 1
    p_end = _predict(t.ctx.model, val["x"])
    p_init = _predict(rebuild().ctx.model, val["x"])
    cm = confusion_matrix(val["y"], p_end.argmax(1), 2)
    return {
        "acc_first": ev["val_acc"][0],
        "acc_last": ev["val_acc"][-1],
        "majority_share": float((~rare).float().mean()),
        "loss_first": run.table["loss_raw"][0],
        "val_loss_last": ev["val_loss"][-1],
        "confusion": cm.tolist(),
        "rare_recall": per_class_recall(cm)[1],
        "true_prob_init": float(p_init.gather(1, val["y"][:, None]).mean()),
        "true_prob_end": float(p_end.gather(1, val["y"][:, None]).mean()),
        "rare_prob_end": float(p_end[rare, 1].mean()),
    }


PROBES = {
    "overfitting": overfitting,
    "high_flat": high_flat,
    "spiking": spiking,
    "val_below_train": val_below_train,
    "flat_train": flat_train,
    "nan": nan,
    "metric_flat": metric_flat,
}


def _more_than(x: float, marks=(0.1, 0.3, 1.0)) -> str:
    """'more than 0.3': the largest mark below x. A run that memorises noise differs in its
    last digits between CPUs and thread counts (NOTES.md), so its numbers are given this way."""
    passed = [m for m in marks if x > m]
    return f"more than {passed[-1]}" if passed else f"less than {marks[0]}"


def _tail(run, n: int = 20) -> float:
    return statistics.fmean(run.table["loss_raw"][-n:])


def evidence_lines(shown) -> list[str]:
    """The discriminating test's result, in words with its numbers."""
    e, key = shown.evidence, shown.case.key
    if key == "overfitting":
        return [
            (
                f"split: {e['duplicates']} val rows also in train; class shares differ by at "
                f"most {e['share_gap']:.2f}"
            ),
            (
                f"val loss is lowest at step {e['val_min_step']} ({e['val_min']:.2f}), then climbs by "
                f"{_more_than(e['val_end'] - e['val_min'])} while train_eval falls by "
                f"{_more_than(e['train_eval_at_min'] - e['train_eval_end'])}"
            ),
            (
                f"of the {e['wrong_labels']} training labels that are wrong, the model repeats "
                f"{e['wrong_labels_fitted_at_min']:.0%} at the val minimum and "
                f"{'over a third' if e['wrong_labels_fitted'] > 1 / 3 else 'under a third'} at the "
                "end: it memorises them"
            ),
        ]
    if key == "high_flat":
        same = "the same" if e["same"] else "different"
        # one digit after the point: the end of 200 steps on one batch moves in its second
        # decimal with the CPU path (1.49 on one path, 1.50 on another)
        memorised = e["one_batch_last"] < 0.1 * e["one_batch_first"]
        return [
            (
                f"one batch of 64, 200 steps: loss {e['one_batch_first']:.2f} -> "
                f"{e['one_batch_last']:.1f} ({'memorised to ~0' if memorised else 'no memorising to ~0'})"
            ),
            (
                f"labels shuffled again: mean loss {e['shuffled_mean']:.2f} against "
                f"{e['real_mean']:.2f}, {same}: the model is not reading the labels"
            ),
            f"yet the weights move: median update norm {e['median_update_norm']:.3f}",
        ]
    if key == "spiking":
        every = "is" if e["culprit_in_every_spike"] else "is not"
        return [
            (
                f"{len(e['spikes'])} spikes (over 2.5x the median of the 10 steps before) at "
                f"steps {e['spikes']}"
            ),
            (
                f"replayed from the weights saved before step {e['replay_step']}: the spiking "
                f"batch gives {e['replay_spiking']:.2f}, a normal batch (step {e['normal_step']}) "
                f"{e['replay_normal']:.2f}"
            ),
            (
                f"inside the spiking batch, training row {e['culprit_row']} costs "
                f"{e['culprit_loss']:.1f} against a median of {e['others_median']:.2f}; its largest "
                f"feature is {e['culprit_size']:.1f} (inputs are standardised), and it {every} in "
                "every spiking batch"
            ),
        ]
    if key == "val_below_train":
        return [
            (
                f"at step {e['step']}: online {e['online']:.2f} > train_eval {e['train_eval']:.2f} "
                f"~ val {e['val']:.2f}"
            ),
            "the same weights score the training rows like the val rows once dropout is off",
        ]
    if key == "flat_train":
        return [
            f"loss.grad_fn is {'set' if e['has_graph'] else 'None'}; audit: {e['verdict']}",
            f"{e['none_grads']} of {e['params']} parameters have grad None (not zero)",
            f"the loss never moves more than {e['max_from_ln10']:.3f} from ln 10 = {LN10:.3f}",
        ]
    if key == "nan":
        return [
            (
                f"first NaN loss at step {e['step']}; every step before it is finite: "
                f"{e['finite_before']}"
            ),
            (
                f"that step replayed from the weights just before it: first non-finite value is "
                f"the {e['where']} ({e['note']})"
            ),
        ]
    return [
        (
            f"val accuracy {e['acc_first']:.3f} -> {e['acc_last']:.3f} (the common class is "
            f"{e['majority_share']:.3f} of val) while the loss goes {e['loss_first']:.2f} -> "
            f"{e['val_loss_last']:.2f}"
        ),
        (
            f"val confusion (rows true, columns predicted): {e['confusion']}; rare-class recall "
            f"{e['rare_recall']:.2f}"
        ),
        (
            f"the mean probability of the true class rises {e['true_prob_init']:.2f} -> "
            f"{e['true_prob_end']:.2f}, but the rare rows give their own class only "
            f"{e['rare_prob_end']:.2f} on average: under 0.5, so most stay predicted common"
        ),
    ]


def confirm_lines(shown) -> list[str]:
    """Per confirmation seed: the number the case's `confirms` sentence is about, fixed vs not."""
    key, lines = shown.case.key, []
    for seed, fixed in shown.fixed.items():
        base = shown.baseline[seed]
        if key == "overfitting":
            v, b = fixed.evals["val_loss"], base.evals["val_loss"]
            text = (
                f"val loss ends {v[-1]:.2f} (lowest {min(v):.2f}); without the change it ends "
                f"{_more_than(b[-1] - v[-1])} higher"
            )
        elif key in ("high_flat", "flat_train"):
            text = (
                f"last-20 mean loss {_tail(fixed):.2f} (before {_tail(base):.2f}), val "
                f"accuracy {fixed.evals['val_acc'][-1]:.2f}"
            )
        elif key == "spiking":
            half = len(fixed) // 2
            text = (
                f"largest loss in the second half {max(fixed.table['loss_raw'][half:]):.2f}; "
                f"before the repair {max(base.table['loss_raw'][half:]):.2f}"
            )
        elif key == "val_below_train":
            gap = lambda r: (
                r.table["loss_reported"][r.evals["step"][-1]] - r.evals["train_eval_loss"][-1]
            )  # noqa: E731
            text = (
                f"online - train_eval = {gap(fixed):.2f} without dropout, {gap(base):.2f} with it"
            )
        elif key == "nan":
            text = (
                f"first non-finite step {fixed.first_nonfinite_step()}, last-20 mean loss "
                f"{_tail(fixed):.2f}"
            )
        else:
            text = (
                f"rare-class recall {fixed.evals['val_minority_recall'][-1]:.2f} (before "
                f"{base.evals['val_minority_recall'][-1]:.2f}), accuracy "
                f"{fixed.evals['val_acc'][-1]:.2f}"
            )
        lines.append(f"seed {seed}: {text}")
    return lines
