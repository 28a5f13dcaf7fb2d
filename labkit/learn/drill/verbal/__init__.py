"""Verbal practice: a transparent, keyword- and structure-based rubric for spoken answers.

No language model is involved. The answer is split into sentences (at . ; ! ? and line
breaks) and each element of a strong answer is looked for:

  hedge          a comparability phrase anywhere ("assuming", "comparable", "same loss" ...)
  leading        one sentence with a leading-hypothesis cue ("most likely", "I suspect" ...)
                 and one of the case's hypothesis words
  alternatives   one sentence with an alternatives cue ("could also", "rule out" ...) and one
                 of the case's alternative words
  test           one sentence with a test cue ("check", "compare", "replay" ...) and one of
                 the case's test words
  intervention   one sentence with an action cue ("fix", "lower", "add" ...) and one of the
                 case's intervention words
  confirm        one sentence with a confirmation cue ("confirm", "expect", "should" ...)

Phrases match at word boundaries (see `words`), and only where no "not", "no", "never" or
"n't" stands among the three words before them ("most likely it is not overfitting" names no
leading hypothesis; see `labkit.learn.check._meaning.denied`). The rubric says which words it
found, so a learner can see why an element counted, and can argue with it.
"""

from __future__ import annotations

import re

from ...check._meaning import denied
from .cases import CASES, MODELS
from ..words import pattern

ELEMENTS = ("hedge", "leading", "alternatives", "test", "intervention", "confirm")
LABELS = {
    "hedge": "hedge on comparability",
    "leading": "leading hypothesis",
    "alternatives": "alternatives",
    "test": "a discriminating test",
    "intervention": "an intervention",
    "confirm": "confirming evidence",
}
HEDGE = (
    "assuming",
    "assume",
    "comparable",
    "same loss",
    "same definition",
    "same reduction",
    "same way",
    "same metric",
    "provided",
    "if both",
    "if the losses",
    "if the curves",
    "if the metric",
    "before trusting",
    "eval mode",
    "same checkpoint",
    "smoothing",
    "not a stale",
    "raw loss",
    "computed the same",
)
CUES = {
    "leading": (
        "most likely",
        "likely",
        "leading",
        "consistent with",
        "i suspect",
        "suspect",
        "my first guess",
        "probably",
        "main hypothesis",
        "best explanation",
        "points to",
        "i think",
        "i believe",
    ),
    "alternatives": (
        "alternatively",
        "alternative",
        "could also",
        "it could be",
        "or it could",
        "another possibility",
        "other possibilities",
        "rule out",
        "might also",
        "less likely",
        "another explanation",
        "versus",
        "or else",
        "otherwise",
    ),
    "test": (
        "test",
        "check",
        "run",
        "experiment",
        "inspect",
        "compare",
        "measure",
        "replay",
        "overfit",
        "audit",
        "look at",
        "plot",
        "log",
        "locate",
        "recompute",
        "compute",
        "correlate",
    ),
    "intervention": (
        "fix",
        "change",
        "intervene",
        "add",
        "reduce",
        "lower",
        "increase",
        "remove",
        "apply",
        "switch",
        "use",
        "restore",
        "early stop",
        "set",
        "reweight",
        "clip",
    ),
    "confirm": (
        "confirm",
        "would show",
        "should see",
        "expect",
        "success",
        "if it works",
        "evidence",
        "verify",
        "should drop",
        "should fall",
        "should improve",
        "should match",
        "should stay",
        "should disappear",
        "stays finite",
    ),
}
HINTS = {
    "hedge": "say the curves are comparable first (same loss, reduction, mode, checkpoint)",
    "leading": "name the most likely cause with a cue such as 'most likely' or 'I suspect'",
    "alternatives": "name another cause you would rule out ('it could also be ...')",
    "test": "name the cheapest experiment that separates the hypotheses",
    "intervention": "say the one change you would make",
    "confirm": "say what result would confirm the fix worked ('I would expect ...')",
}


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"[.;!?\n]+", text) if s.strip()]


def _first(phrases, text, negation: bool = True):
    """The first of `phrases` that `text` asserts: found, and (with `negation`) not denied."""
    lowered = text.lower()
    return next(
        (
            p
            for p in phrases
            if any(
                not (negation and denied(lowered, m.start())) for m in pattern(p).finditer(lowered)
            )
        ),
        None,
    )


def grade(case_index: int, answer: str) -> dict:
    """{element: the words that made it count, or None}, for case 1-7 (`case_index` 0-6)."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be text (str); got {type(answer).__name__}.")
    if not 0 <= case_index < len(CASES):
        raise ValueError(
            f"case_index={case_index!r} is out of range; cases are 0 to {len(CASES) - 1}."
        )
    case = CASES[case_index]
    content = {
        "leading": case.leading,
        "alternatives": case.alternatives,
        "test": case.test,
        "intervention": case.intervention,
        "confirm": ("",),
    }
    hits = {"hedge": _first(HEDGE, answer)}
    for element in ELEMENTS[1:]:
        hits[element] = None
        for sentence in sentences(answer):
            word = _first(content[element], sentence) if element != "confirm" else ""
            # a content phrase that is itself a negation ("no change") asserts its cue
            cue = _first(CUES[element], sentence, negation=not (word or "").startswith("no"))
            if cue and word is not None:
                hits[element] = f"{cue} ... {word}" if word else cue
                break
    return hits


def report_lines(case_index: int, answer: str) -> list[str]:
    hits = grade(case_index, answer)
    out = []
    for element in ELEMENTS:
        got = hits[element]
        mark = "[x]" if got else "[ ]"
        why = f"found: {got}" if got else f"missing: {HINTS[element]}"
        out.append(f"  {mark} {LABELS[element]:<24} {why}")
    out.append(f"  {sum(bool(v) for v in hits.values())} of {len(ELEMENTS)} elements present")
    return out


def model_answer(case_index: int) -> str:
    return MODELS[case_index]
