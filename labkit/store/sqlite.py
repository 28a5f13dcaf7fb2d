"""Opening the learner store's SQLite file, and saying in words why it failed.

`open_connection` refuses a file that is not a labkit store before SQLite writes a byte to
it, then sets WAL, fsync at each commit and a busy timeout, and creates the tables of a
new store in one transaction (two first users at once: one creates, the other waits).
`failure_sentence` turns an SQLite or OS error into one sentence for the learner.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from pathlib import Path

from .exchange import FORMAT, StoreConflict, StoreError, version  # noqa: F401 (re-exported)
from .schema import text_of

BUSY_S = 30.0  # how long a write waits for another writer before giving up
_HEADER = b"SQLite format 3\x00"


_CHECKED: dict[
    str, str | None
] = {}  # store path and inode -> why it is damaged (None: sound), per process


def open_connection(path: Path) -> sqlite3.Connection:
    """A connection to the store at `path`; a damaged store is refused (`damage`) untouched."""
    check_store_file(path)
    if path.is_file() and path.stat().st_size and quick_check(path):
        raise StoreError(damage(path))  # refused before a connection that could write exists
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_S, isolation_level=None, check_same_thread=False)
        conn.text_factory = text_of  # a column another program wrote as bad UTF-8 is read too
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(failure_sentence(path, exc, "opening it")) from None
    try:
        _prepare_waiting(path, conn)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(failure_sentence(path, exc, "opening it")) from None
        raise
    return conn


def _prepare_waiting(path: Path, conn, budget_s: float = BUSY_S) -> None:
    """`_prepare`, tried again while another process holds the file, for up to `budget_s`.

    SQLite's busy timeout does not cover everything here: switching the journal to WAL
    while another process is creating the store answers SQLITE_BUSY at once, without
    waiting. Two notebooks (or a notebook and the CLI) opening a new store together hit
    that, so the opening steps, which are all safe to repeat, are retried.
    """
    deadline, pause = time.monotonic() + budget_s, 0.005
    while True:
        try:
            return _prepare(path, conn)
        except sqlite3.OperationalError as exc:
            name = getattr(exc, "sqlite_errorname", "") or ""
            busy = name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if not busy or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.25)


def _prepare(path: Path, conn) -> None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if tables:  # an existing file: make sure it is ours before writing anything
        check_store_tables(path, tables, conn)
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")  # fsync each commit: a returned write is on disk
    if not tables:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS labkit_meta (name TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT OR IGNORE INTO labkit_meta VALUES ('format', ?)", (FORMAT,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "kind TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, "
            "created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE (kind, key))"
        )
        conn.execute("COMMIT")


def quick_check(path: Path) -> str | None:
    """Why the store at `path` is damaged (SQLite's ``PRAGMA quick_check``), or None. The
    check runs once per store file and process, on a read-only connection of its own, which
    SQLite never lets write (not even the checkpoint a last connection makes on closing)."""
    key = f"{path}:{path.stat().st_ino}"  # a file moved aside and started afresh is checked again
    if key in _CHECKED:
        return _CHECKED[key]
    try:
        ro = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_S)
    except sqlite3.Error:
        return None  # not even readable: opening it for real says why in words
    try:
        rows = ro.execute("PRAGMA quick_check(5)").fetchall()
        found = "; ".join(
            " ".join(str(r[0]).replace("*** in database main ***", "").split()).lower()
            for r in rows
            if r[0] != "ok"
        )
    except sqlite3.DatabaseError as exc:
        if not (getattr(exc, "sqlite_errorname", "") or "").startswith(
            ("SQLITE_CORRUPT", "SQLITE_NOTADB")
        ):
            return None  # busy, or a folder it cannot read in: not damage, checked next time
        found = " ".join(str(exc).split())
    finally:
        ro.close()
    _CHECKED[key] = found or None
    return _CHECKED[key]


def damage(path: Path) -> str | None:
    """The sentence that refuses writing to a damaged store, or None for a sound one."""
    why = _CHECKED.get(f"{path}:{path.stat().st_ino}")
    if not why:
        return None
    return damaged_sentence(path, f"SQLite's quick_check says: {why:.120}")


def damaged_sentence(path: Path, detail: str) -> str:
    return (
        f"The labkit store {str(path)!r} is damaged ({detail}), so labkit will neither "
        "read nor write it, and left it untouched; to recover, copy it somewhere safe "
        "(`sqlite3 COPY .recover` can often rescue its records, and `labkit export` then "
        "reads the rescued copy), and move the damaged file aside: labkit starts a fresh "
        "store in its place."
    )


# ---- refusing what is not a store ----------------------------------------------------------

_LEAVE_IT = (
    "so labkit left it untouched; move it elsewhere, or set LABKIT_HOME to another "
    "folder, and labkit will start a new store"
)


def check_store_file(path: Path) -> None:
    """Refuse a file whose first bytes are not SQLite's, naming what it looks like."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_HEADER))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise StoreError(
            f"The store path {str(path)!r} is a folder, where labkit keeps its store file; "
            f"{_elsewhere(path, 'move that folder aside')}."
        ) from None
    except NotADirectoryError:
        raise StoreError(
            f"The store path {str(path)!r} cannot be reached: a file stands where a folder "
            f"on its way should be, so labkit left it untouched; "
            f"{_elsewhere(path, 'move that file aside')}."
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(
                f"The store path {str(path)!r} cannot be reached: a symbolic link on its way "
                f"loops back on itself; {_elsewhere(path, 'point the link at a real folder')}."
            ) from None
        raise StoreError(failure_sentence(path, exc, "opening it")) from None
    if head == _HEADER or not head:  # an empty file is an empty SQLite database
        return
    what = "an old JSON forecast history" if head.lstrip().startswith(b"{") else "not SQLite"
    raise StoreError(
        f"The file {str(path)!r} is not a labkit store ({what}), {_LEAVE_IT}"
        + (
            f" (bring its forecasts in with `labkit import {path}`)."
            if what.startswith("an old")
            else "."
        )
    )


def _elsewhere(path: Path, fix: str) -> str:
    """`fix`, and for the default store the other way: LABKIT_HOME, which is where it is."""
    from .guard import HomeError, store_path

    try:
        default = Path(os.path.abspath(store_path())) == Path(os.path.abspath(path))
    except HomeError:
        default = False
    if not default:
        return fix
    now = os.environ.get("LABKIT_HOME") or "~/.labkit"
    return f"{fix}, or set LABKIT_HOME to another folder (it is {now!r} now)"


def check_store_tables(path: Path, tables: set, conn) -> None:
    fmt = None
    if "labkit_meta" in tables:
        row = conn.execute("SELECT value FROM labkit_meta WHERE name='format'").fetchone()
        fmt = row[0] if row else None
    if fmt == FORMAT and "records" in tables:
        return
    if version(fmt) is not None and version(fmt) < version(FORMAT):
        raise StoreError(
            f"The store {str(path)!r} was written by an older labkit (format {fmt!r}; this "
            f"one reads {FORMAT!r}), so labkit neither read nor wrote it; `labkit store "
            "upgrade` brings it to this format, keeping a copy of it as it was."
        )
    if fmt and fmt.startswith("labkit.store/"):
        raise StoreError(
            f"The store {str(path)!r} was written by a newer labkit (format "
            f"{fmt!r}; this one reads {FORMAT!r}); upgrade labkit to use it."
        )
    raise StoreError(
        f"The file {str(path)!r} is an SQLite database but not a labkit store "
        f"(its tables are {', '.join(sorted(tables))}), {_LEAVE_IT}."
    )


# ---- failures in words ----------------------------------------------------------------------


def failure_sentence(path: Path, exc, doing: str) -> str:
    """One sentence for an sqlite3.Error or OSError met while `doing` something to the store."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    code = getattr(exc, "errno", None)
    detail = getattr(exc, "strerror", None) or str(exc)
    where = f"The labkit store {str(path)!r}"
    folder = str(path.parent)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return damaged_sentence(path, f"{detail}, found while {doing}")
    if name.startswith(
        ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")
    ) or code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"{where} cannot be written ({detail}), so {doing} failed; nothing stored "
            f"before was changed or lost, and since labkit writes beside the store even to "
            f"read it, make the folder {folder!r} writable or set LABKIT_HOME to a "
            "writable folder, then try again."
        )
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")) or code in (errno.ENOSPC, errno.EFBIG):
        return (
            f"{where} could not be written ({detail}; the disk may be full), so {doing} "
            "failed and was not saved; everything stored before is intact, so free some "
            "space and try again."
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return (
            f"{where} stayed locked by another program for more than {BUSY_S:.0f} s, so "
            f"{doing} failed and was not saved; close other notebooks or commands using it "
            "and try again."
        )
    return (
        f"{where} failed while {doing} ({name or type(exc).__name__}: {detail}); nothing "
        "stored before was changed."
    )
