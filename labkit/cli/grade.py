"""``labkit grade``: run exercise notebooks and report every answer check, in the formats
instructors keep grades in (`labkit.learn.grade.formats`).

    labkit grade exercises/*.ipynb                          # the table
    labkit grade exercises/*.ipynb --json grades.json       # labkit.grades/2 (--json - : stdout)
    labkit grade exercises/*.ipynb --gradescope results.json --csv grades.csv --learner ada
    labkit grade class/ --jobs 4 --notebook-timeout 600 --gradebook totals.csv \
        --gradescope results/                      # one results.json per learner
    labkit grade class/ --manual prose.csv          # the prose, for a person to score
    labkit grade class/ --manual prose.csv --gradebook totals.csv   # (filled in) their scores

Each notebook's kernel runs in a bubblewrap sandbox (``--sandbox auto``, the default, refuses
to grade where bwrap does not work, and says how to install it; ``--sandbox none`` grades
without one and says so in every report). SIGTERM and SIGHUP stop grading as Ctrl-C does:
every kernel ends, nothing half-written is left, and one line says what was kept.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

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
    p.add_argument(
        "--notebook-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit per notebook (default: none but the cells'); the cell running "
        "when it is reached and every check after it get rows that say so",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="notebooks graded at once, each with its own kernel (default: this machine's cores)",
    )
    p.add_argument(
        "--sandbox",
        default="auto",
        help="auto (default: bubblewrap, refused where it does not work), bwrap, or none "
        "(no sandbox: the grades are then only as trustworthy as the submissions)",
    )
    add_json(p, "the rows, points and summary (labkit.grades/2)")
    p.add_argument(
        "--gradescope",
        default=None,
        metavar="PATH",
        help="write Gradescope's autograder results.json here (- for stdout); with "
        "several learners, a folder: one LEARNER/results.json per submission",
    )
    p.add_argument(
        "--gradebook",
        default=None,
        metavar="PATH",
        help="write one CSV row per learner here (points, points possible, checks passed)",
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
        "--manual",
        default=None,
        metavar="PATH",
        help="prose for a person to grade: where PATH does not exist, write it (one CSV line "
        "per explanation or reason, an empty score column); where it does, read the scores "
        "filled in there, keep them, and add them to --csv, --gradebook and --json as manual "
        "points (PATH itself is never written then)",
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

    from ..learn.grade import check_jobs, sandbox

    check_timeout("--timeout", args.timeout)
    check_timeout("--notebook-timeout", args.notebook_timeout)
    check_jobs(args.jobs)
    outputs = {f"--{n}": getattr(args, n) for n in ("json", "gradescope", "csv", "gradebook")}
    if list(outputs.values()).count("-") > 1:
        raise ValueError(
            "only one of --json, --gradescope, --csv and --gradebook can write to stdout (-)."
        )
    formats.gradescope([], visibility=args.visibility)  # a bad --visibility fails before grading
    hidden = None
    if args.hidden:
        from ..learn.grade.hidden import read_hidden

        hidden = read_hidden(args.hidden)
    from ..learn.grade import notebooks_in
    from ..store.outputs import check_command

    notebooks = notebooks_in(args.notebooks)  # a folder stands for its exercise notebooks
    scores = manual_scores(args.manual)  # read, and refused with a sentence, before grading
    inputs = {"NOTEBOOK": notebooks, "--hidden": hidden.files if hidden else None}
    if scores is None and args.manual is not None:
        outputs["--manual"] = args.manual
    elif scores is not None:
        inputs["--manual"] = [args.manual]
    check_command(outputs, inputs)
    if scores is not None:  # kept before grading: a score the store contradicts stops here
        from ..learn.grade.manual import keep_scores

        keep_scores(scores)

    mode = sandbox.mode(args.sandbox)  # refused, with how to install bwrap, before any kernel

    def write(rows):
        if scores is not None:
            from ..learn.grade import manual

            print(manual.apply_scores(rows, scores), file=sys.stderr)
        elif args.manual is not None:
            from ..learn.grade import manual
            from ..store.outputs import write_output

            write_output(args.manual, manual.export_text(rows), parameter="--manual")
        if args.json is not None:
            doc = formats.grades_document(rows, summary(rows), hidden, sandbox=mode)
            write_json(doc, args.json)
        if args.gradescope is not None:
            _gradescope(rows, args, hidden, mode)
        for given, text in (
            (
                args.csv,
                lambda: formats.csv_text(
                    rows, learner=args.learner, hidden=hidden, manual=scores is not None
                ),
            ),
            (args.gradebook, lambda: formats.gradebook_text(rows, hidden, scores is not None)),
        ):
            if given == "-":
                print(text(), end="")
            elif given is not None:
                formats.write_csv(given, text(), "--csv" if given == args.csv else "--gradebook")

    out = human("-" if "-" in outputs.values() else None)
    with _stopped_as_ctrl_c():
        return grade(
            notebooks,
            timeout=args.timeout,
            write=write,
            hidden=hidden,
            out=out,
            sandbox=mode,
            jobs=args.jobs,
            notebook_timeout=args.notebook_timeout,
        )


def manual_scores(path) -> list | None:
    """The scores filled in an existing --manual file; None where there is none to read."""
    import os

    if path is None or path == "-" or not os.path.isfile(os.path.expanduser(path)):
        return None
    from ..learn.grade.manual import read_scores

    return read_scores(os.path.expanduser(path))


def _gradescope(rows, args, hidden, mode) -> None:
    """One results.json per submission (a learner, or a notebook with no learner id): PATH
    itself for one, PATH/LEARNER/results.json for several."""
    from pathlib import Path

    from ..learn.grade import formats

    def doc(rows):
        d = formats.gradescope(rows, visibility=args.visibility, hidden=hidden)
        if mode == "none":
            d["output"] += f" ({formats.untrusted()})"
        return d

    if args.learner:
        groups = {args.learner: rows}
    else:
        groups = formats.submissions(rows)
    if len(groups) == 1 or args.gradescope == "-":
        write_json(doc(rows), args.gradescope, "--gradescope", foreign=True)
        return
    folder = Path(args.gradescope)
    if folder.exists() and not folder.is_dir():
        raise ValueError(
            f"--gradescope={args.gradescope!r} is a file, and these notebooks are "
            f"{len(groups)} submissions, one results.json each; give a folder."
        )
    for who, theirs in groups.items():  # "b/ex_a.ipynb" (no learner id): PATH/b/ex_a/
        place = folder / who.removesuffix(".ipynb")
        place.mkdir(parents=True, exist_ok=True)
        write_json(doc(theirs), str(place / "results.json"), "--gradescope", foreign=True)


@contextmanager
def _stopped_as_ctrl_c():
    """SIGTERM and SIGHUP stop grading as Ctrl-C does (`labkit.learn.grade.Interrupted`), with
    the shell's status for that signal (143, 129): `labkit.cli.stop.Stopped`."""
    import signal

    from .stop import Stopped

    def stop(signum, frame):
        raise Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
