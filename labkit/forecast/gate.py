"""The run cell's gate: wait in a kernel for the learner's seal, refuse at once headless.

`SketchNotSealed` is the refusal: one friendly sentence in a box, not a traceback, and it
stops a Run All there, so no run happens before a forecast.

`wait_for(done, rendered)`: in a kernel whose front end shows the widget, the cell that
needs a seal waits for it, keeping the widget live (``jupyter_ui_poll`` lets the kernel
handle the widget's messages while the cell runs), then the Run All goes on by itself.
The stop button ends the wait with `SketchNotSealed` and nothing else. A run with no front
end (papermill, nbval, `labkit grade`) has no view of the widget, so it never waits: it
takes `forecast_points` or is refused at once.

The front end's busy state: JupyterLab and Notebook 7 count a cell as done when an iopub
`idle` status names its request, and show the kernel busy until every request Run All sent
has had one. The cells queued behind the wait (`jupyter_ui_poll` takes their requests off
the shell and runs them after the waiting cell) got a `busy` when queued, but their `idle`
went out under the waiting cell's name, and the ones aborted after a stub raised (Run All
stops there) never got one: the toolbar read "Busy" for ever while the kernel was idle, and
"Idle" during the wait. `_honest_status` and `_replay` give each request exactly its own
`idle`, and keep the kernel busy while the cell waits.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import time

from ..errors import teaching_lines

NO_WAIT = "LABKIT_NO_WAIT"  # set (to anything) to refuse at once even with a front end
LOOK_S = 2.0  # how long a cell looks for a view of the widget before it counts as headless


class SketchNotSealed(RuntimeError):
    """The forecast sketch above has not been sealed, so the run must wait."""

    def _render_traceback_(self) -> list[str]:
        return teaching_lines(self, "Forecast first", "SketchNotSealed", "#1f6fb2", "1;34")


def _kernel():
    """The running IPython kernel, or None (plain Python, a terminal IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None)


def can_wait() -> bool:
    """True in a kernel that may wait: not told otherwise, and not run by `labkit grade`."""
    from .carry import ENV

    kernel = _kernel()
    if kernel is None or os.environ.get(NO_WAIT) or os.environ.get(ENV):
        return False
    if not hasattr(kernel, "do_one_iteration"):  # ipykernel 7.1+: nothing can poll its shell
        return False
    try:
        import jupyter_ui_poll  # noqa: F401
    except ImportError:
        return False
    return True


def wait_for(done, rendered, *, what: str = "your sealed forecast above") -> bool:
    """Wait until `done()`; False at once when no front end shows the widget (`rendered()`
    stays False for `LOOK_S` seconds) or waiting is off. The stop button raises
    `SketchNotSealed` with one line, the sketch left as it was."""
    if done():
        return True
    if not can_wait():
        return False
    from jupyter_ui_poll import ui_events

    shown = False
    start = time.monotonic()
    try:
        with ui_events() as poll, _honest_status(_kernel()):
            while not done():
                poll(20)  # the widget's messages: strokes, Seal, a seal restored on first view
                if done():
                    break  # sealed by those messages: nothing to wait for, nothing to say
                if not rendered():
                    if time.monotonic() - start > LOOK_S:
                        _drop_queued()
                        return False  # nobody sees the widget: a headless run
                elif not shown:
                    print(
                        f"waiting for {what}... (press Seal there; the stop button ends the wait)",
                        flush=True,
                    )
                    shown = True
                time.sleep(0.05)
    except KeyboardInterrupt:
        _drop_queued()
        raise SketchNotSealed(
            f"Stopped waiting for {what}; it is not sealed. Draw it, press "
            "Seal, then run this cell and the ones below it."
        ) from None
    return True


def _drop_queued() -> None:
    """The cells a Run All queued behind this one, held back by the wait, are aborted as the
    kernel aborts them after any failed cell (unless the cell ran with stop_on_error off)."""
    from jupyter_ui_poll._poll import KernelWrapper

    wrapper, kernel = KernelWrapper._current, _kernel()
    if wrapper is None or not kernel.get_parent().get("content", {}).get("stop_on_error", True):
        return
    for stream, ident, parent in wrapper._events:
        kernel._send_abort_reply(stream, parent, ident)
        kernel._publish_status("idle", "shell", parent=parent)  # its cell is done
    wrapper._events.clear()


def _msg_id(parent) -> str | None:
    return (parent or {}).get("header", {}).get("msg_id")


@contextlib.contextmanager
def _honest_status(kernel):
    """While the cell waits, the kernel reads busy, and each request queued behind the wait
    keeps its `idle` for when it has run or been aborted (`_replay`). The kernel's own
    `_publish_status` is wrapped for the wait only."""
    from jupyter_ui_poll._poll import KernelWrapper

    wrapper = KernelWrapper._current
    if wrapper is not None:  # this cell's queued requests, run or aborted after it
        wrapper.replay = lambda: _replay(wrapper)
    own = kernel.get_parent("shell")
    publish = kernel._publish_status

    def status(state, channel, parent=None):
        parent = parent or kernel.get_parent(channel)
        if state == "idle" and _msg_id(parent) == _msg_id(own):
            return  # after a request was queued: this cell has not finished
        publish(state, channel, parent)
        if state == "idle":
            publish("busy", "shell", own)  # a widget message handled; the cell still waits

    kernel._publish_status = status
    try:
        yield
    finally:
        del kernel._publish_status  # the class's own again


async def _replay(wrapper) -> None:
    """`jupyter_ui_poll`'s replay of the queued requests once the waiting cell is done, with
    an `idle` for every request: after it ran, and after it was aborted because a cell
    before it failed (the kernel does the same for requests it aborts itself)."""
    kernel = wrapper._kernel
    wrapper.restore()
    sys.stdout.flush()
    sys.stderr.flush()
    for stream, ident, parent in wrapper._events:
        kernel.set_parent(ident, parent)
        if kernel._aborting:
            kernel._send_abort_reply(stream, parent, ident)
        else:
            done = kernel.execute_request(stream, ident, parent)
            if inspect.isawaitable(done):
                await done
            sys.stdout.flush()
            sys.stderr.flush()
        kernel._publish_status("idle", "shell", parent=parent)
        kernel.shell_stream.flush(2)  # zmq.POLLOUT: the reply and status go out now
    wrapper._events.clear()
