"""The free-text checks read meaning, not keywords: every answer in tests/data/free_text/ is
judged as marked (`+` passes, `-` is refused), and the reader's rules hold on small cases."""

import importlib
from pathlib import Path

import pytest

from labkit.check import CheckFailed
from labkit.learn.check._meaning import Idea, Rubric, clauses, read
from labkit.learn.check._words import rubric_text, score_rubric

DATA = Path(__file__).resolve().parents[1] / "data" / "free_text"
FILES = sorted(p for p in DATA.glob("*.txt") if p.stem != "verbal")


def answers(path: Path) -> list[tuple[str, str]]:
    return [
        (line[0], line[2:].strip())
        for line in path.read_text().splitlines()
        if line[:2] in ("+ ", "- ")
    ]


def judge(path: Path, text: str) -> bool:
    """Whether the check of `path` passes `text`."""
    if path.stem.startswith("lab15_conviction_"):  # the mechanism line, beside the right system
        from labkit.diagnosis.lab15 import mechanism_terms
        from labkit.learn.check.lab15_reading import reverses

        mystery = path.stem[-1]
        found, needed = mechanism_terms(mystery, text)
        return found >= needed and not reverses(mystery, text)
    try:
        score_rubric(text, rubric_of(path))
        return True
    except CheckFailed:
        return False


def rubric_of(path: Path) -> Rubric:
    exercise, kind = path.stem.rsplit("_", 1)
    module = importlib.import_module(f"labkit.check.{exercise}")
    return module.MECHANISM if kind == "mechanism" else module.TRANSFER_REASON


def test_every_free_text_check_has_its_answers():
    assert [p.stem for p in FILES] == [
        f"ex_{x}_{k}" for x in "abcdef" for k in ("mechanism", "transfer")
    ] + [f"lab15_conviction_{m}" for m in "ABCD"]
    for path in FILES:
        marks = [m for m, _ in answers(path)]
        assert marks.count("+") >= 5 and marks.count("-") >= 5, path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_answer_is_judged_as_marked(path):
    misjudged = []
    for mark, text in answers(path):
        if judge(path, text) != (mark == "+"):
            misjudged.append(f"{mark} {text}")
    assert not misjudged, "\n".join(misjudged)


def test_a_wrong_answer_is_refused_with_the_wrong_idea_named():
    rubric = rubric_of(DATA / "ex_a_transfer.txt")
    with pytest.raises(CheckFailed, match="says that the layers after the detach lose it"):
        score_rubric(
            "Layers after the detach lose the gradient and layers before it keep it.",
            rubric,
            "your reason",
        )


def test_a_refusal_names_the_missing_idea_not_a_word():
    with pytest.raises(CheckFailed) as info:
        score_rubric(
            "backbone.0 gets None at every step.",
            rubric_of(DATA / "ex_a_transfer.txt"),
            "your reason",
        )
    assert "names 1 of the 2 ideas" in str(info.value)
    assert "say which layers keep it, and why" in str(info.value)


TOY = Rubric(
    {"moves": (r"mov",), "head": (r"head\b",), "fast": (r"fast",)},
    (
        Idea(
            "say that the head moves",
            (("head", "moves"),),
            ((("head", "~moves"), "that the head stays still"),),
        ),
    ),
    frozenset({"head"}),
)


@pytest.mark.parametrize(
    "text, said, wrong",
    [
        ("The head moves.", 1, 0),
        ("The head does not move.", 0, 1),  # a denial is read as one
        ("The head never moves.", 0, 1),
        ("Not only the head moves.", 1, 0),  # "not only" asserts
        ("It is not the backbone, and the head moves.", 1, 0),  # a negation stops at "and"
        ("No handle on the head; it moves.", 1, 0),  # a noun is never denied; ";" joins a sentence
        ("The head is clear. Then it moves.", 0, 0),  # ideas are read within one sentence
    ],
)
def test_negation_and_sentences(text, said, wrong):
    named, claims = read(text, TOY)
    assert (len(named), len(claims)) == (said, wrong)


def test_a_clause_that_starts_with_a_pronoun_joins_the_one_before():
    first = clauses("The head is fine, so it does not move.")[0]
    assert first == "the head is fine, it does not move"
    assert len(read("The head is fine, so it does not move.", TOY)[1]) == 1
    assert read("The head is fine, so the loss does not move.", TOY)[1] == []


def test_a_rubric_prints_its_ideas_and_rejects_unknown_concepts():
    assert rubric_text(TOY) == "- say that the head moves"
    assert len(TOY) == 1 and list(TOY) == ["say that the head moves"]
    with pytest.raises(ValueError, match="does not define: \\['slow'\\]"):
        Rubric({"fast": ("fast",)}, (Idea("say it", (("slow",),)),))


def test_the_verbal_panel_counts_six_elements_only_where_each_is_said():
    from labkit.learn.drill.verbal import ELEMENTS, grade

    misjudged = []
    for mark, text in answers(DATA / "verbal.txt"):
        case, answer = text.split(" | ", 1)
        hits = grade(int(case), answer)
        if (all(hits.values()) and len(hits) == len(ELEMENTS)) != (mark == "+"):
            misjudged.append(f"{mark} {text}: {hits}")
    assert not misjudged, "\n".join(misjudged)
