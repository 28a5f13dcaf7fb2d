"""The helpers behind the study notebooks compute what the packet states (checked here
against the closed forms), on every CPU path."""

import math

import pytest
import torch

from labkit.diagnosis.probes import gradient_audit
from labkit.learn.lessons import causal_lm, cross_entropy, learning_rate, mechanism
from labkit.learn.lessons._text import number, table


def test_reference_step_is_the_five_lines_and_the_optimizer_holds_the_model_tensors():
    model, opt, batch = mechanism.reference_setup(optimizer="adam")
    rows = mechanism.optimizer_holdings(model, opt)
    assert all(r["held"] for r in rows) and all(r["state"] == [] for r in rows)
    before = [p.detach().clone() for p in model.parameters()]
    loss = mechanism.reference_step(model, opt, batch)
    assert isinstance(loss, float) and abs(loss - math.log(10)) < 0.1
    assert all(not torch.equal(p, b) for p, b in zip(model.parameters(), before))
    rows = mechanism.optimizer_holdings(model, opt)
    assert all(r["state"] == ["exp_avg", "exp_avg_sq"] for r in rows)


def test_softmax_cross_entropy_gradient_is_p_minus_onehot():
    out = mechanism.softmax_ce_grad()
    assert out["max_abs_diff"] < 1e-12  # float64: equal to rounding
    rows = out["formula"]
    assert torch.allclose(rows.sum(1), torch.zeros(len(rows), dtype=rows.dtype), atol=1e-12)


def test_none_and_zero_gradients_are_told_apart():
    model, opt, loss = mechanism.none_and_zero_model()
    states = {r["name"]: r["grad"] for r in gradient_audit(model, opt, loss).details["rows"]}
    assert states["spare.weight"] == "none" and states["dead.weight"] == "zero"
    assert states["used.weight"] == "finite"


def test_cross_entropy_numbers():
    assert cross_entropy.surprise(0.5) == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="p=0"):
        cross_entropy.surprise(0)
    for row in cross_entropy.loss_at_init():
        assert abs(row["loss"] - row["ln_C"]) < 0.1 * row["ln_C"]
    assert cross_entropy.overflow_point(torch.float16) == pytest.approx(11.09, abs=0.005)
    right = {r["gap"]: r for r in cross_entropy.manual_vs_stable()}
    assert math.isfinite(right[11.0]["manual_float16"]) and math.isnan(
        right[11.2]["manual_float16"]
    )
    assert math.isnan(right[89.0]["manual_float32"])
    assert all(math.isfinite(r["stable_float16"]) for r in right.values())
    wrong = {r["gap"]: r for r in cross_entropy.manual_vs_stable(target="wrong")}
    assert math.isinf(wrong[11.2]["manual_float16"]) and wrong[50.0]["stable_float16"] == 50.0


def test_causal_lm_views_and_averages():
    from labkit.core.data import load

    val = load("tokens").val
    text = causal_lm.show_example(val, 0)
    assert "<sep> -> " in text and "loss mask keeps" in text
    assert causal_lm.decode([1, 4, 3, 0]) == "<bos> ant <eos>"
    view = causal_lm.causal_view(val, 0).splitlines()
    assert view[1].split()[1:] == ["x", ".", ".", ".", ".", "."]  # no peeking ahead
    assert all(line.split()[-1] == "." for line in view[1:])  # nobody attends to padding
    torch.manual_seed(0)
    from labkit.core.models import TinyCausalLM

    model = TinyCausalLM(max_len=val["input_ids"].shape[1])
    avg = causal_lm.mean_of_batch_means(model, val)
    loss, _, mask = causal_lm.token_losses(model, val)
    assert avg["token_weighted"] == pytest.approx(float(loss.sum() / mask.sum()))
    assert sum(avg["batch_tokens"]) == int(mask.sum())
    em = causal_lm.exact_match(model, val)
    assert 0 <= em["exact_match"] <= em["token_accuracy"] <= 1


def test_learning_rate_pictures():
    paths = learning_rate.quadratic_descent()
    assert paths[1.0][1] == 0.0 and abs(paths[2.1][-1]) > 1 and paths[1.5][1] < 0
    fc = learning_rate.one_step_forecast(lrs=(0.01,))
    assert fc["rows"][0]["actual"] == pytest.approx(fc["rows"][0]["predicted"], rel=0.01)
    assert fc["limit_lr"] == pytest.approx(2 * fc["best_lr"])
    rows = {(r["optimizer"], float(r["scale"])): r for r in learning_rate.first_updates()}
    assert rows[("sgd", 1000.0)]["update_norm"] == pytest.approx(
        1000 * rows[("sgd", 1.0)]["update_norm"], rel=1e-3
    )
    assert rows[("adam", 1000.0)]["largest"] == pytest.approx(1e-3, rel=1e-3)
    noise = learning_rate.gradient_noise(batch_sizes=(8, 128), draws=32)
    assert noise[0]["noise"] > 3 * noise[1]["noise"]  # 16x the batch, about 4x less noise


def test_text_table_rounds_and_spells_specials():
    assert number(-0.0) == "0" and number(float("inf")) == "inf" and number(None) == "-"
    assert table([{"a": 1.23456}], ["a"], decimals=2).splitlines()[1].strip() == "1.23"


def test_weight_decay_reaches_a_zero_gradient_but_not_a_none_one():
    moved = {r["name"]: r for r in mechanism.step_with_decay()}
    assert moved["dead.bias"]["grad"] == "zero" and moved["dead.bias"]["moved"] > 0
    assert moved["spare.bias"]["grad"] == "None" and moved["spare.bias"]["moved"] == 0


def test_debugging_sequence_reads_the_padding_bug_from_counts_and_losses():
    from labkit.learn.lessons import sequence

    trainer = sequence.setup(bug="padding_in_loss", steps=40)
    counts = sequence.target_counts(sequence.first_batch(trainer))
    assert counts["labelled_targets"] > counts["response_targets"]
    rows = sequence.comparable(trainer.run())
    assert len(rows) == 4 and all(r["val_resp"] > r["val"] for r in rows)
    assert rows[-1]["val_resp"] > rows[-1]["val"] + 0.3
    healthy = sequence.target_counts(sequence.first_batch(sequence.setup(bug=None, steps=20)))
    assert healthy["labelled_targets"] == healthy["response_targets"]
