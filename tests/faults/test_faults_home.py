"""The store's place, read once and strictly: $LABKIT_HOME with a literal ~, a symbolic link
loop, a file or a folder where the other is expected. Each is one sentence (exit 2, no
traceback) from a command that needs the store, and nothing at all to a command that does
not; no folder named ~ is ever made."""

import json
import os
import sqlite3
from pathlib import Path

import pytest

from helpers import one_sentence
from labkit.cli import main
from labkit.store.guard import labkit_home


def cli_error(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.removeprefix("labkit: error: ")


def test_a_literal_tilde_is_home(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_HOME", "~/labkit-data")  # as a .env file passes it on
    assert labkit_home() == tmp_path / "me" / "labkit-data"
    assert main(["export", "--json", str(tmp_path / "all.json")]) == 0
    assert (tmp_path / "me" / "labkit-data" / "labkit.sqlite3").is_file()
    assert not (tmp_path / "~").exists()


def test_a_tilde_that_names_no_user_is_refused_and_no_folder_made(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_HOME", "~no_such_user_56/data")
    said = cli_error(capsys, "forecasts")
    assert said.startswith("LABKIT_HOME='~no_such_user_56/data' starts with '~no_such_user_56'")
    assert one_sentence(said) and os.listdir(tmp_path) == []


def store_at_fault(tmp_path, kind: str) -> Path:
    """A $LABKIT_HOME that cannot hold a store, of the given kind."""
    home = tmp_path / "home"
    if kind == "loop":
        home.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(home)
    elif kind == "file":
        home.write_text("not a folder")
    elif kind == "folder at the store file":
        (home / "labkit.sqlite3").mkdir(parents=True)
    return home


FAULTS = {
    "loop": "a symbolic link on its way loops back on itself; point the link at a real folder",
    "file": "a file stands where a folder on its way should be, so labkit left it untouched",
    "folder at the store file": "is a folder, where labkit keeps its store file; move that",
}


@pytest.mark.parametrize("kind", FAULTS)
def test_a_store_place_that_cannot_hold_a_store_is_one_sentence(
    tmp_path, monkeypatch, capsys, kind
):
    home = store_at_fault(tmp_path, kind)
    monkeypatch.setenv("LABKIT_HOME", str(home))
    for argv in (["forecasts"], ["export", "--json", "-"], ["store", "check"]):
        said = cli_error(capsys, *argv)
        assert FAULTS[kind] in said and f"(it is {str(home)!r} now)" in said, said
        assert one_sentence(said)
    # a command that needs no store does not touch it, and writes its report
    assert main(["bugs", "--json", str(tmp_path / "bugs.json")]) == 0
    assert (tmp_path / "bugs.json").is_file()


def test_an_output_path_through_a_link_loop_is_one_sentence(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    said = cli_error(capsys, "bugs", "--json", str(tmp_path / "a" / "bugs.json"))
    assert "a symbolic link on its way loops back on itself; nothing was written" in said


def store_of_format(home: Path, fmt: str) -> Path:
    from labkit.store.learner import default_store

    store = default_store()
    store.add("grade", "nb/1", {"notebook": "a.ipynb", "rows": [], "summary": {}})
    store.close()
    conn = sqlite3.connect(home / "labkit.sqlite3")
    with conn:
        conn.execute("UPDATE labkit_meta SET value=? WHERE name='format'", (fmt,))
    conn.close()
    return home / "labkit.sqlite3"


def test_an_older_store_says_older_and_the_one_command_upgrades_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    path = store_of_format(tmp_path, "labkit.store/0")
    before = path.read_bytes()
    said = cli_error(capsys, "export", "--json", "-")
    assert "was written by an older labkit (format 'labkit.store/0'; this one reads" in said
    assert "`labkit store upgrade` brings it to this format" in said and one_sentence(said)
    assert path.read_bytes() == before  # refused before anything was written
    assert main(["store", "upgrade"]) == 0
    kept = tmp_path / "labkit.sqlite3.labkit.store-0.bak"
    assert f"from labkit.store/0 to labkit.store/1; the store as it was is kept at {kept}" in (
        capsys.readouterr().out
    )
    assert main(["export", "--json", str(tmp_path / "all.json")]) == 0
    assert [r["key"] for r in json.loads((tmp_path / "all.json").read_text())["records"]] == [
        "nb/1"
    ]
    copy = sqlite3.connect(kept)
    assert copy.execute("SELECT value FROM labkit_meta").fetchone() == ("labkit.store/0",)
    copy.close()
    assert main(["store", "upgrade"]) == 0 and "nothing was done" in capsys.readouterr().out


def test_a_newer_store_says_newer_and_is_not_upgraded(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    path = store_of_format(tmp_path, "labkit.store/9")
    said = cli_error(capsys, "forecasts")
    assert "was written by a newer labkit (format 'labkit.store/9'" in said
    said = cli_error(capsys, "store", "upgrade")
    assert "which is not an older labkit store" in said
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no copy made, nothing beside it
