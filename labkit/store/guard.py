"""Where a command may write a file it was asked to write.

Minimal version for issue 23 (the fuller one comes with issue 25): an output path never
names the learner store, nor any other SQLite database, so `--json PATH` can never
overwrite a learner's records.
"""

from __future__ import annotations

from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"


class OutputPathRefused(ValueError):
    """An output path that would overwrite something a learner keeps."""


def check_output_path(path, parameter: str) -> Path:
    """`path` resolved, or `OutputPathRefused` with a sentence naming `parameter`."""
    from .learner import store_path
    target = Path(path).expanduser().resolve()
    if target == store_path().expanduser().resolve():
        raise OutputPathRefused(f"{parameter}={str(path)!r} is the learner store itself; writing "
                                "there would replace every record you keep. Choose another file, "
                                "e.g. report.json.")
    if target.is_file():
        with open(target, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            raise OutputPathRefused(f"{parameter}={str(path)!r} is an SQLite database; labkit "
                                    "does not overwrite a database with JSON. Choose another file.")
    if target.is_dir():
        raise OutputPathRefused(f"{parameter}={str(path)!r} is a folder; give a file name inside "
                                f"it, e.g. {str(Path(path) / 'report.json')!r}.")
    return target
