"""Norms where engineers look: `labkit.watch(writer=...)` and `Run.to_tensorboard`, read back
with `Run.from_tensorboard` (TensorBoard's own reader)."""

import math

import pytest
import torch
import torch.nn as nn

import labkit

pytest.importorskip("tensorboard", reason="the logs extra: pip install 'labkit[logs]'")
from torch.utils.tensorboard import SummaryWriter  # noqa: E402 (needs tensorboard)


class TwoHeads(nn.Module):
    """`head` is used on even steps only: on odd steps its gradients are None."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(3, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x, use_head: bool):
        h = self.body(x)  # (B, 4)
        return self.head(h) if use_head else h.sum(1, keepdim=True)  # (B, 1)


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-30)  # TensorBoard keeps float32


def test_watch_writer_round_trips_the_norms_with_none_as_a_gap(tmp_path):
    torch.manual_seed(0)
    model = TwoHeads()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    writer = SummaryWriter(log_dir=str(tmp_path))
    watch = labkit.watch(model, opt, writer=writer)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    raw = []
    for step in range(12):
        opt.zero_grad(set_to_none=True)
        loss = ((model(x, use_head=step % 2 == 0) - y) ** 2).mean()
        loss.backward()
        opt.step()
        raw.append(loss.item())
        writer.add_scalar("loss", loss.item(), step)  # the learner's own line, same step count
    watch.close()  # writes the rows not yet written
    writer.close()
    expected = watch.run(loss_raw=raw).table
    assert expected["grad_norm/head"][1] is None and expected["grad_norm/head"][0] > 0
    names = [
        "grad_norm",
        "update_norm",
        "grad_norm/head",
        "update_norm/head",
        "grad_norm/body",
        "lr",
    ]
    back = labkit.Run.from_tensorboard(tmp_path, raw="loss", tags={n: n for n in names}).table
    assert back["step"] == list(range(12))
    for name in names:
        pairs = list(zip(back[name], expected[name]))
        assert all(_close(a, b) for a, b in pairs), (name, pairs)
    assert [v is None for v in back["grad_norm/head"]] == [s % 2 == 1 for s in range(12)]
    assert back["update_norm/head"][1] == 0.0  # no gradient, no move: 0, written as 0


class Recorder:
    """A writer as the watch sees one: anything with add_scalar(tag, value, step)."""

    def __init__(self):
        self.calls = []

    def add_scalar(self, tag, value, step):
        self.calls.append((tag, value, step))


def test_writes_every_so_many_steps_not_every_step():
    from labkit.core.watch.writer import EVERY

    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = Recorder()
    watch = labkit.watch(model, opt, writer=rec)
    for step in range(EVERY + 3):
        opt.zero_grad()
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
        if step == EVERY - 2:
            assert rec.calls == []  # nothing read back yet
    written = {s for tag, _, s in rec.calls if tag == "grad_norm"}
    assert written == set(range(EVERY))
    watch.close()
    assert {s for tag, _, s in rec.calls if tag == "grad_norm"} == set(range(EVERY + 3))
    with pytest.raises(TypeError, match="writer must have add_scalar"):
        labkit.watch(model, opt, writer="runs/")


def test_run_to_tensorboard_round_trips_with_from_tensorboard(tmp_path):
    run = labkit.train(steps=6)
    run.to_tensorboard(tmp_path / "tb")
    cols = [c for c in run.table if c not in ("step", "loss_raw", "loss_reported")]
    back = labkit.Run.from_tensorboard(
        tmp_path / "tb", raw="loss_raw", reported="loss_reported", tags={c: c for c in cols}
    )
    assert back.table["step"] == run.table["step"]
    for name in ["loss_raw", "loss_reported", *cols]:
        pairs = list(zip(back.table[name], run.table[name]))
        assert all(_close(a, b) for a, b in pairs), (name, pairs)
