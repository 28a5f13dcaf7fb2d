"""Plain loops labkit owns, run on the learner's model, data and loss: the comparison arms.

Every arm starts from a fresh ``make_model(seed)`` followed by ``make_optimizer(model)``
(which may change the model, as real setup code does), then runs the same number of
steps as the learner's own run over ``batches(seed)``, epoch after epoch, with the
textbook step: ``zero_grad(set_to_none=True)``, ``loss_fn``, ``backward``, ``step``.
One variable differs between arms:

- ``own``: the learner's optimizer, exactly as ``make_optimizer`` built it;
- ``ref``: a reference optimizer, Adam(lr=1e-3), over every trainable parameter;
- ``rebuilt``: the learner's optimizer class and settings, over every trainable parameter;
- ``lr/10`` (or ``lr/100``): the learner's optimizer with every learning rate divided by 10;
- ``lr=<value>``: the learner's optimizer at that constant LR (its largest group's; the other
  groups keep their ratio to it), no schedule;
- ``unfrozen``: the reference optimizer after ``requires_grad_(True)`` on every parameter;
- ``default:<setting>``: the learner's optimizer with that one setting (weight_decay,
  momentum, ...) reset to its constructor default in every group (see `settings`);
- ``init``: the learner's optimizer on the learner's model re-initialised as PyTorch's layers
  draw themselves (``reset_parameters()`` on every module that has one), the one change;
- ``nodrop``: the learner's optimizer on the learner's model with every dropout layer at p=0.

Labels can be swapped for a permutation (the label-shuffle control) and a held-out set
can be scored every few steps.
"""

from __future__ import annotations

import inspect

import math
import time
from dataclasses import dataclass, field

import torch
from torch.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

from ....core.run import Run
from . import setup as proto
from .replay import total_norm

REFERENCE_LR = 1e-3
ARMS = ("own", "ref", "rebuilt", "lr/10", "lr/100", "unfrozen", "init", "nodrop")


@dataclass
class LoopResult:
    arm: str
    losses: list
    grad_norms: list
    update_norms: list
    evals: list = field(default_factory=list)  # (step, held-out loss)
    model: object = None
    run: Run | None = None

    def evals_run(self, seed: int, started_at: float, task: str) -> Run:
        """The held-out losses at the checkpoints, as a `Run` whose loss_raw a forecast reads."""
        return Run.from_log(
            {"step": [s for s, _ in self.evals], "loss_raw": [v for _, v in self.evals]},
            seed=seed,
            started_at=started_at,
            config={"task": task},
        )

    @property
    def mean(self) -> float:
        """Mean training loss over the whole run (inf if any step was non-finite)."""
        return (
            sum(self.losses) / len(self.losses)
            if all(map(math.isfinite, self.losses))
            else math.inf
        )

    def level(self, frac: float = 0.2) -> float:
        """Mean loss over the last `frac` of the run."""
        tail = self.losses[-max(1, int(len(self.losses) * frac)) :]
        return sum(tail) / len(tail) if all(map(math.isfinite, tail)) else math.inf


def known_arm(arm: str) -> bool:
    """One of ARMS, ``default:<setting>`` or ``lr=<value>``."""
    return arm in ARMS or arm.startswith(("default:", "lr="))


def _optimizer(arm: str, setup, model):
    learner = proto.make_optimizer(setup, model)
    if arm in ("own", "init", "nodrop"):
        return learner
    if arm.startswith("default:"):  # one setting back to its constructor default
        from ..step4_h1.settings import reset_setting

        return reset_setting(learner, arm.split(":", 1)[1])
    if arm.startswith("lr/"):
        for g in learner.param_groups:
            g["lr"] = g["lr"] / float(arm[3:])
        return learner
    if arm.startswith("lr="):  # a constant LR: the largest group's, the others in proportion
        top = max(float(g["lr"]) for g in learner.param_groups)
        for g in learner.param_groups:
            g["lr"] = float(arm[3:]) * (float(g["lr"]) / top if top > 0 else 1.0)
        return learner
    if arm == "unfrozen":
        for p in model.parameters():
            if p.is_floating_point():
                p.requires_grad_(True)
    params = [p for p in model.parameters() if p.requires_grad]
    if arm == "rebuilt":  # the settings its constructor takes (AdamW's group also holds
        # `decoupled_weight_decay`, which AdamW() itself refuses)
        takes = inspect.signature(type(learner)).parameters
        settings = {
            k: v
            for k, v in learner.param_groups[0].items()
            if k != "params"
            and (k in takes or any(p.kind is p.VAR_KEYWORD for p in takes.values()))
        }
        return type(learner)(params, **settings)
    return torch.optim.Adam(params, lr=REFERENCE_LR)


@torch.no_grad()
def default_init(model) -> int:
    """Re-draw every layer of `model` as PyTorch's own init draws it (each module's
    ``reset_parameters()``); the number of modules re-drawn. A tied weight is re-drawn by each
    module that holds it, the last one winning."""
    done = 0
    for module in model.modules():
        reset = getattr(module, "reset_parameters", None)
        if callable(reset) and any(True for _ in module.parameters(recurse=False)):
            reset()
            done += 1
    return done


def _perm(n: int, gen) -> torch.Tensor:
    perm = torch.randperm(n, generator=gen)
    return perm.roll(1) if n > 1 and torch.equal(perm, torch.arange(n)) else perm


def shuffled_labels(batches: list, seed: int) -> list:
    """The same batches with labels permuted across the whole epoch (whole rows, for
    sequences); within each batch when the batches' label shapes differ (dynamic padding)."""
    gen = torch.Generator().manual_seed(10_000 + seed)
    labels = [proto.labels_of(b) for b in batches]
    if len({tuple(y.shape[1:]) for y in labels}) > 1:
        return [proto.with_labels(b, y[_perm(len(y), gen)]) for b, y in zip(batches, labels)]
    permuted = torch.cat(labels)[_perm(sum(len(y) for y in labels), gen)]
    out, start = [], 0
    for b, y in zip(batches, labels):
        out.append(proto.with_labels(b, permuted[start : start + len(y)]))
        start += len(y)
    return out


@torch.no_grad()
def held_out_loss(setup, model, batches: list) -> float:
    was = model.training
    model.eval()
    try:
        values = [float(proto.loss(setup, model, b, i)) for i, b in enumerate(batches)]
    finally:
        model.train(was)
    return sum(values) / len(values)


def plain_loop(
    setup,
    seed: int,
    steps: int,
    arm: str = "own",
    *,
    batches: list | None = None,
    held_out: list | None = None,
    checkpoints: int = 5,
    clip: tuple[str, float] | None = None,
) -> LoopResult:
    """Train a fresh model for `steps` steps with the textbook loop; see the module docstring.
    `clip`: ("max_norm" or "clip_value", limit), applied between backward() and step()."""
    if not known_arm(arm):
        raise ValueError(
            f"arm={arm!r} is not an arm; choose one of {', '.join(ARMS)}, 'default:<setting>' or 'lr=<value>'."
        )
    started = time.time()
    torch.manual_seed(seed)
    model = proto.make_model(setup, seed)
    if arm == "init":
        default_init(model)
    if arm == "nodrop":
        for m in model.modules():
            if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                m.p = 0.0
    opt = _optimizer(arm, setup, model)
    data = batches if batches is not None else proto.batches(setup, seed)
    params = [p for g in opt.param_groups for p in g["params"]]
    every = max(1, steps // checkpoints)
    res = LoopResult(arm, [], [], [], model=model)
    model.train()
    for step in range(steps):
        if held_out is not None and step % every == 0:
            res.evals.append((step, held_out_loss(setup, model, held_out)))
        batch = data[step % len(data)]
        opt.zero_grad(set_to_none=True)
        loss = proto.loss(setup, model, batch, step % len(data))
        res.losses.append(loss.item())
        if not math.isfinite(res.losses[-1]):  # nothing after a NaN is informative
            rest = steps - step
            res.losses += [math.nan] * (rest - 1)
            res.grad_norms += [None] * rest
            res.update_norms += [0.0] * rest
            break
        if loss.grad_fn is None:
            res.grad_norms.append(None)
            res.update_norms.append(0.0)
            continue
        loss.backward()
        res.grad_norms.append(total_norm([p.grad for p in params]))
        if clip is not None:
            kind, limit = clip
            clipper = clip_grad_value_ if kind == "clip_value" else clip_grad_norm_
            clipper(params, limit)
        before = [p.detach().clone() for p in params]
        opt.step()
        res.update_norms.append(total_norm([p.detach() - b for p, b in zip(params, before)]) or 0.0)
    if held_out is not None:
        res.evals.append((steps, held_out_loss(setup, model, held_out)))
    res.run = Run.from_log(
        {
            "step": list(range(steps)),
            "loss_raw": res.losses,
            "grad_norm": res.grad_norms,
            "update_norm": res.update_norms,
        },
        seed=seed,
        started_at=started,
        config={"task": f"plain loop ({arm})"},
    )
    return res


class Changed:
    """The learner's setup with the methods given by name replaced: a one-change run's setup
    (the rest is read from the learner's)."""

    def __init__(self, setup, **methods):
        self._setup = setup
        self.__dict__.update(methods)

    def __getattr__(self, name):
        return getattr(self._setup, name)


def changed_data(ev, key: str, change):
    """A plain loop (the learner's optimizer) on the learner's batches as `change(batches)`
    makes them, once per seed under `key`: the one-change run of a data reading."""
    return ev.once(
        key, lambda: plain_loop(ev.setup, ev.seed, ev.steps, "own", batches=change(ev.batches))
    )


def learner_model(ev):
    """The model the learner's run trained (the replay's first), or one `make_model` builds
    where the replay is not here (the ranks of a DDP run keep theirs)."""
    try:
        return next(iter(ev.replay.models.values()))
    except Exception:  # no model seen, or `single.NotOnRanks`
        return proto.make_model(ev.setup, ev.seed)
