"""H1 in the learner's own loop: what the replay saw, and which mechanism it points to.

`facts` reads a `Replay` of the learner's ``train()``; `h1_rules` turns the facts of one
seed, with the plain loops of `loops` beside them, into a finding. Each rule names a
mechanism only from what it measured; the caller asks both seeds to agree.
"""

from __future__ import annotations

import math

from ...finding import OwnFinding
from ..margins import above, below
from .unsettled import unsettled

STALE = 0.5  # at least this share of steps start from the gradients of an earlier step
COLLAPSE = 1e-3  # an LR below this fraction of its start, before half of the run: collapsed


def param_names(models) -> dict[int, tuple[str, int]]:
    """id(parameter) -> (dotted name, id of the module that owns it)."""
    out = {}
    for model in models:
        for mod_name, mod in model.named_modules():
            for p_name, p in mod.named_parameters(recurse=False):
                out.setdefault(id(p), (f"{mod_name}.{p_name}" if mod_name else p_name, id(mod)))
    return out


def _owners(names: list[str]) -> str:
    owners = sorted({n.rsplit(".", 1)[0] if "." in n else n for n in names})
    return ", ".join(owners[:6]) + (f" and {len(owners) - 6} more" if len(owners) > 6 else "")


def facts(rp, run) -> dict:
    model_params = rp.watched()
    names = param_names(rp.models.values())
    in_model = {id(p) for p in model_params}
    opt_params = {
        id(p): p for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]
    }
    trainable = [p for p in model_params if p.requires_grad]
    ran = lambda p: names.get(id(p), ("", None))[1] in rp.called  # noqa: E731
    steps, backs = rp.steps, rp.backwards
    f = {"steps": len(steps), "backwards": len(backs), "forwards": len(rp.forwards)}
    f["leaf_share"] = sum(b["leaf"] for b in backs) / len(backs) if backs else 0.0
    f["graph_forward"] = any(fw["graph"] for fw in rp.forwards if fw["grad_enabled"])
    f["no_grad_forward"] = bool(rp.forwards) and not any(fw["grad_enabled"] for fw in rp.forwards)
    f["fp16"] = any(
        fw["autocast"] or fw["dtype"] == "torch.float16" or "torch.float16" in fw["param_dtypes"]
        for fw in rp.forwards
    )
    f["half_params"] = any("torch.float16" in fw["param_dtypes"] for fw in rp.forwards)
    f["missing"] = (
        [
            names[id(p)][0]
            for p in trainable
            if id(p) in rp.ever_grad and id(p) not in opt_params and id(p) in names
        ]
        if opt_params
        else []
    )
    f["orphans"] = [tuple(p.shape) for i, p in opt_params.items() if i not in in_model]
    f["none_owned"] = (
        bool(opt_params) and bool(trainable) and not any(id(p) in opt_params for p in trainable)
    )
    f["blocked"] = [
        names[id(p)][0]
        for p in trainable
        if id(p) not in rp.ever_grad and ran(p) and (id(p) in opt_params or not opt_params)
    ]
    f["frozen"] = [
        names[id(p)][0]
        for p in model_params
        if not p.requires_grad and ran(p) and p.is_floating_point()
    ]
    lrs = [max(st["lr"]) if st["lr"] else 0.0 for st in steps]
    f["lr_first"], f["lr_last"] = (lrs[0], lrs[-1]) if lrs else (None, None)
    f["lr_all_zero"] = bool(lrs) and all(lr == 0 for lr in lrs)
    moved = [st.get("update_norm") for st in steps]
    f["update_max"] = max((u for u in moved if u is not None and math.isfinite(u)), default=None)
    low = [i for i, lr in enumerate(lrs) if lrs[0] > 0 and lr < COLLAPSE * lrs[0]]
    f["lr_collapse_step"] = (
        low[0] if low and low[0] < 0.5 * len(lrs) and len(low) == len(lrs) - low[0] else None
    )
    last_bw = {}
    for b in backs:
        last_bw[b["step"]] = b.get("grad_norm_after")
    produced = [i for i in range(len(steps)) if (last_bw.get(i) or 0) > 0]
    empty = [
        i
        for i in produced
        if steps[i]["grads_none"] + steps[i]["grads_zero"] == steps[i]["n_params"]
    ]
    f["cleared_share"] = len(empty) / len(produced) if produced else 0.0
    f["cleared_to"] = (
        "None"
        if empty and all(steps[i]["grads_none"] == steps[i]["n_params"] for i in empty)
        else "zero"
    )
    f["clip_zero"] = [c for c in rp.clips if c[1] <= 1e-12]
    checked = [b["stale_norm"] or 0.0 for b in backs if b["stale_checked"]]
    f["stale_share"] = sum(1 for s in checked if s > 0) / len(checked) if len(checked) >= 3 else 0.0
    values = [b["value"] for b in backs]
    bad = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
    raw = list(run.table["loss_raw"])
    bad_raw = next((i for i, v in enumerate(raw) if v is None or not math.isfinite(v)), None)
    f["nonfinite_at"] = bad if bad is not None else bad_raw
    k = f["nonfinite_at"] if f["nonfinite_at"] is not None else len(values)
    grads = [
        st["grad_norm"]
        for st in steps[:k]
        if st["grad_norm"] is not None and math.isfinite(st["grad_norm"])
    ]
    start_g = sorted(grads[:3])[len(grads[:3]) // 2] if grads else None
    f["grad_growth"] = max(grads) / start_g if grads and start_g else None
    finite = [v for v in values[:k] if math.isfinite(v)] or [
        v for v in raw if v is not None and math.isfinite(v)
    ]
    f["loss_growth"] = max(finite) / finite[0] if finite and finite[0] > 0 else None
    f["loss_peak_step"] = finite.index(max(finite)) if finite else None
    tail = raw[-max(1, len(raw) // 5) :]
    f["own_level"] = (
        sum(tail) / len(tail) if all(v is not None and math.isfinite(v) for v in tail) else math.inf
    )
    return f


def _loop_finding(key, mechanism, where_loop=True) -> OwnFinding:
    arm = (
        ("own", ("training loop", "your train()", "a plain loop with your optimizer"))
        if where_loop
        else (None, None)
    )
    return OwnFinding("H1", key, mechanism, arm=arm[0], variable=arm[1])


def h1_rules(ev) -> OwnFinding | None:
    """The first H1 mechanism the facts of one seed support, or None."""
    f, own = ev.facts, ev.arm("own")
    plain_flows = any(g for g in own.grad_norms if g)
    if f["steps"] == 0 and f["backwards"] > 0:
        return _loop_finding(
            "no_step",
            f"optimizer.step() is never called: {f['backwards']} backward "
            "passes and not one optimizer step, so the weights never change",
        )
    if f["leaf_share"] >= 0.9:
        in_loop = plain_flows
        if f["no_grad_forward"] or not f["graph_forward"]:
            return _loop_finding(
                "forward_no_graph",
                "the forward pass runs without a graph (under "
                "torch.no_grad() or inference_mode): the model's output has no grad_fn, "
                "so backward() reaches no parameter",
                in_loop,
            )
        return _loop_finding(
            "loss_rebuilt",
            "the loss is cut off from the model's graph: the model's "
            "output had a graph, but the tensor passed to backward() is a new leaf (rebuilt "
            "from a float with .item()/torch.tensor(...), or computed from a detach()ed "
            "output and then given requires_grad), so no parameter gets a gradient",
            in_loop,
        )
    if f["missing"]:
        owners = _owners(f["missing"])
        many = ", " in owners
        if f["none_owned"]:
            return OwnFinding(
                "H1",
                "other_params",
                "the model's parameters are not in the "
                f"optimizer at all: it holds {len(f['orphans'])} other tensors (it was built "
                "on a copy of the model, or on another model), so every gradient arrives "
                "and no step ever changes the model being trained",
                arm="rebuilt",
                variable=("optimizer's parameters", "other tensors", "the model's own parameters"),
            )
        if f["orphans"]:
            return OwnFinding(
                "H1",
                "replaced",
                f"a module was replaced after the optimizer was built: "
                f"{owners} {'get' if many else 'gets'} gradients but {'are' if many else 'is'} "
                "not in the optimizer, which "
                f"still holds {len(f['orphans'])} tensors the model no longer uses",
                arm="rebuilt",
                variable=(
                    "optimizer's parameters",
                    ("as built before the change"),
                    "the model's current parameters",
                ),
            )
        return OwnFinding(
            "H1",
            "not_in_optimizer",
            f"{owners} {'are' if many else 'is'} not in "
            "the optimizer: gradients arrive at every step but no update is ever applied",
            arm="rebuilt",
            variable=("optimizer's parameters", "those passed to it", "every trainable parameter"),
        )
    if f["lr_all_zero"]:
        where = not any(own.update_norms)
        return OwnFinding(
            "H1",
            "lr_zero",
            "the learning rate is 0 at every step: gradients flow, every update is exactly 0",
            arm="ref" if where else "own",
            variable=("optimizer", "yours (lr 0)", "Adam(lr=1e-3)")
            if where
            else ("training loop", "your train()", "a plain loop with your optimizer"),
        )
    if f["cleared_share"] >= 0.9:
        if f["clip_zero"]:
            return _loop_finding(
                "clip_zero",
                f"gradients are clipped to 0 ({f['clip_zero'][0][0]}="
                f"{f['clip_zero'][0][1]:g}): every step sees zero gradients",
            )
        how = "cleared (set to None)" if f["cleared_to"] == "None" else "zeroed"
        return _loop_finding(
            "grads_cleared",
            f"gradients are {how} between backward and the step "
            "(zero_grad() in the wrong place): every step sees no gradient",
        )
    if f["stale_share"] >= STALE:
        every = f["stale_share"] >= 0.9
        return _loop_finding(
            "grad_accumulates",
            "gradients accumulate across steps: zero_grad() is not "
            "called between optimizer steps"
            + (
                ""
                if every
                else f" (at {f['stale_share']:.0%} of "
                "them: zero_grad() runs less often than step())"
            )
            + ", so every backward() adds "
            "to the gradients of earlier batches",
        )
    return _numeric_rules(ev, f, own)


ROSE = 1.2  # the run's last fifth above this multiple of its first loss: it diverged
TINY = 1e-6  # an update below this fraction of the weights' norm, at every step, moves nothing


def _tiny_steps(ev, f, own) -> OwnFinding | None:
    """Updates that exist but are far too small to matter: the LR is off by orders of magnitude."""
    lr, model = f["lr_first"], own.model
    if (
        not lr
        or model is None
        or not own.update_norms
        or below("tiny.own_learns", own.level(), 0.9 * own.losses[0], seed=ev.seed)
    ):
        return None
    weights = math.sqrt(sum(float(p.detach().float().pow(2).sum()) for p in model.parameters()))
    moved = [u for u in own.update_norms if u is not None and math.isfinite(u)]
    if (
        not weights
        or not math.isfinite(weights)  # a plain loop that blew up measures no update size
        or not moved
        or not below("tiny.relative_update", max(moved) / weights, TINY, seed=ev.seed, log=True)
    ):
        return None
    # the plain loop ran your optimizer at the LR it was built with; a loop that sets the LR
    # itself (a hand-written warm-up from lr=0) moved its weights at other LRs: what the plain
    # loop's tiny steps say is then not about your run
    yours = f.get("update_max")
    if yours is not None and not below(
        "tiny.your_relative_update", yours / weights, TINY, seed=ev.seed, log=True
    ):
        return None
    ref = ev.arm("ref")
    if not below("tiny.ref_learns", ref.level(), 0.8 * own.level(), seed=ev.seed):
        return None
    return OwnFinding(
        "H1",
        "lr_tiny",
        f"the learning rate is far too small: at LR {lr:g} every step "
        f"moves the weights by at most {max(moved) / weights:.0e} of their norm, so the "
        "loss barely changes; the same loop with a reference optimizer, Adam(lr=1e-3), "
        f"reaches {ref.level():.3g}",
        arm="ref",
        variable=("optimizer", f"yours (lr {lr:g})", "Adam(lr=1e-3)"),
    )


def _numeric_rules(ev, f, own) -> OwnFinding | None:
    if f["nonfinite_at"] is not None and f["fp16"] and (f["grad_growth"] or 1) < 100:
        # the plain loop tests the precision only where it leaves float16 behind (an autocast in
        # your loop); on a model built in half it overflows or not as the CPU rounds
        in_loop = math.isfinite(own.mean) and not f["half_params"]
        return _loop_finding(
            "fp16_overflow",
            f"fp16 overflow: the first non-finite loss (step "
            f"{f['nonfinite_at']}) comes under float16 while the gradient norm before it "
            f"stayed within x{f['grad_growth'] or 1:.1f} of its start, a range problem, "
            "not divergence",
            in_loop,
        )
    loss_grew = not below("diverge.loss_growth", f["loss_growth"] or 1, 10, seed=ev.seed, log=True)
    grew = (
        not below("diverge.grad_growth", f["grad_growth"] or 1, 100, seed=ev.seed, log=True)
        or loss_grew
    )
    first = ev.run.table["loss_raw"][0]
    rose = (  # the run ends above where it started: a divergence that never reaches x10
        first is not None
        and math.isfinite(first)
        and first > 0
        and above("diverge.ends_above_start", f["own_level"], ROSE * first, seed=ev.seed)
    )
    blew = grew and (f["nonfinite_at"] is not None or loss_grew)
    if blew or rose:  # a run that learned, then climbed back: the edge of stability, read
        edge = unsettled(ev, f, own)  # first on evidence every CPU path shares (whether it
        if edge is not None:  # also blows up depends on the CPU's rounding)
            return edge
        for k in (10, 100):
            low = ev.arm(f"lr/{k}")
            if below(
                f"diverge.lr/{k}_descends",
                low.level(),
                0.8 * min(own.level(), own.losses[0]),
                seed=ev.seed,
            ) and below(f"diverge.lr/{k}_stays", max(low.losses), 10 * low.losses[0], seed=ev.seed):
                return OwnFinding(
                    "H1",
                    "divergence",
                    (
                        f"the loss diverges without blowing up: your run ends at "
                        f"{f['own_level']:.3g}, above its first loss {first:.3g}; "
                        if rose and not grew
                        else "the loss diverged: "
                    )
                    + f"it rose x{f['loss_growth'] or math.inf:.3g} "
                    f"(gradient norm x{f['grad_growth'] or math.inf:.3g}) at LR {f['lr_first']:g}; "
                    f"the LR is too high, and at LR/{k} the same plain loop descends",
                    arm=f"lr/{k}",
                    variable=("lr", f"{f['lr_first']:g}", f"{f['lr_first'] / k:g}"),
                )
    if f["blocked"]:
        return OwnFinding(
            "H1",
            "flow_blocked",
            f"gradient flow is blocked: {_owners(f['blocked'])} run in "
            "the forward but never receive a gradient (a detach() or no_grad inside the "
            "forward cuts them off)",
        )
    tiny = _tiny_steps(ev, f, own)
    if tiny is not None:
        return tiny
    from .lowlr import low_lr_rule, runaway_rule

    low = low_lr_rule(ev, f) or runaway_rule(ev, f)
    if low is not None:
        return low
    if f["lr_collapse_step"] is not None and above(
        "collapse.own_behind_plain",
        f["own_level"],
        own.level() + 0.02 * abs(own.losses[0]),
        seed=ev.seed,
    ):
        from .audit import describe_schedule

        named = describe_schedule(ev.replay, ev.n_batches)
        guess = "" if named else " (a per-epoch scheduler stepped every batch?)"
        return _loop_finding(
            "lr_collapse",
            f"the LR schedule collapses: the LR falls from "
            f"{f['lr_first']:g} to {f['lr_last']:.1e}, below {COLLAPSE:g}x its start by "
            f"step {f['lr_collapse_step']} of {f['steps']}{guess}, so learning stops early"
            + (f"; the LR is {named}" if named else ""),
        )
    return None if blew or rose else unsettled(ev, f, own)  # read once: None the first time
