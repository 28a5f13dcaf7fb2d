"""Grades where instructors keep them: points per check, Gradescope's results.json, a CSV."""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import nbformat
import pytest

from labkit.learn import check
from labkit.learn.grade import formats
from labkit.learn.check._base import answer_check
from labkit.learn.grade import Row

ROOT = Path(__file__).resolve().parents[3]
EX_A = "ex_a_break_the_graph.ipynb"
SCHEMA = json.loads((ROOT / "tests" / "data" / "gradescope_results.schema.json").read_text())


def row(check_name, status, notebook="fork/exercises/ex_a.ipynb"):
    return Row(notebook, "ex_a", check_name, "q?", status, "why" if status != "passed" else "", 3)


def test_points_are_1_by_default_and_set_beside_the_check():
    assert check.ex_a_predict.points == 1
    assert check.ex_a_transfer.points == 2  # @answer_check(points=2) in check/ex_a.py
    assert formats.points_of("ex_b_predict") == 1

    @answer_check(points=3)
    def ex_z_demo(x):
        """A demo check."""
        return "ok"

    assert ex_z_demo.points == 3 and ex_z_demo.is_answer_check
    with pytest.raises(ValueError, match=r"points=-1 for ex_z_bad: give a whole number"):
        answer_check(points=-1)(_named("ex_z_bad"))


def _named(name):
    def f():
        pass

    f.__name__ = name
    return f


def test_gradescope_document_scores_by_points_and_follows_the_schema(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [
        row("ex_a_predict", "passed"),
        row("ex_a_transfer", "failed"),
        row("ex_a_review", "not yet answered"),
    ]
    doc = formats.gradescope(rows, visibility="after_published")
    jsonschema.validate(doc, SCHEMA)
    assert (doc["score"], doc["max_score"]) == (1.0, 4.0)
    assert [t["status"] for t in doc["tests"]] == ["passed", "failed", "failed"]
    assert {t["visibility"] for t in doc["tests"]} == {"after_published"}
    assert doc["tests"][1]["output"] == "failed: why"
    with pytest.raises(jsonschema.ValidationError):  # the schema does catch a bad document
        jsonschema.validate({**doc, "tests": [{**doc["tests"][0], "visibility": "public"}]}, SCHEMA)
    with pytest.raises(ValueError, match="Did you mean 'hidden'"):
        formats.gradescope(rows, visibility="hiden")


def test_csv_has_one_row_per_check_with_a_relative_path_and_the_learner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = tmp_path / "fork" / "ex_a.ipynb"
    nb.parent.mkdir()
    doc = nbformat.v4.new_notebook()
    doc.metadata["labkit_learner"] = "ada"
    nbformat.write(doc, nb)
    rows = [row("ex_a_predict", "passed", str(nb)), row("ex_a_transfer", "failed", str(nb))]
    got = list(csv.DictReader(io.StringIO(formats.csv_text(rows))))
    assert [r["check"] for r in got] == ["ex_a_predict", "ex_a_transfer"]
    assert {r["learner"] for r in got} == {"ada"}  # from the notebook's metadata
    assert {r["notebook"] for r in got} == {"fork/ex_a.ipynb"}  # relative to the working folder
    assert [(r["points"], r["max_points"]) for r in got] == [("1", "1"), ("0", "2")]
    given = list(csv.DictReader(io.StringIO(formats.csv_text(rows, learner="grace"))))
    assert {r["learner"] for r in given} == {"grace"}


def test_a_class_gets_one_gradebook_row_one_table_line_and_one_results_json_per_learner(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    books = {}
    for who, folder in (("ada", "a"), ("", "b")):  # b: no learner id in its metadata
        for name in ("ex_a.ipynb", "ex_b.ipynb"):
            nb = tmp_path / folder / name
            nb.parent.mkdir(exist_ok=True)
            doc = nbformat.v4.new_notebook()
            if who:
                doc.metadata["labkit_learner"] = who
            nbformat.write(doc, nb)
            books[folder, name] = str(nb)
    rows = [
        row("ex_a_predict", "passed", books["a", "ex_a.ipynb"]),
        row("ex_a_transfer", "failed", books["a", "ex_a.ipynb"]),
        row("ex_b_growth", "passed", books["a", "ex_b.ipynb"]),
        row("ex_a_predict", "not yet answered", books["b", "ex_a.ipynb"]),
    ]
    book = list(csv.reader(io.StringIO(formats.gradebook_text(rows))))
    assert book == [
        list(formats.GRADEBOOK_COLUMNS),
        ["ada", "2", "4", "2", "3", "a/ex_a.ipynb a/ex_b.ipynb"],
        ["b/ex_a.ipynb", "0", "1", "0", "1", "b/ex_a.ipynb"],
    ]
    table = formats.format_table(rows).splitlines()
    assert table[-2:] == [
        "2/4 points, 2/3 checks passed: ada",
        "0/1 points, 0/1 checks passed: b/ex_a.ipynb",
    ]
    assert {k: len(v) for k, v in formats.submissions(rows).items()} == {
        "ada": 3,
        "b/ex_a.ipynb": 1,
    }


def test_hidden_files_are_read_with_their_points_and_refused_with_a_sentence(tmp_path):
    from labkit.learn.grade.hidden import read_hidden

    hidden = read_hidden(ROOT / "instructor" / "hidden")
    assert hidden.points == {"ex_a_hidden_order": 1, "ex_a_hidden_deeper": 2}
    assert hidden.cells_for(["ex_a_predict"]) and hidden.cells_for(["ex_b_predict"]) == []
    (tmp_path / "mixed.py").write_text(
        "@answer_check\ndef ex_a_x(a): pass\n@answer_check\ndef ex_b_y(a): pass\n"
    )
    with pytest.raises(ValueError, match=r"mixes exercises \['ex_a', 'ex_b'\]"):
        read_hidden(tmp_path / "mixed.py")
    with pytest.raises(ValueError, match="holds no hidden checks"):
        read_hidden(tmp_path / "nowhere")
    assert main_rc("grade", "x.ipynb", "--hidden", str(tmp_path / "nowhere")) == 2


def main_rc(*argv):
    from labkit.cli import main

    return main(list(argv))


def _wrong_copy(path: Path) -> None:
    nb = nbformat.read(ROOT / "solutions" / EX_A, as_version=4)
    answer = [c for c in nb.cells if 'deeper_null_groups = ["backbone.0"]' in c.source]
    assert len(answer) == 1
    answer[0].source = answer[0].source.replace('["backbone.0"]', '["backbone.2"]')
    nbformat.write(nb, path)


def _workflow_script() -> str:
    import yaml

    steps = yaml.safe_load((ROOT / "instructor" / "grade.yml").read_text())["jobs"]["grade"][
        "steps"
    ]
    return next(s["run"] for s in steps if "labkit grade" in s.get("run", ""))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The instructor workflow's grading step, run as GitHub Actions would run it, on a
    solved and on a wrong Exercise A: the submission gives only its notebook, the hidden
    checks come from the grader tree (here: this repository's instructor/hidden)."""
    tmp = tmp_path_factory.mktemp("gradescope")
    out = {}
    for name in ("solved", "wrong"):
        sub = tmp / name / "submission"
        (sub / "exercises").mkdir(parents=True)
        if name == "solved":
            (sub / "exercises" / EX_A).write_text((ROOT / "solutions" / EX_A).read_text())
        else:
            _wrong_copy(sub / "exercises" / EX_A)
        env = {
            **os.environ,
            "LABKIT_HOME": str(tmp / name / "home"),
            "GITHUB_ACTOR": "ada",
            "HIDDEN": str(ROOT / "instructor" / "hidden"),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }
        done = subprocess.run(
            ["bash", "-e", "-c", _workflow_script()],
            cwd=sub,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        out[name] = (
            done,
            json.loads((sub / "results.json").read_text()),
            list(csv.DictReader(open(sub / "grades.csv"))),
            json.loads((sub / "grades.json").read_text()),
        )
    return out


NB = "exercises/ex_a_break_the_graph.ipynb"


@pytest.mark.slow
@pytest.mark.ex_a
def test_solved_and_wrong_differ_by_the_failed_checks_points(graded):
    (ok, solved, _, _), (bad, wrong, _, _) = graded["solved"], graded["wrong"]
    assert ok.returncode == 0 and bad.returncode == 1, ok.stdout + ok.stderr + bad.stderr
    for doc in (solved, wrong):
        jsonschema.validate(doc, SCHEMA)
    failed = [t for t in wrong["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == [f"{NB}: ex_a_transfer", f"{NB}: ex_a_hidden_deeper"]
    assert solved["score"] == solved["max_score"] == wrong["max_score"] == 9.0  # 6 + 3 hidden
    assert solved["score"] - wrong["score"] == sum(t["max_score"] for t in failed) == 4.0
    assert failed[0]["output"].startswith("failed: The deeper run has 1 group(s)")


@pytest.mark.slow
@pytest.mark.ex_a
def test_hidden_checks_run_in_the_learners_kernel_and_show_after_publishing(graded):
    _, solved, _, _ = graded["solved"]
    shown = {t["name"].split(": ")[1]: t["visibility"] for t in solved["tests"]}
    assert shown["ex_a_hidden_order"] == shown["ex_a_hidden_deeper"] == "after_published"
    assert shown["ex_a_transfer"] == "visible"
    assert {t["status"] for t in solved["tests"]} == {"passed"}
    learners_copy = (ROOT / "exercises" / EX_A).read_text()
    assert "ex_a_hidden" not in learners_copy  # never shipped to learners


@pytest.mark.slow
@pytest.mark.ex_a
def test_csv_and_json_rows_match_the_checks(graded):
    _, doc, rows, grades = graded["wrong"]
    assert len(rows) == len(doc["tests"]) == len(grades["rows"]) == 7  # one row per check
    assert {r["learner"] for r in rows} == {"ada"}  # $GITHUB_ACTOR in the workflow
    assert {r["notebook"] for r in rows} == {NB}  # relative to the submission
    assert grades["format"] == "labkit.grades/2"
    assert (grades["score"], grades["max_score"]) == (5, 9)


@pytest.mark.slow
@pytest.mark.ex_a
def test_the_json_rows_carry_the_prose_for_a_person(graded):
    """The prose each check was handed (issue 54), read from the same grading: what
    `labkit grade --manual` exports for a person to score."""
    _, _, _, grades = graded["solved"]
    prose = {r["check"]: sorted(r["prose"]) for r in grades["rows"] if r["prose"]}
    assert prose == {
        "ex_a_predict": ["why"],
        "ex_a_mechanism": ["explanation"],
        "ex_a_transfer": ["reason"],
    }
    assert all(r["manual"] is None for r in grades["rows"])  # no person has scored yet
