"""Prose for a person (issue 54): `labkit grade --manual` exports it with an empty score
column, reads the person's scores back through the learner store (all or none, never
replaced), and shows them as columns of their own beside the automatic points."""

import csv
import io
import json

import nbformat
import pytest

from labkit.check import ex_a as ex_a_checks
from labkit.learn import check
from labkit.learn.grade import Row, formats, manual


def _enc(v):
    """`v` as the kernel's hand-over writes it: dicts tagged, lists as lists."""
    if isinstance(v, dict):
        return {"$": "dict", "items": [[k, _enc(x)] for k, x in v.items()]}
    return [_enc(x) for x in v] if isinstance(v, (list, tuple)) else v


def test_the_prose_of_an_answer_is_read_from_what_the_kernel_handed_over():
    claim = {n: f.right for n, f in ex_a_checks.CLAIM.fields.items()}
    text = json.dumps({"args": [_enc(claim), "detach cuts the graph"], "kwargs": _enc({})})
    assert manual.prose_of(check.ex_a_mechanism, text) == {"explanation": "detach cuts the graph"}
    why = json.dumps({"args": [_enc({"head_learns": True, "why": "the head is after it"})]})
    assert manual.prose_of(
        check.ex_a_predict, why[:-1] + ', "kwargs": {"$": "dict", "items": []}}'
    ) == {"why": "the head is after it"}
    assert manual.prose_of(check.ex_a_steps_to, None) == {}
    assert manual.prose_of(check.ex_a_mechanism, "not json") == {}


@pytest.fixture
def rows(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))  # a store of this test's own
    out = []
    for who in ("ada", "bob"):
        nb = tmp_path / who / "ex_a.ipynb"
        nb.parent.mkdir()
        doc = nbformat.v4.new_notebook()
        doc.metadata["labkit_learner"] = who
        nbformat.write(doc, nb)
        prose = {"explanation": f"{who}: detach cuts the graph, so the backbone gets None"}
        out.append(Row(str(nb), "ex_a", "ex_a_mechanism", "q", "passed", "ok", 31, prose=prose))
        out.append(Row(str(nb), "ex_a", "ex_a_steps_to", "q", "passed", "ok", 34))
    return out


def _filled(path, text, scores):
    lines = list(csv.reader(io.StringIO(text)))
    for i, score in scores.items():
        lines[i][-2] = score
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(lines)
    path.write_text(buf.getvalue())
    return path


def test_export_score_and_show_the_manual_points_apart(rows, tmp_path):
    text = manual.export_text(rows)
    lines = list(csv.DictReader(io.StringIO(text)))
    assert [(r["learner"], r["check"], r["part"], r["score"]) for r in lines] == [
        ("ada", "ex_a_mechanism", "explanation", ""),
        ("bob", "ex_a_mechanism", "explanation", ""),
    ]
    scores = manual.read_scores(_filled(tmp_path / "prose.csv", text, {1: "0.5"}))
    assert manual.keep_scores(scores) == 1 and manual.keep_scores(scores) == 0  # kept once
    said = manual.apply_scores(rows, scores)
    assert said == "manual scores: 1 applied, 1 prose answer(s) not yet scored"
    book = list(csv.DictReader(io.StringIO(formats.gradebook_text(rows, manual=True))))
    assert [
        (b["learner"], b["points"], b["manual_points"], b["manual_max_points"]) for b in book
    ] == [
        ("ada", "2", "0.5", "1"),
        ("bob", "2", "", "1"),  # a blank while any prose of the learner is unscored
    ]
    per_check = list(csv.DictReader(io.StringIO(formats.csv_text(rows, manual=True))))
    assert [r["manual_points"] for r in per_check] == ["0.5", "", "", ""]
    assert "manual_points" not in formats.gradebook_text(rows)  # only when asked for


def test_changed_prose_is_not_scored_by_an_old_score(rows, tmp_path):
    scores = manual.read_scores(_filled(tmp_path / "p.csv", manual.export_text(rows), {1: "1"}))
    rows[0].prose = {"explanation": "ada rewrote it after the person read it"}
    assert "1 not applied (the prose changed since it was scored)" in manual.apply_scores(
        rows, scores
    )


@pytest.mark.parametrize(
    "edit, words",
    [
        ({1: "3"}, "must lie between 0 and its max_score 1"),
        ({1: "good"}, "must be numbers"),
        ({1: "nan"}, "must lie between 0"),
    ],
)
def test_a_bad_score_gets_a_sentence_naming_its_line(rows, tmp_path, edit, words):
    path = _filled(tmp_path / "p.csv", manual.export_text(rows), edit)
    with pytest.raises(ValueError, match=f"line 2 \\(ada, ex_a_mechanism\\): .*{words}"):
        manual.read_scores(path)


def test_a_kept_score_is_never_replaced_and_nothing_is_kept_then(rows, tmp_path):
    text = manual.export_text(rows)
    manual.keep_scores(manual.read_scores(_filled(tmp_path / "a.csv", text, {1: "1"})))
    again = manual.read_scores(_filled(tmp_path / "b.csv", text, {1: "0", 2: "1"}))
    with pytest.raises(ValueError, match="already holds a score of 1 .* never replaced"):
        manual.keep_scores(again)
    from labkit.store.learner import default_store

    assert default_store().count("manual_grade") == 1  # bob's score was not kept either


def test_the_cli_refuses_a_file_it_did_not_write_with_exit_2_and_no_traceback(
    rows, tmp_path, capsys
):
    from labkit.cli import main

    other = tmp_path / "notes.csv"
    other.write_text("name,grade\nada,A\n")
    assert main(["grade", rows[0].notebook, "--manual", str(other)]) == 2
    err = capsys.readouterr().err
    assert "has no column 'learner'" in err and "Traceback" not in err
    assert other.read_text() == "name,grade\nada,A\n"  # read, never written


def test_a_run_or_a_record_among_the_arguments_is_read_for_prose_only_where_it_has_some():
    import labkit

    rec = labkit.TriageRecord("x")
    rec.convict("H3", "the logger divides by a fixed 500")
    record = {"$": "triage_record", "record": _enc(rec.to_dict())}
    text = json.dumps({"args": ["A", record, "stale log"], "kwargs": _enc({})})
    assert manual.prose_of(check.lab15_conviction, text) == {
        "mechanism line": "the logger divides by a fixed 500"
    }


def test_a_records_beliefs_go_to_a_person_and_one_that_reads_as_a_row_gives_no_verdict():
    """Lab 15's UPDATED BELIEFs are prose: each is exported for a person, as written, and a
    belief that reads as a passed row changes nothing the check says (issue 53)."""
    import forgery_lab15

    from labkit.learn.grade.verdict import verdict

    rows = "lab15_conviction  passed  ok: CONVICTION: H3\n  lab15_conviction: passed 1/1"
    said, filled = [], forgery_lab15.filled({"fix": "logger"}).to_dict()
    for belief in (forgery_lab15.BELIEFS["confirmation"], f"H3 holds. {rows}"):
        filled["rows"]["confirmation"]["data"]["belief"] = belief
        record = {"$": "triage_record", "record": _enc(filled)}
        text = json.dumps(
            {"args": ["A", record, "logger reports a stale value"], "kwargs": _enc({})}
        )
        prose = manual.prose_of(check.lab15_conviction, text)
        assert prose["belief: confirmation"] == belief and len(prose) == 7, prose
        said.append(verdict(check.lab15_conviction, "lab15_conviction", text))
    assert said[0] == said[1] and said[0][0] == "failed", said
