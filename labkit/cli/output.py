"""One meaning of `--json` for every `labkit` command that reports something.

    --json PATH   write the JSON document to PATH (atomically; the human report still prints)
    --json -      write it to stdout; the human report moves to stderr

Every document carries ``format`` ("labkit.<what>/<version of that format>") and
``labkit`` (the version of labkit that wrote it). Old spellings (a bare ``--json`` on
`labkit bugs`; `labkit run` and `labkit export` printing to stdout with no ``--json``) still
work for one release, with a deprecation line on stderr.
"""

from __future__ import annotations

import json
import re
import sys

STDOUT = "-"
BARE = object()  # `--json` given with no PATH: the old spelling of `labkit bugs --json`
FORMAT = re.compile(r"labkit\.[a-z_]+/\d+")


def add_json(p, what: str, *, bare_ok: bool = False) -> None:
    """Add `--json PATH|-` to parser `p`; `what` names the document in the help."""
    kw = {"nargs": "?", "const": BARE} if bare_ok else {}
    p.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        **kw,
        help=f"write {what} as JSON to PATH, or to stdout with -",
    )


def deprecated(old: str, new: str, err=None) -> None:
    """One line on stderr: `old` still works in this release; `new` is the spelling to use."""
    from .. import __version__

    major, minor = __version__.split(".")[:2]
    print(
        f"labkit: deprecated: {old}; use {new} (the old spelling goes in "
        f"{major}.{int(minor) + 1}).",
        file=err or sys.stderr,
    )


def document(format_: str, body: dict) -> dict:
    """`body` under a `format` string and the labkit version that wrote it."""
    from .. import __version__

    if not FORMAT.fullmatch(format_):
        raise ValueError(f"format={format_!r} must read labkit.<what>/<version>.")
    return {"format": format_, "labkit": __version__, **body}


def to_stdout(target) -> bool:
    return target == STDOUT


def human(target):
    """Where the human-readable report goes: stderr when the JSON takes stdout."""
    return sys.stderr if to_stdout(target) else sys.stdout


def write_json(
    doc: dict, target, parameter: str = "--json", *, text: str | None = None, foreign: bool = False
) -> None:
    """Write `doc` where `target` says: "-" is stdout, anything else a file path, checked by
    labkit's output rule (`labkit.store.outputs.write_output`). `text`: the JSON
    already serialised.
    `foreign`: a document in another tool's format (Gradescope's), with no labkit format."""
    if "format" not in doc and not foreign:
        raise ValueError("every labkit JSON document carries a format string.")
    from ..store import encode_nonfinite
    from ..store.outputs import write_output

    if text is None:  # NaN and infinity as the strings "NaN", "Infinity": strict JSON
        text = json.dumps(encode_nonfinite(doc), indent=2, sort_keys=True, allow_nan=False)
    if to_stdout(target):
        sys.stdout.write(text + "\n")
        return
    write_output(target, text + "\n", parameter=parameter)
    print(f"wrote {target}", file=sys.stderr)


def _inputs(args) -> dict:
    """The files a command reads that its outputs must not replace (a folder: the files of
    the kind it reads there)."""
    from pathlib import Path

    setup = getattr(args, "setup", None)
    given = {
        ("--setup", ""): [setup.partition(":")[0]] if setup else [],
        ("NOTEBOOK", "*.ipynb"): getattr(args, "notebooks", None) or [],
        ("--hidden", "*.py"): [args.hidden] if getattr(args, "hidden", None) else [],
    }
    return {
        name: [f for p in paths for f in (sorted(Path(p).glob(kind)) if Path(p).is_dir() else [p])]
        for (name, kind), paths in given.items()
    }


def is_stdout(path) -> bool:
    """True when `path` names the file this process's stdout already writes to (/dev/stdout,
    /proc/self/fd/1, the terminal, or the file a shell's `>` sent stdout to): that output is
    then written as `-` would be, so the human report moves to stderr instead of mixing in."""
    import os

    if not isinstance(path, str) or path in ("", STDOUT):
        return False
    try:
        given, out = os.stat(os.path.expanduser(path)), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no such file; stdout is not a real file
        return False
    return (given.st_dev, given.st_ino) == (out.st_dev, out.st_ino)


def refuse_outputs(args) -> None:
    """labkit's output rule (`labkit.store.outputs`) for a command's outputs and inputs,
    before any work is done. An output that names stdout's own file is read as `-`."""
    from ..store.outputs import check_command

    for n in ("json", "gradescope", "csv"):
        if is_stdout(getattr(args, n, None)):
            setattr(args, n, STDOUT)
    outputs = {f"--{n}": getattr(args, n, None) for n in ("json", "gradescope", "csv")}
    check_command({n: p for n, p in outputs.items() if isinstance(p, str)}, _inputs(args))


def as_flag(msg: str, args) -> str:
    """A message that names an API parameter (``steps=0 is out of range``) names the option
    the learner typed instead (``--steps=0``), where the command has it."""
    name = msg.partition("=")[0]
    if name.isidentifier() and args is not None and name in vars(args) and "=" in msg:
        return f"--{name.replace('_', '-')}{msg[len(name) :]}"
    return msg
