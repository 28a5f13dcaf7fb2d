"""Reading a learner's words without a language model: phrase lists and a longest-match rule.

A phrase matches where it starts at a word boundary; a phrase of three characters or
fewer ("lr", "0", "pad") must also end at one, so "lr" does not match "already" (which
is why the lists name "padding" and "logg" beside "pad" and "log"). Each
probe's possible outcomes carry the phrases that name them, and the outcome with the
longest phrase found wins, so "disagree" beats "agree" and "don't match" beats "match".
"""

from __future__ import annotations

import re

OUTCOMES = {  # probe -> outcome -> phrases that predict it (shown by the `probes` command)
    "raw_vs_reported": {
        "agree": ["agree", "match", "same", "honest", "identical", "consistent", "tracks"],
        "disagree": [
            "disagree",
            "differ",
            "mismatch",
            "don't match",
            "do not match",
            "not match",
            "stale",
            "lies",
            "lying",
            "wrong",
            "raw falls",
            "raw descends",
            "raw drops",
            "raw moves",
            "not the same",
        ],
    },
    "overfit": {
        "reaches": [
            "reach",
            "~0",
            "near 0",
            "near zero",
            "to zero",
            "to 0",
            "memoris",
            "memoriz",
            "fits",
            "overfits",
            "goes down",
            "drops",
            "falls",
            "descends",
            "succeeds",
        ],
        "stalls": [
            "stall",
            "stuck",
            "flat",
            "plateau",
            "can't",
            "cannot",
            "fails",
            "won't",
            "doesn't fit",
            "does not fit",
            "not reach",
            "doesn't reach",
            "stays high",
        ],
        "nan": ["nan", "blows up", "blow up", "inf", "explodes", "diverges"],
    },
    "label_shuffle": {
        "same": ["same", "identical", "indistinguishable", "alike", "no difference", "similar"],
        "differs": [
            "differ",
            "different",
            "worse",
            "slower",
            "higher",
            "not the same",
            "can't fit",
            "cannot fit",
        ],
        "inconclusive": ["inconclusive", "both memoris", "both memoriz", "both fit", "both reach"],
    },
    "gradient_audit": {
        "ok": ["ok", "healthy", "fine", "flows", "flowing", "all finite", "normal"],
        "none": [
            "none",
            "no grad",
            "no gradient",
            "missing grad",
            "null",
            "grad is none",
            "disconnected",
            "not connected",
        ],
        "outside": [
            "not in the optimizer",
            "not in optimizer",
            "outside",
            "missing from the optimizer",
            "left out of the optimizer",
            "optimizer membership",
            "not owned",
        ],
        "accumulating": ["accumul", "doubles", "double", "pile", "piling", "builds up", "add up"],
        "zero": ["zero", "exactly 0", "all 0"],
        "nonfinite": ["nan", "inf", "non-finite", "nonfinite"],
        "growing": ["grow", "climb", "explod", "increas"],
    },
    "update_probe": {
        "ok": ["ok", "move", "moves", "nonzero", "non-zero", "healthy", "normal", "fine"],
        "zero": [
            "zero",
            "0",
            "no update",
            "nothing moves",
            "frozen",
            "don't move",
            "do not move",
            "doesn't move",
            "never move",
        ],
        "partial": [
            "some",
            "partial",
            "part of",
            "one group",
            "only the head",
            "only head",
            "only the backbone",
            "backbone doesn't",
            "head doesn't",
        ],
        "vanishing": ["vanish", "collapse", "decay", "shrink", "fade", "halv", "stop", "skip"],
        "growing": ["grow", "climb", "increas", "larger and larger"],
        "nonfinite": ["nan", "inf", "non-finite", "nonfinite", "explod", "blow"],
    },
    "first_nonfinite": {
        "finite": ["finite", "all finite", "no nan", "nothing", "clean"],
        "input": ["input", "data", "feature", "example"],
        "labels": ["label", "-100", "no supervised", "no tokens", "all masked"],
        "loss": ["loss", "softmax", "exp", "overflow"],
        "forward": [
            "forward",
            "activation",
            "logit",
            "module",
            "layer",
            "hidden",
            "weights",
            "parameter",
        ],
        "gradients": ["grad", "backward"],
    },
    "label_audit": {
        "ok": ["ok", "fine", "clean", "aligned", "correct", "healthy", "normal"],
        "shifted": ["shift", "two ahead", "2 ahead", "misalign", "off by one"],
        "padding": ["pad", "padding", "padded"],
        "empty": [
            "empty",
            "all -100",
            "all masked",
            "every label",
            "no supervised",
            "no labels",
            "nothing supervised",
        ],
        "constant": ["constant", "identical", "same input", "zero variance", "no variance"],
        "probabilities": ["probabilit", "softmax", "sum to 1", "sums to 1"],
        "nonfinite": ["nan", "inf", "non-finite", "nonfinite", "corrupt"],
    },
    "lr_sweep": {
        "responds": [
            "respond",
            "monoton",
            "track",
            "faster",
            "scales",
            "descends",
            "improves",
            "higher lr is better",
            "higher is better",
        ],
        "too_high": [
            "too high",
            "too large",
            "lower lr",
            "smaller lr",
            "lower is better",
            "x1 diverges",
            "current lr diverges",
            "diverges at x1",
        ],
        "flat": [
            "flat",
            "no effect",
            "nothing changes",
            "doesn't respond",
            "does not respond",
            "no response",
            "insensitive",
            "not an lr problem",
        ],
        "unstable": [
            "unstable",
            "nan at every lr",
            "diverges at every lr",
            "nan everywhere",
            "blows up at every lr",
            "nan in every arm",
        ],
    },
    "second_seed": {
        "same": ["same", "reproduc", "repeat", "identical", "similar", "again", "persists"],
        "different": [
            "differ",
            "not reproduc",
            "goes away",
            "vanish",
            "changes",
            "disappear",
            "doesn't repeat",
            "fluke",
        ],
    },
}


_CACHE: dict[str, re.Pattern] = {}


def pattern(phrase: str) -> re.Pattern:
    """The compiled pattern of `phrase`: at word boundaries, as the module says."""
    if phrase not in _CACHE:
        end = r"(?![a-z0-9])" if len(phrase) <= 3 else ""
        _CACHE[phrase] = re.compile(r"(?<![a-z0-9])" + re.escape(phrase.lower()) + end)
    return _CACHE[phrase]


def found(phrase: str, text: str) -> bool:
    """Whether `phrase` occurs in `text` (lower-cased) at word boundaries."""
    return pattern(phrase).search(text.lower()) is not None


def read_outcome(probe: str, text: str, outcomes: dict | None = None) -> str | None:
    """The outcome of `probe` that `text` predicts, by the longest phrase it contains; or None.
    `outcomes`: another table of the same shape (the distributed drill's); default `OUTCOMES`."""
    best, best_len = None, 0
    for outcome, phrases in (outcomes or OUTCOMES)[probe].items():
        for phrase in phrases:
            if len(phrase) > best_len and found(phrase, text):
                best, best_len = outcome, len(phrase)
    return best


def groups_matched(text: str, groups) -> list[bool]:
    """For each group of synonyms, whether `text` names any of them."""
    return [any(found(p, text) for p in group) for group in groups]
