"""Generate exercises/ from solutions/: the solution is written once, the exercise is derived.

In a solution notebook:
* a code cell tagged ``solution`` becomes a stub: its lines ending in ``# keep`` stay, without
  that suffix (they tell the learner what to define), and the rest is replaced by one line a
  learner reads as an instruction, ``raise NotImplementedError("Replace this line ...")``,
  or by the cell's own stub: a comment line ``# stub: CODE`` in the solution becomes ``CODE``
  in the exercise (e.g. ``prediction = ask_prediction("ex_a")``, a form that Run All waits
  for, where a raise would stop it);
* code between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` lines is replaced by the same line,
  except in a cell tagged ``parameters``, where it is dropped: there it holds the solution's
  values (e.g. the instructor's sketch in ``forecast_points``), and the exercise keeps the
  defaults written above it, so that a learner's Run All and papermill both run that cell;
* a markdown cell tagged ``solution`` (a written answer) becomes "_Your answer here._".

The exercise shows no generator markers: a learner sees the kept instructions and the stub.
The stub raises ``NotImplementedError`` so that `labkit grade` reports the answer as not yet
written, and so that running the cell unanswered stops with a sentence that says what to do.

Anything that looks like a marker but is not exactly one of these (``# BEGIN SOLUTON``,
``# end solution``, a tag ``soluton``) stops the generator with an error, so a typo can
never ship a solution to students. Outputs are cleared in the exercise.

Usage: python tools/make_exercises.py [--check]   (--check: fail if exercises/ is stale)
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
KEEP = "# keep"
OWN_STUB = "# stub: "
MARKERISH = re.compile(r"^\s*#+\s*(begin|end)\b.*", re.IGNORECASE)
KEEPISH = re.compile(r"#+\s*keep\s*$", re.IGNORECASE)
KNOWN_TAGS = {
    "solution",
    "parameters",
    "injected-parameters",
    "raises-exception",
    "hide-input",
    "nbval-skip",
    "nbval-check-output",
    "nbval-ignore-output",
}
STUB = 'raise NotImplementedError("Replace this line with your answer, then run the cell.")'
ANSWER_STUB = "_Your answer here._"


class MarkerError(ValueError):
    pass


def _where(path, index):
    return f"{path.name}, cell {index}"


def kept_lines(source: str, where: str) -> list[str]:
    """The lines of a solution cell that end in ``# keep``, without that suffix."""
    kept = []
    for line in source.splitlines():
        line = line.rstrip()
        if line.endswith(KEEP):
            kept.append(line[: -len(KEEP)].rstrip())
        elif KEEPISH.search(line):
            raise MarkerError(
                f"{where}: {line.strip()!r} ends in a keep marker that is not "
                f"exactly {KEEP!r}; write {KEEP!r} to keep the line in the exercise."
            )
    return kept


def _refuse_stray_keep(source: str, where: str) -> None:
    for line in source.splitlines():
        if KEEPISH.search(line.rstrip()):
            raise MarkerError(
                f"{where}: {line.strip()!r} ends in {KEEP!r} outside a cell tagged "
                "'solution', where it means nothing and would show in the exercise."
            )


def strip_code(source: str, where: str, stub: bool = True) -> str:
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped in (BEGIN, END):
            if (stripped == BEGIN) == inside:
                raise MarkerError(f"{where}: {stripped!r} without its partner marker.")
            inside = stripped == BEGIN
            if inside and stub:
                indent = line[: len(line) - len(line.lstrip())]
                out += [indent + s for s in STUB.splitlines()]
            continue
        if MARKERISH.match(line):
            guess = difflib.get_close_matches(stripped.upper(), [BEGIN, END], n=1, cutoff=0.5)
            hint = f" Did you mean {guess[0]!r}?" if guess else ""
            raise MarkerError(
                f"{where}: unknown marker {stripped!r}; markers are {BEGIN!r} and {END!r}.{hint}"
            )
        if not inside:
            out.append(line)
    if inside:
        raise MarkerError(f"{where}: {BEGIN!r} is never closed by {END!r}.")
    return "\n".join(out)


def make_exercise(nb, path: Path):
    nb = nbformat.from_dict(nb)  # a copy
    nb.metadata.pop("widgets", None)  # saved widget state of the solved run
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        for tag in tags:
            if tag not in KNOWN_TAGS:
                guess = difflib.get_close_matches(tag, sorted(KNOWN_TAGS), n=1)
                hint = f" Did you mean {guess[0]!r}?" if guess else ""
                raise MarkerError(f"{_where(path, i)}: unknown cell tag {tag!r}.{hint}")
        if cell.cell_type == "code":
            if "solution" in tags:
                own = [
                    line.strip()[len(OWN_STUB) :]
                    for line in cell.source.splitlines()
                    if line.strip().startswith(OWN_STUB)
                ]
                cell.source = "\n".join(
                    kept_lines(cell.source, _where(path, i)) + (own or STUB.splitlines())
                )
            else:
                _refuse_stray_keep(cell.source, _where(path, i))
                cell.source = strip_code(
                    cell.source, _where(path, i), stub="parameters" not in tags
                )
            cell.outputs, cell.execution_count = [], None
        elif "solution" in tags:
            cell.source = ANSWER_STUB
        cell.metadata.pop("execution", None)  # run timestamps belong to the solved copy
        cell.metadata.pop("labkit_timing", None)  # so do its cell timings (tools/references.py)
        cell.metadata["tags"] = [t for t in tags if t != "solution"]
        if not cell.metadata["tags"]:
            del cell.metadata["tags"]
    return nb


def generate(
    src_dir: Path = ROOT / "solutions", dst_dir: Path = ROOT / "exercises", check: bool = False
) -> list[str]:
    """Write (or with check=True, compare) one exercise per solution; returns stale names."""
    stale = []
    dst_dir.mkdir(exist_ok=True)
    wanted = set()
    for path in sorted(src_dir.glob("*.ipynb")):
        exercise = make_exercise(nbformat.read(path, as_version=4), path)
        text = nbformat.writes(exercise) + "\n"
        target = dst_dir / path.name
        wanted.add(path.name)
        if not target.exists() or target.read_text() != text:
            stale.append(path.name)
            if not check:
                target.write_text(text)
    for extra in sorted(dst_dir.glob("*.ipynb")):
        if extra.name not in wanted:
            stale.append(extra.name)
            if not check:
                extra.unlink()
    return stale


def main(argv) -> int:
    check = "--check" in argv
    try:
        stale = generate(check=check)
    except MarkerError as exc:
        print(f"make_exercises: {exc}", file=sys.stderr)
        return 2
    if check and stale:
        print(
            f"exercises/ is out of date for: {', '.join(stale)}; run `make exercises`.",
            file=sys.stderr,
        )
        return 1
    print(("checked" if check else "wrote") + f" exercises ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
