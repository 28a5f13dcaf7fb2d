"""Batch shapes the learner's code may have, read from the model's outputs, not assumed
(labels one per position of a token grid, flattened, are accepted by `own_rows`).

- **sequence-first batches**: (35 time steps, 20 streams) instead of (streams, time steps).
  Which axis is time is measured on the model: a token changed at the first index of the
  time axis changes the outputs at later indices of that axis (the model carries context
  along it), while a change in one stream never reaches the others;
- **causality** along that time axis: the outputs at every time step but the last ignore
  the last input token, while the last one reads it.
"""

from __future__ import annotations

import torch

from . import setup as proto


def grid(p, x):
    """The prediction `p` arranged as (x.shape[0], x.shape[1], -1), or None."""
    a, b = x.shape[0], x.shape[1]
    if p is None:
        return None
    if p.dim() == 2 and p.shape[0] == a * b:
        return p.reshape(a, b, -1)
    if p.dim() == 3 and tuple(p.shape[:2]) == (a, b):
        return p
    if p.dim() == 3 and p.shape[0] == a and p.shape[2] == b:
        return p.transpose(1, 2)
    return None


def _changed(x, axis: int, index: int):
    out = x.clone()
    sl = [slice(None)] * x.dim()
    sl[axis] = index
    out[tuple(sl)] = (x[tuple(sl)] + 1) % (int(x.max()) + 1)
    return out


def _same(a, b) -> bool:
    return torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def _outputs(predict, batch, x, changed):
    try:
        before = grid(predict(batch), x)
        after = grid(predict(proto.with_inputs(batch, changed)), x)
    except Exception:  # a loss_fn that will not take the changed batch: nothing measured
        return None, None
    if before is None or after is None or before.shape != after.shape:
        return None, None
    return before, after


def time_axis(predict, batch) -> int:
    """0 for sequence-first inputs, 1 for batch-first (also when nothing tells them apart)."""
    x = proto.inputs_of(batch)
    carries = []
    for axis in (1, 0):
        before, after = _outputs(predict, batch, x, _changed(x, axis, 0))
        if before is None:
            return 1
        later = before.narrow(axis, 1, x.shape[axis] - 1), after.narrow(axis, 1, x.shape[axis] - 1)
        carries.append(not _same(*later))
    return 0 if carries == [False, True] else 1


def causal(predict, batch) -> bool:
    """Whether the prediction at every time step but the last ignores the last input token
    while the last one reads it: a causal model, whose output at step t already sees token t."""
    x = proto.inputs_of(batch)
    if x.dim() != 2:
        return False
    axis = time_axis(predict, batch)
    before, after = _outputs(predict, batch, x, _changed(x, axis, -1))
    if before is None:
        return False
    n = x.shape[axis]
    return _same(before.narrow(axis, 0, n - 1), after.narrow(axis, 0, n - 1)) and not _same(
        before.narrow(axis, n - 1, 1), after.narrow(axis, n - 1, 1)
    )
