"""The fault suite, `labkit grade`: what was computed is reported. A notebook that cannot be
read is a row and grading goes on; a store that cannot be written still gets every report;
parameters are checked before any kernel starts."""

import json
from pathlib import Path

import pytest

from helpers import one_sentence
from test_grade_limits import IMPORT, labkit, mechanism, notebook

pytestmark = pytest.mark.slow  # one grading starts a Jupyter kernel


def test_an_unreadable_notebook_is_a_row_and_an_unwritable_store_loses_no_report(tmp_path):
    good = notebook(
        tmp_path / "ex_a_mine.ipynb",
        IMPORT,
        mechanism(),
        "check.ex_a_mechanism(mechanism, explanation)",
    )
    broken = tmp_path / "ex_b_broken.ipynb"
    broken.write_text("{ not json")
    (tmp_path / "home").write_text("a file where the store's folder should be")
    out = labkit(
        tmp_path,
        "grade",
        "--sandbox",
        "none",  # not about the sandbox: a warm kernel
        str(good),
        str(broken),
        str(good),
        "--timeout",
        "20.5",
        "--json",
        str(tmp_path / "g.json"),
        "--csv",
        str(tmp_path / "g.csv"),
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    said = out.stderr.strip().splitlines()[-1].removeprefix("labkit: error: ")
    # the store's own sentence: a file stands where its folder should be (issue 56)
    assert said.startswith("The grades were not kept in the learner store (The store path ")
    assert "a file stands where a folder" in said
    assert said.endswith("; the table and every report asked for were written.")
    rows = json.loads((tmp_path / "g.json").read_text())["rows"]
    assert [(Path(r["notebook"]).name, r["status"]) for r in rows] == [
        ("ex_a_mine.ipynb", "passed"),
        ("ex_b_broken.ipynb", "failed"),
    ]  # the twice-given once
    assert rows[1]["message"].startswith("could not be read: notebook=")
    assert "ex_b_broken.ipynb" in (tmp_path / "g.csv").read_text()
    assert "could not be read" in out.stdout and "TOTAL: 1 passed, 1 failed" in out.stdout


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--timeout", "1e-9"], "--timeout=1e-09 is out of range; it must be at least 0.1"),
        (["--timeout", "1e12"], "--timeout=1000000000000.0 is out of range; it must be at most"),
        (
            ["--hidden", "H.py"],
            "--hidden holds checks for ex_f, and none of the notebooks to grade",
        ),
        (["--hidden", "L1.py"], "hidden checks file at"),
    ],
)
def test_grade_parameters_are_refused_before_any_kernel_starts(tmp_path, argv, expected):
    (tmp_path / "H.py").write_text(
        "from labkit.check import answer_check\n\n@answer_check\ndef ex_f_hidden(x):\n    'x'\n"
    )
    (tmp_path / "L1.py").write_bytes("# réponse\n".encode("latin-1"))
    argv = [a if not a.endswith(".py") else str(tmp_path / a) for a in argv]
    out = labkit(tmp_path, "grade", "exercises/ex_a_break_the_graph.ipynb", *argv)
    said = out.stderr.strip()
    assert out.returncode == 2 and len(said.splitlines()) == 1 and expected in said, said
    assert one_sentence(said.removeprefix("labkit: error: "))
