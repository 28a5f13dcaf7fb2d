"""The Explorer runs the triage one step at a time; the panel only displays it."""

from labkit import diagnose
from labkit.diagnosis.explorer import STEPS, Explorer
from labkit.widgets import ExplorerPanel


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
    panel = ExplorerPanel(bug="zero_lr")
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
    assert repr(panel) == ("ExplorerPanel(bug zero_lr; steps done: 7; next: none (complete))")
