"""Atomic JSON files: runs, single forecasts and triage records saved where the learner asks.

A write goes to a temporary file in the same folder (``.<name>.labkit<pid>.<random>.tmp``),
is flushed to disk, then renamed over the target, so a crash never leaves half a file
and a reader never finds the target missing. The previous good copy is kept as
``<name>.bak``: it is hard-linked (or copied) there before the rename, never moved away.
A corrupt file raises a clear error and is left untouched for the learner to inspect.

A write killed midway (``kill -9``, a kernel restart) leaves its temporary file behind;
`sweep_tmp` removes such leftovers, and every write sweeps its own folder first.
Everything a learner writes over time (forecasts, scores, drills) lives in
`labkit.store.learner` instead.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import sys
import time
from pathlib import Path

# .<target>.labkit<pid>.<8 random>.tmp (this module), or .<target>.json.<8 random>.tmp
# (labkit before the pid was added); anything else in the folder is not ours to touch.
_TMP_NOW = re.compile(r"^\..+\.labkit(?P<pid>\d+)\.[a-z0-9_]{8}\.tmp$")
_TMP_OLD = re.compile(r"^\..+\.json(\.bak)?\.[a-z0-9_]{8}\.tmp$")
STALE_TMP_S = 600  # a write takes milliseconds; a temporary file this old was abandoned


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but belongs to someone else
        return True
    return True


def sweep_tmp(folder) -> list[Path]:
    """Remove temporary files that killed writes left in `folder`; return what was removed.

    A file tagged with the id of a process that no longer runs goes at once; an untagged
    one (older labkit) once it is STALE_TMP_S old, so a write in progress is never touched.
    """
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        now, old = _TMP_NOW.match(name), _TMP_OLD.match(name)
        if not (now or old):
            continue
        path = Path(folder) / name
        try:
            abandoned = now and not _alive(int(now["pid"]))
            if abandoned or time.time() - path.stat().st_mtime > STALE_TMP_S:
                path.unlink()
                removed.append(path)
        except OSError:  # gone already, or not ours to remove
            pass
    return removed


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.labkit{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _keep_backup(path: Path) -> None:
    """Make <name>.bak a copy of `path` without `path` ever being absent."""
    side = _tmp_name(path.with_name(path.name + ".bak"))
    try:
        os.link(path, side)  # the same bytes under a second name; `path` is replaced, not edited
    except OSError:
        shutil.copy2(path, side)
    os.replace(side, path.with_name(path.name + ".bak"))


def replace_atomically(path, text: str, *, backup: bool = True) -> Path:
    """Write `text` to the regular file `path` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_tmp(path.parent)
    tmp = _tmp_name(path)
    try:
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if backup and path.exists():
            try:  # keep the last copy that still parses as the backup
                json.loads(path.read_text(encoding="utf-8"))
                _keep_backup(path)
            except (ValueError, OSError):
                pass
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):  # a full disk or a read-only folder: one sentence
            err = type(exc)(
                f"Could not write {str(path)!r} ({exc.strerror or exc}); the file "
                "there before, if any, is unchanged."
            )
            err.errno = exc.errno
            raise err from None
        raise
    return path


READ_LIMIT = 256 << 20  # 256 MiB: far above any labkit document, far below a machine's memory


def read_text(path, *, what: str = "file", limit: int = READ_LIMIT) -> str:
    """A regular file's UTF-8 text, at most `limit` bytes; a FIFO or a device is never opened."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No {what} at {str(path)!r}.")
    if path.is_dir():
        raise IsADirectoryError(f"The {what} {str(path)!r} is a folder; give a file.")
    if not path.is_file():
        raise ValueError(
            f"The {what} {str(path)!r} is not a regular file (a FIFO, a device or a "
            "socket), so it was not read; give a file saved on disk."
        )
    if path.stat().st_size > limit:
        raise ValueError(
            f"The {what} {str(path)!r} is {path.stat().st_size:,} bytes, more than "
            f"labkit reads ({limit:,} bytes, {limit >> 20} MiB); it was not read."
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"The {what} at {str(path)!r} is not UTF-8 text (byte {exc.start} "
            "cannot be read; is it binary, or saved as UTF-16?); it was left "
            "untouched."
        ) from None


def read_json(path, *, what: str = "file"):
    """Load JSON; a corrupt file names itself and its backup, and is not modified."""
    text = read_text(path, what=what)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(
            f"The {what} at {str(path)!r} nests lists and objects too deeply to "
            "be a labkit document; it was left untouched."
        ) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise _not_json(path, what, exc) from None
        raise ValueError(
            f"The {what} at {str(path)!r} holds a number too long to read (more "
            f"than {sys.get_int_max_str_digits()} digits); it was left untouched."
        ) from None


def _not_json(path, what: str, exc) -> ValueError:
    bak = Path(str(path) + ".bak")
    hint = f" The last good copy is at {str(bak)!r}." if bak.exists() else ""
    return ValueError(
        f"The {what} at {str(path)!r} is not valid JSON ({exc.msg} at line "
        f"{exc.lineno}); it was left untouched.{hint}"
    )


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode_nonfinite(value):
    """Strict JSON has no NaN/inf: store them as the strings 'NaN', 'Infinity', '-Infinity'."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: encode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_nonfinite(v) for v in value]
    return value


def decode_nonfinite(value):
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, dict):
        return {k: decode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_nonfinite(v) for v in value]
    return value
