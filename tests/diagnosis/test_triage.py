"""TriageRecord enforces the chapter's rules; each refusal names what is missing."""

import json
import time

import pytest

import labkit
from labkit.probes import overfit_probe, raw_vs_reported
from labkit.diagnosis.record.triage import Prediction, TriageRecord, TriageRefused


def _filled(seed_runs=(0, 1)):
    rec = TriageRecord("stale logger")
    base = labkit.train(bug="stale_log", steps=50)
    rec.record_hashes(base)
    rec.record_baseline(base)
    rec.record_probe("raw_vs_reported", raw_vs_reported(base))
    rec.set_row("overfit", "reaches ~0")
    rec.set_row("label_shuffle", "differs")
    return rec


def test_prediction_grammar_and_judgement():
    p = Prediction("loss < 1.5 by step 100")
    assert p.parse() == {"column": "loss_raw", "op": "<", "value": 1.5, "step": 100}
    with pytest.raises(ValueError, match="'<column> < or > <number> by step <N>'"):
        Prediction("loss goes down soon")
    with pytest.raises(ValueError, match="Did you mean 'loss_reported'"):
        Prediction("loss_reportd < 1 by step 5")
    p.seal()
    run = labkit.train(steps=120)
    met, observed = p.check(run)
    window = run.table["loss_raw"][91:101]
    assert met and observed == pytest.approx(sum(window) / 10)


def test_intervention_changing_two_variables_is_refused_naming_keys():
    rec = _filled()
    parent = {"lr": 0.1, "seed": 0, "bug": "stale_log"}
    with pytest.raises(TriageRefused, match="changes 2: bug, lr"):
        rec.plan_intervention(parent, {**parent, "lr": 0.01, "bug": None}, "loss < 1 by step 100")
    with pytest.raises(TriageRefused, match="changes nothing"):
        rec.plan_intervention(parent, dict(parent), "loss < 1 by step 100")


def test_forecast_must_be_sealed_before_the_run_and_edits_are_detected():
    rec = _filled()
    early = labkit.train(steps=160)  # started before the forecast exists
    time.sleep(0.01)
    rec.plan_intervention({"bug": "stale_log"}, {"bug": None}, "loss_reported < 1.0 by step 150")
    with pytest.raises(TriageRefused, match="sealed after this run started"):
        rec.record_intervention_run(early)
    rec.forecast.text = "loss_reported < 9.0 by step 150"  # moving the goalposts
    with pytest.raises(TriageRefused, match="edited after it was sealed"):
        rec.record_intervention_run(labkit.train(steps=160))
    with pytest.raises(TriageRefused, match="already sealed"):
        rec.forecast.seal()


def test_verdict_refused_until_rows_known_and_two_seeds():
    rec = _filled()
    with pytest.raises(TriageRefused) as info:
        rec.verdict()
    msg = str(info.value)
    for part in (
        "intervention is UNKNOWN",
        "confirmation is UNKNOWN",
        "conviction is UNKNOWN",
        "no seed has run the decisive test yet",
    ):
        assert part in msg
    rec.plan_intervention({"bug": "stale_log"}, {"bug": None}, "loss_reported < 1.0 by step 150")
    assert rec.record_intervention_run(labkit.train(steps=160, seed=0))
    rec.convict("H3", "the logger reports a stale value")
    with pytest.raises(TriageRefused, match=r"confirmation is UNKNOWN.*rests on one seed \(0\)"):
        rec.verdict()
    with pytest.raises(TriageRefused, match="must use a second seed"):
        rec.record_confirmation(labkit.train(steps=160, seed=0))
    assert rec.record_confirmation(labkit.train(steps=160, seed=1))
    assert rec.verdict() == "CONVICTION: H3 — the logger reports a stale value"


def test_missed_forecast_blocks_the_verdict():
    rec = _filled()
    rec.plan_intervention({"lr": 0.1}, {"lr": 0.0}, "loss < 1.0 by step 150")
    assert not rec.record_intervention_run(labkit.train(steps=160, lr=0.0))
    assert not rec.record_confirmation(labkit.train(steps=160, lr=0.0, seed=1))
    rec.convict("H1", "guess")
    with pytest.raises(TriageRefused, match="intervention run did not meet its FORECAST"):
        rec.verdict()


def test_renders_text_and_html_with_unknown_highlighted():
    rec = _filled()
    text = rec.to_text()
    assert "H3 raw-vs-reported:" in text and "disagree" in text and "UNKNOWN" in text
    page = rec._repr_html_()
    assert "background:#fde2e2" in page and "no verdict yet" in page
    with pytest.raises(ValueError, match="Did you mean 'overfit'"):
        rec.set_row("overfitt", "x")
    with pytest.raises(ValueError, match="system='H4'"):
        rec.convict("H4", "x")


def test_save_load_round_trip_and_tamper_detection(tmp_path):
    rec = _filled()
    rec.record_probe(
        "overfit",
        overfit_probe(
            labkit.MLP(), (labkit.make_blobs().train["x"][:64], labkit.make_blobs().train["y"][:64])
        ),
    )
    rec.plan_intervention({"bug": "stale_log"}, {"bug": None}, "loss_reported < 1.0 by step 150")
    path = tmp_path / "triage.json"
    rec.save(path)
    back = TriageRecord.load(path)
    assert back.to_text() == rec.to_text()
    assert back.forecast.intact()
    data = json.loads(path.read_text())
    data["forecast"]["text"] = "loss_reported < 5.0 by step 150"
    path.write_text(json.dumps(data))
    assert not TriageRecord.load(path).forecast.intact()
    assert "the forecast was edited after sealing" in TriageRecord.load(path).missing()
    rec.save(path)  # a second save keeps the previous good copy as triage.json.bak
    path.write_text("{broken")
    with pytest.raises(ValueError, match="not valid JSON.*last good copy"):
        TriageRecord.load(path)
