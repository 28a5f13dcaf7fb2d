"""`labkit.watch` on sparse gradients: ``nn.Embedding(sparse=True)`` with SparseAdam and SGD,
measured exactly (small tables) and by the estimate (a table over the memory budget)."""

import math

import pytest
import torch
import torch.nn as nn

import labkit


@pytest.mark.parametrize(
    "rows, optimizer",
    [(1000, "SparseAdam"), (200_000, "SparseAdam"), (1000, "SGD")],
    ids=["exact-sparseadam", "large-sparseadam", "exact-sgd"],
)
def test_sparse_updates_are_measured_and_untouched_rows_read_zero(rows, optimizer):
    torch.manual_seed(0)
    model = nn.ModuleDict(
        {"used": nn.Embedding(rows, 64, sparse=True), "unused": nn.Embedding(50, 8, sparse=True)}
    )
    opt = (
        torch.optim.SparseAdam(model.parameters(), lr=0.1)
        if optimizer == "SparseAdam"
        else torch.optim.SGD(model.parameters(), lr=0.1)
    )
    watch = labkit.watch(model, opt)
    # copied under the copy floor; above it, read from SparseAdam's moments
    assert watch.plan.all_exact == (rows == 1000)
    updates, grads = [], []
    for step in range(3):
        ids = torch.randint(0, rows, (40,), generator=torch.Generator().manual_seed(step))
        before = model["used"].weight.detach().clone()
        opt.zero_grad()
        model["used"](ids).pow(2).sum().backward()
        assert model["used"].weight.grad.is_sparse
        grads.append(float(model["used"].weight.grad.to_dense().norm()))
        opt.step()
        moved = model["used"].weight.detach() - before
        untouched = torch.ones(rows, dtype=torch.bool)
        untouched[ids] = False
        assert float(moved[untouched].abs().max()) == 0.0  # only the batch's rows moved
        updates.append(float(moved.double().norm()))
    run = watch.run(loss_raw=[0.0] * 3)
    watch.close()
    assert all(math.isfinite(v) and v > 0 for v in run.table["update_norm/used"])
    assert run.table["update_norm/used"] == pytest.approx(updates, rel=1e-5)
    assert run.table["grad_norm/used"] == pytest.approx(grads, rel=1e-5)
    assert run.table["update_norm/unused"] == [0.0, 0.0, 0.0]  # a table no batch touched
    assert run.table["grad_norm/unused"] == [None, None, None]  # its gradient was None
