"""Run All waits for the seal in a kernel whose front end shows the sketch, and not headless.

A real ipykernel, driven over jupyter_client as JupyterLab drives it: the cells of a Run All
are queued at once, and the widget's messages (its view drawn, strokes, Seal) reach the
kernel as comm messages while the run cell waits.
"""

import os
import queue
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("jupyter_ui_poll")

MAKE = (
    "import labkit\nfrom labkit.widgets import SketchForecast\n"
    "sketch = SketchForecast(config=labkit.Config(steps=40), bug='zero_lr', key='wait_t')\n"
    "sketch"
)
RUN = "sketch.require()\nprint('RAN', sketch.sealed)"
AFTER = "print('AFTER')"
STUB = "raise NotImplementedError('your fix goes here')"  # an exercise's unwritten part


@pytest.fixture
def kernel(tmp_path):
    env = {
        **os.environ,
        "LABKIT_HOME": str(tmp_path / "home"),
        "OMP_NUM_THREADS": "1",
        "IPYTHONDIR": str(tmp_path / "ipython"),  # MPLCONFIGDIR: the worker's (conftest)
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    env.pop("LABKIT_SKETCHES", None)
    env.pop("LABKIT_NO_WAIT", None)
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _messages(kc, until, timeout=60):
    """iopub messages until `until(msgs)` holds."""
    msgs, end = [], time.monotonic() + timeout
    while not until(msgs):
        assert time.monotonic() < end, [m["msg_type"] for m in msgs]
        try:
            msgs.append(kc.get_iopub_msg(timeout=0.5))
        except queue.Empty:
            pass
    return msgs


def _text(msgs, parent):
    out = []
    for m in msgs:
        if m["parent_header"].get("msg_id") != parent:
            continue
        c = m["content"]
        out.append(c.get("text", "") + "".join(c.get("traceback", [])) + c.get("ename", ""))
    return "".join(out)


def _idle(parent):
    return lambda msgs: any(
        m["msg_type"] == "status"
        and m["content"]["execution_state"] == "idle"
        and m["parent_header"].get("msg_id") == parent
        for m in msgs
    )


def _widget_update(kc, comm_id, state):
    """What the front end sends when the learner acts on the widget."""
    kc.shell_channel.send(
        kc.session.msg(
            "comm_msg",
            {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}},
        )
    )


def _start(kc, next_cell=AFTER):
    """Show the sketch (its view drawn, as JupyterLab does), then queue RUN and `next_cell`
    at once, as Run All does; returns (comm id, run id, next id, messages so far)."""
    make = kc.execute(MAKE)
    msgs = _messages(kc, _idle(make))
    comm_id = next(
        m["content"]["comm_id"]
        for m in msgs
        if m["msg_type"] == "comm_open" and "series_names" in m["content"]["data"].get("state", {})
    )
    _widget_update(kc, comm_id, {"rendered": 1})
    run, after = kc.execute(RUN), kc.execute(next_cell)
    msgs = _messages(kc, lambda ms: "waiting for your sealed forecast" in _text(ms, run))
    return comm_id, run, after, msgs


@pytest.mark.slow
def test_run_all_waits_for_the_seal_then_runs_on(kernel):
    km, kc = kernel
    comm_id, run, after, msgs = _start(kc)
    _widget_update(kc, comm_id, {"points": [[0, 2.3], [39, 2.3]]})  # a stroke
    _widget_update(kc, comm_id, {"seal_requested": 1})  # Seal
    msgs += _messages(kc, _idle(after))
    assert "RAN True" in _text(msgs, run)
    assert "AFTER" in _text(msgs, after)  # the Run All went on by itself


@pytest.mark.slow
def test_the_stop_button_ends_the_wait_with_one_line_and_the_sketch_unsealed(kernel):
    km, kc = kernel
    comm_id, run, after, msgs = _start(kc)
    km.interrupt_kernel()
    msgs += _messages(kc, _idle(run))
    errors = [
        m["content"]
        for m in msgs
        if m["msg_type"] == "error" and m["parent_header"].get("msg_id") == run
    ]
    assert [e["ename"] for e in errors] == ["SketchNotSealed"]
    assert len(errors[0]["traceback"]) == 1 and "Traceback" not in errors[0]["traceback"][0]
    assert "KeyboardInterrupt" not in _text(msgs, run) and "RAN" not in _text(msgs, run)
    check = kc.execute("print('SEALED', sketch.sealed)")
    msgs += _messages(kc, _idle(check))
    assert "SEALED False" in _text(msgs, check)
    assert "AFTER" not in _text(msgs, after)  # the Run All stopped at the run cell


@pytest.mark.slow
def test_without_a_view_of_the_widget_the_cell_refuses_at_once(kernel):
    km, kc = kernel
    make = kc.execute(MAKE)
    _messages(kc, _idle(make))
    started = time.monotonic()
    run = kc.execute(RUN)
    msgs = _messages(kc, _idle(run))
    assert "SketchNotSealed" in _text(msgs, run) and "waiting" not in _text(msgs, run)
    assert time.monotonic() - started < 8


@pytest.mark.slow
def test_after_a_restart_run_all_flows_through_with_the_sealed_sketch(kernel):
    km, kc = kernel
    comm_id, run, after, msgs = _start(kc)
    _widget_update(kc, comm_id, {"points": [[0, 2.3], [39, 2.3]]})
    _widget_update(kc, comm_id, {"seal_requested": 1})
    _messages(kc, _idle(after))
    km.restart_kernel(now=True)
    kc.wait_for_ready(timeout=60)
    comm_id, run, after, msgs = None, None, None, []
    make = kc.execute(MAKE)
    msgs = _messages(kc, _idle(make))
    comm_id = next(
        m["content"]["comm_id"]
        for m in msgs
        if m["msg_type"] == "comm_open" and "series_names" in m["content"]["data"].get("state", {})
    )
    run, after = kc.execute(RUN), kc.execute(AFTER)
    _widget_update(kc, comm_id, {"rendered": 1})  # JupyterLab draws the widget meanwhile
    msgs += _messages(kc, _idle(after))
    assert "RAN True" in _text(msgs, run) and "AFTER" in _text(msgs, after)  # no redraw
    assert "waiting" not in _text(msgs, run)  # restored on its first view: nothing to wait for
    kept = [
        m
        for m in msgs
        if m["msg_type"] == "display_data" and m["parent_header"].get("msg_id") == run
    ]
    assert any("application/vnd.labkit.sketch+json" in m["content"]["data"] for m in kept)


@pytest.mark.slow
def test_a_run_all_that_waited_then_stopped_at_a_stub_gives_each_cell_one_idle(kernel):
    """JupyterLab and Notebook 7 count a cell done at the `idle` status that names its
    request, and read the kernel busy until each cell of a Run All has had one. Before, the
    requests queued behind the wait sent theirs under the waiting cell's name, and the ones
    aborted after the stub sent none: "Busy" for ever (tests/browser/test_front_ends_browser.py
    shows it in both front ends)."""
    km, kc = kernel
    comm_id, run, stub, msgs = _start(kc, STUB)
    later = [kc.execute(AFTER), kc.execute(AFTER)]
    time.sleep(1)  # they reach the kernel, which queues them behind the wait
    _widget_update(kc, comm_id, {"points": [[0, 2.3], [39, 2.3]]})
    _widget_update(kc, comm_id, {"seal_requested": 1})
    msgs += _messages(kc, _idle(stub))
    end = time.monotonic() + 2  # and what the aborted cells get
    while time.monotonic() < end:
        try:
            msgs.append(kc.get_iopub_msg(timeout=0.2))
        except queue.Empty:
            pass
    states = [
        (m["content"]["execution_state"], m["parent_header"].get("msg_id"))
        for m in msgs
        if m["msg_type"] == "status"
    ]
    for request in (run, stub, *later):
        assert [s for s, parent in states if parent == request].count("idle") == 1, states
    assert states[-1][0] == "idle"
    assert "RAN True" in _text(msgs, run) and "NotImplementedError" in _text(msgs, stub)
    assert not any("AFTER" in _text(msgs, r) for r in later)  # aborted: Run All stopped
