"""Flashcards: Leitner boxes, progress that survives a reload, two writers that never lose
an answer, and the widget drill driven without a browser."""

import json
import subprocess
import sys

import pytest

from labkit.learn import flashcards as fc
from labkit.learn.flashcards import BOXES, CARDS, Deck, next_box, record_answer

DAY = "2026-03-02"


def test_leitner_moves_up_one_box_and_falls_back_to_the_first():
    assert next_box(1, True) == 2 and next_box(4, True) == 5
    assert next_box(BOXES, True) == BOXES  # the top box is the last
    assert next_box(4, False) == 1 and next_box(1, False) == 1


def test_cards_are_the_packets_ten_questions_and_six_on_distributed_training():
    assert len(CARDS) == 16 and len({c.id for c in CARDS}) == 16
    assert all(c.question.endswith("?") and c.answer for c in CARDS)


def test_a_known_card_waits_its_box_interval(tmp_path):
    deck = Deck(tmp_path / "fc.sqlite3")
    assert [c.id for c in deck.due(DAY)] == [c.id for c in CARDS]  # everything new is due
    entry = deck.answer("nan-first", True, today=DAY)
    assert entry == {"box": 2, "seen": 1, "known": 1, "due": "2026-03-03"}
    assert "nan-first" not in [c.id for c in deck.due(DAY)]
    assert deck.due("2026-03-03")[-1].id == "nan-first"  # due again, after the box-1 cards
    deck.answer("nan-first", True, today="2026-03-03")
    assert deck.box("nan-first") == 3 and deck.progress()["nan-first"]["due"] == "2026-03-06"
    deck.answer("nan-first", False, today="2026-03-06")
    assert deck.box("nan-first") == 1 and deck.progress()["nan-first"]["known"] == 2
    assert deck.boxes() == {1: 16, 2: 0, 3: 0, 4: 0, 5: 0}


def test_progress_survives_a_reload_in_another_process(tmp_path):
    path = tmp_path / "fc.sqlite3"
    Deck(path).answer("first-test", True, today=DAY)
    code = (
        f"from labkit.learn.flashcards import Deck; d = Deck({str(path)!r}); "
        f"print(d.box('first-test'), [c.id for c in d.due({DAY!r})][:1])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "2" and "first-test" not in out.stdout
    from labkit.store.learner import LearnerStore

    kept = LearnerStore(path).get("flashcard", "first-test")  # one store, one record per card
    assert kept["body"]["box"] == 2 and kept["body"]["seen"] == 1


def test_default_path_is_under_labkit_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    record_answer("late-spike", False, today=DAY)
    assert fc.load_progress(tmp_path / "labkit.sqlite3")["late-spike"]["box"] == 1


def test_an_old_progress_file_is_imported_once(tmp_path):
    old = {
        "format": fc.FORMAT,
        "cards": {"late-spike": {"box": 3, "seen": 4, "known": 3, "due": "2026-03-09"}},
    }
    (tmp_path / "flashcards.json").write_text(json.dumps(old))
    assert Deck(tmp_path / "labkit.sqlite3").box("late-spike") == 3
    assert (tmp_path / "flashcards.json.imported").exists()
    assert not (tmp_path / "flashcards.json").exists()


WRITER = """
import sys
from labkit.learn.flashcards import record_answer
card, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(n):
    record_answer(card, i % 2 == 0, today="2026-03-02", path=path)
"""


READER = """
import sys
from labkit.learn.flashcards import Deck
for _ in range(int(sys.argv[2])):
    Deck(sys.argv[3]).due("2026-03-02")  # never sees the file missing or half written
"""


def test_two_writers_never_lose_an_answer(tmp_path):
    path, n = tmp_path / "fc.sqlite3", 40
    procs = [
        subprocess.Popen([sys.executable, "-c", code, card, str(n), str(path)])
        for code, card in ((WRITER, "first-test"), (WRITER, "none-vs-zero"), (READER, "-"))
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    progress = fc.load_progress(path)
    assert progress["first-test"]["seen"] == n and progress["none-vs-zero"]["seen"] == n
    assert progress["first-test"]["known"] == n // 2


def test_bad_input_and_a_corrupt_file_are_refused_with_sentences(tmp_path):
    path = tmp_path / "fc.sqlite3"
    with pytest.raises(ValueError, match="Did you mean 'nan-first'"):
        record_answer("nan-frist", True, path=path)
    with pytest.raises(TypeError, match="knew_it must be True or False"):
        record_answer("nan-first", "yes", path=path)
    path.write_text("{ not a store")
    with pytest.raises(ValueError, match="fc.sqlite3"):
        Deck(path).due(DAY)
    assert path.read_text() == "{ not a store"  # left untouched
    with pytest.raises(ValueError, match="names a JSON file"):
        Deck(tmp_path / "fc.json")


def test_listing_is_the_headless_fallback(tmp_path):
    deck = Deck(tmp_path / "fc.sqlite3")
    deck.answer("loss-vs-accuracy", True, today=DAY)
    text = deck.listing()
    assert text.count("[box ") == 16 and "[box 2, seen 1x] Why can the loss improve" in text
    assert repr(deck) == "Deck(16 cards; boxes 1:15 2:1 3:0 4:0 5:0)"


def test_widget_drill_grades_only_after_showing_and_saves(tmp_path):
    from labkit.widgets import FlashcardDrill

    drill = FlashcardDrill(path=tmp_path / "fc.sqlite3", today=DAY)
    first = drill.card.id
    assert drill.knew_button.disabled and "16 due" in drill.status.value
    drill.knew_button.click()  # not shown yet: ignored
    assert drill.card.id == first and drill.graded == 0
    drill.show_button.click()
    assert drill.card.answer[:20] in drill.answer_box.value.replace("&#x27;", "'")
    drill.knew_button.click()
    assert drill.graded == 1 and drill.card.id != first
    assert Deck(tmp_path / "fc.sqlite3").box(first) == 2  # saved on the click
    second = drill.card.id
    drill.show()
    drill.grade(False)  # missed: back to box 1, due again today, behind the unseen cards
    assert drill.card.id not in (first, second)
    for _ in range(len(CARDS) - 1):  # the unseen cards, then the missed one
        drill.show()
        drill.grade(True)
    assert drill.card is None and "Nothing is due today" in drill.question.value
    assert repr(drill).startswith("FlashcardDrill(0 due;") and "0x" not in repr(drill)
