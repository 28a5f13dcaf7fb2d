"""The verdicts of `labkit grade`, reached in the grader's own process on answers as data.

For each check call the notebook planned, the hand-over's file (`grade_handover`) is read
strictly as data (`grade_answers`) and the check itself (`check._base.judge`) runs here, on
that data: what the learner's kernel printed or recorded counts for nothing. Checks run in
the notebook's order inside `check._predict.replaying`, so a prediction is sealed (dated by
the grader's clock, when its cell started) before it is reviewed, and nothing is kept in any
learner store. An answer that is a function the learner wrote is checked in a fresh Python
process given only that function's source (`FUNCTION_PRELUDE` and the check).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..check._base import CheckFailed, judge, status_of
from .answers import AnswerNotGiven, AnswerUnreadable, FunctionAnswer, read_answer

FUNCTION_PRELUDE = (
    "import math\nimport torch\nimport torch.nn as nn\n"  # what a function
    "import torch.nn.functional as F\n"
)  # answer may use without importing it
FUNCTION_LIMIT_S = 120  # a function answer's own process, start to verdict
_HARNESS = """import json, sys
from labkit.learn.grade.verdict import verdict_of_source
print(json.dumps(verdict_of_source(json.loads(sys.stdin.read()))))
"""


def answer_file(folder: Path, cell: int, check: str, occurrence: int) -> Path:
    return Path(folder) / f"{cell}-{check}-{occurrence}.json"


def verdict(check, name: str, path: Path) -> tuple[str, str] | None:
    """(status, message) for the answer at `path` judged by `check` (the answer_check-wrapped
    function); None when no answer was handed over there."""
    if not path.is_file():
        return None
    try:
        args, kwargs = read_answer(path)
    except AnswerUnreadable as exc:
        return "failed", f"the answer to {name} could not be read: {exc}"
    except OSError as exc:
        return "failed", f"the answer to {name} could not be read: {type(exc).__name__}"
    if any(isinstance(a, FunctionAnswer) for a in (*args, *kwargs.values())):
        try:
            return _in_own_process(name, args, kwargs)
        except AnswerUnreadable as exc:
            return "failed", f"the answer to {name} could not be read: {exc}"
    return judged(check, args, kwargs)


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


def _in_own_process(name: str, args, kwargs) -> tuple[str, str]:
    """Run check `name` in a fresh Python process on args where functions are their source."""
    plain = {
        "check": name,
        "args": [_source(a) for a in args],
        "kwargs": {k: _source(v) for k, v in kwargs.items()},
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HARNESS],
            input=json.dumps(plain),
            capture_output=True,
            text=True,
            timeout=FUNCTION_LIMIT_S,
        )
        status, message = json.loads(done.stdout.strip().splitlines()[-1])
        if status not in ("passed", "failed", "not yet answered") or not isinstance(message, str):
            raise ValueError(status)
        return status, message
    except subprocess.TimeoutExpired:
        return "failed", (
            f"your function given to {name} did not finish within "
            f"{FUNCTION_LIMIT_S} s in a process of its own"
        )
    except (ValueError, IndexError, TypeError):
        return "failed", (
            f"the answer to {name} could not be checked: the process running your "
            "function alone ended without a verdict"
        )


def _source(v):
    if isinstance(v, FunctionAnswer):
        return {"function": v.name, "source": v.source}
    if isinstance(v, (type(None), bool, int, float, str)):
        return {"value": v}
    raise AnswerUnreadable(
        f"a check given a function takes only plain values beside it, not a {type(v).__name__}"
    )


def verdict_of_source(plain: dict) -> list:
    """In the fresh process: define each function from its source alone, run the check."""
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
        return [
            "failed",
            (
                f"your function's source does not run on its own: "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            ),
        ]
    return list(judged(getattr(checks, plain["check"]), args, kwargs))
