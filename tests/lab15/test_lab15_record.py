"""Lab 15's strict record: one test per refusal the chapter's Training Run Explorer makes.

Runs are real (mystery A, 50 steps, a fraction of a second each); the probes are real too,
run once per module.
"""

import pytest

from labkit import Forecast
from labkit.diagnosis import lab15
from labkit.diagnosis.record.triage import TriageRecord, TriageRefused
from labkit.probes import label_shuffle_control, overfit_probe, raw_vs_reported

pytestmark = pytest.mark.lab15

MYSTERY = "A"
CHANGE = {"fix": "logger"}
FORECAST = "loss_reported > 0.5 by step 45"


def sketches(loss=None, grad=None, nan=None):
    """Sealed H1/H2/H3 loss and gradient-norm sketches, as {name: Forecast} dicts."""
    loss = loss or {
        "H1": [[0, 2.3], [20, 2.6]],
        "H2": [[0, 2.3], [49, 2.3]],
        "H3": [[0, 2.3], [49, 1.2]],
    }
    grad = grad or {
        "H1": [[0, 0.5], [20, 20.0]],
        "H2": [[0, 0.5], [49, 0.5]],
        "H3": [[0, 0.5], [49, 0.7]],
    }
    nan = {"H1": 25} if nan is None else nan
    cfg = lab15.config(MYSTERY)
    make = lambda pts: {h: Forecast(p, nan_step=nan.get(h)).seal(cfg) for h, p in pts.items()}  # noqa: E731
    return make(loss), make(grad)


def intervention_sketch():
    return Forecast([[0, 2.3], [25, 1.7], [49, 1.3]]).seal(lab15.config(MYSTERY))


@pytest.fixture(scope="module")
def probes():
    baseline = lab15.run_mystery(MYSTERY)
    model, batch, forward, loss_fn = lab15.pipeline(MYSTERY)
    overfit = overfit_probe(model, batch, forward=forward, loss_fn=loss_fn)
    shuffle = label_shuffle_control(model, batch, real=overfit, forward=forward, loss_fn=loss_fn)
    return raw_vs_reported(baseline), overfit, shuffle


def filled(probes, upto="label_shuffle", beliefs=True):
    """A strict record filled in order up to the row `upto`, each with its belief."""
    rvr, overfit, shuffle = probes
    rec = TriageRecord("test", strict=True)
    rec.predict(*sketches())
    base = lab15.run_mystery(MYSTERY)
    rec.record_hashes(base)
    steps = [
        ("baseline", lambda: rec.record_baseline(base)),
        ("raw_vs_reported", lambda: rec.record_probe("raw_vs_reported", rvr)),
        ("overfit", lambda: rec.record_probe("overfit", overfit)),
        ("label_shuffle", lambda: rec.record_probe("label_shuffle", shuffle)),
    ]
    for row, do in steps:
        do()
        if beliefs:
            rec.believe(row, f"H3 still leads after the {row} row of the record")
        if row == upto:
            break
    return rec


def planned(probes):
    rec = filled(probes)
    rec.plan_intervention(
        lab15.setup(MYSTERY), lab15.setup(MYSTERY, **CHANGE), FORECAST, sketch=intervention_sketch()
    )
    return rec


def complete(probes, system="H3", mechanism="the logger divides the epoch sum by 500"):
    rec = planned(probes)
    first, second = lab15.seeds(MYSTERY)
    rec.record_intervention_run(lab15.run_mystery(MYSTERY, **CHANGE))
    rec.believe("intervention", "H3 confirmed on the first seed")
    rec.record_confirmation(lab15.run_mystery(MYSTERY, seed=second, **CHANGE))
    rec.believe("confirmation", "H3 holds on the second seed")
    rec.convict(system, mechanism)
    return rec


def test_a_complete_record_gives_a_verdict_and_round_trips(probes):
    rec = complete(probes)
    assert rec.verdict().startswith("CONVICTION: H3")
    again = TriageRecord.from_dict(rec.to_dict())
    assert again.strict and again.attempts == 1 and again.verdict() == rec.verdict()
    assert "UPDATED BELIEF: H3 holds on the second seed" in str(rec)
    assert "Conviction attempts:" in str(rec)


def test_a_verdict_is_refused_while_an_updated_belief_is_missing(probes):
    rec = complete(probes)
    del rec.rows["overfit"]["data"]["belief"]
    with pytest.raises(TriageRefused, match="the overfit row has no UPDATED BELIEF"):
        rec.verdict()


def test_the_next_row_waits_for_the_last_rows_belief(probes):
    rec = filled(probes, upto="baseline", beliefs=False)
    with pytest.raises(TriageRefused, match=r"UPDATED BELIEF of the baseline row first"):
        rec.record_probe("raw_vs_reported", probes[0])
    with pytest.raises(TriageRefused, match="says which hypotheses"):
        rec.believe("baseline", "looks odd")  # a belief names H1, H2 or H3


def test_a_verdict_is_refused_while_an_observation_is_missing(probes):
    rec = complete(probes)
    del rec.rows["baseline"]["data"]["observation"]
    with pytest.raises(TriageRefused, match="the baseline row has no OBSERVATION"):
        rec.verdict()


def test_the_observation_holds_loss_and_gradient_norm_at_fixed_steps_verbatim(probes):
    rec = filled(probes, upto="baseline")
    base = lab15.run_mystery(MYSTERY)
    values = rec.rows["baseline"]["data"]["observation_values"]
    assert values["steps"] == [0, 10, 25, 49]
    assert values["loss"] == [base.table["loss_raw"][s] for s in values["steps"]]
    assert values["grad_norm"] == [base.table["grad_norm"][s] for s in values["steps"]]


def test_a_row_out_of_order_is_refused_with_the_reason(probes):
    rec = TriageRecord("test", strict=True)
    rec.predict(*sketches())
    with pytest.raises(
        TriageRefused, match="comes after the hashes row.*instrumentation \\(H3\\) is checked first"
    ):
        rec.record_probe("raw_vs_reported", probes[0])
    rec = filled(probes, upto="raw_vs_reported")
    with pytest.raises(TriageRefused, match="label_shuffle row comes after the overfit row"):
        rec.record_probe("label_shuffle", probes[2])
    with pytest.raises(TriageRefused, match="intervention row comes after the overfit row"):
        rec.plan_intervention(
            lab15.setup(MYSTERY),
            lab15.setup(MYSTERY, **CHANGE),
            FORECAST,
            sketch=intervention_sketch(),
        )
    with pytest.raises(TriageRefused, match="conviction row comes after the overfit row"):
        rec.convict("H3", "the logger divides by 500")


def test_a_probe_waits_for_three_sealed_distinct_sketches(probes):
    rec = TriageRecord("test", strict=True)
    with pytest.raises(TriageRefused, match="waits for your three sealed sketches"):
        rec.record_probe("raw_vs_reported", probes[0])
    same = {"H1": [[0, 2.3], [49, 2.3]], "H2": [[0, 2.3], [49, 2.3]], "H3": [[0, 2.3], [49, 1.2]]}
    grads = {"H1": [[0, 0.5], [49, 0.5]], "H2": [[0, 0.5], [49, 0.5]], "H3": [[0, 0.5], [49, 0.5]]}
    with pytest.raises(TriageRefused, match="H1 and H2 predict the same curves"):
        rec.predict(*sketches(same, grads, nan={}))
    unsealed = {h: Forecast(p) for h, p in same.items()}
    with pytest.raises(TriageRefused, match="H1 loss sketch is not sealed"):
        rec.predict(unsealed, sketches()[1])


def test_flat_loss_hypotheses_are_told_apart_by_the_gradient_norm():
    """Mystery C's right answer: H1 and H2 both flat, H1 with zero gradient flow."""
    loss = {"H1": [[0, 2.3], [49, 2.3]], "H2": [[0, 2.3], [49, 2.3]], "H3": [[0, 2.3], [49, 1.2]]}
    grad = {
        "H1": [[0, 0.5], [10, 1e-4], [49, 1e-4]],
        "H2": [[0, 0.5], [49, 0.5]],
        "H3": [[0, 0.5], [49, 0.6]],
    }
    shapes = TriageRecord("test", strict=True).predict(*sketches(loss, grad, nan={}))
    assert (shapes["H1"]["loss"], shapes["H1"]["grad_norm"]) == ("flat", "zero")
    assert (shapes["H2"]["loss"], shapes["H2"]["grad_norm"]) == ("flat", "steady")


def test_sketches_after_a_probe_are_hindsight(probes):
    rec = filled(probes, upto="raw_vs_reported")
    with pytest.raises(TriageRefused, match="would be hindsight"):
        rec.predict(*sketches())


def test_a_run_that_is_not_the_declared_setup_is_refused(probes):
    first, second = lab15.seeds(MYSTERY)
    rec = planned(probes)
    with pytest.raises(TriageRefused, match="not the declared setup: it differs in fix"):
        rec.record_intervention_run(lab15.run_mystery(MYSTERY))  # the baseline, not the change
    with pytest.raises(TriageRefused, match="has seed 4 but the hashes row holds 3"):
        rec.record_intervention_run(lab15.run_mystery(MYSTERY, seed=second, **CHANGE))
    rec.record_intervention_run(lab15.run_mystery(MYSTERY, **CHANGE))
    rec.believe("intervention", "H3 supported: the logger misreports the raw loss")
    with pytest.raises(TriageRefused, match="differs in lr_factor"):
        rec.record_confirmation(lab15.run_mystery(MYSTERY, seed=second, lr_factor=0.5, **CHANGE))
    with pytest.raises(TriageRefused, match="must use a second seed"):
        rec.record_confirmation(lab15.run_mystery(MYSTERY, **CHANGE))


def test_the_parent_must_be_the_baseline_and_a_sketch_comes_with_the_forecast(probes):
    rec = filled(probes)
    with pytest.raises(TriageRefused, match="is not the baseline's setup"):
        rec.plan_intervention(
            lab15.setup("B"), lab15.setup("B", fix="data"), FORECAST, sketch=intervention_sketch()
        )
    with pytest.raises(TriageRefused, match="needs its sealed sketch too"):
        rec.plan_intervention(lab15.setup(MYSTERY), lab15.setup(MYSTERY, **CHANGE), FORECAST)


def test_a_forecast_the_baseline_already_meets_is_refused_as_uninformative(probes):
    rec = filled(probes)
    parent, child = lab15.setup(MYSTERY), lab15.setup(MYSTERY, **CHANGE)
    with pytest.raises(TriageRefused, match="baseline already meets 'loss < 100 by step 40'"):
        rec.plan_intervention(parent, child, "loss < 100 by step 40", sketch=intervention_sketch())
    with pytest.raises(TriageRefused, match="baseline ran to step 49 only"):
        rec.plan_intervention(parent, child, "loss < 100 by step 150", sketch=intervention_sketch())


def test_an_lr_verdict_needs_a_passed_overfit_row(probes):
    rvr, overfit, shuffle = probes
    stalled = type(overfit)(overfit.probe, "stalls", {**overfit.details, "reached": False})
    rec = complete((rvr, stalled, shuffle), system="H3")
    with pytest.raises(TriageRefused, match="needs a passed overfit row"):
        rec.convict("H1", "the learning rate is too low to move the weights")
    rec.convict("H1", "a hand-written loss cannot descend")  # not about the LR: no gate
    ok = complete(probes, system="H1", mechanism="the scheduler drives the lr to zero")
    assert ok.rows["conviction"]["data"]["system"] == "H1"


def test_conviction_attempts_are_counted(probes):
    rec = complete(probes)
    rec.convict("H2", "the labels were shuffled apart from the inputs")
    rec.convict("H3", "the logger divides by 500")
    assert rec.attempts == 3
    assert "Conviction attempts:             3" in str(rec)


def test_the_automatic_record_keeps_its_old_rules():
    """labkit.diagnose fills a plain record, in its own order, with no beliefs."""
    rec = TriageRecord("plain")
    rec.convict("H1", "a guess")  # no order, no gate
    assert not rec.strict and rec.attempts == 0
    assert "no seed has run the decisive test yet" in "; ".join(rec.missing())


def test_a_convicted_record_is_kept_in_the_learner_store(probes, tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    from labkit.store.learner import default_store

    rec = complete(probes)
    kept = default_store().records("triage")
    assert [r["key"] for r in kept] == [rec.kept_as]
    assert kept[0]["body"]["rows"]["conviction"]["data"]["system"] == "H3"


@pytest.mark.parametrize(
    "belief",
    [
        "H3 ruled out: the raw and reported losses agree",
        "H3 ruled out: raw and reported match at every step",
        "H3 unlikely since the logger is honest about the raw loss",
    ],
)
def test_a_belief_that_contradicts_the_probe_line_above_is_refused_naming_it(probes, belief):
    rec = filled(probes, upto="baseline", beliefs=False)
    rec.believe("baseline", "H3 and H1 stay open: the raw loss falls while the dashboard is flat")
    rec.record_probe("raw_vs_reported", probes[0])
    assert rec.rows["raw_vs_reported"]["text"].startswith("disagree over 50 steps")
    with pytest.raises(TriageRefused, match="'disagree over 50 steps'"):
        rec.believe("raw_vs_reported", belief)
    assert "belief" not in rec.rows["raw_vs_reported"]["data"]
    rec.believe("raw_vs_reported", "H3 supported: raw and reported do not agree at any step")


@pytest.mark.parametrize("belief", ["H3", "H3 asdf qwer", "H2 asdf qwer zxcv hjkl", "H1 because."])
def test_a_belief_that_says_nothing_is_refused(probes, belief):
    rec = filled(probes, upto="baseline", beliefs=False)
    with pytest.raises(TriageRefused, match="says nothing about the run"):
        rec.believe("baseline", belief)


@pytest.mark.parametrize("line", ["logger bug", "asdf qwer zxcv hjkl", "something is wrong here"])
def test_a_mechanism_line_that_says_nothing_is_refused(probes, line):
    rec = planned(probes)
    rec.record_intervention_run(lab15.run_mystery(MYSTERY, **CHANGE))
    rec.believe("intervention", "H3 confirmed on the first seed")
    rec.record_confirmation(lab15.run_mystery(MYSTERY, seed=lab15.seeds(MYSTERY)[1], **CHANGE))
    rec.believe("confirmation", "H3 holds on the second seed")
    with pytest.raises(TriageRefused, match="this mechanism line .* says nothing about the run"):
        rec.convict("H3", line)
    assert rec.attempts == 0  # a line that says nothing is not an attempt
