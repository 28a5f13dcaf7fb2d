"""The reference training loop: `Trainer` steps through the seams and records every step.

``train(config)`` returns a `Run` whose per-step table records, for every step,
raw and reported loss, learning rate, gradient and update norms (total and per
layer group), token counts for LM runs and the AMP scale for fp16 runs.
`Trainer` is the same loop one step at a time, for probes that need the model
as it was at step k.
"""

from __future__ import annotations

import dataclasses
import time

import torch
import torch.nn as nn

from .learner import pending
from .hashing import hash_json, hash_module
from .config import Config
from .data import IGNORE
from .run import Run
from .seams import (
    SEAM_NAMES,  # noqa: F401 (re-exported)
    Seams,
    StepContext,
    _autocast,
    batch_indices,
    evaluate,  # noqa: F401 (re-exported)
    make_batch,
    make_data,  # noqa: F401 (re-exported)
    make_model,  # noqa: F401 (re-exported)
    make_optimizer,  # noqa: F401 (re-exported)
    steps_per_epoch,
    total_steps,
)
from .watch import Watch


def config_hash(config: Config, bug: str | None = None) -> str:
    """The identity of a setup: what a forecast is sealed for and a run is matched against."""
    return hash_json({"config": config.as_dict(), "bug": bug})


def own_seams(seams: Seams) -> dict:
    """{seam: qualified name} of each seam that is not labkit's own function (one of a
    notebook's, an exercise's or a learner's): what re-creating the run needs besides its
    config and its bug, whose seams are all labkit's."""
    out = {}
    for name in SEAM_NAMES:
        fn = getattr(seams, name)
        module = getattr(fn, "__module__", None) or ""
        if module != "labkit" and not module.startswith("labkit."):
            out[name] = getattr(fn, "__qualname__", type(fn).__name__)
    return out


def setup_key(trainer) -> str:
    """What a trainer trains, as one line of text: its config, bug, every seam by name, and its
    autocast and scaler. `labkit grade` hears it as each run begins (`grade_handover`) and
    makes it from its own trainer, so a run is matched without trusting a time it carries."""
    seams = {
        n: f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', type(f).__name__)}"
        for n, f in ((n, getattr(trainer.seams, n)) for n in SEAM_NAMES)
    }
    amp = str(getattr(getattr(trainer, "_amp", None), "fast_dtype", None))
    scaler = getattr(trainer.ctx, "scaler", None) is not None
    return hash_json([trainer.config.as_dict(), trainer.bug, seams, amp, scaler])


class Trainer:
    """The reference loop, one step at a time: ``Trainer(config).run()`` is ``train(config)``."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        seams: Seams | None = None,
        bug: str | None = None,
        **settings,
    ):
        """`seams` already carry any injected bug; `bug` is only its name, kept in the Run.
        A bug given by name is `labkit.Trainer` (``labkit.bugs.inject``), which patches the
        seams and then calls this."""
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a labkit Config; got {type(config).__name__}.")
        config = config or Config()
        pending.consult()  # a forecast still open in this kernel: wait for its Seal, or refuse
        self.config = config = config.replace(**settings) if settings else config
        self.seams = seams = seams or Seams()
        self.bug = bug
        self.started_at, self._t0 = time.time(), time.perf_counter()
        torch.manual_seed(config.seed)
        data = seams.data(config)
        model = seams.model(config, data).to(config.device)
        self.init_hash = hash_module(model)
        optimizer, scheduler = seams.optimizer(config, model)
        scaler = (
            torch.amp.GradScaler(config.device.split(":")[0])
            if config.precision == "fp16"
            else None
        )
        self.ctx = StepContext(
            config, data, model, optimizer, scheduler, scaler, steps_per_epoch(config, data)
        )
        # The same recorder as labkit.watch: hooks on optimizer.step (and the scaler's step).
        self.watch = Watch(model, optimizer, scaler=scaler)
        self._clip_params = [p for p in model.parameters() if p.requires_grad]
        self.table: dict[str, list] = {
            k: [] for k in ("step", "epoch", "batch_id", "loss_raw", "loss_reported", "lr")
        }
        self.evals: dict[str, list] = {"step": []}
        self._tokens: list[torch.Tensor] = []  # (2,) per step: valid tokens, longest sequence
        self.n_steps = total_steps(config, data)
        self._amp = _autocast(config)
        self._loop_s = 0.0
        self._eval_s = 0.0  # time spent in periodic evaluation, part of loop_s
        self._lm = data.kind == "lm"
        self._n_train = len(data)
        self.step_index = 0  # the next step to run
        model.train()

    def batch(self, step: int) -> dict:
        """The training batch of `step`, exactly as the loop feeds it."""
        ctx, config = self.ctx, self.config
        epoch, batch_id = divmod(step, ctx.steps_per_epoch)
        return make_batch(
            ctx.data.train, batch_indices(config, len(ctx.data), epoch, batch_id), config, batch_id
        )

    def pipeline(self):
        """(forward(model, batch), loss_fn(output, batch)) built from this setup's own seams,
        in the form `labkit.probes` take, so a probe sees exactly what the loop computes."""
        ctx0, seams = self.ctx, self.seams

        def forward(model, batch):
            return seams.forward(dataclasses.replace(ctx0, model=model, batch=batch))

        def loss_fn(output, batch):
            return seams.loss(dataclasses.replace(ctx0, batch=batch, output=output))

        return forward, loss_fn

    def step(self) -> None:
        """Run and record one optimizer step."""
        ctx, seams, watch, table = self.ctx, self.seams, self.watch, self.table
        step = ctx.step = self.step_index
        ctx.epoch, ctx.batch_id = epoch, batch_id = divmod(step, ctx.steps_per_epoch)
        config = self.config
        ctx.batch = make_batch(
            ctx.data.train, batch_indices(config, self._n_train, epoch, batch_id), config, batch_id
        )
        with self._amp:
            ctx.output = seams.forward(ctx)
            ctx.loss = seams.loss(ctx)
        ctx.loss_value = ctx.loss.item()
        seams.backward(ctx)
        scaler, optimizer = ctx.scaler, ctx.optimizer
        if scaler is not None:
            scaler.unscale_(optimizer)  # inspect and clip true gradients, not scaled ones
        if config.clip_grad_norm is not None:
            watch.measure_grads()  # record the norms clipping is about to rescale
            nn.utils.clip_grad_norm_(self._clip_params, config.clip_grad_norm)
        # Read here, not in the hook: a step seam may step the scheduler without the optimizer.
        table["lr"].append(optimizer.param_groups[0]["lr"])
        seams.step(ctx)  # the watch's hooks record this step's norms
        watch.mark_step()  # a step seam that never called optimizer.step() gets its row too
        table["step"].append(step)
        table["epoch"].append(ctx.epoch)
        table["batch_id"].append(ctx.batch_id)
        table["loss_raw"].append(ctx.loss_value)
        table["loss_reported"].append(seams.log(ctx))
        if self._lm:
            labels, mask = ctx.batch["labels"], ctx.batch["attention_mask"]
            self._tokens.append(torch.stack([(labels[:, 1:] != IGNORE).sum(), mask.sum(1).max()]))
        if (step + 1) % config.eval_every == 0 or step == self.n_steps - 1:
            self.evaluate()
        self.step_index += 1

    def evaluate(self) -> None:
        t0 = time.perf_counter()
        ctx = self.ctx
        self.evals["step"].append(ctx.step)
        for split_name, split in (("train_eval", ctx.data.train), ("val", ctx.data.val)):
            for metric, value in evaluate(ctx.model, split, self.config, ctx.data.kind).items():
                self.evals.setdefault(f"{split_name}_{metric}", []).append(value)
        self._eval_s += time.perf_counter() - t0

    def run(self, steps: int | None = None) -> Run:
        """Run the remaining steps (or `steps` more) and return the `Run` so far."""
        end = self.n_steps if steps is None else min(self.n_steps, self.step_index + steps)
        t_loop = time.perf_counter()
        step = self.step
        for _ in range(self.step_index, end):
            step()
        self._loop_s += time.perf_counter() - t_loop
        return self.result()

    def result(self) -> Run:
        t0 = time.perf_counter()
        table = dict(self.table)
        norms = self.watch.columns()
        for key in [k for k in norms if k == "lr" or k.startswith("lr/")]:
            del norms[key]  # the loop's own lr column, read before the step seam
        amp = {k: norms.pop(k) for k in ("amp_scale", "skipped") if k in norms}
        table.update(norms)
        if self.ctx.data.kind == "lm":
            tokens = torch.stack(self._tokens).tolist() if self._tokens else []
            table["valid_tokens"] = [int(v) for v, _ in tokens]
            table["max_seq_len"] = [int(m) for _, m in tokens]
        table.update(amp)
        config, ctx = self.config, self.ctx
        meta = {
            "config": config.as_dict(),
            "bug": self.bug,
            "seed": config.seed,
            "data_hash": ctx.data.hash,
            "init_hash": self.init_hash,
            "config_hash": config_hash(config, self.bug),
            "seams": own_seams(self.seams),
            "groups": list(self.watch.groups),
            "steps_per_epoch": ctx.steps_per_epoch,
            "labkit_version": _version(),
            "torch_version": torch.__version__,
            "findings": list(self.watch.findings),
            "watch": self.watch.describe(),
        }
        now = time.perf_counter()
        timing = {
            "wall_s": now - self._t0,
            "loop_s": self._loop_s + (now - t0),
            "eval_s": self._eval_s,
            "started_at": self.started_at,
            "created_at": time.time(),
        }
        return Run(
            table={k: list(v) for k, v in table.items()},
            evals={k: list(v) for k, v in self.evals.items()},
            meta=meta,
            timing=timing,
        )


def _version() -> str:
    from .. import __version__

    return __version__
