"""Probes work on any nn.Module and optimizer, and agree with hand computations."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import probes
from labkit.probes.lr import load_checkpoint, save_checkpoint


def tiny(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 5))


def batch(n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, generator=g), torch.randint(0, 5, (n,), generator=g)


def test_loss_at_init_matches_hand_computed_cross_entropy():
    model, (x, y) = tiny(), batch()
    result = probes.loss_at_init(model, (x, y))
    assert result.details["loss"] == pytest.approx(F.cross_entropy(model(x), y).item())
    assert result.details["ln_C"] == pytest.approx(math.log(5))
    assert probes.uniform_loss(50_000) == pytest.approx(10.82, abs=0.005)
    with torch.no_grad():
        model[2].weight.mul_(50)  # confident, wrong first predictions
    assert probes.loss_at_init(model, (x, y)).verdict.startswith("too high")


def test_gradient_audit_reads_none_zero_and_missing_from_optimizer():
    model, (x, y) = tiny(), batch()
    extra = nn.Linear(2, 2)  # a registered but unused layer: its grad stays None
    model.add_module("unused", extra)
    opt = torch.optim.SGD(list(model[0].parameters()) + list(extra.parameters()), lr=0.1)
    loss = F.cross_entropy(model[2](model[1](model[0](x))), y)
    loss.backward()
    with torch.no_grad():
        model[0].bias.grad.zero_()  # connected but no signal
    rows = {r["name"]: r for r in probes.gradient_audit(model, opt, loss).details["rows"]}
    assert rows["unused.weight"]["grad"] == "none" and rows["unused.weight"]["grad_norm"] is None
    assert rows["0.bias"]["grad"] == "zero"
    assert rows["2.weight"]["in_optimizer"] is False and "never move" in rows["2.weight"]["reading"]
    assert rows["2.weight"]["grad_norm"] == pytest.approx(model[2].weight.grad.norm().item())


def test_gradient_audit_spots_a_layer_replaced_after_the_optimizer():
    model, (x, y) = tiny(), batch()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = nn.Linear(4, 5)  # the new head is not what the optimizer holds
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    audit = probes.gradient_audit(model, opt, loss)
    assert audit.details["foreign_tensors"] == 2
    assert "2.weight is not in the optimizer" in audit.details["problems"]
    assert any("replaced after the optimizer was built" in p for p in audit.details["problems"])


def test_gradient_audit_flags_a_disconnected_loss():
    model, (x, y) = tiny(), batch()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.tensor(F.cross_entropy(model(x), y).item(), requires_grad=True)
    loss.backward()
    assert "disconnected" in probes.gradient_audit(model, opt, loss).verdict


def test_update_probe_equals_lr_times_grad_for_plain_sgd():
    model, (x, y) = tiny(), batch()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    F.cross_entropy(model(x), y).backward()
    grad = model[2].weight.grad.clone()
    with probes.update_probe(model, ["2.weight", "0.bias"]) as probe:
        opt.step()
    row = probe.result.details["rows"][0]
    assert row["delta_norm"] == pytest.approx(0.05 * grad.norm().item(), rel=1e-5)
    assert row["relative_update"] == pytest.approx(
        row["delta_norm"] / model[2].weight.norm().item(), rel=1e-5
    )
    frozen = torch.optim.SGD(model.parameters(), lr=0.0)
    with probes.update_probe(model) as probe:
        frozen.step()
    assert probe.result.verdict.startswith("no update")
    with pytest.raises(ValueError, match="Did you mean '2.weight'"):
        probes.UpdateProbe(model, ["2.weigth"])


def test_first_nonfinite_finds_input_module_loss_and_gradient():
    model, (x, y) = tiny(), batch()
    bad = x.clone()
    bad[3, 1] = math.nan
    r = probes.first_nonfinite(model, (bad, y))
    assert r.details["where"] == "input 0" and "batch rows [3]" in r.verdict
    with torch.no_grad():
        model[2].weight[0, 0] = math.inf
    r = probes.first_nonfinite(model, (x, y))
    assert r.details["where"] == "module 2" and "already non-finite" in r.details["note"]
    clean = tiny()
    r = probes.first_nonfinite(clean, (x, y), loss_fn=lambda out, b: (out.exp() * 1e38).sum())
    assert r.details["where"] == "loss"
    r = probes.first_nonfinite(
        clean, (x, y), loss_fn=lambda out, b: out.sqrt().nansum(), anomaly=True
    )
    assert r.details["where"].startswith("gradients")  # sqrt of negatives: NaN only in backward
    assert "SqrtBackward0" in r.details["note"]  # anomaly mode names the backward op
    assert probes.first_nonfinite(tiny(), (x, y)).verdict == "all finite"


def test_first_nonfinite_agrees_with_pytorch_on_fp16_overflow():
    model = nn.Linear(2, 3)
    with torch.no_grad():
        model.weight.fill_(4.0)
        model.bias.zero_()
    x, y = torch.full((2, 2), 2.0), torch.tensor([0, 1])  # logits 16 > ln(65504) = 11.09

    def manual_softmax_nll(out, b):
        p = out.exp() / out.exp().sum(-1, keepdim=True)
        return -p[torch.arange(2), b[1]].float().log().mean()

    half = probes.first_nonfinite(
        model, (x, y), loss_fn=manual_softmax_nll, autocast_dtype=torch.float16
    )
    assert half.details["where"] == "loss"
    assert probes.first_nonfinite(model, (x, y), loss_fn=manual_softmax_nll).verdict == "all finite"


def test_overfit_probe_three_verdicts():
    torch.manual_seed(0)
    x = torch.randn(64, 2)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 4))
    before = [p.clone() for p in model.parameters()]
    ok = probes.overfit_probe(model, (x, y))
    assert ok.details["reached"] and ok.verdict.startswith("reaches ~0")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # not modified
    dead = probes.overfit_probe(model, (x, y), forward=lambda m, b: m(b[0]) * 0.0)
    assert "gradient norm ~0 from the start" in dead.verdict  # no flow: H1-blocked
    plateau = probes.overfit_probe(model, (torch.zeros(64, 2), y))
    assert "plateau" in plateau.verdict  # constant inputs: learns the prior, then nothing
    noise = probes.overfit_probe(
        model, (x, y[torch.randperm(64, generator=torch.Generator().manual_seed(1))]), steps=100
    )
    assert "healthy gradient norms" in noise.verdict  # random labels: no signal, norms healthy


@pytest.mark.parametrize(
    "scale, said",
    [
        (0.5, "ok: every probed parameter moved"),
        (-3.0, "huge update for 0.weight"),
        (math.inf, "non-finite update for 0.weight"),
    ],
)
def test_the_update_probe_names_the_size_it_measured(scale, said):
    model = nn.Sequential(nn.Linear(2, 2))
    with torch.no_grad(), probes.update_probe(model, ["0.weight"]) as probe:
        model[0].weight.add_(model[0].weight * scale)  # an update of `scale` times the weights
    assert probe.result.verdict.startswith(said)


@pytest.mark.parametrize(
    "lower_drop, said", [(0.2, "loss falls at lower LRs"), (-0.2, "loss stays finite at lower LRs")]
)
def test_the_lr_sweep_says_falls_only_where_the_lower_arms_fell(monkeypatch, lower_drop, said):
    from labkit.diagnosis.probes import lr as lr_module

    runs = iter(
        [([2.3] * 9 + [2.3 - lower_drop], [1.0] * 10)] * 2
        + [([2.3] * 5 + [math.nan] * 5, [1.0] * 10)]
    )
    monkeypatch.setattr(lr_module, "fit", lambda *a: next(runs))
    result = lr_module.lr_sweep(nn.Linear(2, 2), [None], lr=0.1)
    assert result.verdict.startswith(f"{said} and diverges from x10")


@pytest.mark.parametrize(
    "later, verdict",
    [
        (
            1.11e-6,
            "vanished",
        ),  # the drill's case: 0.09 -> 1.11e-6, above the floor, 81,081 times smaller
        (0.09 * 0.009, "vanished"),  # just below 1% of its start
        (0.09 * 0.011, "healthy"),  # just above it
        (0.05, "healthy"),
        (5e-7, "vanished"),  # below the floor, whatever the start
    ],
)
def test_an_overfit_norm_is_judged_against_its_own_start(monkeypatch, later, verdict):
    from labkit.diagnosis.probes import overfit

    norms = [0.09] * 10 + [later] * 190
    monkeypatch.setattr(overfit, "fit", lambda *a: ([2.307] + [2.179] * 199, norms))
    result = overfit.overfit_probe(nn.Linear(2, 2), (torch.zeros(1, 2), torch.zeros(1).long()))
    assert ("healthy" in result.verdict) == (verdict == "healthy")
    assert ("vanished" in result.verdict) == (verdict == "vanished")
    assert f"{0.09:.3g}" in result.verdict and f"{later:.3g}" in result.verdict
    if verdict == "vanished":
        assert f"{0.09 / later:,.0f} times smaller" in result.verdict


@pytest.mark.parametrize(
    "case", ["all_ignored_sgd", "all_ignored_adam", "nan_inputs", "adamw_decay"]
)
def test_a_stuck_probe_is_not_computed_to_its_end_and_logs_what_computing_would(case):
    """A run at a non-finite fixed point (zero gradients, or weights already NaN) repeats its
    last step without computing it; the log equals the one computed step by step (distinct
    copies of the batch are never taken for a repeat). Decoupled weight decay moves the
    weights on a NaN loss: nothing is skipped there."""
    from labkit.diagnosis.probes._common import default_loss, fit

    x, y = batch(16)
    if case.startswith("all_ignored") or case == "adamw_decay":
        y = torch.full_like(y, -100)  # no supervised row: 0/0 = NaN, zero gradients
    if case == "nan_inputs":
        x = x.clone()
        x[0, 0] = math.nan  # NaN gradients, then NaN weights
    make = {
        "all_ignored_sgd": lambda ps: torch.optim.SGD(ps, lr=0.5, momentum=0.9),
        "all_ignored_adam": lambda ps: torch.optim.Adam(ps, lr=1e-2),
        "nan_inputs": lambda ps: torch.optim.SGD(ps, lr=0.5),
        "adamw_decay": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    }[case]
    calls = []

    def forward(model, b):
        calls.append(1)
        return model(b[0])

    def run(batches):
        calls.clear()
        losses, norms = fit(tiny(), batches, forward, default_loss, make)
        return [repr(v) for v in losses], [repr(v) for v in norms], len(calls)

    same_batch = run([(x, y)] * 30)
    computed = run([(x.clone(), y.clone()) for _ in range(30)])
    assert same_batch[:2] == computed[:2] and computed[2] == 30
    assert not math.isfinite(float(same_batch[0][-1]))
    assert same_batch[2] == (30 if case == "adamw_decay" else 2), same_batch[2]


def test_label_shuffle_control_separates_signal_from_none():
    torch.manual_seed(0)
    x = torch.randn(64, 2)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 4))
    assert not probes.label_shuffle_control(model, (x, y)).details["same"]
    assert probes.label_shuffle_control(model, (torch.zeros(64, 2), y)).details["same"]
    shuffled = probes.shuffle_labels((x, y))
    assert sorted(shuffled[1].tolist()) == sorted(y.tolist()) and not torch.equal(shuffled[1], y)


def test_raw_vs_reported_recognises_honest_loggers_and_names_the_lie():
    raw = [2.0, 1.0, 3.0, 2.0]
    ids = [0, 1, 0, 1]
    assert probes.raw_vs_reported(raw=raw, reported=raw).details["matches"] == "per-batch raw loss"
    assert probes.raw_vs_reported(raw=raw, reported=[2.0, 1.5, 3.0, 2.5], batch_id=ids).details[
        "agree"
    ]
    stale = probes.raw_vs_reported(raw=raw, reported=[2.0] * 4, batch_id=ids)
    assert stale.details["mechanism"] == "stale"
    div = probes.raw_vs_reported(
        raw=raw, reported=[2 / 500, 3 / 500, 3 / 500, 5 / 500], batch_id=ids
    )
    assert div.details["mechanism"] == "divisor" and div.details["divisor"] == pytest.approx(500)
    with pytest.raises(ValueError, match="raw has 4 values but reported has 3"):
        probes.raw_vs_reported(raw=raw, reported=raw[:3])


def test_lr_sweep_starts_every_arm_from_identical_state():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    x, y = torch.randn(32, 2), torch.randint(0, 3, (32,))
    result = probes.lr_sweep(model, [(x, y)] * 15, lr=0.05)
    arms = result.details["arms"]
    assert arms[0.1]["loss_first"] == arms[1.0]["loss_first"] == arms[10.0]["loss_first"]
    assert arms[0.1]["drop"] < arms[1.0]["drop"] < arms[10.0]["drop"]
    assert "monotonically" in result.verdict
    wild = probes.lr_sweep(model, [(x * 1e3, y)] * 15, lr=5.0)
    assert "diverge" in wild.verdict


def test_replay_and_checkpoints_refuse_another_architecture(tmp_path):
    model = tiny()
    path = save_checkpoint(model, tmp_path / "ck.pt")
    x, y = batch()
    spike = (x, (y + 1) % 5)  # the same inputs with corrupt labels
    result = probes.replay_batch(model, path, {"normal": (x, y), "suspicious": spike})
    assert "suspicious" in result.verdict
    assert torch.equal(load_checkpoint(model, path)[0].weight, model[0].weight)
    other = nn.Sequential(nn.Linear(3, 7), nn.Tanh(), nn.Linear(7, 5))
    with pytest.raises(ValueError, match="another architecture.*shape mismatch"):
        load_checkpoint(other, path)


def test_bad_inputs_are_refused_with_a_sentence():
    model, (x, y) = tiny(), batch()
    frozen = tiny()
    for p in frozen.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="has no trainable parameters"):
        probes.loss_at_init(frozen, (x, y))
    other_opt = torch.optim.SGD(tiny(1).parameters(), lr=0.1)
    with pytest.raises(ValueError, match="owns none of the"):
        probes.gradient_audit(model, other_opt)
    with pytest.raises(
        ValueError, match=r"cannot take this batch \(0: shape \(8, 7\).*in_features=3"
    ):
        probes.loss_at_init(model, (torch.randn(8, 7), y))
    with pytest.raises(ValueError, match="integer token ids"):
        probes.loss_at_init(nn.Sequential(nn.Embedding(10, 4)), (torch.randn(2, 3), y))


def test_gradient_audit_refuses_a_batch_where_the_loss_belongs():
    model, (x, y) = tiny(), batch()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="loss must be the loss tensor.*got dict"):
        probes.gradient_audit(model, opt, {"x": x, "y": y})
