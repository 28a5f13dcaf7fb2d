"""How many right convictions end signed: by labkit's own intervention, or by the learner's fix.

    cd tests && python -m own_setups.signing            # every batch, fourth to seventh included
    cd tests && python -m own_setups.signing h1_        # names starting with h1_

For each buggy setup convicted of the right system, the row says whether `record.verdict()`
grants the verdict as `labkit.diagnose` returns it (labkit signed it), and, where the setup has
a fix in `fixed.py`, what `record.intervene(fix)` says: signed, or the refusal.

Measured over the 90 setups (66 buggy setups convicted of the right system): before the
prescription and labkit's reference-loss intervention, 47 of the 66 were signed (71%); after,
62 signed by labkit alone (94%), and 65 of 66 (98%) with the 8 fixes of `fixed.py`, which all
sign. Unsigned: h1_fp16_half_model (no plain loop finishes, float32 included, and no fix written).
"""

from __future__ import annotations

import copy
import sys
import time
import warnings

import torch

from labkit.diagnosis.record.triage import TriageRefused

from . import ALL_EXPECTED, ALL_SETUPS, mechanism_right, report
from .fifth import FIFTH, FIFTH_EXPECTED
from .fixed import FIXED
from .fourth import FOURTH, FOURTH_EXPECTED
from .seventh import SEVENTH, SEVENTH_EXPECTED
from .sixth import SIXTH, SIXTH_EXPECTED

SETUPS = {**ALL_SETUPS, **FOURTH, **FIFTH, **SIXTH, **SEVENTH}
EXPECTED = {**ALL_EXPECTED, **FOURTH_EXPECTED, **FIFTH_EXPECTED, **SIXTH_EXPECTED, **SEVENTH_EXPECTED}


def signed(record) -> bool:
    try:
        record.verdict()
        return True
    except TriageRefused:
        return False


def sign(name: str, with_fix: bool = True, keep: bool = False) -> dict:
    """One row of the table (see above). With `keep`, the triage is `report.record_of`'s, shared
    with the batch test that triaged the setup in this process; the fix signs a copy of it."""
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = report.record_of(name, keep=keep, setups=SETUPS)
        conv = record.rows["conviction"]["data"]
        expected, terms = EXPECTED[name]
        row = {"name": name, "expected": expected, "system": conv.get("system") or "UNKNOWN",
               "right": conv.get("system") == expected,
               "right_mechanism": conv.get("system") == expected and mechanism_right(conv["mechanism"], terms),
               "by_labkit": signed(record), "by_fix": None, "fix": ""}
        if with_fix and name in FIXED and row["right"] and expected != "NONE":
            try:
                copy.deepcopy(record).intervene(FIXED[name]())  # the kept record stays unsigned by it
                row["by_fix"], row["fix"] = True, "signed"
            except TriageRefused as exc:
                row["by_fix"], row["fix"] = False, str(exc)
    row["seconds"] = time.perf_counter() - started
    return row


def main(argv=None) -> int:
    torch.set_num_threads(1)
    prefix = (argv or sys.argv[1:] or [""])[0]
    rows = [sign(n) for n in SETUPS if n.startswith(prefix)]
    print("| setup | system | labkit signed | your fix | s |\n|---|---|---|---|---|")
    for r in rows:
        fix = "-" if r["by_fix"] is None else r["fix"][:80]
        print(f"| {r['name']} | {r['system']} ({'right' if r['right'] else 'WRONG'}) | "
              f"{'yes' if r['by_labkit'] else 'no'} | {fix} | {r['seconds']:.1f} |")
    right = [r for r in rows if r["right"] and r["expected"] != "NONE"]
    alone = sum(r["by_labkit"] for r in right)
    either = sum(r["by_labkit"] or bool(r["by_fix"]) for r in right)
    print({"right_convictions": len(right), "signed_by_labkit": alone, "signed_by_labkit_or_fix": either,
           "fixes_tried": sum(r["by_fix"] is not None for r in rows),
           "fixes_signed": sum(bool(r["by_fix"]) for r in rows)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
