"""The sketch gate in both front ends, JupyterLab and Jupyter Notebook 7, by mouse: Run All
waits at the run cell, the learner draws and seals, the run goes on by itself and stops at an
exercise's `NotImplementedError` stub, and then the kernel indicator reads idle (it stayed
"Busy" when the cells that Run All had queued behind the wait were aborted without their
idle status). After a kernel restart the old sketch and prediction form say so ("re-run this
cell") and their buttons are disabled (Draw again did nothing there); saved and reloaded, the
page shows both again from the saved widget state, not "model not found". One server per front end for the module. Notebook 7's own page logs "Cannot
read properties of undefined (reading 'schema')" on every load, before any labkit code: that
line is left out of the console errors checked here. Needs Chromium; without it the tests
are skipped."""

import re

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from test_browser import (
    INDICATOR,
    KERNELSPEC,
    _answer_kernel_dialog,
    _stroke,
    api,
    lab_page,
    run_all,
    serve,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NOT_OURS = "reading 'schema'"  # Notebook 7's own console error


@pytest.fixture(scope="module", params=["lab", "notebook"])
def front_end(request, tmp_path_factory):
    with serve(tmp_path_factory.mktemp(request.param), request.param) as server:
        yield server


def stub_notebook(folder, history) -> str:
    """A sketch, its run cell, an exercise stub, and two cells that must never run."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import labkit\n"
            "from labkit.widgets import SketchForecast\n"
            "cfg = labkit.Config(steps=40)\n"
            f"sketch = SketchForecast(config=cfg, key='stub', history_path={str(history)!r})\n"
            "sketch"
        ),
        nbformat.v4.new_code_cell(
            "sketch.require()\nscores = sketch.score(labkit.train(cfg))\nprint('SCORED')"
        ),
        nbformat.v4.new_code_cell(  # a prediction sealed once, in a store of this test's own:
            "import os\n"  # its form comes back sealed, and Run All goes on
            f"os.environ['LABKIT_HOME'] = {str(history.parent / 'home')!r}\n"
            "from labkit.check.ex_a import ex_a_predict\n"
            "from labkit.widgets import ask_prediction\n"
            "ex_a_predict({'null_groups': ['backbone.0', 'backbone.2'], 'head_learns': True,\n"
            "              'why': 'backward stops at the detach; the head after it learns'})\n"
            "form = ask_prediction('ex_a')"
        ),
        nbformat.v4.new_code_cell(
            "def your_fix():\n    raise NotImplementedError('your fix goes here')\n\n\nyour_fix()"
        ),
        nbformat.v4.new_code_cell("print('NOT RUN 1')"),
        nbformat.v4.new_code_cell("print('NOT RUN 2')"),
    ]
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.write(nb, folder / "stub.ipynb")
    return "stub.ipynb"


def state(server) -> str:
    """The kernel's execution state as the server saw it last on iopub."""
    (kernel,) = api(server["base"], server["token"], "/api/kernels")
    return kernel["execution_state"]


def test_run_all_waits_for_the_seal_stops_at_a_stub_and_the_kernel_reads_idle(front_end, tmp_path):
    name = stub_notebook(front_end["dir"], tmp_path / "history" / "labkit.sqlite3")
    errors = []
    with lab_page(front_end, name, errors, height=900) as page:
        waiting = page.get_by_text("waiting for your sealed forecast")
        try:
            waiting.wait_for(timeout=60_000)
        except PlaywrightTimeout:  # seen once in a loaded CI run, Notebook 7 only: Run All
            # pressed twice as the page settled, and no cell reached the wait in 90 s
            print(f"{front_end['front_end']}: no wait shown 60 s after Run All: pressed again")
            _answer_kernel_dialog(page)
            run_all(page)
            waiting.wait_for(timeout=90_000)
        indicator = page.locator(INDICATOR)
        expect(indicator).to_have_attribute("data-status", "busy")  # the cell runs: [*]
        page.wait_for_timeout(1000)  # the requests Run All queued behind it are all in
        assert state(front_end) == "busy"  # it read "Idle" while the cell waited
        widget = page.locator(".labkit-sketch").first
        _stroke(page, widget.locator("svg"), 60, 220)
        widget.locator(".labkit-seal").click()
        expect(widget.locator(".labkit-seal")).to_have_text(re.compile("Sealed"), timeout=30_000)
        outputs = page.locator(".jp-OutputArea-output")
        outputs.filter(has_text="SCORED").first.wait_for(timeout=60_000)  # on by itself
        outputs.filter(has_text="your fix goes here").first.wait_for(timeout=30_000)
        expect(indicator).to_have_attribute("data-status", "idle", timeout=15_000)
        assert outputs.filter(has_text="NOT RUN").count() == 0  # Run All stopped at the stub
        assert state(front_end) == "idle"
        page.keyboard.press("Control+s")  # with the widgets' state, as `make lab` saves it
        page.wait_for_timeout(2000)
        # a restart (0, 0 in command mode, as a learner does it) leaves the old view without
        # a kernel: it says so, and nothing on it stays live
        page.locator(".jp-Cell").first.click(position={"x": 2, "y": 2})
        page.keyboard.press("Escape")
        page.keyboard.press("0")
        page.keyboard.press("0")
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=15_000)
        expect(widget.locator(".status")).to_contain_text("re-run this cell", timeout=30_000)
        expect(widget.locator(".labkit-redraw")).to_be_disabled()
        expect(widget.locator(".labkit-seal")).to_be_disabled()
        form = page.locator(".labkit-prediction").first
        expect(form.locator(".status")).to_contain_text("re-run this cell")
        # reloaded after the restart: both views come back from the saved state, sealed,
        # saying the same, where the page read "Error displaying widget: model not found"
        page.reload()
        page.locator(INDICATOR + "[data-status=idle]").first.wait_for(timeout=60_000)
        expect(page.locator(".labkit-sketch .labkit-seal").first).to_have_text(
            re.compile("Sealed"), timeout=30_000
        )
        for view in (page.locator(".labkit-sketch").first, form):
            expect(view.locator(".status")).to_contain_text("re-run this cell")
        expect(form.locator(".labkit-again")).to_be_disabled()
        assert page.get_by_text("model not found").count() == 0
    assert not [e for e in errors if NOT_OURS not in e], errors
