"""A class graded at once: `labkit grade FOLDER` over N small Exercise A notebooks, with
``--jobs 1`` and ``--jobs 2`` (and any other counts given), one after the other in one run,
and the cost of the sandbox on one notebook.

Run with ``python benchmarks/bench_grade_class.py`` (``--learners 30``). The class cycles
through five kinds of learner: right (every check passed), wrong (a wrong mechanism and
transfer), unanswered (placeholders), raising (a ZeroDivisionError before two checks) and
never-ending (a cell that sleeps forever, stopped by ``--notebook-timeout``). Printed:

    jobs N          wall seconds for the class, and its ratio to --jobs 1 (bar: <= 0.6 for 2)
    never-ending    that notebook's own seconds against its --notebook-timeout (bar: + 10 s)
    sandbox         one notebook's seconds with --sandbox bwrap and none, median of
                    --repeats, alternating (bar: <= 1 s more), and the sandbox's peak memory
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

MECHANISM = (
    '"detach() cuts the graph, so no gradient reaches the backbone: its grad_norm is None '
    'and its update_norm is 0, while the head after the detach still learns"'
)
BASE = [
    "import time\nimport labkit\nfrom labkit import check\n",
    (
        'prediction = {"null_groups": ["backbone.0", "backbone.2"], "head_learns": True,\n'
        '              "why": "detach() cuts the graph, so no gradient reaches the backbone"}\n'
        "print(check.ex_a_predict(prediction))"
    ),
    (  # three-step runs: the grader trains each again (`labkit.learn.grade.truth`)
        "from labkit.core.seams import Seams\n"
        "def forward_detach_deeper(ctx):  # Exercise A's own seam, by its name\n"
        '    hidden = ctx.model.backbone[:2](ctx.batch["x"]).detach()\n'
        "    return ctx.model.head(ctx.model.backbone[2:](hidden))\n"
        'healthy, detached = labkit.train(steps=3), labkit.train(bug="detach", steps=3)\n'
        "deeper = labkit.train(steps=3, seams=Seams().replace(forward=forward_detach_deeper))"
    ),
    "print(check.ex_a_review(prediction, healthy, detached))",
    "MECHANISM\nprint(check.ex_a_mechanism(mechanism))",
    "GROUPS\nprint(check.ex_a_transfer(groups, 'the layers before the detach lose it', deeper))",
]
KINDS = {
    "right": {"MECHANISM": f"mechanism = {MECHANISM}", "GROUPS": 'groups = ["backbone.0"]'},
    "wrong": {"MECHANISM": 'mechanism = "the loss falls"', "GROUPS": 'groups = ["backbone.2"]'},
    "unanswered": {
        "MECHANISM": "mechanism = ...  # your answer",
        "GROUPS": 'raise NotImplementedError("your answer")',
    },
    "raising": {"MECHANISM": "mechanism = 1 / 0", "GROUPS": "groups = first_gap"},
    "never": {"MECHANISM": "while True:\n    time.sleep(0.5)", "GROUPS": "groups = []"},
}


def write_class(folder: Path, learners: int) -> None:
    kinds = list(KINDS)
    for i in range(learners):
        kind = kinds[i % len(kinds)]
        nb = nbformat.v4.new_notebook(metadata={"labkit_learner": f"{kind}-{i:02d}"})
        cells = []
        for source in BASE:
            for key, text in KINDS[kind].items():
                source = source.replace(key, text)
            cells.append(nbformat.v4.new_code_cell(source))
        nb.cells = cells
        nbformat.write(nb, folder / f"ex_a_{i:02d}_{kind}.ipynb")


def grade(folder: Path, *args, home: Path) -> tuple[float, str, str, float]:
    """Wall seconds, stdout, stderr, and the peak resident memory in MiB of the largest
    process the command ran (the grader, a kernel, or bwrap and what it holds), read from
    the kernel's own accounting of the child and the children it waited for."""
    env = {**os.environ, "LABKIT_HOME": str(home), "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "labkit.cli", "grade", str(folder), *args],
            stdout=out,
            stderr=err,
            text=True,
            env=env,
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return seconds, out.read(), err.read(), usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--notebook-timeout", type=float, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-class", action="store_true")
    a = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    folder = tmp / "class"
    folder.mkdir()
    write_class(folder, a.learners)
    print(f"labkit grade, {a.learners} learners, on {os.cpu_count()} cores")
    if not a.skip_class:
        first = None
        for jobs in a.jobs:
            limit = ["--notebook-timeout", str(a.notebook_timeout), "--jobs", str(jobs)]
            out = tmp / f"g{jobs}.json"
            seconds, _, err, _ = grade(folder, *limit, "--json", str(out), home=tmp / f"h{jobs}")
            first = first or seconds
            rows = json.loads(out.read_text())["rows"]
            passed = sum(r["status"] == "passed" for r in rows)
            print(
                f"jobs {jobs:<3d}  {seconds:7.1f} s wall  x{seconds / first:.2f} of --jobs "
                f"{a.jobs[0]}  ({len(rows)} rows, {passed} passed)"
            )
            never = [
                float(m.group(1))
                for m in re.finditer(r"graded ex_a_\d+_never\.ipynb: .* in ([\d.]+) s", err)
            ]
            if never:
                print(
                    f"  never-ending: {max(never):.1f} s each at most, for a "
                    f"--notebook-timeout of {a.notebook_timeout:g} s"
                )
    one = tmp / "one"
    one.mkdir()
    (one / "ex_a_00_right.ipynb").write_text((folder / "ex_a_00_right.ipynb").read_text())
    times: dict = {"bwrap": [], "none": []}
    peak: dict = {"bwrap": 0.0, "none": 0.0}
    for _ in range(a.repeats):
        for mode in times:
            seconds, _, _, mib = grade(one, "--sandbox", mode, home=tmp / "h1")
            times[mode].append(seconds)
            peak[mode] = max(peak[mode], mib)
    bw, no = statistics.median(times["bwrap"]), statistics.median(times["none"])
    print(f"sandbox: {bw:.2f} s with bwrap, {no:.2f} s without ({bw - no:+.2f} s per notebook)")
    print(f"  (each: bwrap {times['bwrap']}, none {times['none']})")
    print(
        f"peak memory of the largest process: {peak['bwrap']:.0f} MiB with bwrap, "
        f"{peak['none']:.0f} MiB without ({peak['bwrap'] - peak['none']:+.0f} MiB)"
    )


if __name__ == "__main__":
    main()
