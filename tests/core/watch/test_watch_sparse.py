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


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_how_a_model_between_1_mib_and_10m_parameters_is_measured(optimizer):
    """SGD reads its update from the gradient above 1 MiB (nothing kept); Adam copies the
    model up to 10M parameters (its size kept, said in kept_bytes); both exact."""
    from labkit.core.watch.budget import MIN_BUDGET, SGD_COPIED, default_budget

    assert default_budget(MIN_BUDGET) == MIN_BUDGET  # copied whole up to 40 MiB
    assert default_budget(4 * MIN_BUDGET) == int(0.05 * 4 * MIN_BUDGET)  # above: 5%
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(600, 600), nn.Tanh(), nn.Linear(600, 10))  # 1.4 MB
    opt = getattr(torch.optim, optimizer)(model.parameters(), lr=1e-2)
    watch = labkit.watch(model, opt)
    info = watch.describe()
    assert info["param_bytes"] > SGD_COPIED and info["exact"]
    sgd = optimizer == "SGD"
    assert bool(info["from_optimizer"]) is sgd
    assert info["kept_bytes"] == (0 if sgd else info["param_bytes"])
    x, y = torch.randn(32, 600), torch.randint(0, 10, (32,))
    truth = []
    for _ in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        before = [p.detach().clone() for p in model.parameters()]
        opt.step()
        moved = [(p.detach() - b).double() for p, b in zip(model.parameters(), before)]
        truth.append(math.sqrt(sum(float(m.pow(2).sum()) for m in moved)))
    cols = watch.columns()
    watch.close()
    assert "update_norm_bound" not in cols  # exact: no band
    assert cols["update_norm"] == pytest.approx(truth, rel=1e-5)
