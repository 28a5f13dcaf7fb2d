"""End to end: the interview drill notebook in a real JupyterLab, played with clicks only.

Selects, types and clicks as a learner would: a hypothesis, a sketch preset and Seal,
Run probe, a conviction, then a verbal answer; the check is made on the drill log the
kernel writes. Needs Chromium; without it the test is skipped (see test_browser.py).
"""

import time
from pathlib import Path

import nbformat
import pytest

from labkit.learn.drill.log import DrillLog
from test_browser import lab, lab_page  # noqa: F401,F811 (lab is the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "artifacts" / "browser" / "drill_convicted.png"


def test_play_the_drill_notebook_with_clicks(lab, tmp_path):
    log = tmp_path / "labkit.sqlite3"
    nb = nbformat.read(ROOT / "notebooks" / "interview_drill.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = f"seed = 2\nminutes = None\nlog_path = {str(log)!r}"
    nbformat.write(nb, lab["dir"] / "drill.ipynb")
    errors = []
    with lab_page(lab, "drill.ipynb", errors) as page:

        def select(label, value):
            box = page.locator(".widget-dropdown", has=page.locator(f"label:text-is('{label}')"))
            box.locator("select").select_option(value)

        hypothesis = page.get_by_role("button", name="State hypothesis")
        hypothesis.wait_for(timeout=90_000)
        select("system", "H3")
        page.get_by_placeholder("mechanism, e.g. the logger shows a stale value").fill(
            "the logger may not show the optimised loss"
        )
        hypothesis.click()
        page.get_by_text("hypothesis: H3 the logger may not show").first.wait_for(timeout=20_000)
        page.locator(".labkit-sketch select.preset").select_option("descending")
        page.locator(".labkit-seal").click()
        page.get_by_text("Sealed \u2713").wait_for(timeout=20_000)
        page.get_by_role("button", name="Run probe").click()
        page.get_by_text(
            "outcome: disagree (your forecast read as 'disagree': right)"
        ).first.wait_for(timeout=60_000)
        select("convict", "H3")
        page.get_by_placeholder("the mechanism line").fill("the logger shows a stale value")
        page.get_by_role("button", name="Convict").click()
        page.get_by_text("SCORE: 100").first.wait_for(timeout=30_000)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        page.get_by_placeholder("Say it as you would in an interview ...").fill(
            "Assuming the losses are comparable, this is most likely overfitting. It could "
            "also be a leaky split. I would audit the split for duplicates. Then I would add "
            "weight decay and expect the validation loss to stop rising."
        )
        page.get_by_role("button", name="Check my answer").click()
        page.get_by_text("6 of 6 elements present").wait_for(timeout=20_000)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        attempts = DrillLog(log).attempts() if log.exists() else []
        if len(attempts) == 2:
            break
        time.sleep(0.2)
    kinds = sorted(a["kind"] for a in attempts)
    assert kinds == ["drill", "verbal"], attempts
    drill = next(a for a in attempts if a["kind"] == "drill")
    assert drill["score"] == 100 and drill["bug"] == "stale_log"
    assert not errors, f"page errors: {errors}"
