"""Nothing is lost on Binder: the start notebook's last cell exports the store there, and
says nothing anywhere else."""

import json
from pathlib import Path

import nbformat

from labkit.cli import main
from labkit.learn.keep import keep_your_work, on_binder

ROOT = Path(__file__).resolve().parents[2]
BINDER = {
    "BINDER_LAUNCH_HOST": "https://mybinder.org/",
    "BINDER_REPO_URL": "https://github.com/x/y",
}


def test_binder_is_told_apart_by_its_session_variables():
    assert on_binder(BINDER) and not on_binder({}) and not on_binder({"BINDER_LAUNCH_HOST": ""})


def test_on_binder_the_store_is_exported_and_comes_back_with_labkit_import(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "session"))
    monkeypatch.chdir(tmp_path)
    from labkit.store.learner import default_store

    default_store().add("grade", "ex_a/1", {"notebook": "ex_a.ipynb", "rows": []})
    path = keep_your_work(environ=BINDER)
    assert path == tmp_path / "labkit-export.json"
    shown = capsys.readouterr().out
    assert "only as long as this session" in shown and "labkit import labkit-export.json" in shown
    doc = json.loads(path.read_text())
    assert doc["format"] == "labkit.store/1" and len(doc["records"]) == 1
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "next machine"))
    assert main(["import", str(path)]) == 0
    assert default_store().get("grade", "ex_a/1")["body"]["notebook"] == "ex_a.ipynb"


def test_locally_it_shows_nothing_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for name in ("BINDER_LAUNCH_HOST", "BINDER_REPO_URL", "BINDER_REQUEST"):
        monkeypatch.delenv(name, raising=False)
    assert keep_your_work() is None
    assert capsys.readouterr().out == "" and list(tmp_path.iterdir()) == []


def test_the_start_notebook_ends_with_the_keep_cell_and_its_reference_shows_nothing():
    for folder in ("notebooks", "tests/reference"):
        nb = nbformat.read(ROOT / folder / "00_start_here.ipynb", as_version=4)
        md, code = nb.cells[-2:]
        assert md.cell_type == "markdown" and md.source.startswith("## Keep your work")
        assert code.source.endswith("keep_your_work()")
        assert code.get("outputs", []) == []  # executed off Binder: no notice, no file
