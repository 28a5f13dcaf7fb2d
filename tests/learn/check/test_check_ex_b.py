"""Exercise B's checks: a prediction sealed before the runs, and questions no output answers."""

import pytest

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_b import (
    ex_b_growth,
    ex_b_predict,
    ex_b_review,
    ex_b_transfer,
    growth,
)
from labkit.core.seams import Seams, make_optimizer
from helpers import one_sentence, run_solution, misjudged

pytestmark = pytest.mark.ex_b
RIGHT = {
    "frozen_backbone_only": ["head"],
    "frozen_head_only": ["backbone.0", "backbone.2"],
    "left_out_grad": "finite",
    "zero_grad_clears": False,
    "worse": "backbone_only",
    "why": "step() and zero_grad() only walk their own list.",
}
REASON = "backbone.2 is left out of the optimizer, so zero_grad() never clears its gradient"


def skip_middle(config, model):
    return make_optimizer(
        config, model, [*model.backbone[0].parameters(), *model.head.parameters()]
    )


@pytest.fixture(scope="module")
def subset():
    return labkit.train(seams=Seams().replace(optimizer=skip_middle))


@pytest.fixture(scope="module")
def backbone_only():
    return labkit.train(bug="missing_optimizer_params")


def test_review_shows_each_miss_without_failing():
    wrong = {**RIGHT, "left_out_grad": "none", "worse": "head_only"}
    ex_b_predict(wrong)
    runs = {
        "healthy": labkit.train(steps=40),
        "backbone_only": labkit.train(bug="missing_optimizer_params", steps=40),
        "head_only": labkit.train(bug="missing_optimizer_params:head_only", steps=40),
    }
    text = ex_b_review(wrong, runs)
    assert text.startswith("ok: 3 of 5 predictions hit")
    assert "left_out_grad: you predicted 'none'; the run shows 'finite': miss" in text
    assert "worse: you predicted 'head_only'; the run shows 'backbone_only': miss" in text


def test_growth_is_read_from_the_run(backbone_only):
    truth = growth(backbone_only)
    healthy = labkit.train()
    assert truth > 100
    assert ex_b_growth(truth, backbone_only, healthy).startswith(f"ok: x{truth:.0f} in 200 steps")
    with pytest.raises(CheckFailed, match="Divide the left-out head's gradient norm") as info:
        ex_b_growth(200.0 if abs(truth - 200) > 3 else 150.0, backbone_only, healthy)
    assert one_sentence(str(info.value))
    with pytest.raises(CheckFailed, match="not the backbone_only run"):
        ex_b_growth(truth, healthy, healthy)


def test_transfer_needs_groups_a_boolean_and_a_reason(subset):
    assert ex_b_transfer(["backbone.2"], True, REASON, subset).startswith(
        "ok: backbone.2 never moves, and its gradient piles up"
    )
    with pytest.raises(CheckFailed, match="read the optimizer it was built with") as info:
        ex_b_transfer(["backbone.0"], True, REASON, subset)
    assert "backbone.2" not in str(info.value)
    with pytest.raises(CheckFailed, match="whether anything clears that gradient"):
        ex_b_transfer(["backbone.2"], False, REASON, subset)
    with pytest.raises(CheckFailed, match="Answer True or False"):
        ex_b_transfer(["backbone.2"], "yes", REASON, subset)
    said = ex_b_transfer(["backbone.2"], True, "backbone.2 is left out of it", subset)
    assert said.startswith("ok") and "does not yet say what zero_grad" in said
    assert not misjudged("ex_b_transfer", lambda c, r: ex_b_transfer(*c, r, subset))


@pytest.mark.slow
def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_b_optimizer_membership", tmp_path, seed=1)
    assert "ok: 5 of 5 predictions hit" in text
    assert text.count("ok: ") >= 5
