"""Lab 15's conviction check: the system and the mechanism's key terms, attempts shown,
and no sentence that hands out the answer. Uses a complete record of mystery A."""

import pytest

from labkit import check
from test_lab15_record import complete, probes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.lab15


def test_a_wrong_system_gets_a_hint_about_its_own_rows_not_the_answer(probes):  # noqa: F811
    rec = complete(probes, system="H2", mechanism="labels shuffled apart from the inputs")
    with pytest.raises(check.CheckFailed) as wrong:
        check.lab15_conviction("A", rec)
    said = str(wrong.value)
    assert "does not support H2" in said and "attempt 1" in said
    assert "H3" not in said and "500" not in said and "logger" not in said


def test_a_mechanism_without_its_key_terms_fails_however_often_it_is_tried(probes):  # noqa: F811
    rec = complete(probes, mechanism="the model code has a mistake somewhere")
    for attempt in (1, 2, 3):
        if attempt > 1:
            rec.convict("H3", "the curve is weird")
        with pytest.raises(check.CheckFailed, match=f"names 0 of the 2 .*attempt {attempt} "):
            check.lab15_conviction("A", rec)
    rec.convict("H3", "the logged epoch mean is divided by a hard-coded 500")
    assert check.lab15_conviction("A", rec).endswith("(conviction attempt 4 on this record)")
