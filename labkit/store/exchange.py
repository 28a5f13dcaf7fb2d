"""The learner store's borders: its records out and in as JSON.

The store knows no kind of record: the features that keep records teach it, each from
its own module, through three tables:
- `MERGE_RULES[kind]`: how a new body joins the one stored under its key (the default,
  `same_or_refuse`: a record is written once; forecasts let a score join later);
- `READERS[format]`: turns a JSON document of that format into records (``labkit import``
  takes an export, and whatever formats the features registered);
- `CHECKS[kind]`: checks a record of that kind more deeply than its schema (`schema.problem`
  runs it on import and on reading);
- `ON_OPEN`: called with the store each time it is opened in a process (the forecast
  history imports an old ``forecasts.json`` this way).

`export_document(store)`: every record as one JSON document (``labkit export``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from .schema import CHECKS, check_import  # noqa: F401 (CHECKS: the features register here)

FORMAT = "labkit.store/1"  # an export document, and the store's own mark


def version(fmt) -> int | None:
    """N of a store format ``labkit.store/N``, or None for anything else."""
    found = re.fullmatch(r"labkit\.store/(\d+)", fmt or "") if isinstance(fmt, str) else None
    return int(found[1]) if found else None


class StoreError(ValueError):
    """The store cannot do what was asked; the message says why and what to do."""


class StoreConflict(StoreError):
    """A write would replace a different value already stored under the same key."""


# ---- how a record joins the one already stored ---------------------------------------


def _text(body) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def same_or_refuse(kind: str, key: str):
    """The rule for most kinds: a record is written once; an equal body again is a no-op."""

    def rule(old, new):
        if old is not None and _text(old) != _text(new):
            raise StoreConflict(
                f"The store already holds a different {kind} record under key "
                f"{key!r}, and labkit never overwrites a record; use "
                f"store.update({kind!r}, {key!r}, change) to change it on purpose."
            )
        return new if old is None else old

    return rule


MERGE_RULES: dict = {}  # kind -> rule(old body or None, new body) -> stored body
READERS: dict = {}  # format -> reader(doc, source) -> [record]
ON_OPEN: list = []  # hook(store), run once per store and process


def merge_rule(kind: str, key: str):
    """How a new body joins the one stored under (kind, key): `labkit import` uses it."""
    return MERGE_RULES.get(kind) or same_or_refuse(kind, key)


# ---- out and in ----------------------------------------------------------------------


def export_document(store) -> dict:
    """The store as one document; a malformed record is left out with a warning, and
    ``left_out`` says how many were."""
    records = store.records()
    counts = {}
    for r in records:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return {
        "format": FORMAT,
        "store": str(store.path),
        "exported_at": time.time(),
        "counts": counts,
        "records": records,
        "left_out": store.count() - len(records),
    }


def records_in(doc, source) -> list[dict]:
    """The records a JSON document holds, each checked against its kind's schema before
    anything is written; ValueError names `source`, the record and the field."""
    return check_import(_records_in(doc, source), source)


def _records_in(doc, source) -> list[dict]:
    fmt = doc.get("format") if isinstance(doc, dict) else None
    try:
        if fmt == FORMAT:
            out = []
            for r in doc["records"]:
                if not (
                    isinstance(r.get("kind"), str)
                    and isinstance(r.get("key"), str)
                    and r["kind"]
                    and r["key"]
                    and "body" in r
                ):
                    raise ValueError(f"a record needs a kind, a key and a body; got {r!r:.80}")
                out.append({k: r.get(k) for k in ("kind", "key", "body", "created_at")})
            return out
        if fmt in READERS:
            return READERS[fmt](doc, source)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(
            f"{str(source)!r} is a {fmt} document but a damaged one ({exc}); "
            "nothing was imported from it."
        ) from None
    known = ", ".join(repr(f) for f in [FORMAT, *READERS])
    raise ValueError(
        f"{str(source)!r} is not something labkit can import (its format is "
        f"{fmt!r}); give one of these formats: {known}."
    )


def free_name(path: Path) -> Path:
    """`path`, or `path-2`, `path-3`, ... : the first name not taken."""
    n, candidate = 1, path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def import_once(store, name: str, records_of, what: str) -> None:
    """Merge the old JSON file `name` beside the store in, once, and rename it
    ``name.imported``. `records_of(doc, path)` turns it into records (or raises ValueError).
    A file that is gone, unreadable or not of that kind is left where it is."""
    from .files import read_json

    old = store.path.parent / name
    if not old.is_file():
        return
    try:
        records = records_of(read_json(old, what=what), old)
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
        return
    store.merge(records, source=str(old), keep_on_conflict=True)
    try:
        old.replace(free_name(old.with_name(name + ".imported")))
    except FileNotFoundError:  # another process imported and renamed it just now
        pass
