"""One rule for every path a labkit command or API writes a report to (``--json``, ``--csv``,
``--gradescope``, `Run.to_json`, `Forecast.to_json`, `TriageRecord.save`, ...):

    a path that exists and is not a regular   written through, in place, as a shell's ``>``
    file (/dev/null, a FIFO, /dev/stdout)     would; never replaced
    a symlink                                 followed: its target is written, the link kept
    the learner store, any SQLite database    refused (`labkit.store.guard`)
    a regular file labkit did not write       refused: it is kept as it was
    an empty path, a folder                   refused
    anything else                             written atomically (`files.replace_atomically`)

`check_command` adds the rule of one command: an output that is one of its inputs (a setup
file, hidden checks, a notebook being graded), or that two of its outputs share, is refused
before any work is done.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from pathlib import Path

from ..errors import OutputPathError
from .files import encode_nonfinite, replace_atomically
from .guard import refuse_store

FIFO_WAIT_S = 30  # how long a FIFO may stay without a reader before the write is given up
_OURS = re.compile(
    rb'"format"\s*:\s*"labkit\.[a-z_-]+/\d+"|"output"\s*:\s*"labkit grade:'
    rb"|^learner,notebook,exercise,check,status,points,max_points,message(,manual_\w+)*\r?\n"
    rb"|^learner,points,max_points,checks_passed,checks,notebooks(,manual_\w+)*\r?\n"
)
_SNIFF = 1 << 20  # the first MiB tells whether labkit wrote a file


def _expand(path) -> str:
    return os.path.expanduser(os.fspath(path))


def _mode(path) -> int | None:
    try:
        return os.stat(path).st_mode  # follows links
    except (OSError, ValueError):
        return None


def through_fd(path) -> bool:
    """True when `path`, or a link on its way, is one of the process's open files
    (/dev/stdout, /dev/fd/N, /proc/self/fd/N): that file is written through, never replaced."""
    here = os.path.abspath(_expand(path))
    for _ in range(40):  # the kernel's own limit on links followed
        if here.startswith(("/proc/", "/dev/fd/")) or here in ("/dev/stdout", "/dev/stderr"):
            return True
        if not os.path.islink(here):
            return False
        here = os.path.join(os.path.dirname(here), os.readlink(here))
    return False


def is_stream(path) -> bool:
    """True when `path` is written in place: it exists and is not a regular file or folder."""
    mode = _mode(_expand(path))
    return through_fd(path) or (
        mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)
    )


def written_by_labkit(path) -> bool:
    """True for an empty file or one of labkit's own reports (a labkit format, Gradescope's
    results as `labkit grade` writes them, the grade CSV)."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF)
    except OSError:
        return False
    return not head.strip() or bool(_OURS.search(head))


def _given(path, parameter: str) -> None:
    if path is None or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{parameter} must be a file path, such as 'report.json'; got {path!r}.")
    if not os.fspath(path):
        raise OutputPathError(
            f"{parameter}='' is an empty path; give a file name, such as "
            "'report.json' (or - for stdout where the command allows it)."
        )


def check_output(path, parameter: str, *, foreign_ok: bool = False) -> Path:
    """The file `path` names (links followed), or OutputPathError when writing there is not
    allowed by the rule above. Opens nothing but a regular file. `foreign_ok`: the store's
    own files (`atomic_write_text`), which may replace any JSON file."""
    _given(path, parameter)
    if is_stream(path):
        return Path(_expand(path))
    target = refuse_store(path, parameter)
    mode = _mode(target)
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputPathError(
            f"{parameter}={os.fspath(path)!r} is a folder; give a file path "
            "inside it, such as 'report.json'."
        )
    if mode is not None and not foreign_ok and not written_by_labkit(target):
        raise OutputPathError(
            f"{parameter}={os.fspath(path)!r} was refused: a file labkit did "
            "not write is there (it is not one of labkit's reports), and it is "
            "kept as it was; nothing was written, so move it aside or give "
            "another file name, such as 'report.json'."
        )
    return target


def _same(a, b) -> bool:
    try:
        return os.path.samefile(_expand(a), _expand(b))
    except OSError:  # one of them does not exist yet
        return os.path.realpath(_expand(a)) == os.path.realpath(_expand(b))


def check_command(outputs: dict, inputs: dict | None = None) -> None:
    """Refuse, before any work, an output (parameter -> path, None or "-") that is one of the
    command's `inputs` (parameter -> path or list of paths) or that another output shares;
    then check each output on its own (`check_output`)."""
    given = [(n, p) for n, p in outputs.items() if p is not None and p != "-"]
    for name, path in given:
        _given(path, name)
    for i, (name, path) in enumerate(given):
        for source, paths in (inputs or {}).items():
            for p in paths if isinstance(paths, (list, tuple)) else [paths]:
                if p is not None and _same(path, p):
                    raise OutputPathError(
                        f"{name}={os.fspath(path)!r} is also {source}={os.fspath(p)!r}, an input "
                        "of this command that the report would replace; nothing was run or "
                        "written, so give another file name, such as 'report.json'."
                    )
        for other, path2 in given[:i]:
            if _same(path, path2) and not _same(path, os.devnull):
                raise OutputPathError(
                    f"{name}={os.fspath(path)!r} and {other}="
                    f"{os.fspath(path2)!r} name the same file, so one report "
                    "would replace the other; nothing was run or written, so "
                    "give each its own file name."
                )
    for name, path in given:
        check_output(path, name)


def _open_stream(path: str):
    """Open a device, FIFO or the terminal for writing; a FIFO waits up to FIFO_WAIT_S for a
    reader, then the write is given up with a sentence."""
    if not stat.S_ISFIFO(_mode(path) or 0):
        return open(path, "w", encoding="utf-8")
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:  # no reader yet
                raise
            time.sleep(0.02)


def write_output(
    path, text: str, *, parameter: str = "path", backup: bool = False, foreign_ok: bool = False
) -> Path:
    """Write `text` to `path` by the rule above; returns the path as given."""
    target = check_output(path, parameter, foreign_ok=foreign_ok)
    if is_stream(path):
        try:
            with _open_stream(_expand(path)) as f:
                f.write(text)
        except OSError as exc:
            why = (
                f"no program read from the FIFO within {FIFO_WAIT_S} s"
                if exc.errno == errno.ENXIO
                else exc.strerror or exc
            )
            raise type(exc)(
                f"Could not write {parameter}={os.fspath(path)!r} ({why}); nothing was replaced."
            ) from None
        return Path(_expand(path))
    replace_atomically(target, text, backup=backup)
    return Path(_expand(path))


def atomic_write_text(path, text: str, *, backup: bool = True, parameter: str = "path") -> Path:
    """The store's own files: the rule above, but any regular file may be replaced."""
    return write_output(path, text, parameter=parameter, backup=backup, foreign_ok=True)


def atomic_write_json(path, obj, *, backup: bool = True, parameter: str = "path") -> Path:
    text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=False)
    return atomic_write_text(path, text + "\n", backup=backup, parameter=parameter)


def write_json(path, obj, *, parameter: str = "path", backup: bool = False) -> Path:
    """`obj` as strict JSON (NaN and infinity as strings), written by the rule above."""
    text = json.dumps(encode_nonfinite(obj), indent=2, sort_keys=True, allow_nan=False)
    return write_output(path, text + "\n", parameter=parameter, backup=backup)
