"""``labkit grade``: run exercise notebooks and report every answer check, in the formats
instructors keep grades in (`labkit.learn.grade.formats`).

    labkit grade exercises/*.ipynb                          # the table
    labkit grade exercises/*.ipynb --json grades.json       # labkit.grades/2 (--json - : stdout)
    labkit grade exercises/*.ipynb --gradescope results.json --csv grades.csv --learner ada
"""

from __future__ import annotations

from .output import add_json, human, write_json


def add_grade(sub):
    p = sub.add_parser("grade", help="run exercise notebooks and report every answer check")
    p.add_argument(
        "notebooks",
        nargs="+",
        metavar="NOTEBOOK",
        help="exercise notebooks (.ipynb), or a folder of them",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit per cell (default 120); a cell over it becomes a 'timed out' row",
    )
    add_json(p, "the rows, points and summary (labkit.grades/2)")
    p.add_argument(
        "--gradescope",
        default=None,
        metavar="PATH",
        help="write Gradescope's autograder results.json here (- for stdout)",
    )
    p.add_argument(
        "--visibility",
        default="visible",
        help="Gradescope visibility of every check: visible (default), hidden, "
        "after_due_date or after_published",
    )
    p.add_argument(
        "--csv",
        default=None,
        metavar="PATH",
        help="write one CSV row per notebook and check here (- for stdout)",
    )
    p.add_argument(
        "--hidden",
        default=None,
        metavar="PATH",
        help="the instructor's hidden checks: a .py file or a folder of them, run "
        "after each notebook of the same exercise (see labkit.learn.grade.hidden)",
    )
    p.add_argument(
        "--learner",
        default=None,
        help="the learner id for --csv (default: the notebook's labkit_learner metadata)",
    )
    p.set_defaults(func=cmd_grade)


def cmd_grade(args) -> int:
    from ..learn.grade import formats
    from ..learn.grade import grade, summary
    from ..learn.grade.run import check_timeout

    check_timeout("--timeout", args.timeout)
    outputs = {f"--{n}": getattr(args, n) for n in ("json", "gradescope", "csv")}
    if list(outputs.values()).count("-") > 1:
        raise ValueError("only one of --json, --gradescope and --csv can write to stdout (-).")
    formats.gradescope([], visibility=args.visibility)  # a bad --visibility fails before grading
    hidden = None
    if args.hidden:
        from ..learn.grade.hidden import read_hidden

        hidden = read_hidden(args.hidden)
    from ..learn.grade import notebooks_in
    from ..store.outputs import check_command

    notebooks = notebooks_in(args.notebooks)  # a folder stands for its exercise notebooks
    check_command(outputs, {"NOTEBOOK": notebooks, "--hidden": hidden.files if hidden else None})

    def write(rows):
        if args.json is not None:
            write_json(formats.grades_document(rows, summary(rows), hidden), args.json)
        if args.gradescope is not None:
            doc = formats.gradescope(rows, visibility=args.visibility, hidden=hidden)
            write_json(doc, args.gradescope, "--gradescope", foreign=True)
        if args.csv is not None:
            text = formats.csv_text(rows, learner=args.learner, hidden=hidden)
            if args.csv == "-":
                print(text, end="")
            else:
                formats.write_csv(args.csv, text)

    out = human("-" if "-" in outputs.values() else None)
    return grade(notebooks, timeout=args.timeout, write=write, hidden=hidden, out=out)
