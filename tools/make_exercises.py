"""Generate exercises/ from solutions/: the solution is written once, the exercise is derived.

In a solution notebook:
* a code cell tagged ``solution`` becomes a stub (its ``# keep`` lines stay, the rest goes);
* code between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` lines is replaced by a stub;
* a markdown cell tagged ``solution`` (a written answer) becomes "_Your answer here._".

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
MARKERISH = re.compile(r"^\s*#+\s*(begin|end)\b.*", re.IGNORECASE)
KNOWN_TAGS = {"solution", "parameters", "injected-parameters", "raises-exception", "hide-input",
              "nbval-skip", "nbval-check-output", "nbval-ignore-output"}
STUB = "# YOUR CODE HERE\nraise NotImplementedError(\"write your solution here\")"
ANSWER_STUB = "_Your answer here._"


class MarkerError(ValueError):
    pass


def _where(path, index):
    return f"{path.name}, cell {index}"


def strip_code(source: str, where: str) -> str:
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped in (BEGIN, END):
            if (stripped == BEGIN) == inside:
                raise MarkerError(f"{where}: {stripped!r} without its partner marker.")
            inside = stripped == BEGIN
            if inside:
                indent = line[: len(line) - len(line.lstrip())]
                out += [indent + s for s in STUB.splitlines()]
            continue
        if MARKERISH.match(line):
            guess = difflib.get_close_matches(stripped.upper(), [BEGIN, END], n=1, cutoff=0.5)
            hint = f" Did you mean {guess[0]!r}?" if guess else ""
            raise MarkerError(f"{where}: unknown marker {stripped!r}; markers are "
                              f"{BEGIN!r} and {END!r}.{hint}")
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
                keep = [ln for ln in cell.source.splitlines() if ln.rstrip().endswith("# keep")]
                cell.source = "\n".join(keep + STUB.splitlines())
            else:
                cell.source = strip_code(cell.source, _where(path, i))
            cell.outputs, cell.execution_count = [], None
        elif "solution" in tags:
            cell.source = ANSWER_STUB
        cell.metadata.pop("execution", None)  # run timestamps belong to the solved copy
        cell.metadata["tags"] = [t for t in tags if t != "solution"]
        if not cell.metadata["tags"]:
            del cell.metadata["tags"]
    return nb


def generate(src_dir: Path = ROOT / "solutions", dst_dir: Path = ROOT / "exercises",
             check: bool = False) -> list[str]:
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
        print(f"exercises/ is out of date for: {', '.join(stale)}; run `make exercises`.",
              file=sys.stderr)
        return 1
    print(("checked" if check else "wrote") + f" exercises ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
