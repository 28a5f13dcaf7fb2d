"""The verdicts of `labkit grade`, reached in the grader's own process on answers as data.

For each check call the notebook planned, the hand-over's file (`grade_handover`) is read
strictly as data (`grade_answers`) and the check itself (`check._base.judge`) runs here, on
that data: what the learner's kernel printed or recorded counts for nothing. Checks run in
the notebook's order inside `check._predict.replaying`, so a prediction is sealed (dated by
the grader's clock, when its cell started) before it is reviewed, and nothing is kept in any
learner store. Every run an answer holds is first trained again by the grader and compared
(`labkit.learn.grade.truth`), and so is the data the exercise's cells make beside it: the check
judges the grader's run and data, never made-up ones.

An answer that is a function the learner wrote goes only to a check that asks for one, and
that declares how: its `observe` runs the function, in a fresh Python process given only the
function's source (`FUNCTION_PRELUDE`), in the same sandbox as the kernels
(`labkit.learn.grade.sandbox`) unless grading runs with none, and sends back what the
function did, as plain numbers on a pipe of its own; its `decide` judges those numbers here.
Whatever the function writes, to its stdout, at exit, or to that pipe, can only be numbers
that a correct function would produce; a verdict never comes from that process. A function
given to any other check is refused without being run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ..check._base import CheckFailed, judge, status_of
from .answers import AnswerNotGiven, AnswerUnreadable, FunctionAnswer, read_answer
from .truth import NotReproduced, given, recreated

FUNCTION_PRELUDE = (
    "import math\nimport torch\nimport torch.nn as nn\n"  # what a function
    "import torch.nn.functional as F\n"
)  # answer may use without importing it
FUNCTION_LIMIT_S = 120  # a function answer's own process, start to verdict
_HARNESS = """import json, os, sys
from labkit.learn.grade.verdict import observed_from_source
channel, write = int(sys.argv[1]), os.write
plain = json.loads(sys.stdin.read())
said = json.dumps(observed_from_source(plain)).encode()
write(channel, said)
os._exit(0)
"""


def verdict(
    check, name: str, text: str | None, sandbox: str = "none", notebook=None, received=None
) -> tuple[str, str] | None:
    """(status, message) for the answer `text` (the hand-over's JSON) judged by `check` (the
    answer_check-wrapped function); None when no answer was handed over. `notebook`: its
    parameters (`read.parameters_of`; None: the notebooks' defaults), from which the grader
    makes the exercise's data again (`truth.given`); its `heard` (`truth.Heard`) dates each run
    it holds, with `received`, when the grader got this answer."""
    if text is None:
        return None
    try:
        args, kwargs = read_answer(text)
    except AnswerUnreadable as exc:
        return "failed", f"the answer to {name} could not be read: {exc}"
    if any(isinstance(a, FunctionAnswer) for a in (*args, *kwargs.values())):
        if not hasattr(check, "observe"):
            return "failed", (
                f"the answer to {name} is a function, and {name} takes none: pass the value "
                "itself (only a check that asks for your function runs it)"
            )
        try:
            observed = _in_own_process(name, args, kwargs, sandbox)
        except AnswerUnreadable as exc:
            return "failed", f"the answer to {name} could not be read: {exc}"
        if isinstance(observed, tuple):  # no observation came: why, as the row
            return observed
        return judged(check.decide, [observed], {})
    try:
        heard = getattr(notebook, "heard", None)  # every run it holds, the grader's own
        args, kwargs = recreated(args, kwargs, heard, received)
        args, kwargs = given(name, check, args, kwargs, notebook)  # and the exercise's data
    except NotReproduced as exc:
        return "failed", f"the answer to {name} could not be checked: {exc}"
    if (bad := not_finite(args, kwargs)) is not None:
        return (
            "failed",
            f"the answer to {name} holds {bad}, and a number must be finite to be compared",
        )
    return judged(check, args, kwargs)


def not_finite(args, kwargs) -> str | None:
    """The first NaN or infinity among the plain numbers of an answer (its runs' tables, where
    a loss may well be NaN, are the run's own), in words; None when there is none."""
    import math

    def first(v, depth=0):
        if isinstance(v, float) and not math.isfinite(v):
            return repr(v)
        if depth < 8 and isinstance(v, (list, tuple, set, frozenset)):
            return next((f for x in v if (f := first(x, depth + 1))), None)
        if depth < 8 and isinstance(v, dict):
            return next((f for x in (*v, *v.values()) if (f := first(x, depth + 1))), None)
        if type(v).__name__ == "Tensor" and v.dtype.is_floating_point and v.numel():
            import torch

            return None if bool(torch.isfinite(v).all()) else "a tensor with NaN or infinity"
        return None

    return next((f for v in (*args, *kwargs.values()) if (f := first(v))), None)


def judged(check, args, kwargs) -> tuple[str, str]:
    fn = getattr(check, "__wrapped__", check)
    try:
        return "passed", str(judge(fn, args, kwargs))
    except CheckFailed as exc:
        return status_of(exc), str(exc)
    except AnswerNotGiven:
        return "not yet answered", "answer the prediction form and seal it first"
    except Exception as exc:  # noqa: BLE001 -- a schema-valid answer the check cannot use
        return "failed", (
            f"the check could not use this answer: {type(exc).__name__}: {str(exc)[:200]}"
        )


def _in_own_process(name: str, args, kwargs, sandbox: str) -> dict | tuple[str, str]:
    """Run the `observe` of check `name` in a fresh Python process (in the sandbox unless
    `sandbox` is "none") on args where functions are their source: what it observed, as
    plain data on a pipe of its own; or (status, message) when nothing came."""
    import shutil
    import tempfile

    plain = {
        "check": name,
        "args": [_source(a) for a in args],
        "kwargs": {k: _source(v) for k, v in kwargs.items()},
    }
    work = tempfile.mkdtemp(prefix="labkit-grade-")
    read, write = os.pipe()
    line = [sys.executable, "-c", _HARNESS, str(write)]
    if sandbox == "bwrap":
        from .sandbox import allowed_env, bwrap_command

        line = bwrap_command(line, work=work, env=allowed_env({"HOME": work}))
    try:
        done = subprocess.run(
            line,
            input=json.dumps(plain),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=FUNCTION_LIMIT_S,
            pass_fds=(write,),
            cwd=work,
            start_new_session=True,
        )
        os.close(write)
        write = -1
        os.set_blocking(read, False)  # what was sent before the end; a daemon left holding
        said = _sent(read)  # the pipe (no sandbox) adds nothing
        del done
        observed = json.loads(said)
        if not isinstance(observed, dict):
            raise ValueError(type(observed).__name__)
        if "unrunnable" in observed:  # the learner's source did not run on its own
            return (
                "failed",
                f"your function's source does not run on its own: {observed['unrunnable']}"[:300],
            )
        return observed
    except subprocess.TimeoutExpired:
        return "failed", (
            f"your function given to {name} did not finish within "
            f"{FUNCTION_LIMIT_S} s in a process of its own"
        )
    except (ValueError, IndexError, TypeError):
        return "failed", (
            f"the answer to {name} could not be checked: the process running your "
            "function alone ended without saying what it did"
        )
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)
        if sandbox == "bwrap":
            from .sandbox import release

            release(work)
        shutil.rmtree(work, ignore_errors=True)


def _sent(fd: int) -> bytes:
    out = b""
    try:
        while chunk := os.read(fd, 65536):
            out += chunk
    except BlockingIOError:
        pass
    return out


def _source(v):
    if isinstance(v, FunctionAnswer):
        return {"function": v.name, "source": v.source}
    if isinstance(v, (type(None), bool, int, float, str)):
        return {"value": v}
    raise AnswerUnreadable(
        f"a check given a function takes only plain values beside it, not a {type(v).__name__}"
    )


def observed_from_source(plain: dict) -> dict:
    """In the fresh process: define each function from its source alone, and observe it with
    the check's `observe`: plain data, judged by the grader (never a verdict)."""
    from .. import check as checks

    def value(v):
        if "function" not in v:
            return v["value"]
        namespace: dict = {"__name__": "answer"}
        exec(compile(FUNCTION_PRELUDE + v["source"], "<answer>", "exec"), namespace)  # noqa: S102
        return namespace[v["function"]]

    try:
        args = [value(a) for a in plain["args"]]
        kwargs = {k: value(v) for k, v in plain["kwargs"].items()}
    except Exception as exc:  # noqa: BLE001 -- the learner's source itself does not run
        return {"unrunnable": f"{type(exc).__name__}: {str(exc)[:200]}"}
    try:
        return getattr(checks, plain["check"]).observe(*args, **kwargs)
    except CheckFailed as exc:  # e.g. not callable: said as what was observed
        return {"error": ["CheckFailed", str(exc)]}
