"""Finding and removing malformed records (``labkit store check``, ``labkit store remove``).

Readers skip a malformed record with a warning; these two let the learner see every such
record and take one out on purpose. Removing is one write transaction, so it is refused,
like any write, on a damaged store.
"""

from __future__ import annotations

from ..errors import suggest
from .schema import problem


def malformed(store) -> list[dict]:
    """Every record a reader would skip: {"kind", "key", "why"}, oldest first."""
    rows = store._read(f"SELECT {store._COLUMNS} FROM records ORDER BY id")
    out = []
    for row in rows:
        record = store._record(row)
        why = problem(record)
        if why:
            out.append({"kind": record["kind"], "key": record["key"], "why": why})
    return out


def find(store, kind: str, key: str) -> dict:
    """The record (kind, key), of any kind, malformed or not; ValueError if absent."""
    rows = store._read(f"SELECT {store._COLUMNS} FROM records WHERE kind=? AND key=?", (kind, key))
    if not rows:
        keys = [r[0] for r in store._read("SELECT key FROM records WHERE kind=?", (kind,))]
        raise ValueError(
            f"There is no {kind!r} record with key {key!r} in {str(store.path)!r}"
            f"{'; ' + str(len(keys)) + ' record(s) of that kind are kept' if keys else ''}"
            f"; `labkit store check` lists malformed ones.{suggest(key, keys)}"
        )
    return store._record(rows[0])


def remove(store, kind: str, key: str) -> dict:
    """Delete the record (kind, key), of any kind, and return it; ValueError if absent."""
    record = find(store, kind, key)
    with store._writing(f"removing {kind} record {key!r}") as conn:
        conn.execute("DELETE FROM records WHERE kind=? AND key=?", (kind, key))
    return record
