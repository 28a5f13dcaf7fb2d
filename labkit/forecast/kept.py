"""How forecasts live in the learner store: their merge rule, their JSON formats, and the
import of an old ``forecasts.json``.

Importing this module teaches `labkit.store` about forecasts (the store itself knows no
kind of record): a stored forecast may gain the score it lacked and nothing else; ``labkit
import`` reads an old forecast history (``labkit.forecast_history/1``) and single forecasts;
and each time a store is opened, ``forecasts.json`` and its ``.bak`` beside it are imported
once and renamed ``*.imported``, kept but not read again.
"""

from __future__ import annotations

import json
import os
import warnings

from ..store import read_json
from ..store.exchange import CHECKS, MERGE_RULES, ON_OPEN, READERS, free_name, records_in
from ..store.sqlite import StoreConflict
from .forecast import FORMAT as FORECAST_FORMAT
from .forecast import Forecast
from .score import ForecastScore

HISTORY_FORMAT = "labkit.forecast_history/1"  # the JSON file used before the store
OLD_FILES = ("forecasts.json", "forecasts.json.bak")


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def merge_entry(old: dict | None, new: dict) -> dict:
    """The stored entry after `new` joins `old` (same content hash): a score is attached once."""
    if old is None:
        return new
    if not _same(old["forecast"], new["forecast"]):
        raise StoreConflict(
            "A different forecast is already stored under this content hash, so "
            "one of the two copies was edited after sealing; it was not stored."
        )
    if new["score"] is None or _same(old["score"], new["score"]):
        return old
    if old["score"] is not None:
        raise StoreConflict(
            "This forecast already has a different score in the history; a "
            "forecast is scored once, against its own run."
        )
    return {**old, "score": new["score"]}


def forecast_record(entry: dict, source) -> dict:
    """One history entry as a store record, checked: sealed, and a score that parses."""
    forecast = Forecast.from_dict(entry.get("forecast"))
    if not forecast.sealed:
        raise ValueError(
            f"{source} holds a forecast that was never sealed; only sealed forecasts are kept."
        )
    if entry.get("score") is not None:
        ForecastScore.from_dict(entry["score"])  # a malformed score fails here, not later
    added = entry.get("added_at") or forecast.sealed_at
    return {
        "kind": "forecast",
        "key": forecast.content_hash,
        "created_at": added,
        "body": {"forecast": entry["forecast"], "score": entry.get("score"), "added_at": added},
    }


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
            warnings.warn(
                f"{exc} It will be tried again each time the store opens; fix it "
                "or move it away to stop this warning.",
                stacklevel=3,
            )
            continue
        counts = store.merge(records, source=str(old), keep_on_conflict=True)
        done = free_name(old.with_name(name + ".imported"))
        try:
            os.replace(old, done)
        except FileNotFoundError:
            continue
        if counts["conflicts"]:
            warnings.warn(
                f"{counts['conflicts']} forecast(s) in {str(old)!r} differ from the "
                f"copy already in the store; the store's copy was kept, and the old "
                f"file is kept as {str(done)!r}.",
                stacklevel=3,
            )


def check_exported(record: dict, source) -> None:
    """A forecast in an export must parse, be sealed, and be filed under its own hash."""
    if forecast_record(record["body"], source)["key"] != record["key"]:
        raise ValueError(
            f"forecast record {record['key']!r:.20} is not filed under its own content hash"
        )


MERGE_RULES["forecast"] = merge_entry
CHECKS["forecast"] = check_exported
READERS[HISTORY_FORMAT] = lambda doc, source: [forecast_record(e, source) for e in doc["entries"]]
READERS[FORECAST_FORMAT] = lambda doc, source: [forecast_record({"forecast": doc}, source)]
if migrate_old_history not in ON_OPEN:
    ON_OPEN.append(migrate_old_history)
