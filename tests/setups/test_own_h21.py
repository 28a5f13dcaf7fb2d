"""The misses of the eighth to nineteenth batches that issue h21 read (see
docs/developer/triage-scores.md), each reading read here on the bug and its one-change twin:

- the loss of an EMA copy of the model shown (fourteenth): decay 0.999 on a run of 160 steps
  (the copy still holds most of its init: H3) against decay 0.9 (it follows the model: honest),
  `own.averaged` through the logger check.
"""

from own_setups.fourteenth_b import EmaLossShortDecay, EmaLossSlowDecay

from labkit.diagnosis.own.step2_h3.logcount import logger_check
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence


def test_the_ema_copy_shown_is_honest_at_a_short_horizon_and_named_at_a_long_one():
    bug = logger_check(SeedEvidence(EmaLossSlowDecay(), 0))
    assert bug.details["mechanism"] == "averaged_copy_shown" and "decay 0.999" in bug.verdict
    twin = logger_check(SeedEvidence(EmaLossShortDecay(), 0))
    assert twin.details["agree"] and "decay 0.9 " in twin.verdict
