"""Errors that teach: one sentence naming the parameter, the value and what is allowed."""

from __future__ import annotations

import difflib
import math


def suggest(given: object, allowed) -> str:
    """Return " Did you mean 'x'?" for the closest allowed name, or ""."""
    if not isinstance(given, str):
        return ""
    names = [str(a) for a in allowed]
    close = difflib.get_close_matches(given, names, n=1, cutoff=0.6)
    if not close:
        lowered = {n.lower(): n for n in names}
        if given.lower() in lowered:
            close = [lowered[given.lower()]]
    return f" Did you mean {close[0]!r}?" if close else ""


def choice_error(param: str, given: object, allowed) -> ValueError:
    """A ValueError for a value that is not one of `allowed`."""
    allowed = list(allowed)
    listed = ", ".join(repr(a) for a in allowed)
    return ValueError(
        f"{param}={given!r} is not allowed; choose one of {listed}.{suggest(given, allowed)}"
    )


def check_choice(param: str, given: object, allowed) -> None:
    if given not in allowed:
        raise choice_error(param, given, allowed)


def check_number(
    param: str,
    given,
    *,
    minimum=None,
    maximum=None,
    integer=False,
    strict_min=False,
    allow_none=False,
) -> None:
    """Refuse a value of the wrong type or outside [minimum, maximum]."""
    if given is None and allow_none:
        return
    kind = "a whole number" if integer else "a number"
    ok_type = isinstance(given, int) if integer else isinstance(given, (int, float))
    if isinstance(given, bool) or not ok_type:
        raise TypeError(f"{param} must be {kind}; got {given!r} ({type(given).__name__}).")
    if not math.isfinite(given):  # NaN, inf or -inf: no setting of labkit means any of them
        allowed = _range_text(minimum, maximum, strict_min)
        raise ValueError(
            f"{param}={given!r} is not allowed; it must be a finite number "
            f"{'(' + allowed + ') ' if allowed else ''}, not NaN or infinity.".replace(" ,", ",")
        )
    if minimum is not None and (given <= minimum if strict_min else given < minimum):
        bound = f"greater than {minimum}" if strict_min else f"at least {minimum}"
        raise ValueError(f"{param}={given!r} is out of range; it must be {bound}.")
    if maximum is not None and given > maximum:
        raise ValueError(f"{param}={given!r} is out of range; it must be at most {maximum}.")


def _range_text(minimum, maximum, strict_min) -> str:
    low = (
        None
        if minimum is None
        else (f"greater than {minimum}" if strict_min else f"at least {minimum}")
    )
    high = None if maximum is None else f"at most {maximum}"
    return " and ".join(x for x in (low, high) if x)


def notebook_box(title: str, sentence: str, colour: str = "#c0392b", *, once_for=None) -> bool:
    """Show `sentence` in a styled box when running in a notebook kernel; else do nothing.
    Return whether the box is shown (now, or already for `once_for`).

    Exceptions that teach (a wrong answer, a forecast not yet drawn) call this from their
    `_render_traceback_` (see `teaching_lines`), so a learner sees the sentence instead of
    labkit's source. IPython asks an exception for its traceback more than once; pass the
    exception as `once_for` and its box is shown the first time only.
    """
    if once_for is not None and getattr(once_for, "_labkit_box_shown", False):
        return True
    try:
        import html
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        return False
    if getattr(get_ipython(), "kernel", None) is None:  # a terminal, not a notebook
        return False
    if once_for is not None:
        once_for._labkit_box_shown = True
    display(
        HTML(
            f'<div style="border-left:4px solid {colour};background:{colour}14;'
            f"padding:8px 12px;margin:4px 0;font-family:var(--jp-content-font-family, "
            f'sans-serif);"><b style="color:{colour}">{html.escape(title)}</b><br>'
            f"{html.escape(sentence)}</div>"
        )
    )
    return True


def teaching_lines(
    error: Exception, title: str, label: str, colour: str = "#c0392b", ansi: str = "1;31"
) -> list[str]:
    """What IPython shows for an error that teaches: in a notebook, its box and a bare red
    label (the sentence is said once, in the box); elsewhere, the label and the sentence."""
    head = f"\x1b[{ansi}m{label}\x1b[0m"
    shown = notebook_box(title, str(error), colour, once_for=error)
    return [head] if shown else [f"{head}: {error}"]


class OutputPathError(ValueError):
    """An output path that would overwrite the learner store or another SQLite database."""
