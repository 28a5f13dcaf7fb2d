"""One meaning of `--json` across the CLI: `--json PATH` writes the file, `--json -` writes
stdout; every document has a format and a version; old spellings work with a deprecation line."""

import json
import re
import sqlite3

import pytest

from labkit.cli import main

FORMAT = re.compile(r"labkit\.[a-z_]+/\d+")


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def stdout_doc(capsys, *argv, rc=0):
    """Run `labkit argv --json -`: the JSON alone on stdout, the report on stderr."""
    assert main([*argv, "--json", "-"]) == rc
    out, err = capsys.readouterr()
    doc = json.loads(out)  # nothing else on stdout
    assert FORMAT.fullmatch(doc["format"]), doc["format"]
    return doc, err


# one command each, as cheap as it can be; the grade command's --json: tests/learn/grade/test_grade_formats.py
REPORTS = {
    "run": (["run", "--steps", "3"], "labkit.run/1", 0),
    "bugs": (["bugs"], "labkit.bugs/1", 0),
    "checklist": (["checklist", "--bug", "double_shift"], "labkit.checklist/1", 1),
    "forecasts": (["forecasts"], "labkit.calibration/1", 0),
    "drill --stats": (["drill", "--stats"], "labkit.drill_stats/1", 0),
    "export": (["export"], "labkit.store/1", 0),
}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_json_dash_writes_one_document_to_stdout_and_path_writes_the_same(name, capsys, tmp_path):
    argv, fmt, rc = REPORTS[name]
    doc, _ = stdout_doc(capsys, *argv, rc=rc)
    assert doc["format"] == fmt
    if name in ("run", "checklist"):
        return  # the file form of these is the same writer; training twice adds nothing
    path = tmp_path / "out.json"
    assert main([*argv, "--json", str(path)]) == rc
    _, err = capsys.readouterr()
    saved = json.loads(path.read_text())
    assert saved["format"] == fmt and "wrote" in err
    if "exported_at" not in saved:
        assert saved == doc


def test_triage_json_dash_keeps_stdout_for_the_record(capsys):
    doc, err = stdout_doc(capsys, "triage", "--bug", "stale_log")
    assert doc["format"] == "labkit.triage/1"
    assert "CONVICTION" in err  # the paper form went to stderr


def test_checklist_document_names_its_items(capsys):
    doc, err = stdout_doc(capsys, "checklist", "--bug", "double_shift", rc=1)
    assert doc["passed"] is False and "shift_once" in doc["failed"]
    assert {i["key"] for i in doc["items"]} >= {"shift_once"} and "FAIL" in err
    assert doc["labkit"] == __import__("labkit").__version__


def test_old_spellings_still_work_with_a_deprecation_line(capsys):
    assert main(["bugs", "--json"]) == 0  # 0.1: a flag printing the bare list
    out, err = capsys.readouterr()
    assert isinstance(json.loads(out), list)
    assert "deprecated" in err and "--json -" in err
    assert main(["export"]) == 0  # 0.1: the store to stdout with no --json
    out, err = capsys.readouterr()
    assert json.loads(out)["format"] == "labkit.store/1"
    assert "deprecated" in err and "labkit export --json -" in err


def test_the_learner_store_and_any_sqlite_file_are_refused(capsys, home, tmp_path):
    assert main(["export", "--json", "-"]) == 0  # creates the store
    capsys.readouterr()
    store = home / "labkit.sqlite3"
    before = store.read_bytes()
    assert main(["bugs", "--json", str(store)]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "learner store" in err and "--json=" in err
    assert store.read_bytes() == before
    other = tmp_path / "grades.db"
    sqlite3.connect(other).execute("create table t (x)").connection.commit()
    assert main(["forecasts", "--json", str(other)]) == 2
    _, err = capsys.readouterr()
    assert "SQLite database" in err and "Traceback" not in err
    assert other.read_bytes().startswith(b"SQLite format 3\x00")


def test_drill_json_needs_stats(capsys):
    assert main(["drill", "--json", "-"]) == 2
    assert "--json goes with --stats" in capsys.readouterr().err


def test_grade_json_dash(capsys, tmp_path):
    """The grade command through the same writer: a one-cell notebook whose check is unanswered."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "from labkit.learn.check import ex_a_mechanism\nex_a_mechanism(...)"
        )
    )
    path = tmp_path / "ex.ipynb"
    nbformat.write(nb, path)
    doc, err = stdout_doc(capsys, "grade", str(path), "--sandbox", "none", rc=1)
    assert doc["format"] == "labkit.grades/2"
    assert [r["status"] for r in doc["rows"]] == ["not yet answered"]
    assert "TOTAL: 0 passed" in err  # the table went to stderr
    untrusted = "the grades are only as trustworthy as the submissions"
    assert doc["sandbox"] == "none" and untrusted in doc["warning"]  # said in every report
    assert err.startswith(f"labkit grade: graded without a sandbox (--sandbox none): {untrusted}.")
