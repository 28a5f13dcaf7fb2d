"""Reading an explanation for what it says: ideas made of concepts, with negation and direction.

No language model is involved, and every rule can be read:

- A *concept* is one thing said several ways: regular expressions matched on the lower-cased
  text where a word starts, so "detach" finds "detached" and "detaching" too.
- A concept counts as *denied* where "not", "no", "never", "without", "nothing", "neither",
  "nor" or a word ending in "n't" stands among the three words before it, in the same part of
  the sentence ("does not reach the backbone" denies "reach").
- An *idea* is said when one sentence holds every concept of one of its *forms*. A form names
  concepts that must be asserted ("keep"), denied ("~keep") or absent ("!early"). Relations
  such as "before the cut" or "only the head" are concepts of their own. A noun (a layer, a
  class) is never denied.
- An idea may list *wrong* forms: the reversals and denials of the mechanism ("the layers
  after the cut lose the gradient"). A clause that holds one contradicts the mechanism, and
  the check fails with a sentence that names the wrong idea, whatever else the text says.

A rubric prints as its ideas, not as its words: a learner writes the idea in their own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NEGATION = re.compile(r"\b(?:not|no|never|without|nothing|neither|nor|cannot|\w+n't)\b")
_NOT_A_NEGATION = re.compile(r"\b(?:not only|not just|no longer|no matter|nothing but)\b")
_SENTENCE = re.compile(r"(?:\.(?=\s|$)|[!?\n])+")  # ";" joins, and ends a clause
_CLAUSE = re.compile(
    r"[:;]\s|\((?!\))|(?<!\()\)|,\s(?:and|or)\s|\s(?:but|so|while|whereas|because|"
    r"since|although|though|hence|thus|therefore|yet|unlike|than)\s"
)
_PRONOUN = re.compile(r"(?:it|its|they|their|them|this|that|these|those)\b")
_PART = re.compile(r",|\s(?:and|or|then)\s")  # negation reaches no further than this


@dataclass(frozen=True)
class Idea:
    """One thing an explanation must say: `says` shows it; `forms` and `wrong` read it."""

    says: str  # "say ..." in plain words, shown to the learner; it names no key word
    forms: tuple  # of tuples of concept names ("name", "~denied", "!absent"); any one will do
    wrong: tuple = ()  # of (form, "that ..."): a clause holding the form contradicts the idea


@dataclass(frozen=True)
class Rubric:
    """Concepts (name -> regular expressions) and the ideas built from them. A concept in
    `nouns` (a layer, a class) is only ever mentioned: "no handle on the head" does not deny
    the head."""

    concepts: dict
    ideas: tuple
    nouns: frozenset = frozenset()

    def __post_init__(self):
        names = {
            n.lstrip("~!")
            for idea in self.ideas
            for form in (*idea.forms, *(f for f, _ in idea.wrong))
            for n in form
        }
        if names - set(self.concepts):
            raise ValueError(
                f"The rubric's forms name concepts it does not define: "
                f"{sorted(names - set(self.concepts))}."
            )

    def __len__(self):
        return len(self.ideas)

    def __iter__(self):
        return iter(idea.says for idea in self.ideas)

    def __str__(self):
        return "\n".join(f"- {idea.says}" for idea in self.ideas)

    __repr__ = __str__


def _normal(text: str) -> str:
    text = text.lower().replace("\u2019", "'").replace("`", "")
    return re.sub(r"\s+", " ", text).strip()


_COMPILED: dict[str, re.Pattern] = {}


def _regex(pattern: str) -> re.Pattern:
    if pattern not in _COMPILED:
        _COMPILED[pattern] = re.compile(r"(?<![a-z0-9_])(?:" + pattern + ")")
    return _COMPILED[pattern]


def denied(unit: str, start: int) -> bool:
    """Whether a negation stands among the three words before `start`, within its part."""
    before = _PART.split(unit[:start])[-1]
    before = _NOT_A_NEGATION.sub(" ", before)
    return any(_NEGATION.fullmatch(w) for w in before.split()[-3:])


def _polarities(unit: str, rubric: Rubric) -> dict:
    """{concept: {"+", "-"}}: where `unit` asserts ("+") or denies ("-") each concept."""
    found: dict = {}
    for name, patterns in rubric.concepts.items():
        for pattern in patterns:
            for m in _regex(pattern).finditer(unit):
                negated = name not in rubric.nouns and denied(unit, m.start())
                found.setdefault(name, set()).add("-" if negated else "+")
    return found


def _holds(form: tuple, found: dict) -> bool:
    for name in form:
        if name.startswith("!"):
            if name[1:] in found:
                return False
        elif name.startswith("~"):
            if "-" not in found.get(name[1:], ()):
                return False
        elif "+" not in found.get(name, ()):
            return False
    return True


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(_normal(text)) if s.strip()]


def clauses(text: str) -> list[str]:
    """The sentences' clauses, and the parts of each; a clause that starts with a pronoun
    ("it", "they", "its" ...) is read together with the one before it."""
    out = []
    for sentence in sentences(text):
        mine: list[str] = []  # a pronoun looks back within its own sentence only
        for clause in (c.strip() for c in _CLAUSE.split(f" {sentence} ") if c.strip()):
            if mine and _PRONOUN.match(clause):
                clause = f"{mine.pop()} {clause}"
            mine.append(clause)
        out += mine
    return out + [p.strip() for c in out for p in _PART.split(c) if p.strip() and p.strip() != c]


def read(text: str, rubric: Rubric) -> tuple[list, list]:
    """(the ideas `text` says, the wrong ideas it states, in order)."""
    said = [_polarities(s, rubric) for s in sentences(text)]
    named = [idea for idea in rubric.ideas if any(_holds(f, p) for f in idea.forms for p in said)]
    wrong = []
    for clause in clauses(text):
        found = _polarities(clause, rubric)
        wrong += [
            claim
            for idea in rubric.ideas
            for form, claim in idea.wrong
            if _holds(form, found) and claim not in wrong
        ]
    return named, wrong
