"""`labkit grade`'s rows in the formats instructors keep grades in.

    labkit.grades/2   labkit's own JSON: every row, with its points (``--json``)
    Gradescope        the autograder's ``results.json``: score, max_score, and per check a
                      name, output, status and visibility (``--gradescope``)
    CSV               one row per notebook and check, with a learner id (``--csv``)

A check is worth its `points` (1 unless set beside the check: ``@answer_check(points=2)``);
a passed check scores all of them, any other status none. Paths are written relative to
the folder grading ran from, so the same fork graded in two places gives the same rows.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from pathlib import Path

STATUSES = ("passed", "failed", "not yet answered")
GRADES_FORMAT = "labkit.grades/2"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
CSV_COLUMNS = (
    "learner",
    "notebook",
    "exercise",
    "check",
    "status",
    "points",
    "max_points",
    "message",
)
MANUAL_COLUMNS = ("manual_points", "manual_max_points")  # a person's scores (--manual)
LEARNER_KEY = "labkit_learner"  # notebook metadata: {"labkit_learner": "ada"}


def points_of(check: str, hidden=None) -> int:
    """What the answer check named `check` is worth (1 unless set beside it); `hidden`: the
    instructor's hidden checks (`labkit.learn.grade.hidden.Hidden`), with their own points."""
    if hidden is not None and check in hidden.points:
        return hidden.points[check]
    from .. import check as checks

    return getattr(getattr(checks, check, None), "points", 1)


def relative(path) -> str:
    """`path` relative to the working folder where it lies inside it, else as given."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def scored(rows, hidden=None) -> list[dict]:
    """Every row as a dict with a relative notebook path, its points and its score."""
    out = []
    for r in rows:
        d = asdict(r)
        d["notebook"] = relative(r.notebook)
        d["max_points"] = points_of(r.check, hidden)
        d["points"] = d["max_points"] if r.status == "passed" else 0
        out.append(d)
    return out


def grades_document(rows, summary: dict, hidden=None, sandbox: str = "bwrap") -> dict:
    """labkit's own format: rows with points, the summary, the score out of the total, and
    the sandbox the kernels ran in (with the warning that "none" calls for)."""
    from ... import __version__
    from .sandbox import UNTRUSTED

    done = scored(rows, hidden)
    return {
        "format": GRADES_FORMAT,
        "labkit": __version__,
        "sandbox": sandbox,
        **({"warning": UNTRUSTED} if sandbox == "none" else {}),
        "rows": done,
        "summary": summary,
        "score": sum(r["points"] for r in done),
        "max_score": sum(r["max_points"] for r in done),
    }


def _visibility(name: str, value: str) -> str:
    if value not in VISIBILITIES:
        from ...errors import suggest

        raise ValueError(
            f"{name}={value!r} is not one Gradescope knows; use one of "
            f"{', '.join(VISIBILITIES)}.{suggest(value, list(VISIBILITIES))}"
        )
    return value


def gradescope(
    rows, *, visibility: str = "visible", hidden=None, hidden_visibility: str = "after_published"
) -> dict:
    """Gradescope's autograder ``results.json`` (its "Autograder Specifications" page); the
    instructor's `hidden` checks get `hidden_visibility`."""
    _visibility("visibility", visibility)
    _visibility("hidden_visibility", hidden_visibility)
    secret = set(hidden.points) if hidden is not None else set()
    tests = []
    for n, r in enumerate(scored(rows, hidden), 1):
        output = r["question"] if r["status"] == "passed" else f"{r['status']}: {r['message']}"
        tests.append(
            {
                "name": f"{r['notebook']}: {r['check']}",
                "number": str(n),
                "score": float(r["points"]),
                "max_score": float(r["max_points"]),
                "status": "passed" if r["status"] == "passed" else "failed",
                "output": output,
                "visibility": hidden_visibility if r["check"] in secret else visibility,
            }
        )
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": sum(t["max_score"] for t in tests),
        "visibility": visibility,
        "stdout_visibility": "visible",
        "output": f"labkit grade: {sum(t['status'] == 'passed' for t in tests)}/{len(tests)} "
        "checks passed",
        "tests": tests,
    }


GRADEBOOK_COLUMNS = ("learner", "points", "max_points", "checks_passed", "checks", "notebooks")


def gradebook_text(rows, hidden=None, manual: bool = False) -> str:
    """One CSV line per learner, the columns an LMS gradebook import reads (an id, points,
    points possible), then the checks passed and the notebooks graded; `manual`: then the
    points a person gave the prose (blank while any of it is unscored), and their maximum."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GRADEBOOK_COLUMNS + (MANUAL_COLUMNS if manual else ()))
    ids = {nb: learner_id(nb) for nb in dict.fromkeys(r.notebook for r in rows)} if manual else {}
    for who, g in totals(rows, hidden).items():
        line = [who, g["points"], g["max_points"], g["passed"], g["checks"]]
        line.append(" ".join(g["notebooks"]))
        if manual:
            scored = [r.manual for r in rows if r.manual and ids[r.notebook] == who]
            done = scored and all(m["points"] is not None for m in scored)
            line += [_n(sum(m["points"] for m in scored)) if done else ""]
            line += [_n(sum(m["max_points"] for m in scored))]
        writer.writerow(line)
    return buf.getvalue()


def _n(x: float):
    return int(x) if float(x).is_integer() else round(x, 3)


def learner_id(notebook) -> str:
    """The notebook's ``labkit_learner`` metadata, else its folder and name ("b/ex_a.ipynb")."""
    return learner_of(notebook, None) or "/".join(Path(notebook).parts[-2:])


def submissions(rows) -> dict:
    """learner id (`learner_id`) -> their rows: one Gradescope submission each."""
    out: dict = {}
    ids: dict = {}
    for r in rows:
        if r.notebook not in ids:
            ids[r.notebook] = learner_id(r.notebook)
        out.setdefault(ids[r.notebook], []).append(r)
    return out


def untrusted() -> str:
    from .sandbox import UNTRUSTED

    return UNTRUSTED


def learner_of(notebook, given: str | None) -> str:
    """The learner id: `given` (``--learner``), else the notebook's ``labkit_learner``
    metadata, else "" (a gradebook import then shows the blank)."""
    if given:
        return given
    try:
        import nbformat

        return str(nbformat.read(notebook, as_version=4).metadata.get(LEARNER_KEY, ""))
    except Exception:  # noqa: BLE001 (an unreadable notebook: already reported by grading)
        return ""


def csv_text(rows, *, learner: str | None = None, hidden=None, manual: bool = False) -> str:
    """One line per notebook and check: learner, notebook, exercise, check, status, points;
    `manual`: then the points a person gave its prose (blank where none or not yet)."""
    buf = io.StringIO()
    columns = CSV_COLUMNS + (MANUAL_COLUMNS if manual else ())
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    ids = {}
    for r, d in zip(rows, scored(rows, hidden)):
        if r.notebook not in ids:
            ids[r.notebook] = learner_of(r.notebook, learner)
        line = {"learner": ids[r.notebook], **{k: d[k] for k in CSV_COLUMNS[1:]}}
        if manual:
            m = r.manual or {"points": None, "max_points": None}
            line["manual_points"] = "" if m["points"] is None else _n(m["points"])
            line["manual_max_points"] = "" if m["max_points"] is None else _n(m["max_points"])
        writer.writerow(line)
    return buf.getvalue()


def write_csv(path, text: str, parameter: str = "--csv") -> None:
    from ...store.outputs import write_output  # labkit's one output rule

    write_output(path, text, parameter=parameter)


def summary(rows) -> dict:
    per = {}
    for r in rows:
        per.setdefault(r.exercise, dict.fromkeys(STATUSES, 0))[r.status] += 1
    return {"exercises": per, "total": {s: sum(r.status == s for r in rows) for s in STATUSES}}


def totals(rows, hidden=None) -> dict:
    """learner (or the notebook's folder and name, where no learner id is known) -> points,
    max_points, passed, checks and notebooks: one gradebook row each."""
    out: dict = {}
    ids: dict = {}
    for r, d in zip(rows, scored(rows, hidden)):
        if r.notebook not in ids:
            ids[r.notebook] = learner_id(r.notebook)
        who = ids[r.notebook]
        t = out.setdefault(
            who, {"points": 0, "max_points": 0, "passed": 0, "checks": 0, "notebooks": []}
        )
        t["points"] += d["points"]
        t["max_points"] += d["max_points"]
        t["passed"] += r.status == "passed"
        t["checks"] += 1
        if d["notebook"] not in t["notebooks"]:
            t["notebooks"].append(d["notebook"])
    return out


def format_table(rows, width: int = 100, hidden=None) -> str:
    """One line per check, the sentence wrapped under it; a summary per exercise; a total;
    one line per learner (points, checks passed)."""
    import textwrap

    lines = []
    for nb in dict.fromkeys(r.notebook for r in rows):
        lines.append(nb)
        for r in (r for r in rows if r.notebook == nb):
            lines += textwrap.wrap(
                f"{r.check}: {r.question}",
                width,
                initial_indent=f"  {r.status:16s}  ",
                subsequent_indent=" " * 20,
            )
            if r.status != "passed":
                lines += textwrap.wrap(
                    r.message, width, initial_indent=" " * 20 + "> ", subsequent_indent=" " * 22
                )
    s = summary(rows)
    lines.append("")
    for ex, counts in s["exercises"].items():
        n = sum(counts.values())
        lines.append(
            f"{ex}: {counts['passed']}/{n} passed, {counts['failed']} failed, "
            f"{counts['not yet answered']} not yet answered"
        )
    t = s["total"]
    lines.append(
        f"TOTAL: {t['passed']} passed, {t['failed']} failed, {t['not yet answered']} "
        f"not yet answered, in {len(s['exercises'])} exercise(s)"
    )
    for who, g in totals(rows, hidden).items():
        lines.append(
            f"{g['points']}/{g['max_points']} points, {g['passed']}/{g['checks']} checks "
            f"passed: {who}"
        )
    return "\n".join(lines) + "\n"
