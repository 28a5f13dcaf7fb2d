"""Signing a conviction of `labkit.diagnose(setup)`: by labkit's own intervention (a reference
loss on the same model output, for a mechanism in the loss), or by the learner's fix passed to
`record.intervene(fixed_setup)` against the prescription; and every refusal on the way.

The setups are the held-out ones of tests/own_setups; their fixes are in own_setups/fixed.py.
"""

import importlib.util
import json
import math
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import labkit
from labkit import Prediction, TriageRecord, TriageRefused
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
from labkit.diagnosis.own.step5_sign.onechange import changes
from labkit.diagnosis.own.step5_sign.refloss import reference
from own_setups.fixed import FIXED, DetachRemoved
from own_setups.h1 import DetachMidModel, LossFromItem, _DetachedBody
from own_setups.signing import sign


class TwoChanges(DetachRemoved):
    """The detach removed, and the learning rate raised "while at it"."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


class WrongPlace(DetachMidModel):
    """The learning rate changed; the detach left where it was."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


class StillDetached(DetachMidModel):
    """make_model rewritten, but the model it builds still detaches its body."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        model = _DetachedBody()
        return model


# ---- quick: the parts, without a triage -------------------------------------------------------


def test_reference_loss_is_the_textbook_loss_for_the_shapes():
    logits, ids = torch.randn(4, 3), torch.tensor([0, 2, 1, 1])
    assert torch.allclose(reference(logits, (torch.zeros(4, 5), ids)), F.cross_entropy(logits, ids))
    tokens = torch.randint(0, 7, (2, 5))
    lm = torch.randn(2, 5, 7)
    shifted = F.cross_entropy(lm[:, :-1].reshape(-1, 7), tokens[:, 1:].reshape(-1))
    assert torch.allclose(reference(lm, {"input_ids": tokens, "labels": tokens}), shifted)
    values, target = torch.randn(4, 1), torch.randn(4)
    assert torch.allclose(
        reference(values, (torch.zeros(4, 2), target)), F.mse_loss(values[:, 0], target)
    )
    binary = torch.tensor([0, 1, 1, 0])
    assert torch.allclose(
        reference(values, (torch.zeros(4, 2), binary)),
        F.binary_cross_entropy_with_logits(values[:, 0], binary.float()),
    )
    assert reference(torch.randn(4, 3), (torch.zeros(4, 2), torch.randn(4, 2))) is None


def test_one_change_is_read_from_code_and_from_behaviour():
    before = DetachMidModel()
    evs = [SeedEvidence(before, s) for s in (0, 1)]
    assert list(changes(before, DetachRemoved(), evs)) == ["make_model"]
    found = changes(before, TwoChanges(), evs)
    assert set(found) == {"make_model", "make_optimizer"}
    assert "lr 0.05 -> 0.1" in found["make_optimizer"]
    smaller = DetachMidModel()
    smaller.batch_size = 32  # same code, other data: only the behaviour shows it
    assert list(changes(before, smaller, evs)) == ["batches"]
    assert changes(before, DetachMidModel(), evs) == {}


def test_the_signing_bar_holds_by_construction():
    """test_own_triage and test_own_held_out check the buggy setups of the first, third and
    fourth to seventh batches one by one: each right, and signed by labkit alone unless named in
    own_setups/fixed.py. So these counts are the bar: at least 90% of the right convictions
    signed by labkit alone, and every one named has a fix that signs (test_each_fix_signs), but
    those named UNSIGNED."""
    from own_setups import EXPECTED
    from own_setups.fixed import SIGNED_BY_FIX_ONLY, UNSIGNED
    from own_setups.third import THIRD_EXPECTED
    from test_own_held_out import EXPECTED as HELD_OUT

    buggy = [
        n
        for n, (system, _) in {**EXPECTED, **THIRD_EXPECTED, **HELD_OUT}.items()
        if system != "NONE"
    ]
    assert len(buggy) >= 50 and (SIGNED_BY_FIX_ONLY | UNSIGNED) <= set(buggy)
    assert (len(buggy) - len(SIGNED_BY_FIX_ONLY | UNSIGNED)) / len(buggy) >= 0.9
    assert SIGNED_BY_FIX_ONLY <= set(FIXED) and len(FIXED) >= 5


# ---- labkit signs a mechanism in the loss itself ---------------------------------------------


@pytest.mark.slow
def test_labkit_signs_a_loss_mechanism_with_a_reference_loss():
    record = labkit.diagnose(LossFromItem(), seeds=(0, 1))
    assert record.verdict().startswith(
        "CONVICTION: H1 — the loss is cut off from the model's graph"
    )
    row = record.rows["intervention"]
    assert row["data"]["variable"] == "loss_fn" and "reference loss" in row["text"]
    assert row["data"]["met"] and record.rows["confirmation"]["data"]["met"]
    assert record.rows["confirmation"]["data"]["seed"] == 1
    p = record.rows["conviction"]["data"]["prescription"]  # the fix in the code, judged alike
    assert p["touches"] == ["loss_fn"] and p["forecast"] == row["data"]["forecast"]


# ---- the learner signs: the prescription, the refusals, the signature -----------------------


@pytest.fixture(scope="module")
def blocked():
    """A conviction labkit cannot test on the learner's code (a detach() inside the model),
    as diagnose returns it. The tests that use it refuse before anything runs."""
    record = labkit.diagnose(DetachMidModel(), seeds=(0, 1))
    return record, record.to_text(), json.loads(json.dumps(record.to_dict()))


@pytest.mark.slow
def test_prescription_is_in_the_rows_text_and_json(blocked):
    record, text, saved = blocked
    assert "PRESCRIBED: remove the detach() (or no_grad) inside the model's forward" in text
    assert "FORECAST for the fixed run on seeds 0 and 1: loss < " in text
    p = saved["rows"]["intervention"]["data"]["prescription"]
    assert saved["rows"]["intervention"]["status"] == "UNKNOWN"
    assert p["touches"] == ["make_model"] and p["seeds"] == [0, 1]
    forecast = Prediction(p["forecast"])
    for ev in record.intervener.keywords["triage"].evs:  # the baseline meets it on neither seed
        met, observed = forecast.judge(ev.run.table["step"], ev.run.column("loss_raw"))
        assert not met and math.isfinite(observed)
    with pytest.raises(TriageRefused, match="intervention is UNKNOWN"):
        record.verdict()


@pytest.mark.slow
def test_a_fix_that_changes_two_things_is_refused_naming_both(blocked):
    record = blocked[0]
    with pytest.raises(
        TriageRefused,
        match=r"changes 2 things: make_model\(\) .*make_optimizer\(\) "
        r"\(its settings differ: lr 0.05 -> 0.1\)",
    ):
        record.intervene(TwoChanges())
    with pytest.raises(
        TriageRefused, match=r"changes make_optimizer\(\) .* lives in make_model\(\)"
    ):
        record.intervene(WrongPlace())
    assert record.forecast is None and record.rows["intervention"]["status"] == "UNKNOWN"


@pytest.mark.slow
def test_bad_input_is_refused_with_a_sentence(blocked):
    record = blocked[0]
    with pytest.raises(
        TypeError, match=r"fixed_setup='DetachRemoved' is not a setup: it lacks make_model\(\)"
    ):
        record.intervene("DetachRemoved")
    with pytest.raises(ValueError, match="fixed_setup is the setup that was diagnosed, unchanged"):
        record.intervene(record.intervener.keywords["triage"].setup)
    with pytest.raises(TriageRefused, match="changes nothing labkit can see"):
        record.intervene(DetachMidModel())
    with pytest.raises(TriageRefused, match="this record holds none"):
        TriageRecord("by hand").intervene(DetachRemoved())
    with pytest.raises(
        TypeError, match=r"fixed_setup is None; pass an instance of your fixed setup"
    ):
        record.intervene(None)
    with pytest.raises(
        TypeError, match=r"fixed_setup is the class DetachRemoved; pass an instance"
    ):
        record.intervene(DetachRemoved)


class NeverBuilt(DetachRemoved):
    """The right fix, but its make_model never returns."""

    def make_model(self, seed):
        while True:
            time.sleep(0.01)


@pytest.mark.slow
def test_a_fix_that_never_returns_is_stopped_within_its_budget(blocked):
    record = blocked[0]
    assert record.budget_s == 600.0  # what intervene gets by default: the diagnose budget
    started = time.monotonic()
    with pytest.raises(
        ValueError,
        match=r"NeverBuilt.make_model\(0\) was still running when "
        r"the triage's time budget of budget_s=1 s ran out",
    ):
        record.intervene(NeverBuilt(), budget_s=1)
    assert time.monotonic() - started < 6
    assert record.rows["intervention"]["status"] == "UNKNOWN"


@pytest.mark.slow
def test_the_learner_signs_with_the_fix_after_one_that_misses(blocked):
    """The last test to use `blocked` (the file runs in order, on one worker): it signs it."""
    record = blocked[0]
    with pytest.raises(
        TriageRefused, match=r"the forecast was not met on seed 0: the fixed run reads"
    ):
        record.intervene(StillDetached())
    with pytest.raises(TriageRefused, match="did not meet its FORECAST"):
        record.verdict()
    signed = record.intervene(DetachRemoved())
    assert signed == record.verdict()
    assert signed.startswith("CONVICTION: H1 — gradient flow is blocked")
    row = record.rows["intervention"]["data"]
    assert row["fixed_by"] == "DetachRemoved.make_model" and row["met"] and record.forecast.intact()
    assert record.rows["confirmation"]["data"]["met"] and record.seeds == [0, 1]
    assert json.loads(json.dumps(record.to_dict()))["rows"]["intervention"]["data"]["met"] is True
    with pytest.raises(TriageRefused, match="already signed"):
        record.intervene(DetachRemoved())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIXED))
def test_each_fix_signs(name):
    row = sign(
        name, keep=True
    )  # the triage of its batch's test, on this worker (conftest.work_unit)
    assert row["right"], row
    assert row["by_fix"], row["fix"]


def _example(name: str, cls: str, **kwargs):
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_sign_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, cls)(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, cls",
    [("dataloader_classifier", "DataLoaderClassifier"), ("cnn_synthetic_images", "CnnImages")],
)
def test_an_examples_fixed_twin_signs_through_a_constructor_flag(name, cls):
    """The fix is `fixed=True`: the same code, other behaviour in train(), which labkit can only
    take on trust; the forecast still has to be met (the CNN's once-per-epoch reports too)."""
    record = labkit.diagnose(_example(name, cls), seeds=(0, 1))
    assert record.intervene(_example(name, cls, fixed=True)) == record.verdict()
    assert record.rows["intervention"]["data"]["fixed_by"] == f"{cls}.train"
