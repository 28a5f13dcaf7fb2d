"""`labkit.watch(..., writer=SummaryWriter(logdir))`: the per-step norms as TensorBoard scalars.

Any object with ``add_scalar(tag, value, global_step)`` works: ``torch.utils.tensorboard``'s
or ``tensorboardX``'s ``SummaryWriter``. The tags are the column names of `Watch.columns`
(``grad_norm``, ``update_norm``, ``grad_norm/<group>``, ``lr``, ...) and the global step
is the optimizer step counted from 0, as in ``run.table["step"]``: log your loss with
``writer.add_scalar("loss", loss.item(), step)`` on the same count and
`Run.from_tensorboard` reads the whole run back. A gradient norm that is None (no gradient
reached the group) is not written at that step: a gap, never a 0.

The norms stay on the device between writes; every `every` steps (and when the watch is
closed or read with `Watch.run`) the new rows are read back in one transfer and written,
so a writer does not add a host sync per step. W&B takes the same columns:
``wandb.log({k: v[-1] for k, v in watch.columns().items() if v and v[-1] is not None})``.
"""

from __future__ import annotations

import warnings

EVERY = 50  # steps between writes: TensorBoard stays at most this far behind the loop


class ScalarWriter:
    """Writes the rows a `Watch` has not yet written to `writer`."""

    def __init__(self, writer, *, every: int = EVERY, prefix: str = ""):
        if not callable(getattr(writer, "add_scalar", None)):
            raise TypeError(
                f"writer must have add_scalar(tag, value, global_step), like "
                f"torch.utils.tensorboard.SummaryWriter; got {type(writer).__name__}."
            )
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every={every!r}: give a whole number of steps, 1 or more.")
        self.writer, self.every, self.prefix = writer, every, prefix
        self.written = 0  # steps already written

    def step_done(self, watch) -> None:
        if watch.steps - self.written >= self.every:
            self.flush(watch)

    def flush(self, watch) -> None:
        """Write every step not yet written; gaps where a value is None."""
        if watch.steps == self.written:
            return
        for tag, values in watch.columns().items():
            for step in range(self.written, len(values)):
                value = values[step]
                if value is not None:
                    self.writer.add_scalar(self.prefix + tag, float(value), step)
        self.written = watch.steps
        if callable(getattr(self.writer, "flush", None)):
            self.writer.flush()


def guarded(watch, *, flush: bool) -> None:
    """Write through the watch's writer; a writer that fails (a full disk, a wrong
    ``add_scalar`` signature) is detached after its first error, with one warning, so the
    learner's ``optimizer.step()`` never raises because of it and no step is lost."""
    scalar = watch._writer
    if scalar is None:
        return
    try:
        scalar.flush(watch) if flush else scalar.step_done(watch)
    except Exception as exc:  # noqa: BLE001 (the user's writer may raise anything: detached, said)
        watch._writer = None
        warnings.warn(
            f"labkit.watch: the writer {type(scalar.writer).__name__} failed "
            f"({type(exc).__name__}: {exc}) and was detached; every step is still "
            "in the watch (watch.run(), watch.columns()), and nothing more is "
            "written to the writer.",
            RuntimeWarning,
            stacklevel=2,
        )
