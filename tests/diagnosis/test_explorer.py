"""The Explorer runs the triage one step at a time; the panel only displays it."""

import pytest

from labkit import diagnose
from labkit.diagnosis.zoo.explorer import STEPS, Explorer
from labkit.widgets import ExplorerPanel


@pytest.mark.slow
def test_steps_run_in_the_chapters_order_and_match_diagnose():
    ex = Explorer("stale_log")
    seen = []
    while ex.next_step:
        seen.append(ex.next_step)
        message = ex.run_next()
        assert message.startswith(seen[-1] + ": ")
    assert seen == list(STEPS)
    assert ex.run_next() == "nothing left to run"
    assert ex.record.verdict() == diagnose("stale_log").verdict()


def test_healthy_setup_skips_the_intervention():
    ex = Explorer()
    ex.run_all()
    assert ex.done == ["baseline", "raw_vs_reported", "overfit", "label_shuffle", "suggest"]
    assert ex.record.verdict().startswith("CONVICTION: NONE")


def test_panel_buttons_drive_the_explorer_and_show_unknown_then_verdict():
    panel = ExplorerPanel(bug="zero_lr", mode="auto")
    assert panel.next_button.description == "Run next: baseline"
    assert panel.form.value.count("fde2e2") == 8  # every row UNKNOWN, highlighted
    assert "no verdict yet" in panel.verdict.value
    panel.next_button.click()  # the real ipywidgets click path, as from the browser
    assert panel.explorer.done == ["baseline"]
    assert panel.form.value.count("fde2e2") == 6
    assert panel.next_button.description == "Run next: raw_vs_reported"
    panel.all_button.click()
    assert panel.next_button.disabled and panel.next_button.description == "Triage complete"
    assert "CONVICTION: H1" in panel.verdict.value and "learning rate is 0" in panel.verdict.value
    assert "fde2e2" not in panel.form.value
    assert repr(panel) == (
        "ExplorerPanel(bug zero_lr; auto mode; steps done: 7; next: none (complete))"
    )


@pytest.mark.slow
def test_panel_works_on_a_setup_one_step_at_a_time():
    from labkit.diagnosis.own.step6_decide.explorer import STEPS as SETUP_STEPS
    from own_setups.h1 import StepNeverCalled

    panel = ExplorerPanel(setup=StepNeverCalled(), mode="auto")
    assert panel.next_button.description == "Run next: check"
    panel.next_button.click()
    assert panel.explorer.done == ["check"] and "setup checked" in "".join(
        panel.explorer.record.notes
    )
    panel.next_button.click()
    assert panel.explorer.done == ["check", "baseline"]
    assert panel.form.value.count("fde2e2") == 6  # hashes and baseline filled, the rest UNKNOWN
    panel.all_button.click()
    assert panel.explorer.done == list(SETUP_STEPS)
    assert "CONVICTION: H1" in panel.verdict.value and "never called" in panel.verdict.value
    assert repr(panel).startswith("ExplorerPanel(setup StepNeverCalled; auto mode; steps done: 8;")


def test_learner_mode_waits_for_the_learners_lines_and_hides_labkits_until_conviction():
    panel = ExplorerPanel(bug="zero_lr")  # learner mode is the default
    assert panel.mode == "learner" and panel.next_button.disabled
    assert "pick the system you suspect" in panel.hint.value
    panel.next_button.click()  # disabled in the browser; a click from code does nothing either
    assert panel.explorer.done == []
    panel.system.value, panel.mechanism.value = "H1", "the optimizer never moves the weights"
    panel.forecast.value = "a flat loss near ln 10"
    assert not panel.next_button.disabled
    panel.next_button.click()
    assert panel.explorer.done == ["baseline"] and panel.forecast.value == ""  # a fresh forecast
    assert "a flat loss near ln 10" in panel.form.value and "baseline" in panel.form.value
    assert "CONVICTION" not in panel.form.value + panel.verdict.value  # nothing of labkit's yet
    while panel.explorer.next_step:
        panel.forecast.value = f"guess for {panel.explorer.next_step}"
        panel.next_button.click()
    assert "learning rate" not in panel.verdict.value  # still hidden before the conviction
    assert not panel.convict_button.disabled
    panel.convict_system.value, panel.convict_mechanism.value = "H2", "the labels are shuffled"
    panel.convict_button.click()
    assert "different system: you H2, labkit H1" in panel.verdict.value
    assert "learning rate is 0" in panel.verdict.value  # labkit's line shows now, beside yours
    assert panel.convict_button.disabled


def test_the_conviction_comparison_marks_shared_and_missing_words():
    from labkit.widgets.explorer_compare import compare_convictions

    text = compare_convictions(
        {"system": "H1", "mechanism": "learning rate set to zero"},
        {"system": "H1", "mechanism": "the learning rate is 0"},
        "",
    )
    assert "same system" in text and "shared words: learning, rate" in text
    assert "only you name: set, zero" in text
