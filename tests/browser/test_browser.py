"""End to end: draw a forecast in a real JupyterLab, in headless Chromium, and seal it.

The check is made in Python, on the history file the kernel writes when Seal is
pressed, not only on what the page shows. Needs Chromium (`apt-get install
chromium`); without it the test is skipped. Never downloads a browser.
"""

import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
import warm_kernels
from helpers import CHROMIUM_ARGS, chromium
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect, sync_playwright

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "artifacts" / "browser" / "sketch_sealed.png"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base, token, path, method="GET"):
    req = urllib.request.Request(
        f"{base}{path}", method=method, headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read()
    return json.loads(body) if body else None


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1, a random port and a token, serving `tmp_path/served`."""
    with serve(tmp_path) as server:
        yield server


FRONT_ENDS = {"lab": "jupyterlab", "notebook": "notebook"}  # front end: its server's module


@contextlib.contextmanager
def serve(tmp_path, front_end: str = "lab"):
    """A Jupyter server for `front_end` ("lab": JupyterLab, "notebook": Notebook 7) on
    127.0.0.1, a random port and a token, serving `tmp_path/served`: {"base", "token", "dir",
    "front_end"}."""
    served = tmp_path / "served"
    served.mkdir()
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)  # answer the "get Jupyter news?" toast: no, and never go online
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # render every cell: JupyterLab's windowing moves cells as they scroll into view, which
    # shifts a widget between reading its position and dragging on it
    notebook = tmp_path / "lab-settings" / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    # as `make lab` sets it (tools/lab.py): a saved notebook keeps its widgets' state
    manager = tmp_path / "lab-settings" / "@jupyter-widgets" / "jupyterlab-manager"
    manager.mkdir(parents=True)
    (manager / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    port, token = free_port(), secrets.token_hex(16)
    # `python -m jupyterlab ...`, its kernels forked from the worker's zygote (tests/warm_kernels.py):
    # real ipykernels, with torch imported before the fork
    cmd = warm_kernels.command(
        FRONT_ENDS[front_end],
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={served}",
    )
    if front_end == "lab":
        cmd.append("--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")
    if os.getuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "jupyterlab.log", "wb")
    # os.environ already holds conftest's hermetic JUPYTER_* / IPYTHONDIR folders
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
        **warm_kernels.client_env(),
    }
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                api(base, token, "/api/status")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"{FRONT_ENDS[front_end]} did not start:\n"
                        + (tmp_path / "jupyterlab.log").read_text()
                    )
                time.sleep(0.3)
        for session in api(base, token, "/api/sessions"):  # no stale kernels from an earlier run
            api(base, token, f"/api/sessions/{session['id']}", method="DELETE")
        yield {"base": base, "token": token, "dir": served, "front_end": front_end}
    finally:
        try:
            for session in api(base, token, "/api/sessions"):
                api(base, token, f"/api/sessions/{session['id']}", method="DELETE")
        except OSError:
            pass
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
INDICATOR = ".jp-Notebook-ExecutionIndicator"  # the toolbar's kernel status, in both front ends


@contextlib.contextmanager
def lab_page(lab, name: str, errors: list, height: int = 1000):
    """A Chromium page on notebook `name` in the `lab` server (JupyterLab or Notebook 7, see
    `serve`), kernel idle, Run All pressed; page errors go to `errors`. Skips the test when no Chromium is installed."""
    exe = chromium()
    if exe is None:
        pytest.skip(
            "no Chromium binary found (looked for $LABKIT_CHROMIUM, /usr/bin/chromium, "
            "chromium on PATH); install it with `apt-get install chromium`"
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": height})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            if lab.get("front_end", "lab") == "lab":
                page.goto(f"{lab['base']}/lab/tree/{name}?reset&token={lab['token']}")
                page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for(timeout=60_000)
            else:  # Notebook 7: one notebook a page, no status bar; the toolbar's indicator
                page.goto(f"{lab['base']}/notebooks/{name}?token={lab['token']}")
                page.locator(INDICATOR + "[data-status=idle]").wait_for(timeout=60_000)
            _await_kernel(page, lab, name)
            run_all(page)
            if lab.get("front_end", "lab") == "notebook" and not _started(page):
                print("Notebook 7 ran no cell on Run All: pressed again")
                _answer_kernel_dialog(page)
                run_all(page)  # Notebook 7 can drop a Run All pressed as the page settles
                assert _started(page), "Run All ran no cell in Notebook 7, pressed twice"
            yield page
        finally:
            browser.close()


def _answer_kernel_dialog(page, seconds: float = 2) -> None:
    """A front end that opens a notebook while its kernel is still being chosen may ask which
    kernel to use (a modal dialog over the page, seen in Notebook 7). The test accepts the
    kernel it offers, and says so; any other dialog fails the test with its text. Each Run
    All pressed while no kernel was chosen can stack one more such dialog (a loaded CI run
    found a second one still open after the first was accepted), so the test answers them
    until none is left."""
    dialog = page.locator(".jp-Dialog")
    if seconds == 0:
        if not dialog.first.is_visible():
            return
    else:
        try:
            dialog.first.wait_for(state="visible", timeout=seconds * 1000)
        except PlaywrightTimeout:
            return
    deadline = time.monotonic() + 60
    while dialog.count() and dialog.first.is_visible():
        assert time.monotonic() < deadline, "kernel dialogs kept opening for 60 s"
        text = dialog.first.inner_text()
        print(f"a dialog was open before Run All ({dialog.count()} open): {text!r}")
        assert "kernel" in text.lower(), f"an unexpected dialog: {text!r}"
        dialog.first.locator(".jp-Dialog-button.jp-mod-accept").click()
        page.wait_for_timeout(500)
    expect(dialog.first).to_be_hidden(timeout=10_000)


def _await_kernel(page, lab, name: str, seconds: float = 60) -> None:
    """Wait until the server holds a session with a kernel for notebook `name`, answering
    any kernel dialog meanwhile: the toolbar can read idle before a kernel is chosen, and a
    Run All pressed then ran no cell (a loaded CI run, Notebook 7)."""
    deadline = time.monotonic() + seconds
    while True:
        _answer_kernel_dialog(page, seconds=0)
        sessions = api(lab["base"], lab["token"], "/api/sessions")
        if any(s["path"].endswith(name) and s.get("kernel") for s in sessions):
            return
        assert time.monotonic() < deadline, f"no kernel was started for {name} in {seconds} s"
        page.wait_for_timeout(300)


def run_all(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def _started(page, seconds: float = 10) -> bool:
    """Whether the first cell shows it ran or is queued (`[*]:` or `[1]:`, not `[ ]:`)."""
    prompt = page.locator(".jp-InputPrompt").first
    try:
        expect(prompt).not_to_have_text(re.compile(r"^\[\s*\]:$"), timeout=seconds * 1000)
    except AssertionError:
        return False
    return True


def write_notebook(folder: Path, history: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import labkit\n"
            "from labkit.widgets import SketchForecast\n"
            f"sketch = SketchForecast(config=labkit.Config(steps=40), bug='zero_lr',\n"
            f"                        history_path={str(history)!r})\n"
            "sketch"
        )
    ]
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.write(nb, folder / "sketch.ipynb")
    return "sketch.ipynb"


def wait_for_forecasts(store: Path, seconds: float) -> list:
    """The forecasts the kernel keeps in `store`, once there is at least one."""
    from labkit.forecast.history import ForecastHistory

    deadline = time.monotonic() + seconds
    while not store.exists() or not ForecastHistory(store).entries():
        assert time.monotonic() < deadline, (
            f"the kernel never saved a forecast to {store} after Seal"
        )
        time.sleep(0.2)
    return ForecastHistory(store).entries()


def test_draw_and_seal_a_forecast_in_jupyterlab(lab, tmp_path):
    history = tmp_path / "history" / "labkit.sqlite3"
    name = write_notebook(lab["dir"], history)
    errors = []
    with lab_page(lab, name, errors, height=900) as page:
        svg = page.locator(".labkit-sketch svg")
        svg.wait_for(state="visible", timeout=60_000)
        svg.scroll_into_view_if_needed()
        # a preset goes to the kernel, which fills the points and sends them back
        page.locator(".labkit-sketch select.preset").select_option("descending")
        expect(page.locator(".labkit-sketch circle.point")).to_have_count(5, timeout=10_000)
        _stroke(page, svg, 40, 220, n=40)  # a falling stroke across the plot area
        page.locator(".labkit-sketch circle.point").nth(5).wait_for(timeout=10_000)
        page.locator(".labkit-seal").click()
        entries = wait_for_forecasts(history, 30)
        page.get_by_text("Sealed \u2713").wait_for(timeout=10_000)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT))

    from labkit.forecast import Forecast

    assert len(entries) == 1
    forecast = Forecast.from_dict(entries[0]["forecast"])
    assert forecast.sealed and forecast.is_intact()
    steps = [s for s, _ in forecast.points]
    losses = [v for _, v in forecast.points]
    assert len(forecast.points) >= 10, forecast.points
    assert steps[0] <= 2 and steps[-1] >= 37  # the stroke spanned the whole x axis
    assert all(b <= a for a, b in zip(losses, losses[1:])) and losses[0] > 2 * losses[-1]
    assert not errors, f"browser console errors: {errors}"
    assert SCREENSHOT.stat().st_size > 10_000


def write_two_series_notebook(folder: Path, history: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import labkit\n"
            "from labkit.widgets import SketchForecast\n"
            "cfg = labkit.Config(steps=40)\n"
            "sketch = SketchForecast(config=cfg, series={'healthy': None, 'zero LR': 'zero_lr'},\n"
            f"                        key='browser', history_path={str(history)!r})\n"
            "sketch"
        ),
        nbformat.v4.new_code_cell(
            "sketch.require()\n"
            "runs = {'healthy': labkit.train(cfg), 'zero LR': labkit.train(cfg, bug='zero_lr')}\n"
            "scores = sketch.score(runs)\n"
            "print('SCORED', sorted(scores))"
        ),
    ]
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.write(nb, folder / "two_series.ipynb")
    return "two_series.ipynb"


def _stroke(page, svg, y0, y1, n=30):
    """Drag a straight stroke across the whole plot area (x 58..504, y 16..256 in the SVG's
    520 x 300 viewBox units), from y0 to y1. The chart is scrolled into view first and its
    position read after the page settles, so the drag lands on it."""
    svg.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = svg.bounding_box()
    sx, sy = box["width"] / 520, box["height"] / 300
    x0, x1 = 62, 500
    page.mouse.move(box["x"] + x0 * sx, box["y"] + y0 * sy)
    page.mouse.down()
    for i in range(1, n + 1):
        t = i / n
        page.mouse.move(
            box["x"] + (x0 + t * (x1 - x0)) * sx, box["y"] + (y0 + t * (y1 - y0)) * sy, steps=2
        )
    page.mouse.up()


def test_two_curves_in_one_sketch_refuse_then_seal_and_score(lab, tmp_path):
    history = tmp_path / "history" / "labkit.sqlite3"
    name = write_two_series_notebook(lab["dir"], history)
    errors = []
    with lab_page(lab, name, errors) as page:
        # Run All waits at the run cell with one line, not a traceback, and runs nothing
        page.get_by_text("waiting for your sealed forecast").wait_for(timeout=60_000)
        assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
        assert page.locator(".jp-OutputArea-output", has_text="SCORED").count() == 0
        svg = page.locator(".labkit-sketch svg")
        svg.scroll_into_view_if_needed()
        _stroke(page, svg, 60, 200)  # healthy: falling
        page.locator(".labkit-sketch .legend .series", has_text="zero LR").click()
        expect(page.locator(".labkit-sketch polyline.other")).to_have_count(1, timeout=10_000)
        expect(page.locator(".labkit-sketch")).not_to_have_class(
            re.compile(r"is-switching"), timeout=30_000
        )
        _stroke(page, svg, 80, 82)  # zero LR: flat
        page.locator(".labkit-seal").click()
        try:
            page.get_by_text("Sealed \u2713").wait_for(timeout=30_000)
        except Exception:  # noqa: BLE001 (Playwright's timeout, reported with what the widget says)
            raise AssertionError(
                "not sealed; the widget says: "
                + page.locator(".labkit-sketch .status").inner_text()
            ) from None
        page.locator(
            ".jp-OutputArea-output",  # the run cell went on by itself
            has_text="SCORED ['healthy', 'zero LR']",
        ).wait_for(timeout=60_000)
    from labkit.forecast.history import ForecastHistory

    entries = ForecastHistory(history).entries()
    notes = sorted(e["forecast"]["note"] for e in entries)
    assert notes == ["browser/healthy", "browser/zero LR"]
    assert all(e["score"] is not None for e in entries)
    by = {e["forecast"]["note"]: e for e in entries}
    assert by["browser/healthy"]["score"]["shape_predicted"] == "descending"
    assert by["browser/zero LR"]["score"]["shape_predicted"] == "flat"
    assert by["browser/zero LR"]["score"]["shape_actual"] == "flat"
    assert not errors, f"browser console errors: {errors}"
