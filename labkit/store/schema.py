"""What a record of each kind may hold: checked on import, on every write, and on reading.

`problem(record)` says in words what is wrong with a record (unknown kind, empty key, a
body that is not an object, a field of the wrong type, a time that is not a time, nesting
deeper than MAX_DEPTH), or returns None. `check_import` refuses a whole list of records
with one sentence naming the file, the record and the field. A reader calls `readable`,
which skips a malformed record with a warning naming it instead of crashing.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings

from ..errors import suggest

KINDS = [
    "forecast",
    "triage",
    "drill",
    "flashcard",
    "grade",
    "prediction",
    "prediction_seal",
    "manual_grade",
]  # a new feature appends its kind
MAX_DEPTH = 32  # lists and objects inside each other; labkit's own records stay under 10
NUMBER, TEXT, FLAG, WHOLE, NONE = (int, float), (str,), (bool,), (int,), (type(None),)
OBJECT, LIST = (dict,), (list,)

# kind -> field -> allowed types, checked when the field is present (a feature may add more)
FIELDS: dict[str, dict[str, tuple]] = {
    "forecast": {"forecast": OBJECT, "score": OBJECT + NONE, "added_at": NUMBER + NONE},
    "triage": {"format": TEXT, "subject": TEXT + NONE, "rows": OBJECT, "seeds": LIST + NONE},
    "drill": {
        "id": TEXT + WHOLE,
        "kind": TEXT,
        "seed": WHOLE + NONE,
        "revision": WHOLE,
        "saved_at": NUMBER,
        "closed": FLAG,
    },
    "flashcard": {"box": WHOLE, "seen": WHOLE, "known": WHOLE, "due": TEXT},
    "grade": {"notebook": TEXT, "graded_at": NUMBER, "rows": LIST, "summary": OBJECT},
    "prediction": {"exercise": TEXT, "hits": WHOLE, "total": WHOLE, "sealed_at": NUMBER},
    "manual_grade": {
        "learner": TEXT,
        "notebook": TEXT,
        "check": TEXT,
        "part": TEXT,
        "score": NUMBER,
        "max_score": NUMBER,
        "prose_sha256": TEXT,
        "comment": TEXT,
    },
    "prediction_seal": {
        "exercise": TEXT,
        "prediction": OBJECT + LIST + TEXT + NUMBER + FLAG + NONE,
        "sealed_at": NUMBER,
    },
}
CHECKS: dict = {}  # kind -> check(record, source), raising ValueError for a bad record
_NAMES = {
    bool: "true/false",
    int: "a whole number",
    float: "a number",
    str: "text",
    dict: "an object",
    list: "a list",
    type(None): "null",
}


def depth(value) -> int:
    """How deeply lists and objects nest in `value` (0 for a plain value), without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d + 1)
            if deepest > MAX_DEPTH:
                return deepest
            todo += [(x, d + 1) for x in (v.values() if isinstance(v, dict) else v)]
    return deepest


def as_time(value, field: str = "created_at") -> float | None:
    """A time as seconds since 1970: a number, an ISO 8601 text, or None; else ValueError."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"field {field!r} is {value!r}, which is not a time; give seconds "
                "since 1970 or an ISO 8601 time such as '2026-01-31T09:30:00'"
            ) from None
        return when.replace(tzinfo=when.tzinfo or dt.UTC).timestamp()
    try:
        seconds = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):  # not a number, or beyond any float
        seconds = None
    if (
        seconds is None
        or not isinstance(value, (int, float))
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        shown = (
            f"{value!r:.40}" + ("..." if len(repr(value)) > 40 else "")
            if not isinstance(value, int) or value.bit_length() < 128
            else f"a number of {len(str(value))} digits"
        )
        raise ValueError(
            f"field {field!r} is {shown}, which is not a time; give seconds since "
            "1970 (a non-negative number) or an ISO 8601 time"
        )
    return seconds


class Undecodable(bytes):
    """A text column of the store that is not UTF-8 (another program wrote it): its bytes."""

    def __str__(self) -> str:
        return self.decode("utf-8", "backslashreplace")

    def __repr__(self) -> str:
        return repr(str(self))


def text_of(raw: bytes):
    """The store's text columns as str, or Undecodable where they are not UTF-8, so one bad
    record is named and skipped instead of failing every read."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(raw)


def problem(record: dict) -> str | None:
    """What is wrong with `record` ({"kind", "key", "body", ...}), in words, or None."""
    kind, key, body = record.get("kind"), record.get("key"), record.get("body")
    for name, text in (("kind", kind), ("key", key)):
        if isinstance(text, str) and not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"its {name} {text!r} holds a lone surrogate ({text[exc.start]!r} at "
                    f"position {exc.start}), which is not text; give the {name} as plain text"
                )
    if isinstance(body, bytes):
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (
                f"field 'body' is not UTF-8 text (byte {exc.start} cannot be read), so "
                "another program wrote it"
            )
    if kind not in KINDS:
        close = suggest(kind, KINDS).strip()
        hint = f"{close[:1].lower()}{close[1:]} " if close else ""
        return f"its kind {kind!r} is not one labkit keeps ({hint}the kinds are {', '.join(KINDS)})"
    if not isinstance(key, str) or not key.strip():
        return f"its key {key!r} is not a non-empty text"
    if not isinstance(body, dict):
        return f"field 'body' is {_NAMES.get(type(body), type(body).__name__)}, not an object"
    if depth(body) > MAX_DEPTH:
        return f"field 'body' nests lists and objects more than {MAX_DEPTH} deep"
    for field, types in FIELDS.get(kind, {}).items():
        if field in body and not _is(body[field], types):
            allowed = " or ".join(dict.fromkeys(_NAMES[t] for t in types))
            return (
                f"field 'body.{field}' is {body[field]!r:.40} "
                f"({_NAMES.get(type(body[field]), type(body[field]).__name__)}); "
                f"a {kind} record needs {allowed} there"
            )
    try:
        as_time(record.get("created_at"))
    except ValueError as exc:
        return str(exc)
    try:  # what the feature that keeps this kind checks more deeply (forecast, triage)
        if kind in CHECKS:
            CHECKS[kind](record, "the store")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"its body does not read as a {kind} record ({' '.join(str(exc).split())[:160]})"
    return None


def _is(value, types) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def check_import(records: list, source) -> list:
    """Every record checked before anything is written; times become seconds since 1970."""
    for i, r in enumerate(records):
        why = problem(r) if isinstance(r, dict) else f"it is {type(r).__name__}, not an object"
        if why:
            key = r.get("key") if isinstance(r, dict) else None
            raise ValueError(
                f"{str(source)!r} was not imported: record {i + 1} "
                f"(key {key!r:.60}) is refused because {why}; nothing was written."
            )
        r["created_at"] = as_time(r.get("created_at"))
    return records


def readable(records: list) -> list:
    """The records a reader can use; each malformed one is skipped with a warning naming it."""
    good = []
    for r in records:
        why = problem(r)
        if why:
            warnings.warn(
                f"Skipped the {r.get('kind')} record {r.get('key')!r} in the learner "
                f"store: {why}; `labkit store check` lists such records and `labkit "
                "store remove KIND KEY` removes one.",
                stacklevel=3,
            )
        else:
            good.append(r)
    return good
