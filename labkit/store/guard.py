"""Where the learner store lives, and the guard every output path passes before a write.

`refuse_store(path, parameter)` (called by `labkit.store.outputs.check_output`) resolves `path` (symlinks too) and refuses it when it
is the learner store, one of its side files (``-wal``, ``-shm``, ``-journal``), or any file
that already is an SQLite database, or a side file of one. Every command and API that
writes a file where the learner asks (``--json PATH``, ``Run.to_json(path)``, ...) calls
it, so that no report can replace the records a learner kept.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import OutputPathError

STORE_NAME = "labkit.sqlite3"
SIDE_FILES = ("-wal", "-shm", "-journal")
SQLITE_HEADER = b"SQLite format 3\x00"


def labkit_home() -> Path:
    """$LABKIT_HOME as an absolute folder, read in this one place: a leading ``~`` or
    ``~user`` is home, as a shell would have expanded it (a ``.env`` file or a quoted line
    passes it on literally); unset or empty, ``~/.labkit``. A ``~`` that names no user is
    refused with a sentence (`HomeError`), never made into a folder named ``~``."""
    given = os.environ.get("LABKIT_HOME") or ""
    if not given:
        return Path.home() / ".labkit"
    expanded = os.path.expanduser(given)
    if expanded.startswith("~"):
        raise HomeError(
            f"LABKIT_HOME={given!r} starts with {given.split('/')[0]!r}, which names no "
            "user's home on this machine, so labkit did not make a folder of that name; "
            "set LABKIT_HOME to a folder path, such as ~/labkit-data or /home/me/labkit-data."
        )
    return Path(os.path.abspath(expanded))


class HomeError(ValueError):
    """$LABKIT_HOME cannot be where the learner store lives; the message says why."""


def store_path() -> Path:
    """Where the learner's store lives: ``$LABKIT_HOME/labkit.sqlite3``."""
    return labkit_home() / STORE_NAME


def is_sqlite(path: Path) -> bool:
    """True for a regular file that starts as an SQLite database (nothing else is opened)."""
    if not os.path.isfile(path):  # a FIFO or a device is never opened here
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:  # missing, a folder, unreadable: not a database we could harm
        return False


def _resolve(path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path)))).resolve()


def _store_resolved() -> Path | None:
    """The store's path resolved, or None where no store can be (a $LABKIT_HOME that is
    refused or whose links loop): a command that writes a report needs no store."""
    try:
        return _resolve(store_path())
    except (HomeError, RuntimeError, OSError):
        return None


def refuse_store(path, parameter: str) -> Path:
    """`path` resolved, or OutputPathError when writing there would harm a store."""
    try:
        target = _resolve(path)
    except RuntimeError:  # Path.resolve: a link on the way points back at itself
        raise OutputPathError(
            f"{parameter}={os.fspath(path)!r} cannot be written: a symbolic link on its way "
            "loops back on itself; nothing was written, so give another path."
        ) from None
    store = _store_resolved()
    why = None
    if store is not None and target == store:
        why = (
            "it is your learner store, where every forecast, drill, triage record and grade is kept"
        )
    elif (
        store is not None
        and target.parent == store.parent
        and target.name in {store.name + s for s in SIDE_FILES}
    ):
        why = "it is a side file of your learner store (SQLite's journal), which holds records not yet merged"
    elif is_sqlite(target):
        why = "that file is an SQLite database, and writing there would destroy it"
    else:
        for side in SIDE_FILES:
            if target.name.endswith(side) and is_sqlite(
                target.with_name(target.name[: -len(side)])
            ):
                why = "it is a side file (journal) of the SQLite database beside it"
    if why:
        raise OutputPathError(
            f"{parameter}={str(path)!r} was refused: {why}; nothing was "
            "written, so give another file name, such as 'report.json'."
        )
    return target
