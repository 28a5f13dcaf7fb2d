"""`labkit grade`: every answer check gets a row, on a blank, a solved and a wrong notebook."""

import json
import subprocess
from pathlib import Path

import nbformat
import pytest

from helpers import labkit_cli as in_process
from labkit.learn.grade import check_names, checks_in, format_table, Row

ROOT = Path(__file__).resolve().parents[3]
EX_A = "ex_a_break_the_graph.ipynb"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One `labkit grade` over three copies of Exercise A: blank, solved, one wrong answer."""
    tmp = tmp_path_factory.mktemp("grade")
    blank = tmp / "blank" / EX_A
    solved = tmp / "solved" / EX_A
    wrong = tmp / "wrong" / EX_A
    for path, src in (
        (blank, ROOT / "exercises" / EX_A),
        (solved, ROOT / "solutions" / EX_A),
        (wrong, ROOT / "solutions" / EX_A),
    ):
        path.parent.mkdir()
        path.write_text(src.read_text())
    nb = nbformat.read(wrong, as_version=4)
    answer = [
        c
        for c in nb.cells
        if c.cell_type == "code" and 'deeper_null_groups = ["backbone.0"]' in c.source
    ]
    assert len(answer) == 1
    answer[0].source = answer[0].source.replace(
        'deeper_null_groups = ["backbone.0"]', 'deeper_null_groups = ["backbone.2"]'
    )
    nbformat.write(nb, wrong)
    # In this process (its kernels start warm): a grading as a shell runs it, exit code and all,
    # is tests/learn/grade/test_instructor.py's, through the instructor's workflow step.
    rc, stdout, stderr = in_process(
        "grade", str(blank), str(solved), str(wrong), "--json", str(tmp / "g.json")
    )
    out = subprocess.CompletedProcess(["labkit", "grade"], rc, stdout, stderr)
    return out, json.loads((tmp / "g.json").read_text())


def rows_of(data, folder):
    return [r for r in data["rows"] if Path(r["notebook"]).parent.name == folder]


@pytest.mark.slow
def test_blank_exercise_is_all_not_yet_answered(graded):
    _, data = graded
    rows = rows_of(data, "blank")
    assert [r["check"] for r in rows] == [
        "ex_a_predict",
        "ex_a_review",
        "ex_a_mechanism",
        "ex_a_steps_to",
        "ex_a_transfer",
    ]
    assert {r["status"] for r in rows} == {"not yet answered"}
    said = {r["check"]: r["message"] for r in rows}  # each names what is missing
    assert said["ex_a_predict"] == "answer the prediction form and seal it first"
    assert said["ex_a_review"].startswith("the forecast sketch is not sealed, so cell 13 never")
    assert said["ex_a_mechanism"].startswith("write your answer in cell ")


@pytest.mark.slow
def test_solution_passes_every_check(graded):
    _, data = graded
    assert {r["status"] for r in rows_of(data, "solved")} == {"passed"}


@pytest.mark.slow
def test_one_wrong_answer_fails_that_row_with_its_sentence(graded):
    _, data = graded
    rows = {r["check"]: r for r in rows_of(data, "wrong")}
    assert rows["ex_a_transfer"]["status"] == "failed"
    assert rows["ex_a_transfer"]["message"].startswith("The deeper run has 1 group(s)")
    assert {
        rows[c]["status"]
        for c in ("ex_a_predict", "ex_a_review", "ex_a_mechanism", "ex_a_steps_to")
    } == {"passed"}


@pytest.mark.slow
def test_one_table_a_summary_a_total_and_exit_1(graded):
    out, data = graded
    assert out.returncode == 1
    assert "Traceback" not in out.stdout + out.stderr
    assert "ex_a: 9/15 passed, 1 failed, 5 not yet answered" in out.stdout
    assert out.stdout.rstrip().splitlines()[-4:] == [
        "TOTAL: 9 passed, 1 failed, 5 not yet answered, in 1 exercise(s)",
        f"0/6 points, 0/5 checks passed: blank/{EX_A}",  # one line per learner, last
        f"6/6 points, 5/5 checks passed: solved/{EX_A}",
        f"4/6 points, 4/5 checks passed: wrong/{EX_A}",
    ]
    assert all(len(line) <= 100 for line in out.stdout.splitlines())
    assert data["summary"]["total"] == {"passed": 9, "failed": 1, "not yet answered": 5}
    assert data["sandbox"] == "bwrap" and "warning" not in data  # the default: in bubblewrap


@pytest.mark.slow
def test_each_grading_is_kept_in_the_learner_store(graded):
    from labkit.store.learner import default_store

    out, data = graded
    graded_now = {r["notebook"] for r in data["rows"]}
    kept = [
        r["body"] for r in default_store().records("grade") if r["body"]["notebook"] in graded_now
    ]
    assert len(kept) == 3  # one record per notebook graded
    wrong = next(b for b in kept if Path(b["notebook"]).parent.name == "wrong")
    same = [
        {k: v for k, v in r.items() if k not in ("points", "max_points")}  # labkit.grades/2
        for r in rows_of(data, "wrong")
    ]
    assert wrong["rows"] == same  # the same rows as the --json file, less their points
    assert wrong["summary"]["total"]["failed"] == 1


# A solved notebook graded alone exits 0 with no failed row: tests/learn/grade/test_instructor.py grades a
# solved fork through the instructor's own workflow step and checks exactly that, so no
# second solution is executed here for it.


@pytest.mark.slow
@pytest.mark.parametrize(
    "target, says",
    [
        ("notebooks/02_forecast_first.ipynb", "is not a labkit exercise"),
        ("exercises/no_such.ipynb", "does not exist"),
        ("README.md", "is not a readable Jupyter notebook"),
    ],
)
def test_not_an_exercise_is_one_line_and_exit_2(target, says):
    rc, _, err = in_process(
        "grade", target, process=target == "README.md"
    )  # one as a shell sees it
    assert rc == 2
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_checks_in_reads_calls_not_mentions():
    names = check_names()
    assert len(names) >= 25
    src = "# ex_a_mechanism(x) is in a comment\nprint(ex_a_mechanism(m))\ncheck.ex_a_steps_to(s, h, d)"
    assert checks_in(src, names) == ["ex_a_mechanism", "ex_a_steps_to"]


def test_table_wraps_within_100_columns():
    row = Row("n.ipynb", "ex_a", "ex_a_mechanism", "q " * 80, "failed", "why " * 60, 3)
    text = format_table([row])
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "ex_a: 0/1 passed, 1 failed, 0 not yet answered" in text


@pytest.mark.slow
def test_a_failed_check_shows_its_sentence_once_in_a_box_not_a_traceback(tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from labkit.check import ex_a_mechanism\n"
            "ex_a_mechanism({'backward_stops': 'at the detach', 'backbone_grad': 'zero', "
            "'head': 'learns', 'backbone_weights': 'move slowly'}, 'the detach blocks it')"
        )
    ]
    NotebookClient(nb, kernel_name="python3", allow_errors=True).execute()
    outputs = nb.cells[0].outputs
    error = [o for o in outputs if o.output_type == "error"]
    html = [o for o in outputs if o.output_type == "display_data"]
    assert error and error[0].ename == "CheckFailed"
    assert len(error[0].traceback) == 1 and "File" not in error[0].traceback[0]
    assert "parts of your claim" not in error[0].traceback[0]  # said once: in the box
    assert html and "2 of the 4 parts of your claim" in html[0].data["text/html"]


def test_a_placeholder_or_missing_work_is_not_yet_answered_not_failed():
    import labkit
    from labkit.check import NotYetAnswered, ex_a_mechanism, lab15_conviction
    from labkit.learn.check import _base

    before = len(_base.OUTCOMES)
    with pytest.raises(NotYetAnswered, match="Replace the ... placeholder"):
        ex_a_mechanism(...)
    with pytest.raises(NotYetAnswered, match="no conviction yet"):
        lab15_conviction("A", labkit.TriageRecord("blank"), "stale log")
    with pytest.raises(_base.CheckFailed) as wrong:
        ex_a_mechanism("the loss falls", "the loss falls as the head learns")
    assert not isinstance(wrong.value, NotYetAnswered)
    assert [o["status"] for o in _base.OUTCOMES[before:]] == [
        "not yet answered",
        "not yet answered",
        "failed",
    ]
