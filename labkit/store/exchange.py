"""The learner store's borders: its records out and in as JSON, and old files brought in.

- `same_or_refuse` / `merge_rule`: how a new body joins the one stored under its key (a
  record is written once; a forecast may gain the score it lacked).
- `export_document(store)`: every record as one JSON document (``labkit export``).
- `records_in(doc, source)`: the records in a document ``labkit import`` accepts: an export,
  an old forecast history (``labkit.forecast_history/1``), one forecast or one triage record.
- `migrate_old_history(store)`: on opening a store, ``forecasts.json`` and its ``.bak`` in
  the same folder are imported once and renamed ``*.imported``, so they are kept but not
  read again.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

from .files import read_json
from .sqlite import FORMAT, StoreConflict

HISTORY_FORMAT = "labkit.forecast_history/1"
OLD_FILES = ("forecasts.json", "forecasts.json.bak")


# ---- how a record joins the one already stored ---------------------------------------

def _text(body) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def same_or_refuse(kind: str, key: str):
    """The rule for most kinds: a record is written once; an equal body again is a no-op."""
    def rule(old, new):
        if old is not None and _text(old) != _text(new):
            raise StoreConflict(f"The store already holds a different {kind} record under key "
                                f"{key!r}, and labkit never overwrites a record; use "
                                f"store.update({kind!r}, {key!r}, change) to change it on purpose.")
        return new if old is None else old
    return rule


def merge_rule(kind: str, key: str):
    """How a new body joins the one stored under (kind, key): `labkit import` uses it."""
    if kind == "forecast":
        from ..forecast.history import merge_entry
        return merge_entry
    return same_or_refuse(kind, key)


# ---- out and in ----------------------------------------------------------------------

def export_document(store) -> dict:
    records = store.records()
    counts = {}
    for r in records:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return {"format": FORMAT, "store": str(store.path), "exported_at": time.time(),
            "counts": counts, "records": records}


def _forecast_record(entry: dict, source) -> dict:
    from ..forecast.forecast import Forecast
    from ..forecast.score import ForecastScore
    forecast = Forecast.from_dict(entry.get("forecast"))
    if not forecast.sealed:
        raise ValueError(f"{source} holds a forecast that was never sealed; only sealed "
                         "forecasts are kept.")
    if entry.get("score") is not None:
        ForecastScore.from_dict(entry["score"])  # a malformed score fails here, not later
    added = entry.get("added_at") or forecast.sealed_at
    return {"kind": "forecast", "key": forecast.content_hash, "created_at": added,
            "body": {"forecast": entry["forecast"], "score": entry.get("score"), "added_at": added}}


def _triage_record(body: dict) -> dict:
    from .learner import triage_key
    from .files import decode_nonfinite
    from ..diagnosis.triage import TriageRecord
    TriageRecord.from_dict(decode_nonfinite(body))
    return {"kind": "triage", "key": triage_key(body), "body": body}


def records_in(doc, source) -> list[dict]:
    """The records a JSON document holds, checked; ValueError names `source` if it is not one."""
    from ..forecast.forecast import FORMAT as FORECAST_FORMAT
    from ..diagnosis.triage import FORMAT as TRIAGE_FORMAT
    fmt = doc.get("format") if isinstance(doc, dict) else None
    try:
        if fmt == FORMAT:
            out = []
            for r in doc["records"]:
                if not (isinstance(r.get("kind"), str) and isinstance(r.get("key"), str)
                        and r["kind"] and r["key"] and "body" in r):
                    raise ValueError(f"a record needs a kind, a key and a body; got {r!r:.80}")
                if r["kind"] == "forecast" and \
                        _forecast_record(r["body"], source)["key"] != r["key"]:
                    raise ValueError(f"forecast record {r['key']!r:.20} is not filed under its "
                                     "own content hash")
                out.append({k: r.get(k) for k in ("kind", "key", "body", "created_at")})
            return out
        if fmt == HISTORY_FORMAT:
            return [_forecast_record(e, source) for e in doc["entries"]]
        if fmt == FORECAST_FORMAT:
            return [_forecast_record({"forecast": doc}, source)]
        if fmt == TRIAGE_FORMAT:
            return [_triage_record(doc)]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"{str(source)!r} is a {fmt} document but a damaged one ({exc}); "
                         "nothing was imported from it.") from None
    raise ValueError(f"{str(source)!r} is not something labkit can import (its format is "
                     f"{fmt!r}); give a `labkit export` file ({FORMAT!r}), an old forecast "
                     f"history ({HISTORY_FORMAT!r}), a forecast or a triage record.")


def migrate_old_history(store) -> None:
    """Import ``forecasts.json`` (then its ``.bak``) beside the store, and rename each."""
    for name in OLD_FILES:
        old = store.path.parent / name
        if not old.is_file():
            continue
        try:
            records = records_in(read_json(old, what="old forecast history"), old)
        except FileNotFoundError:  # another process imported and renamed it just now
            continue
        except ValueError as exc:
            warnings.warn(f"{exc} It will be tried again each time the store opens; fix it "
                          "or move it away to stop this warning.", stacklevel=3)
            continue
        counts = store.merge(records, source=str(old), keep_on_conflict=True)
        done = _free_name(old.with_name(name + ".imported"))
        try:
            os.replace(old, done)
        except FileNotFoundError:
            continue
        if counts["conflicts"]:
            warnings.warn(f"{counts['conflicts']} forecast(s) in {str(old)!r} differ from the "
                          f"copy already in the store; the store's copy was kept, and the old "
                          f"file is kept as {str(done)!r}.", stacklevel=3)


def _free_name(path: Path) -> Path:
    n, candidate = 1, path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate
