"""The drill log: every finished attempt, and the drills still in progress, in the learner store.

    log = DrillLog()                  # records of kind "drill" in $LABKIT_HOME/labkit.sqlite3
    log.append({...})                 # a finished attempt (a drill or a verbal answer)
    log.attempts()                    # every attempt, oldest first
    state = log.save_session(state)   # after each command; returns it with a new revision
    log.open_session(seed=3)          # the unfinished drill to resume, or None
    log.finish(state, attempt)        # the attempt in, the session closed, in one transaction

The log lives in the one `LearnerStore` that keeps forecasts, triage records and flashcards,
so it is atomic, safe with several writers (two terminals, a terminal and a notebook),
survives a killed process, and leaves with `labkit export` as JSON. An attempt is a record
keyed ``attempt/<id>``, never changed once written. A session is ``session/<id>``; it
carries a revision, and saving a session another window moved on since it was loaded is
refused (`DrillConflict`), not silently overwritten. A finished session is closed, not
deleted. A ``drill.json`` written by the first labkit drill (a JSON file of its own) is
imported when the store opens, and `labkit import` reads one too.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from ...store.exchange import ON_OPEN, READERS, import_once
from ...store.learner import default_store

FORMAT = "labkit.drill-log/1"  # the JSON file of the first drill log, still importable
KIND = "drill"


class DrillConflict(ValueError):
    """The session was saved by another window since this one loaded it."""


class DrillLog:
    def __init__(self, path=None):
        if path is not None and Path(path).is_dir():
            raise ValueError(
                f"log={str(path)!r} is a folder; give the store's file path, such "
                f"as {str(Path(path) / 'labkit.sqlite3')!r}."
            )
        if path is not None and Path(path).suffix == ".json":
            raise ValueError(
                f"log={str(path)!r} names a JSON file, but drills are kept in the "
                "learner store with everything else; give a store file such as "
                "'labkit.sqlite3' (or nothing, for $LABKIT_HOME/labkit.sqlite3). "
                "`labkit export` writes it all as JSON, and `labkit import "
                "drill.json` brings in an old drill log."
            )
        self.store = default_store(path)
        self.path = self.store.path

    def __repr__(self) -> str:
        return f"DrillLog({str(self.path)!r})"

    # ---- reading ----------------------------------------------------------------------
    def _bodies(self, prefix: str) -> list[dict]:
        return [r["body"] for r in self.store.records(KIND) if r["key"].startswith(prefix)]

    def attempts(self, kind: str | None = None) -> list[dict]:
        """Finished attempts, oldest first; `kind` "drill" or "verbal" keeps one kind."""
        return [a for a in self._bodies("attempt/") if kind is None or a.get("kind") == kind]

    def sessions(self) -> list[dict]:
        """The unfinished drills."""
        return [s for s in self._bodies("session/") if not s.get("closed")]

    def open_session(self, seed: int | None = None, *, world: int | None = None) -> dict | None:
        """The most recently saved unfinished drill (with `seed`, if given; of one kind, if
        `world` is given: 1 for one process, 2 for a distributed mystery), or None."""
        sessions = [
            s
            for s in self.sessions()
            if (seed is None or s.get("seed") == seed)
            and (world is None or s.get("world", 1) == world)
        ]
        return max(sessions, key=lambda s: s.get("saved_at", 0), default=None)

    # ---- writing (each one transaction) -----------------------------------------------
    def append(self, attempt: dict) -> None:
        if not isinstance(attempt, dict):
            raise TypeError(f"attempt must be a dict; got {type(attempt).__name__}.")
        self.store.add(KIND, f"attempt/{uuid.uuid4().hex}", attempt)

    def save_session(self, state: dict) -> dict:
        """Store an unfinished drill; returns the state with its revision moved on by one."""

        def change(stored):
            self._check_revision(stored, state)
            seen = bool(state.get("answer_seen") or (stored or {}).get("answer_seen"))
            return {
                **state,
                "revision": state.get("revision", 0) + 1,
                "saved_at": time.time(),
                "answer_seen": seen,
            }

        return self.store.update(KIND, f"session/{state['id']}", change)["body"]

    def finish(self, state: dict, attempt: dict) -> None:
        """Add the finished attempt and close its session, in one transaction."""

        def close(stored):
            self._check_revision(stored, state)
            attempt["answer_seen"] = bool(
                attempt.get("answer_seen") or (stored or {}).get("answer_seen")
            )
            return {
                "id": state["id"],
                "seed": state.get("seed"),
                "closed": True,
                "revision": state.get("revision", 0) + 1,
                "saved_at": time.time(),
            }

        self.store.update_many(
            [
                (KIND, f"session/{state['id']}", close),
                (KIND, f"attempt/{uuid.uuid4().hex}", lambda _: attempt),
            ]
        )

    def mark_answer_seen(self, seed: int, *, world: int | None = None) -> int:
        """Flag unfinished drills with this seed (and kind, `world`, if given): their score
        will say the answer was seen."""
        hit = [
            s
            for s in self.sessions()
            if s.get("seed") == seed and (world is None or s.get("world", 1) == world)
        ]
        # the revision stays: the drill goes on, and its score carries the flag
        self.store.update_many(
            [(KIND, f"session/{s['id']}", lambda old: {**old, "answer_seen": True}) for s in hit]
        )
        return len(hit)

    def _check_revision(self, stored: dict | None, state: dict) -> None:
        seed = state.get("seed")
        if stored is not None and stored.get("closed"):
            raise DrillConflict(
                f"This drill (seed {seed}) was finished in another window; "
                f"start it again with `labkit drill --seed {seed}`."
            )
        if stored is not None and stored.get("revision", 0) != state.get("revision", 0):
            raise DrillConflict(
                f"This drill (seed {seed}) was saved from another window after "
                f"this one loaded it; reload it with `labkit drill --seed {seed}` "
                "instead of overwriting that work."
            )
        if stored is None and state.get("revision", 0) > 0:
            raise DrillConflict(
                f"This drill (seed {seed}) is no longer in {str(self.path)!r}: "
                "it was finished or abandoned elsewhere."
            )


def records_of_old_log(doc: dict, source) -> list[dict]:
    """The records of a ``drill.json`` from the first drill log (for ``labkit import``)."""
    import hashlib
    import json

    out = []
    for a in doc.get("attempts", []):
        key = hashlib.sha256(json.dumps(a, sort_keys=True).encode()).hexdigest()[:32]
        out.append({"kind": KIND, "key": f"attempt/{key}", "body": a})
    for sid, s in doc.get("sessions", {}).items():
        out.append({"kind": KIND, "key": f"session/{sid}", "body": s})
    return out


def import_old_log(store) -> None:
    """Bring ``drill.json`` beside the store in, once, and rename it ``drill.json.imported``."""
    import_once(store, "drill.json", records_of_old_log, "old drill log")


READERS[FORMAT] = records_of_old_log
if import_old_log not in ON_OPEN:
    ON_OPEN.append(import_old_log)
