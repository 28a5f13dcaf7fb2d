import math

import pytest
import torch
import torch.nn.functional as F

import labkit
from labkit import Config, Seams, train
from labkit.core.seams import batch_indices, make_batch, make_data, make_model


def _strip(run):
    return run.to_json(timing=False)


def test_same_seed_identical_run_json_different_seed_differs():
    from labkit.core.watch import follow

    hooked = {id(handle) for _, handle in follow._GLOBAL}
    a, b, c = train(steps=60), train(steps=60), train(steps=60, seed=1)
    # each run's watch is closed: nothing of it stays among torch's global optimizer hooks
    assert [h for _, h in follow._GLOBAL if id(h) not in hooked] == []
    assert _strip(a) == _strip(b)
    assert a.fingerprint() == b.fingerprint()
    assert _strip(a) != _strip(c)
    assert a.meta["data_hash"] != c.meta["data_hash"]
    assert a.meta["init_hash"] != c.meta["init_hash"]


def test_lm_run_is_deterministic_and_logs_token_columns():
    a, b = train(task="lm", steps=20), train(task="lm", steps=20)
    assert _strip(a) == _strip(b)
    assert all(v > 0 for v in a.table["valid_tokens"])
    assert all(9 <= v <= 19 for v in a.table["max_seq_len"])
    # valid_tokens is the count of supervised targets after the shift
    cfg = Config(task="lm")
    data = make_data(cfg)
    batch = make_batch(data.train, batch_indices(cfg, len(data), 0, 0), cfg, 0)
    assert a.table["valid_tokens"][0] == int((batch["labels"][:, 1:] != -100).sum())


def test_table_has_the_documented_columns():
    run = train(steps=10, eval_every=5)
    for col in (
        "step",
        "epoch",
        "batch_id",
        "loss_raw",
        "loss_reported",
        "lr",
        "grad_norm",
        "update_norm",
        "grad_norm/head",
        "update_norm/backbone.0",
    ):
        assert len(run.table[col]) == 10, col
    assert run.evals["step"] == [4, 9]
    assert set(run.evals) >= {"train_eval_loss", "val_loss", "val_acc"}
    assert run.groups == ["backbone.0", "backbone.2", "head"]


def test_healthy_run_learns_from_ln10():
    run = train(seed=0)
    assert run.table["loss_raw"][0] == pytest.approx(math.log(10), abs=0.01)
    assert run.evals["val_loss"][-1] < 0.3
    assert run.evals["val_acc"][-1] > 0.95


def test_reported_loss_is_the_running_epoch_mean():
    run = train(steps=40)
    raw, rep, bid = run.table["loss_raw"], run.table["loss_reported"], run.table["batch_id"]
    for i in range(40):
        start = i - bid[i]
        assert rep[i] == pytest.approx(sum(raw[start : i + 1]) / (bid[i] + 1))


def test_grad_and_update_norms_match_a_hand_computed_step():
    # Recompute step 0 by hand with autograd on the same model, batch and SGD rule.
    cfg = Config(steps=1)
    run = train(cfg)
    torch.manual_seed(cfg.seed)
    data = make_data(cfg)
    model = make_model(cfg, data)
    batch = make_batch(data.train, batch_indices(cfg, len(data), 0, 0), cfg, 0)
    loss = F.cross_entropy(model(batch["x"]), batch["y"])
    loss.backward()
    assert run.table["loss_raw"][0] == pytest.approx(loss.item(), rel=1e-6)
    groups = {"backbone.0": model.backbone[0], "backbone.2": model.backbone[2], "head": model.head}
    total = 0.0
    for name, layer in groups.items():
        g = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in layer.parameters()))
        total += g**2
        assert run.table[f"grad_norm/{name}"][0] == pytest.approx(g, rel=1e-5)
        # plain SGD: the update is exactly lr * grad
        assert run.table[f"update_norm/{name}"][0] == pytest.approx(cfg.lr * g, rel=1e-4)
    assert run.table["grad_norm"][0] == pytest.approx(math.sqrt(total), rel=1e-5)


def test_a_none_gradient_is_recorded_as_null_not_zero():
    def forward_detached(ctx):  # the head learns, the backbone gets no gradient at all
        return ctx.model.head(ctx.model.backbone(ctx.batch["x"]).detach())

    run = train(steps=5, seams=Seams().replace(forward=forward_detached))
    assert run.table["grad_norm/backbone.0"] == [None] * 5
    assert all(v == 0.0 for v in run.table["update_norm/backbone.0"])
    assert all(v > 0 for v in run.table["grad_norm/head"])
    assert run.to_json().count("null") >= 10
    back = labkit.Run.from_json(run.to_json())
    assert back.table["grad_norm/backbone.2"][0] is None


def test_fp16_records_amp_scale_and_stays_close_to_fp32():
    r16, r32 = train(steps=50, precision="fp16"), train(steps=50)
    assert len(r16.table["amp_scale"]) == 50 and r16.table["amp_scale"][0] == 65536.0
    assert "amp_scale" not in r32.table
    assert r16.table["loss_raw"][-1] == pytest.approx(r32.table["loss_raw"][-1], abs=0.05)


def test_scheduler_steps_once_per_epoch():
    run = train(steps=48, scheduler="step", step_size=1, gamma=0.5)  # 16 steps per epoch
    lr = run.table["lr"]
    assert lr[0] == lr[15] == 0.1 and lr[16] == lr[31] == 0.05 and lr[32] == 0.025
    cos = train(epochs=4, scheduler="cosine")
    assert len(cos) == 64 and cos.table["lr"][0] == 0.1 and cos.table["lr"][-1] < 0.02


def test_adam_dropout_and_clipping_options():
    run = train(steps=30, optimizer="adam", lr=1e-2, dropout=0.3, clip_grad_norm=0.05)
    assert run.config["optimizer"] == "adam" and run.config["dropout"] == 0.3
    # Adam's first update has size ~lr per coordinate whatever the gradient scale
    assert run.table["update_norm"][0] > 0
    assert max(run.table["grad_norm"]) > 0.05  # pre-clip norms are what is recorded


def test_epochs_override_steps_and_batch_ids_cycle():
    run = train(epochs=2)
    assert len(run) == 32 and run.table["batch_id"][16] == 0 and run.table["epoch"][16] == 1


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(precision="fp8"), "precision='fp8' is not allowed; choose one of 'fp32', 'fp16'"),
        (dict(task="regress"), "task='regress' is not allowed; choose one of 'classify', 'lm'"),
        (dict(steps=-5), "steps=-5 is out of range; it must be at least 1"),
        (dict(lr=-0.1), "lr=-0.1 is out of range; it must be at least 0.0"),
        (dict(optimizer="adamw"), "Did you mean 'adam'"),
        (dict(scheduler="cosin"), "Did you mean 'cosine'"),
        (dict(device="tpu"), "device='tpu' is not allowed"),
        (dict(dataset="tokens"), "dataset='tokens' is not allowed"),
    ],
)
def test_bad_config_values_raise_value_error_naming_parameter(bad, message):
    with pytest.raises(ValueError) as info:
        Config(**bad)
    assert message in str(info.value)


def test_unknown_setting_gets_a_suggestion():
    with pytest.raises(TypeError, match="Did you mean 'lr'"):
        train(lrr=0.1)
    with pytest.raises(TypeError, match="steps must be a whole number"):
        Config(steps=1.5)


def test_cuda_request_without_cuda_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="no CUDA device"):
        Config(device="cuda")


def test_changing_task_rederives_its_defaults():
    cfg = Config().replace(task="lm")
    assert (cfg.dataset, cfg.optimizer, cfg.lr, cfg.batch_size) == ("tokens", "adam", 3e-3, 32)
    assert Config(lr=0.5).replace(seed=3).lr == 0.5
    assert Config().diff(Config(lr=0.01, seed=2)) == ["lr", "seed"]
