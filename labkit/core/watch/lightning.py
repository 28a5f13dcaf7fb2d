"""`labkit.watch` inside a PyTorch Lightning run: a callback (``pip install 'labkit[lightning]'``).

    from labkit.core.watch.lightning import WatchCallback
    cb = WatchCallback(writer="logger")        # norms into the trainer's TensorBoardLogger
    trainer = lightning.Trainer(max_steps=500, callbacks=[cb])
    trainer.fit(module, data)
    run = cb.run()                             # a labkit.Run: probes, triage, plots

The callback hooks the optimizer Lightning built (``trainer.optimizers[0]``) when training
starts and keeps the loss each training step returned (detached, on its device: no host
sync per step). Gradient accumulation works as in `Watch.run`: k losses per optimizer step.
`writer`: None, a ``SummaryWriter``, or ``"logger"`` for the trainer's own TensorBoard
logger. W&B takes the same columns: ``wandb.log({k: v[-1] for k, v in
cb.watch.columns().items() if v and v[-1] is not None})``.
"""

from __future__ import annotations

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    try:
        from pytorch_lightning.callbacks import Callback
    except ImportError:
        raise ImportError(
            "labkit's Lightning callback needs Lightning: pip install 'labkit[lightning]'."
        ) from None

from . import watch as _watch


class WatchCallback(Callback):
    """Per-step gradient and update norms of a LightningModule, as `labkit.watch` records them."""

    def __init__(self, *, writer=None, budget: int | None = None):
        super().__init__()
        self.writer, self.budget = writer, budget
        self.watch = None
        self.losses: list = []  # one detached loss per training step (micro-batch)

    def on_train_start(self, trainer, pl_module) -> None:
        if len(trainer.optimizers) != 1:
            raise ValueError(
                f"WatchCallback watches one optimizer; this module configured "
                f"{len(trainer.optimizers)}."
            )
        writer = self.writer
        if writer == "logger":
            writer = getattr(trainer.logger, "experiment", None)
            if not callable(getattr(writer, "add_scalar", None)):
                raise ValueError(
                    "writer='logger' needs the trainer's logger to be a "
                    "TensorBoardLogger; pass a SummaryWriter instead, or None."
                )
        self.watch = _watch(pl_module, trainer.optimizers[0], budget=self.budget, writer=writer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None:
            self.losses.append(loss.detach())

    def on_train_end(self, trainer, pl_module) -> None:
        if self.watch is not None:
            self.watch.close()

    def run(self, **meta):
        """The `labkit.Run` of the steps trained so far (`Watch.run` takes `meta`)."""
        if self.watch is None:
            raise ValueError("WatchCallback.run() is called after trainer.fit(...) has trained.")
        return self.watch.run(loss_raw=[float(v) for v in self.losses], **meta)
