"""``labkit store upgrade``: a store written by an older labkit, brought to this one's format.

A store carries its format in ``labkit_meta`` (``labkit.store/N``). One of a newer N is
refused (this labkit cannot know what it holds); one of an older N is refused for reading
and writing too, with the one command that upgrades it. The upgrade keeps a copy of the
store as it was (SQLite's backup, the journal's records included) beside it, then, in one
write transaction, runs each step from N to this format (`STEPS`) and writes the format
row: all of it or none. Format 1 is the first labkit released, so no step is registered
yet; a format without one must hold the ``records`` table as this labkit reads it, and is
refused with a sentence naming the columns it lacks otherwise.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .exchange import FORMAT, StoreError, version

STEPS: dict = {}  # N -> step(conn): a store of format N made one of format N + 1, in place
COLUMNS = ("kind", "key", "body", "created_at", "updated_at")


def _same_layout(conn) -> None:
    have = [r[1] for r in conn.execute("PRAGMA table_info(records)")]
    missing = [c for c in COLUMNS if c not in have]
    if missing:
        raise StoreError(
            f"its records table lacks the column(s) {', '.join(missing)} that this labkit reads"
        )


def _backup_path(path: Path, fmt: str) -> Path:
    base = path.with_name(f"{path.name}.{fmt.replace('/', '-')}.bak")
    found, n = base, 1
    while found.exists():  # an earlier attempt's copy is kept too
        n += 1
        found = base.with_name(f"{base.name}.{n}")
    return found


def upgrade(path) -> tuple[str, Path | None]:
    """Upgrade the store at `path`: (its format before, the copy kept) or (FORMAT, None)
    when it already is of this format. StoreError, with nothing changed, when it cannot."""
    from .sqlite import BUSY_S, check_store_file, failure_sentence

    path = Path(path)
    if not path.is_file():
        raise StoreError(f"There is no store at {str(path)!r} to upgrade.")
    check_store_file(path)  # a file that is not SQLite is named, never opened for writing
    conn = sqlite3.connect(path, timeout=BUSY_S, isolation_level=None)
    try:
        row = conn.execute("SELECT value FROM labkit_meta WHERE name='format'").fetchone()
        fmt = row[0] if row else None
        ours, theirs = version(FORMAT), version(fmt)
        if fmt == FORMAT:
            return FORMAT, None
        if theirs is None or theirs > ours:
            raise StoreError(
                f"The store {str(path)!r} has format {fmt!r}, which is not an older labkit "
                f"store (this labkit reads {FORMAT!r}); it was left untouched."
            )
        kept = _backup_path(path, fmt)
        with sqlite3.connect(kept) as copy:
            conn.backup(copy)  # consistent, the write-ahead journal's records included
        conn.execute("BEGIN IMMEDIATE")
        try:
            for n in range(theirs, ours):
                STEPS.get(n, _same_layout)(conn)
            _same_layout(conn)
            conn.execute("UPDATE labkit_meta SET value=? WHERE name='format'", (FORMAT,))
            conn.execute("COMMIT")
        except BaseException as exc:
            conn.execute("ROLLBACK")
            if isinstance(exc, StoreError):
                raise StoreError(
                    f"The store {str(path)!r} (format {fmt!r}) could not be upgraded: {exc}; "
                    f"it was left as it was, and a copy is at {str(kept)!r}."
                ) from None
            raise
        return fmt, kept
    except sqlite3.Error as exc:
        raise StoreError(failure_sentence(path, exc, "upgrading it")) from None
    finally:
        conn.close()
