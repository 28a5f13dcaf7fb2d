"""What one rank of a distributed setup does, seen from inside its process: `observe`.

The learner's ``train(seed, epochs)`` runs unchanged inside an initialised process group;
for that call only, labkit patches a few classes of this rank's process (they are restored
after) and watches:

- ``DistributedDataParallel.__init__``: the wrapper the loop builds, and its options;
- ``DistributedDataParallel.forward``: whether the training forwards go through the wrapper,
  and with DDP's gradient sync on (outside ``no_sync()``) or off;
- ``torch.optim.Optimizer.__init__``: the optimizer, so that `labkit.watch` (with its
  cross-rank check every ``every`` steps) hooks the learner's own model and optimizer at the
  first training forward;
- ``torch.distributed.all_reduce``: a gradient all-reduced by hand;
- ``DistributedSampler.__iter__``: at each epoch's start, whether it shuffles and its epoch;
- ``Tensor.backward``: the loss each rank backpropagates (its local raw loss);
- every training forward of the model: a key per input row (exact integer arithmetic on the
  row's bits), so the parent can compare the ranks' shares and the order of each epoch;
- the one-process `Replay` (every step's LR and gradients, parameters missing from the
  optimizer, a loss cut off from the graph, ...), read here into its `facts`, which travel to
  the parent with the learner's own log (the one-process checks, `step6_decide.single`).

An ``arm`` makes one change to the learner's loop, the interventions of `ARMS`.
"""

from __future__ import annotations

import contextlib

import torch

ARMS = {
    "wrapper": "every forward through the DDP wrapper (ddp(x), not ddp.module(x))",
    "sync": "no_sync() left out: DDP's gradient sync on every backward",
    "set_epoch": "sampler.set_epoch(epoch) called at every epoch",
    "no_hand_allreduce": "the gradients' all-reduce by hand removed (DDP's average only)",
    "broadcast_buffers": "DDP(broadcast_buffers=True), DDP's default",
}
LOGGED = ("step", "loss_raw", "loss_reported")  # the learner's own log, for the logger check
KEY_SEED = 1234  # the fixed weights of the row keys


def settings_of(group: dict) -> dict:
    """A parameter group's numeric settings (lr, momentum, betas, weight_decay, eps, ...), as
    plain floats: what the ranks' optimizers should share."""
    out = {}
    for k, v in group.items():
        if k == "params" or isinstance(v, bool):
            continue
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            v = float(v)
        if isinstance(v, (int, float)):
            out[k] = float(v)
        elif isinstance(v, tuple) and all(isinstance(x, (int, float)) for x in v):
            out[k] = tuple(float(x) for x in v)
    return out


def row_keys(x: torch.Tensor) -> list[int]:
    """One integer per row of `x`, from its bits: equal rows give equal keys on any machine."""
    rows = x.detach().reshape(len(x), -1).contiguous()
    if rows.dtype.is_floating_point:
        rows = rows.float().view(torch.int32)
    rows = rows.long()
    g = torch.Generator().manual_seed(KEY_SEED)
    w = torch.randint(1, 2**31 - 1, (rows.shape[1],), generator=g, dtype=torch.long)
    return (rows * w).sum(1).tolist()  # int64 arithmetic wraps, the same in any order


class _Patch:
    """Set attributes for the duration of a `with`, and put them back after."""

    def __init__(self):
        self.saved: list = []
        self.handles: list = []  # hook handles, removed in undo

    def set(self, owner, name, value) -> None:
        self.saved.append((owner, name, owner.__dict__[name] if name in owner.__dict__ else None))
        setattr(owner, name, value)

    def undo(self) -> None:
        for handle in self.handles:
            handle.remove()
        for owner, name, old in reversed(self.saved):
            if old is None:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


class Observer:
    """The hooks of `observe` (see the module docstring) and what they saw."""

    def __init__(self, arm: str | None, every: int, progress=None):
        self.arm, self.every, self.progress = arm, every, progress
        self.ddp, self.ddp_kwargs, self.optimizers, self.watch = None, {}, [], None
        self.model = None  # without DDP: the model the loop trains
        self.lr = None  # the watched optimizer's learning rates, per parameter group
        self.settings = None  # its settings per parameter group (lr, momentum, ...): floats
        self.samplers: list[dict] = []  # each DistributedSampler iteration: shuffle, epoch
        self._epochs: dict[int, int] = {}  # the arm "set_epoch": epochs begun per sampler
        self.forwards = {"ddp": 0, "ddp_synced": 0, "inner": 0}
        self.hand_reduces, self.raw, self.keys, self.rows_per_forward = 0, [], [], []
        self._inside_ddp = False

    # ---- the patches -------------------------------------------------------------
    def install(self, patch: _Patch) -> None:
        import torch.distributed as dist
        import torch.optim.optimizer as optim_hooks
        from torch.nn.modules import module as module_hooks
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data.distributed import DistributedSampler

        obs, init, fwd, opt_init = self, DDP.__init__, DDP.forward, torch.optim.Optimizer.__init__
        reduce, backward = dist.all_reduce, torch.Tensor.backward

        def ddp_init(ddp, module, *args, **kwargs):
            if obs.arm == "broadcast_buffers":
                kwargs["broadcast_buffers"] = True
            init(ddp, module, *args, **kwargs)
            obs.ddp, obs.ddp_kwargs = ddp, {"broadcast_buffers": ddp.broadcast_buffers}
            if obs.arm == "wrapper":
                obs._route_through(ddp)

        def ddp_forward(ddp, *args, **kwargs):
            if torch.is_grad_enabled() and ddp.training:
                obs.forwards["ddp"] += 1
                obs.forwards["ddp_synced"] += bool(ddp.require_backward_grad_sync)
            obs._inside_ddp = True
            try:
                return fwd(ddp, *args, **kwargs)
            finally:
                obs._inside_ddp = False

        def optimizer_init(opt, *args, **kwargs):
            opt_init(opt, *args, **kwargs)
            obs.optimizers.append(opt)

        def all_reduce(tensor, *args, **kwargs):
            if obs._is_grad(tensor):
                obs.hand_reduces += 1
                if obs.arm == "no_hand_allreduce":
                    return None
            return reduce(tensor, *args, **kwargs)

        def tensor_backward(tensor, *args, **kwargs):
            if tensor.numel() == 1:
                obs.raw.append(float(tensor.detach()))
            return backward(tensor, *args, **kwargs)

        patch.set(DDP, "__init__", ddp_init)
        patch.set(DDP, "forward", ddp_forward)
        patch.set(torch.optim.Optimizer, "__init__", optimizer_init)
        patch.set(dist, "all_reduce", all_reduce)
        patch.set(torch.Tensor, "backward", tensor_backward)
        if self.arm == "sync":
            patch.set(DDP, "no_sync", lambda ddp: contextlib.nullcontext())
        sampler_iter = DistributedSampler.__iter__

        def iterate(sampler):
            if obs.arm == "set_epoch":  # what set_epoch(e) does, at the e-th epoch
                sampler.epoch = obs._epochs.setdefault(id(sampler), 0)
                obs._epochs[id(sampler)] += 1
            obs.samplers.append({"shuffle": bool(sampler.shuffle), "epoch": int(sampler.epoch)})
            return sampler_iter(sampler)

        patch.set(DistributedSampler, "__iter__", iterate)
        patch.handles.append(module_hooks.register_module_forward_pre_hook(self._forward))
        if self.progress is not None:
            stepped = lambda opt, args, kwargs: self.progress(opt)  # noqa: E731
            patch.handles.append(optim_hooks.register_optimizer_step_post_hook(stepped))

    def _route_through(self, ddp) -> None:
        """The arm "wrapper": a call of ddp.module(x) from the loop goes through ddp(x)."""
        inner, obs = ddp.module, self
        own = inner.forward

        def forward(*args, **kwargs):
            if obs._inside_ddp:
                return own(*args, **kwargs)
            return ddp(*args, **kwargs)

        inner.forward = forward

    def _is_grad(self, tensor) -> bool:
        model = self.ddp.module if self.ddp is not None else self.model
        if model is None or not isinstance(tensor, torch.Tensor):
            return False
        ptr = tensor.data_ptr()
        return any(p.grad is not None and p.grad.data_ptr() == ptr for p in model.parameters())

    # ---- the forwards: the watch, and the rows each rank trains on ------------------
    def _forward(self, module, args) -> None:
        if not (torch.is_grad_enabled() and module.training and args):
            return
        if self.model is None and self.ddp is None and any(True for _ in module.parameters()):
            self.model = module  # no DDP: the outermost module with parameters is the model
        inner = self.ddp.module if self.ddp is not None else self.model
        if self.watch is None and inner is not None and module in (self.ddp, inner):
            self._start_watch()
        if module is inner and isinstance(args[0], torch.Tensor) and args[0].dim() > 0:
            self.forwards["inner"] += 1
            self.keys.extend(row_keys(args[0]))
            self.rows_per_forward.append(len(args[0]))

    def _start_watch(self) -> None:
        from ....core.watch import watch

        model = self.ddp if self.ddp is not None else self.model
        owned = {id(p) for p in model.parameters()}
        for opt in reversed(self.optimizers):
            if any(id(p) in owned for g in opt.param_groups for p in g["params"]):
                self.watch = watch(model, opt, check_every=self.every)
                self.lr = [g["lr"] for g in opt.param_groups]
                self.settings = [settings_of(g) for g in opt.param_groups]
                return


def observe(
    setup,
    seed: int,
    epochs: int,
    arm: str | None = None,
    every: int = 10,
    progress=None,
    read=None,
) -> dict:
    """Run the learner's ``train(seed, epochs)`` on this rank under `arm`; what it did.
    `progress(optimizer)` is called after every optimizer step (the launch's status);
    `read(replay, run, setup, seed, inner)` (passed in by the decision, a later step; `inner`:
    the model inside DDP, or None) turns the replay into plain data for the one-process
    checks."""
    from .replay import Replay
    from .setup import train

    obs, patch, replay = Observer(arm, every, progress), _Patch(), Replay(setup)
    obs.install(patch)
    try:
        with replay:  # inside the patches: its hooks come off first
            run = train(setup, seed, epochs)
    finally:
        patch.undo()
    inner = obs.ddp.module if obs.ddp is not None else None  # the learner's own model
    w = obs.watch
    if w is not None:
        w.close()  # the last check, at the same point on every rank
    cols = w.columns() if w is not None else {"grad_norm": [None], "update_norm": [None]}
    described = w.describe() if w is not None else {}
    checks = described["ranks"]["checks"] if "ranks" in described else []
    reported = run.table.get("loss_reported") or [None] * len(run)
    return {
        "seed": seed,
        "arm": arm,
        "ddp": obs.ddp is not None,
        "ddp_kwargs": obs.ddp_kwargs,
        "forwards": obs.forwards,
        "hand_reduces": obs.hand_reduces,
        "raw": obs.raw,
        "reported": [None if v is None else float(v) for v in reported],
        "keys": obs.keys,
        "samplers": obs.samplers,
        "rows_per_forward": obs.rows_per_forward,
        "epochs": epochs,
        "findings": list(w.findings) if w is not None else [],
        "checks": checks,
        "grad_norm_1": cols["grad_norm"][0] if cols["grad_norm"] else None,
        "update_norm_1": cols["update_norm"][0] if cols["update_norm"] else None,
        "lr": obs.lr,
        "settings": obs.settings,
        "optimizer_steps": w.steps if w is not None else None,
        "steps": len(run),
        "log": {k: run.table[k] for k in LOGGED if k in run.table},
        "facts": read(replay, run, setup, seed, inner) if read is not None else None,
    }
