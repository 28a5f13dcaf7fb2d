"""Atomic JSON storage for what a learner writes: forecasts, triage records, scores.

A write goes to a temporary file in the same folder, is flushed to disk, then
renamed over the target, so a crash never leaves half a file. The previous
good copy is kept as ``<name>.bak``. A corrupt file raises a clear error and
is left untouched for the learner to inspect.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path


def atomic_write_text(path, text: str, *, backup: bool = True) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if backup and path.exists():
            bak = path.with_name(path.name + ".bak")
            try:  # keep the last copy that still parses as the backup
                json.loads(path.read_text(encoding="utf-8"))
                os.replace(path, bak)
            except (ValueError, OSError):
                pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_json(path, obj, *, backup: bool = True) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=False)
    return atomic_write_text(path, text + "\n", backup=backup)


def read_text(path, *, what: str = "file") -> str:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No {what} at {str(path)!r}.")
    return path.read_text(encoding="utf-8")


def read_json(path, *, what: str = "file"):
    """Load JSON; a corrupt file names itself and its backup, and is not modified."""
    text = read_text(path, what=what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        bak = Path(str(path) + ".bak")
        hint = f" The last good copy is at {str(bak)!r}." if bak.exists() else ""
        raise ValueError(f"The {what} at {str(path)!r} is not valid JSON ({exc.msg} at line "
                         f"{exc.lineno}); it was left untouched.{hint}") from None


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
