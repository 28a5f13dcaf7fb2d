"""Exercises in a real JupyterLab, by mouse. Run All waits at the run cell for the seal; the
learner draws and seals, and the rest runs by itself. Exercise A plays the first hour: two
curves sealed, the runs and answers, the notebook saved and graded; then Restart Kernel and
Run All flows through with no redraw and grades the same. Lab 15: three hypothesis curves on
the loss chart and three on the gradient-norm chart. Needs Chromium; without it the tests
are skipped."""

import os
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
import warm_kernels
from playwright.sync_api import expect

from test_browser import _stroke, lab, lab_page  # noqa: F401,F811 (lab is the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def scored_entries(prefix="lab15/"):
    from labkit.forecast.history import ForecastHistory

    return [
        e
        for e in ForecastHistory().entries()
        if (e["forecast"].get("note") or "").startswith(prefix) and e["score"] is not None
    ]


WAITING = "waiting for your sealed forecast"  # the run cell's one line while it waits


def menu(page, top, item):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}")).click()


def last_output(page, text, seconds=240):
    """Wait until some output holds `text` (the notebook's last cell has run)."""
    page.locator(".jp-OutputArea-output", has_text=text).first.wait_for(timeout=seconds * 1000)


def grade(path):
    """`labkit grade` on the saved notebook: (exit code, output)."""
    out = subprocess.run(
        warm_kernels.command("labkit.cli", "grade", str(path), "--sandbox", "none"),  # warm
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **warm_kernels.client_env()},
    )
    return out.returncode, out.stdout + out.stderr


def wait_for_scores(prefix, before, n, seconds=180):
    deadline = time.monotonic() + seconds
    while len(scored_entries(prefix)) < before + n:
        assert time.monotonic() < deadline, f"the kernel never scored the {n} sketches"
        time.sleep(0.5)
    return scored_entries(prefix)[before:]


def draw_three(page, widget, strokes):
    """Draw H1, H2, H3 on one sketch widget: a (y0, y1) stroke, or "nan" for the NaN preset."""
    svg = widget.locator("svg")
    svg.scroll_into_view_if_needed()
    for name, how in zip(("H1", "H2", "H3"), strokes):
        widget.locator(".legend .series", has_text=name).click()
        expect(widget.locator(".legend .series.active")).to_have_text(re.compile(name))
        expect(widget).not_to_have_class(re.compile(r"is-switching"), timeout=30_000)
        if how == "nan":
            widget.locator("select.preset").select_option("nan")
            expect(widget.locator(".nan-line")).to_have_count(1, timeout=10_000)
        else:
            for attempt in range(3):  # a drag that missed the chart (the page moved) is redone
                _stroke(page, svg, *how)
                try:
                    expect(widget.locator("circle.point").first).to_be_visible(timeout=10_000)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
    widget.locator(".labkit-seal").click()
    expect(widget.locator(".labkit-seal")).to_have_text(re.compile("Sealed"), timeout=30_000)


def test_three_hypotheses_drawn_on_two_charts_are_sealed_then_scored(lab):
    nb = nbformat.read(ROOT / "exercises" / "lab15_one_variable_intervention.ipynb", as_version=4)
    nbformat.write(nb, lab["dir"] / "lab15.ipynb")
    before = len(scored_entries())
    errors = []
    with lab_page(lab, "lab15.ipynb", errors, height=1100) as page:
        page.get_by_text(WAITING).wait_for(timeout=90_000)  # Run All waits at the gate
        loss, grad = page.locator(".labkit-sketch").nth(0), page.locator(".labkit-sketch").nth(1)
        draw_three(page, loss, [(90, 92), (60, 220), "nan"])  # flat, descending, NaN
        draw_three(page, grad, [(40, 255), (120, 121), (200, 40)])  # to zero, steady, growing
        new = wait_for_scores("lab15/", before, 6)  # on by itself, no click
    notes = sorted(e["forecast"]["note"] for e in new)
    assert notes == [
        "lab15/H1",
        "lab15/H1/grad_norm",
        "lab15/H2",
        "lab15/H2/grad_norm",
        "lab15/H3",
        "lab15/H3/grad_norm",
    ]
    shapes = {e["forecast"]["note"]: e["score"]["shape_predicted"] for e in new}
    assert shapes["lab15/H1"] == "flat" and shapes["lab15/H2"] == "descending"
    assert shapes["lab15/H3"] == "nan"
    assert not errors, errors


def test_first_hour_exercise_a_run_all_seal_runs_on_then_grades_and_survives_a_restart(lab):
    nb = nbformat.read(ROOT / "solutions" / "ex_a_break_the_graph.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = "seed = 0\nforecast_points = None  # the learner draws"
    exercise = nbformat.read(ROOT / "exercises" / "ex_a_break_the_graph.ipynb", as_version=4)
    asked = next(c for c in exercise.cells if "ask_prediction(" in c.source)
    typed = next(i for i, c in enumerate(nb.cells) if c.get("id") == asked.get("id"))
    nb.cells[typed].source = asked.source  # the prediction is answered in the form, by clicks
    for cell in nb.cells:  # the other answers are typed in; nothing has run yet
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, lab["dir"] / "ex_a.ipynb")
    last = "forecast(s)"  # what the notebook's last cell (the calibration record) prints
    before = len(scored_entries("ex_a/"))
    errors, timings = [], {}
    with lab_page(lab, "ex_a.ipynb", errors, height=1100) as page:
        page.get_by_text("waiting for your sealed prediction and sketch").wait_for(
            timeout=120_000
        )  # Run All waits once, at the check of the prediction form
        widget = page.locator(".labkit-sketch").first
        svg = widget.locator("svg")
        svg.scroll_into_view_if_needed()
        _stroke(page, svg, 60, 230)  # healthy: falls far
        widget.locator(".legend .series", has_text="detached").click()
        expect(widget.locator("polyline.other")).to_have_count(1, timeout=10_000)
        expect(widget).not_to_have_class(re.compile(r"is-switching"), timeout=30_000)
        _stroke(page, svg, 60, 120)  # detached: falls less
        widget.locator(".labkit-seal").click()
        expect(widget.locator(".labkit-seal")).to_have_text(re.compile("Sealed"), timeout=30_000)
        form = page.locator(".labkit-prediction").first  # the prediction, by clicks
        form.scroll_into_view_if_needed()
        form.locator(".labkit-seal").click()  # nothing answered yet: a sentence, no seal
        expect(form.locator(".status")).to_contain_text("still empty", timeout=30_000)
        for group in ("backbone.0", "backbone.2"):
            form.locator("label", has_text=group).locator("input").check()
        form.locator(".question", has_text="head_learns").locator("select").select_option("True")
        form.locator("textarea").fill("backward stops at the detach; the head still learns")
        form.locator(".labkit-seal").click()
        expect(form.locator(".labkit-seal")).to_have_text("Sealed", timeout=30_000)
        started = time.monotonic()
        new = wait_for_scores("ex_a/", before, 2)  # the runs went on with no further click
        last_output(page, last)
        timings["seal to last cell"] = time.monotonic() - started
        page.keyboard.press("Control+s")
        page.wait_for_timeout(2000)
        code, first = grade(lab["dir"] / "ex_a.ipynb")

        menu(page, "Kernel", "Restart Kernel and Run All Cells")
        page.locator(".jp-Dialog-button", has_text="Restart").click()
        started = time.monotonic()
        page.locator(".jp-OutputArea-output", has_text=last).first.wait_for(
            state="detached", timeout=60_000
        )
        expect(page.locator(".labkit-prediction .status").first).to_contain_text(
            "Restored from your store", timeout=120_000
        )  # the form, sealed, from the store
        expect(page.locator(".labkit-sketch .status").first).to_have_text(  # from the store
            re.compile("Sealed at .* restored from your store"), timeout=120_000
        )
        last_output(page, last)  # the last cell again, no redraw
        timings["restart to last cell"] = time.monotonic() - started
        page.keyboard.press("Control+s")
        page.wait_for_timeout(2000)
        code_again, again = grade(lab["dir"] / "ex_a.ipynb")
    assert sorted(e["forecast"]["note"] for e in new) == ["ex_a/detached", "ex_a/healthy"]
    assert all(e["score"]["shape_predicted"] == "descending" for e in new)
    assert len(scored_entries("ex_a/")) == before + 2  # the restart added no forecast
    rows = lambda text: sorted(line for line in text.splitlines() if "ex_a_" in line)  # noqa: E731
    assert code == 0 and "ex_a: 5/5 passed, 0 failed, 0 not yet answered" in first, first
    assert code_again == 0 and rows(again) == rows(first), again
    assert not errors, errors
    print(f"first hour, Exercise A: {timings}")


def test_start_here_a_new_users_first_run_waits_for_the_sketch_then_scores_it(lab):
    nb = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)  # as shipped
    nbformat.write(nb, lab["dir"] / "start.ipynb")
    before = len(scored_entries("start"))
    errors = []
    with lab_page(lab, "start.ipynb", errors, height=1100) as page:
        page.get_by_text(WAITING).wait_for(timeout=90_000)  # Run All waits at the gate
        assert page.locator(".jp-OutputArea-output", has_text="loss at step 0").count() == 0
        widget = page.locator(".labkit-sketch").first
        svg = widget.locator("svg")
        svg.scroll_into_view_if_needed()
        _stroke(page, svg, 75, 230)
        widget.locator(".labkit-seal").click()
        expect(widget.locator(".labkit-seal")).to_have_text(re.compile("Sealed"), timeout=30_000)
        new = wait_for_scores("start", before, 1)  # the rest runs by itself
        page.locator(".jp-OutputArea-output", has_text="loss at step 0").first.wait_for(
            timeout=60_000
        )
    assert [e["forecast"]["note"] for e in new] == ["start/loss"]
    assert not errors, errors
