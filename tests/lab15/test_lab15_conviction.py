"""Lab 15's conviction check: the system and the defect (a closed list) decide, exactly;
the mechanism line is kept for a person with its reading as a hint; attempts are shown, and
no sentence hands out the answer. Uses a complete record of mystery A."""

import pytest

from labkit import check
from labkit.learn.check.lab15 import DEFECTS
from test_lab15_record import complete, probes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.lab15
RIGHT = "logger divides by the wrong count"


def test_a_wrong_system_gets_a_hint_about_its_own_rows_not_the_answer(probes):  # noqa: F811
    rec = complete(probes, system="H2", mechanism="labels shuffled apart from the inputs")
    with pytest.raises(check.CheckFailed) as wrong:
        check.lab15_conviction("A", rec, "labels shuffled apart from their inputs")
    said = str(wrong.value)
    assert "does not support H2" in said and "attempt 1" in said
    assert "H3" not in said and "500" not in said and "logger" not in said


def test_the_defect_decides_and_the_mechanism_line_is_only_a_hint(probes):  # noqa: F811
    rec = complete(probes, mechanism="the model code has a mistake somewhere")
    wrong = [d for d in DEFECTS if d != RIGHT]
    for attempt, defect in enumerate(wrong[:2], start=1):
        if attempt > 1:
            rec.convict("H3", "the curve is weird, the logger is off")
        with pytest.raises(check.CheckFailed, match=f"not the defect .*attempt {attempt}"):
            check.lab15_conviction("A", rec, defect)
    with pytest.raises(check.CheckFailed, match="one of the keys of check.lab15.DEFECTS"):
        check.lab15_conviction("A", rec, "the logger")
    rec.convict("H3", "the loss is fine")  # a line without the key terms: a hint, not a failure
    said = check.lab15_conviction("A", rec, RIGHT)
    assert said.startswith("ok: CONVICTION: H3") and "(conviction attempt 3 on this record)" in said
    assert "kept for your instructor" in said and "a hint, not a grade: it names 0 of the 2" in said
    rec.convict("H3", "the logged epoch mean is divided by a hard-coded 500")
    assert "a hint" not in check.lab15_conviction("A", rec, RIGHT)


def test_every_variant_has_exactly_one_defect_in_the_closed_list():
    from labkit.diagnosis import lab15

    mysteries = ["A", "B", "C", "D"] + [f"random-{s}" for s in range(40)]
    variants = {}
    for mystery in mysteries:
        right = [d for d, bug in DEFECTS.items() if lab15.defect_matches(mystery, bug)]
        assert len(right) == 1, (mystery, right)
        variants[lab15._variant(mystery)] = right[0]
    assert sorted(variants) == sorted(lab15._SPECS)  # every variant was drawn and judged
