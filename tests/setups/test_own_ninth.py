"""The ninth batch (tests/own_setups/ninth.py, issue 46): kinds scored before their rules, each
with healthy twins. The whole batch is scored by `own_setups.score_all` (and `score_ninth`);
here, the measurements each rule decides on, read on the batch's own setups in well under a
second each, and two whole triages: a warm-up longer than the run (convicted) and a linear probe
on a pretrained body (acquitted, the faster unfrozen loop as advice)."""

import copy
import math

import pytest

import own_setups.report as report
from own_setups.ninth import (
    NINTH,
    NINTH_EXPECTED,
    LmDoubleShift,
    LmShiftedOnce,
    LoglikNoMinus,
    LoglikWithMinus,
    SeqFirstShifted,
    SeqFirstUnshifted,
    SummedLossMomentum,
    SummedRegression,
)
from own_setups.score_ninth import triage

from labkit import Run
from labkit.diagnosis.own import baseline
from labkit.diagnosis.own.step4_h1 import lossrange
from labkit.diagnosis.own.step3_h2 import offset
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence


@pytest.fixture(autouse=True)
def _ninth(monkeypatch):
    monkeypatch.setattr(report, "SETUPS", {**report.SETUPS, **NINTH})
    monkeypatch.setattr(report, "EXPECTED", {**report.EXPECTED, **NINTH_EXPECTED})


class _Ev:
    """The piece of SeedEvidence that `baseline.fails` reads: the learner's run."""

    def __init__(self, raw):
        self.seed, self.results = 0, {}
        self.run = Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw}, seed=0, started_at=0.0
        )

    def once(self, key, make):
        return self.results.setdefault(key, make())


@pytest.mark.parametrize(
    "raw, fails",
    [
        ([2.0] * 50 + [1.9] * 50, "does not learn"),  # a plateau at its start
        ([2.0 - 0.019 * i for i in range(100)], None),  # learns
        (
            [2.0] + [0.01 + 1e-3 * (i % 7) for i in range(99)],
            None,
        ),  # noise at the bottom is no failure
        ([2.0] * 20 + [0.1] * 40 + [1.5] * 40, "loses what it learned"),
        ([2.0] * 50 + [math.nan] * 50, "non-finite"),
    ],
)
def test_baseline_fails_by_the_runs_own_test(raw, fails):
    why = baseline.fails(_Ev(raw))
    assert (why is None) if fails is None else (fails in why), why


@pytest.mark.parametrize(
    "setup, ratio",
    [
        (LoglikNoMinus, -1.0),
        (LoglikWithMinus, 1.0),
        (SummedLossMomentum, 32.0),
        (SummedRegression, 32.0),
    ],
)
def test_the_learners_loss_against_the_reference_at_init(setup, ratio):
    assert lossrange._ratio(lossrange.relation(SeedEvidence(setup(), 0))) == pytest.approx(
        ratio, rel=1e-4
    )


@pytest.mark.parametrize(
    "setup, axis, k",
    [
        (LmDoubleShift, 1, 2),
        (LmShiftedOnce, 1, 1),
        (SeqFirstUnshifted, 0, 0),
        (SeqFirstShifted, 0, 1),
    ],
)
def test_the_offset_is_measured_through_the_loss_call(setup, axis, k):
    s = setup()
    m = offset.measure(s, 0, s.batches(0)[0])
    assert (m["axis"], m["offset"]) == (axis, k) and m["share"] > 0.99, m


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ninth_h1_warmup_longer_than_run", "ninth_ok_linear_probe"])
def test_two_ninth_setups_triaged_whole(name):
    row = triage(name)
    assert row["right_system"] and row["right_mechanism"] and row["granted"], (
        row["system"],
        row["mechanism"],
    )
    if name == "ninth_ok_linear_probe":
        notes = report.record_of(name).notes
        assert any(n.startswith("advice, not a defect") for n in notes), notes


class _ShiftedOnce(SeqFirstUnshifted):
    """The learner's one-change fix: the targets one step ahead (batches() only)."""

    SHIFT = 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ninth_h2_seq_first_unshifted"])
def test_sequence_first_targets_are_signed_on_the_next_token_loss_by_labkit_and_the_fix(name):
    """labkit's own run scores the next token along the time axis it measured (axis 0 here);
    the learner's fix is judged on that same loss, not on one read batch-first."""
    row = report.triage(name, keep=True)
    record = report.record_of(name)
    assert row["right_mechanism"] and row["granted"], row["mechanism"][:200]
    assert "sequence-first" in record.rows["intervention"]["text"]
    assert record.rows["conviction"]["data"]["prescription"]["judged_by"] == "reference:next:0"
    signed = copy.deepcopy(record).intervene(_ShiftedOnce())
    assert signed.startswith("CONVICTION: H2")


def test_the_logger_is_named_by_the_candidates_that_rebuild_its_reports():
    from labkit.diagnosis.own.step2_h3 import rebuild

    raw = [2.0 - 0.1 * t for t in range(12)]  # falls from 2.0, in 3 epochs of 4
    rows = list(range(12))
    int_total = [
        sum(int(v) for v in raw[t - t % 4 : t + 1]) / (t % 4 + 1) for t in rows
    ]  # each add truncates
    assert rebuild.reproducing(raw, int_total, rows, 4) == ["int_total"]
    first = [raw[0]] * 12  # a falling loss: the first value is also the running max
    assert rebuild.reproducing(raw, first, rows, 4) == ["first_value", "running_max"]
    run = Run.from_log(
        {"step": rows, "loss_raw": raw, "loss_reported": first}, seed=0, started_at=0.0
    )
    key, line = rebuild.explain(run, 4)
    assert key == "first_value|running_max" and "tell them apart" in line
    honest = [sum(raw[t - t % 4 : t + 1]) / (t % 4 + 1) for t in rows]
    assert rebuild.reproducing(raw, honest, rows, 4) == []
