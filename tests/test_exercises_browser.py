"""Exercises in a real JupyterLab, by mouse. Exercise A: two curves (healthy, detached) in one
sketch. Lab 15: three hypothesis curves on the loss chart and three on the gradient-norm
chart. Each is sealed, the runs go on from the gate, and the kernel scores every curve into
the learner's forecast history. Needs Chromium; without it the tests are skipped."""

import re
import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

from test_browser import _stroke, lab, lab_page  # noqa: F401,F811 (lab is the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]


def scored_entries(prefix="lab15/"):
    from labkit.forecast.history import ForecastHistory
    return [e for e in ForecastHistory().entries()
            if (e["forecast"].get("note") or "").startswith(prefix) and e["score"] is not None]


def run_from(page, text):
    """Click into the code cell holding `text`, then Run > Run Selected Cell and All Below."""
    page.locator(".jp-CodeCell", has_text=text).locator(".jp-InputArea-editor").click()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run Selected Cell and All Below$")).click()


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
        page.get_by_text("Forecast first").wait_for(timeout=90_000)  # Run All stopped, no traceback
        loss, grad = page.locator(".labkit-sketch").nth(0), page.locator(".labkit-sketch").nth(1)
        draw_three(page, loss, [(90, 92), (60, 220), "nan"])  # flat, descending, NaN
        draw_three(page, grad, [(40, 255), (120, 121), (200, 40)])  # to zero, steady, growing
        run_from(page, "loss_sketch.require()")  # on from the gate, as its sentence says
        new = wait_for_scores("lab15/", before, 6)
    notes = sorted(e["forecast"]["note"] for e in new)
    assert notes == ["lab15/H1", "lab15/H1/grad_norm", "lab15/H2", "lab15/H2/grad_norm",
                     "lab15/H3", "lab15/H3/grad_norm"]
    shapes = {e["forecast"]["note"]: e["score"]["shape_predicted"] for e in new}
    assert shapes["lab15/H1"] == "flat" and shapes["lab15/H2"] == "descending"
    assert shapes["lab15/H3"] == "nan"
    assert not errors, errors


def test_exercise_a_two_curves_drawn_in_one_widget_are_sealed_then_scored(lab):
    nb = nbformat.read(ROOT / "solutions" / "ex_a_break_the_graph.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = "seed = 0\nforecast_points = None  # the learner draws"
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, lab["dir"] / "ex_a.ipynb")
    before = len(scored_entries("ex_a/"))
    errors = []
    with lab_page(lab, "ex_a.ipynb", errors, height=1100) as page:
        page.get_by_text("Forecast first").wait_for(timeout=90_000)  # Run All stopped at the gate
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
        run_from(page, "sketch.require()  # a sealed sketch first")
        new = wait_for_scores("ex_a/", before, 2)
    assert sorted(e["forecast"]["note"] for e in new) == ["ex_a/detached", "ex_a/healthy"]
    assert all(e["score"]["shape_predicted"] == "descending" for e in new)
    assert not errors, errors


def test_start_here_a_new_users_first_run_waits_for_the_sketch_then_scores_it(lab):
    nb = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)  # as shipped
    nbformat.write(nb, lab["dir"] / "start.ipynb")
    before = len(scored_entries("start"))
    errors = []
    with lab_page(lab, "start.ipynb", errors, height=1100) as page:
        page.get_by_text("Forecast first").wait_for(timeout=90_000)  # Run All stopped at the gate
        assert page.locator(".jp-OutputArea-output", has_text="loss at step 0").count() == 0
        widget = page.locator(".labkit-sketch").first
        svg = widget.locator("svg")
        svg.scroll_into_view_if_needed()
        _stroke(page, svg, 75, 230)
        widget.locator(".labkit-seal").click()
        expect(widget.locator(".labkit-seal")).to_have_text(re.compile("Sealed"), timeout=30_000)
        run_from(page, "sketch.require()")
        new = wait_for_scores("start", before, 1)
        page.locator(".jp-OutputArea-output", has_text="loss at step 0").first.wait_for(timeout=60_000)
    assert [e["forecast"]["note"] for e in new] == ["start/loss"]
    assert not errors, errors
