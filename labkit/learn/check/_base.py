"""What every answer check shares: the failure that teaches, and the record of outcomes.

A check that finds a wrong answer raises `CheckFailed` with one teaching sentence. In
a notebook the failure shows as that sentence in a styled box, with no traceback into
labkit's source (which would print the check's own code, hints for every wrong choice
included); the cell still fails, so nbval and `labkit grade` see it.

Every public check is wrapped by `answer_check`, which appends what happened to
`OUTCOMES`: the learner's feedback, which counts for nothing. `labkit grade` takes each
call's arguments out of the kernel as data and runs the check (`judge`) in its own process.
"""

from __future__ import annotations

import functools

from ...errors import teaching_lines

OUTCOMES: list[dict] = []  # {"check", "status", "message"}, in call order; status is
# "passed", "failed" or "not yet answered"


class CheckFailed(AssertionError):
    """Raised with a teaching sentence when an answer is not right yet."""

    check: str | None = None  # the name of the check that raised it, set by answer_check

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines instead of a traceback; a styled box goes above them."""
        what = self.check or "answer check"
        lines = teaching_lines(self, f"Not yet: {what}", f"CheckFailed ({what})")
        if str(self) not in lines[0]:  # the box above says the check's name: say it once
            return [lines[0].replace(f" ({what})", "")]
        return lines


class NotYetAnswered(CheckFailed):
    """Raised when the answer is still missing: a `...` placeholder, or work not yet done."""


def answer_check(fn=None, *, points: int = 1):
    """Record each call of the check `fn` in OUTCOMES and name it on its failures.

    `points`: what the check is worth in `labkit grade --gradescope/--csv`, 1 unless set
    here, beside the check: ``@answer_check(points=2)``."""
    if fn is None:
        return functools.partial(answer_check, points=points)
    if not isinstance(points, int) or isinstance(points, bool) or points < 0:
        raise ValueError(f"points={points!r} for {fn.__name__}: give a whole number of 0 or more.")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            result = judge(fn, args, kwargs)
        except CheckFailed as exc:
            OUTCOMES.append({"check": fn.__name__, "status": status_of(exc), "message": str(exc)})
            raise
        OUTCOMES.append({"check": fn.__name__, "status": "passed", "message": str(result)})
        return result

    wrapper.is_answer_check = True
    wrapper.points = points
    return wrapper


def judge(fn, args, kwargs):
    """`fn(*args, **kwargs)`, the check itself: its confirmation, or CheckFailed naming it.
    `labkit grade` calls this in its own process on the answers handed over as data."""
    try:
        if any(a is ... for a in (*args, *kwargs.values())):
            raise NotYetAnswered(
                "Replace the ... placeholder above with your answer, then run this cell again."
            )
        return fn(*args, **kwargs)
    except CheckFailed as exc:
        exc.check = fn.__name__
        raise


def status_of(exc: CheckFailed) -> str:
    return "not yet answered" if isinstance(exc, NotYetAnswered) else "failed"


def layer_groups(answer, run) -> set[str]:
    """The answer as a set of names from `run.groups`; anything else is refused with a sentence."""
    if not isinstance(answer, (list, tuple, set, frozenset)) or not all(
        isinstance(g, str) for g in answer
    ):
        raise CheckFailed(
            f"Answer with a list of layer-group names taken from run.groups; got {answer!r}."
        )
    unknown = sorted(set(answer) - set(run.groups))
    if unknown:
        raise CheckFailed(
            f"{unknown[0]!r} is not a layer group of this run: name groups exactly as "
            "run.groups spells them, not modules or single tensors."
        )
    return set(answer)


def need_bool(answer) -> bool:
    """Refuse anything but True or False."""
    if not isinstance(answer, bool):
        raise CheckFailed(f"Answer True or False; got {answer!r}.")
    return answer


def need_one_of(answer, choices) -> str:
    """Refuse an answer outside `choices`."""
    if answer not in choices:
        raise CheckFailed(f"Answer with one of {', '.join(map(repr, choices))}; got {answer!r}.")
    return answer
