"""diagnose(setup) on the held-out set of plain-PyTorch setups (tests/own_setups).

The bars are the project's goal on setups the rules were not written against: at least
90% right system, at least 80% right mechanism, and no healthy setup convicted. Healthy
controls are checked one by one: a conviction of a healthy setup is the worst outcome.
"""

import pytest

from own_setups import ALL_EXPECTED, EXPECTED
from own_setups.report import triage

from own_setups.fixed import SIGNED_BY_FIX_ONLY, UNSIGNED
from own_setups.third import THIRD_EXPECTED

# The third batch is checked setup by setup below, its two healthy controls included, so they
# are not triaged a second time with the other healthy controls.
HEALTHY = [
    n for n, (system, _) in ALL_EXPECTED.items() if system == "NONE" and n not in THIRD_EXPECTED
]
BUGGY = [n for n, (system, _) in EXPECTED.items() if system != "NONE"]  # the first batch: the bars
# First-batch setups that miss today, with what labkit says instead. Each other setup must stay
# right, one test per setup, so that the triages are shared between test workers; the bars
# (right system >= 90%, right mechanism >= 80%) then hold by construction, and
# test_known_misses_keep_the_bars checks this list against them.
KNOWN_MISSES: dict[str, tuple[str, bool]] = {}  # name -> (system said, right system?)


@pytest.mark.slow
@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_setups_are_not_convicted(name):
    row = triage(name)
    assert row["system"] == "NONE", row["mechanism"]
    assert row["granted"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(THIRD_EXPECTED))
def test_the_reviewers_third_batch_stays_right(name):
    """A regression guard, not a held-out bar: two of these eight were missed before the
    rules lr_tiny and loss_floor were written from them (tests/own_setups/third.py)."""
    row = triage(name)
    assert row["right_system"] and row["right_mechanism"], (row["system"], row["mechanism"][:80])
    assert row["granted"]  # a right conviction is signed (an intervention met its forecast twice)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in BUGGY if n not in KNOWN_MISSES])
def test_first_batch_setup_is_convicted_right(name):
    row = triage(name)
    assert row["right_system"] and row["right_mechanism"], (row["system"], row["mechanism"][:80])
    assert row["granted"] or name in SIGNED_BY_FIX_ONLY | UNSIGNED, "labkit no longer signs it"


def test_known_misses_keep_the_bars():
    right_system = sum(1 for n in BUGGY if n not in KNOWN_MISSES or KNOWN_MISSES[n][1])
    assert right_system / len(BUGGY) >= 0.9 and len(BUGGY) >= 20
    assert (len(BUGGY) - len(KNOWN_MISSES)) / len(BUGGY) >= 0.8


def test_a_wrong_conviction_is_worse_than_unknown_when_seeds_disagree():
    """Seeds that point to different mechanisms never convict one of them: a third seed runs,
    and when it sides with neither, the system is convicted with both candidates named."""
    from labkit.diagnosis.finding import OwnFinding
    from labkit.diagnosis.own.step6_decide import rules as own_rules
    from labkit.diagnosis.own.step6_decide import seeds as own_seeds

    class Ev:
        def __init__(self, seed, key):
            self.seed, self.key = seed, key

    calls = iter([OwnFinding("H1", "no_step", "a"), OwnFinding("H1", "lr_zero", "b"), None])
    original, third = own_rules.h1_rules, own_seeds.third
    own_rules.h1_rules = lambda ev: next(calls)
    own_seeds.third = lambda evs: Ev(2, None)
    try:
        found = own_rules._h1([Ev(0, "a"), Ev(1, "b")])
    finally:
        own_rules.h1_rules, own_seeds.third = original, third
    assert found.system == "H1" and found.key == "lr_zero|no_step" and found.arm is None
    assert "seed 0: a; seed 1: b" in found.mechanism and "two candidate mistakes" in found.mechanism
