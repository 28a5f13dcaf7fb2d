"""`LearnerStore`: everything a learner writes, in one SQLite file that many writers share.

The file is ``$LABKIT_HOME/labkit.sqlite3`` (LABKIT_HOME defaults to ``~/.labkit``). It
holds records; a record is a kind, a key, a JSON body and two times (created, updated):

    kind        key                      body
    forecast    its content hash         {"forecast": Forecast.to_dict(), "score", "added_at"}
    triage      hash of the record       TriageRecord.to_dict(), NaN written as "NaN"
    drill       attempt/<id>, session/<id>   a finished drill or verbal answer; a drill in progress
    flashcard   the card's id            {"box", "due", "seen", "known"}
    grade       <notebook>/<id>          one `labkit grade` of one notebook: its rows and summary
    prediction  <exercise>:<sealed at>   an exercise's sealed prediction, what the runs showed, hits

The API, for every feature that keeps something:

    store = default_store()                       # nothing is opened until the first call below
    store.add("drill", key, body)                 # a new record; the same body again is a no-op,
                                                  # a different body under that key is refused
    store.get("drill", key)                       # {"kind", "key", "body", ...} or None
    store.records("drill"), store.count("drill")  # oldest first
    store.update("flashcard", key, change)        # change(old body or None) -> new body, inside
                                                  # one write transaction; raise in it to refuse
    store.update_many([(kind, key, change), ...]) # several updates, one transaction
    store.export(), store.merge(records)          # the whole store as JSON, and back

Why it is safe: WAL journal, fsync at every commit, a 30 s busy timeout, and each write is
one ``BEGIN IMMEDIATE`` transaction, so notebooks and the CLI take turns and a process killed
mid-write leaves the last commit whole. A file that is not a labkit store, or is damaged,
is named in one sentence and never written to; a read-only folder or a full disk also
gets one sentence, and what was stored before stays intact. Opening a store sweeps
temporary files of killed JSON writes beside it and runs the `ON_OPEN` hooks of the
features that keep records (the forecast history imports an old ``forecasts.json``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import check_choice
from .guard import STORE_NAME, labkit_home, store_path  # noqa: F401 (public here too)
from .exchange import ON_OPEN, merge_rule, same_or_refuse
from .sqlite import (
    FORMAT,  # noqa: F401 (public here too)
    StoreConflict,
    StoreError,
    failure_sentence,
    open_connection,
)

from .schema import KINDS, problem, readable  # noqa: F401 (KINDS: public here too)


_OPEN: dict[str, LearnerStore] = {}
_INHERITED: list = []  # connections a forked child got from its parent; closing them is unsafe


def default_store(path=None) -> LearnerStore:
    """The store at `path` (default `store_path()`), one object per file in this process."""
    store = LearnerStore(path)
    return _OPEN.setdefault(str(store.path), store)


def canonical(body, kind="record", key="?") -> str:
    """A body as the JSON text the store keeps; equal bodies give equal text."""
    try:
        return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"The {kind} record {key!r} cannot be kept as JSON ({exc}); give plain "
            "dicts, lists, strings, numbers and None, with NaN written as the "
            "string 'NaN' (labkit.store.encode_nonfinite does it)."
        ) from None


class LearnerStore:
    """One SQLite store of learner records; see the module docstring for the API."""

    def __init__(self, path=None):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be the store's file path; got {type(path).__name__}.")
        self.path = Path(os.path.abspath(path if path is not None else store_path()))
        self._conn, self._pid, self._lock = None, None, threading.RLock()

    def __repr__(self) -> str:
        return f"LearnerStore({str(self.path)!r})"

    # ---- opening -------------------------------------------------------------------
    def _connect(self):
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self._conn is not None:  # inherited through fork: never use or close it here
            _INHERITED.append(self._conn)
            self._conn = None
        from .files import sweep_tmp

        with self._lock:
            self._conn, self._pid = open_connection(self.path), os.getpid()
        sweep_tmp(self.path.parent)  # temporary files of JSON writes killed in this folder
        for hook in list(ON_OPEN):  # what the features that keep records do on opening
            hook(self)
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
            if _OPEN.get(str(self.path)) is self:
                del _OPEN[str(self.path)]

    # ---- failing in one sentence ------------------------------------------------------
    def _failure(self, exc, doing: str) -> StoreError:
        return StoreError(failure_sentence(self.path, exc, doing))

    @contextmanager
    def _writing(self, doing: str):
        """One write transaction: all of it is stored, or none of it."""
        conn = self._connect()
        with self._lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # SQLite already rolled back
                if isinstance(exc, sqlite3.Error):
                    raise self._failure(exc, doing) from None
                raise

    def _read(self, sql: str, args=()) -> list:
        conn = self._connect()
        with self._lock:
            try:
                return conn.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc, "reading it") from None

    # ---- the API ----------------------------------------------------------------------
    @staticmethod
    def _check(kind, key) -> None:
        check_choice("kind", kind, KINDS)
        if not isinstance(key, str) or not key:
            raise TypeError(f"key must be a non-empty string; got {key!r}.")

    @staticmethod
    def _record(row) -> dict:
        kind, key, body, created, updated = row
        try:  # not UTF-8 (`schema.Undecodable`): left as bytes, for `problem` to name
            body = body if isinstance(body, bytes) else json.loads(body)
        except ValueError:  # not JSON: written by another program; `problem` names it
            pass
        return {
            "kind": kind,
            "key": key,
            "body": body,
            "created_at": created,
            "updated_at": updated,
        }

    _COLUMNS = "kind, key, body, created_at, updated_at"

    def get(self, kind: str, key: str) -> dict | None:
        self._check(kind, key)
        rows = self._read(
            f"SELECT {self._COLUMNS} FROM records WHERE kind=? AND key=?", (kind, key)
        )
        return (readable([self._record(rows[0])]) or [None])[0] if rows else None

    def records(self, kind: str | None = None) -> list[dict]:
        """Every record of `kind` (all kinds when None), oldest first."""
        if kind is not None:
            check_choice("kind", kind, KINDS)
        where, args = ("WHERE kind=?", (kind,)) if kind else ("", ())
        rows = self._read(f"SELECT {self._COLUMNS} FROM records {where} ORDER BY id", args)
        return readable([self._record(r) for r in rows])  # a malformed one: warned, skipped

    def count(self, kind: str | None = None) -> int:
        if kind is not None:
            check_choice("kind", kind, KINDS)
        where, args = ("WHERE kind=?", (kind,)) if kind else ("", ())
        return self._read(f"SELECT COUNT(*) FROM records {where}", args)[0][0]

    def add(self, kind: str, key: str, body) -> dict:
        """Keep a new record. The same body again returns the stored one; a different body
        under the same key raises StoreConflict and changes nothing."""
        return self.update(kind, key, lambda old: same_or_refuse(kind, key)(old, body))

    def update(self, kind: str, key: str, change) -> dict:
        """Replace the body under (kind, key) by ``change(old body or None)``, as one transaction.

        No other writer can slip in between reading the old body and writing the new one;
        `change` refuses by raising, and then nothing is written.
        """
        self._check(kind, key)
        with self._writing(f"saving {kind} record {key!r}") as conn:
            return self._apply(conn, kind, key, change, time.time())[0]

    def update_many(self, changes) -> list[dict]:
        """Several `update`s, ``[(kind, key, change), ...]``, as one transaction: all or none."""
        changes = list(changes)
        for kind, key, _ in changes:
            self._check(kind, key)
        with self._writing(f"saving {len(changes)} records") as conn:
            now = time.time()
            return [self._apply(conn, kind, key, change, now)[0] for kind, key, change in changes]

    def _apply(self, conn, kind, key, change, created_at) -> tuple[dict, str]:
        row = conn.execute(
            f"SELECT {self._COLUMNS} FROM records WHERE kind=? AND key=?", (kind, key)
        ).fetchone()
        old = self._record(row) if row else None
        new = change(old["body"] if old else None)
        why = problem({"kind": kind, "key": key, "body": new})
        if why:
            raise ValueError(f"The {kind} record {key!r} was not saved because {why}.")
        text = canonical(new, kind, key)
        if old is not None and text == row[2]:
            return old, "same"
        now = time.time()
        if old is None:
            conn.execute(
                "INSERT INTO records (kind, key, body, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (kind, key, text, created_at, now),
            )
        else:
            conn.execute(
                "UPDATE records SET body=?, updated_at=? WHERE kind=? AND key=?",
                (text, now, kind, key),
            )
        record = {
            "kind": kind,
            "key": key,
            "body": json.loads(text),
            "created_at": old["created_at"] if old else created_at,
            "updated_at": now,
        }
        return record, "added" if old is None else "merged"

    def merge(self, records, *, source: str = "the import", keep_on_conflict=False) -> dict:
        """Bring in records (as `export()` lists them), all in one transaction.

        A record already here with the same body is skipped; a forecast gains a score it
        lacked. Any other difference refuses the whole merge, or with keep_on_conflict=True
        keeps the stored record and counts the difference under "conflicts".
        """
        counts = {"added": 0, "merged": 0, "same": 0, "conflicts": 0}
        with self._writing(f"importing {source}") as conn:
            for r in records:
                rule = merge_rule(r["kind"], r["key"])
                try:
                    _, what = self._apply(
                        conn,
                        r["kind"],
                        r["key"],
                        lambda old, r=r, rule=rule: rule(old, r["body"]),
                        r.get("created_at") or time.time(),
                    )
                except StoreConflict as exc:
                    if not keep_on_conflict:
                        why = str(exc)[:1].lower() + str(exc)[1:]
                        raise StoreConflict(f"Nothing from {source} was imported: {why}") from None
                    what = "conflicts"
                counts[what] += 1
        return counts

    def export(self) -> dict:
        """The whole store as one JSON document that `labkit import` reads back."""
        from .exchange import export_document

        return export_document(self)
