"""Triage every held-out setup with labkit.diagnose and print the per-setup table and rates.

    cd tests && python -m own_setups.report            # all setups
    cd tests && python -m own_setups.report h1_         # names starting with h1_

A setup counts as right-system when the record's conviction names the expected system
(NONE for a healthy control), right-mechanism when the mechanism line also holds the key
terms written down with the setup. `verdict` says whether the record grants the verdict
(the intervention and its confirmation met their forecasts) or refuses it.
"""

from __future__ import annotations

import re
import sys
import time
import warnings

import torch

import labkit
from labkit.diagnosis.record.triage import TriageRefused

from . import ALL_EXPECTED as EXPECTED, ALL_SETUPS as SETUPS, mechanism_right
from .fixed import FIXED


_RECORDS: dict = {}  # setup name -> its record, for the tests that read one after `triage`


def record_of(name: str, keep: bool = True, setups: dict | None = None):
    """`labkit.diagnose(SETUPS[name](), seeds=(0, 1))` (`setups`: where to find `name` instead).
    With `keep`, the record is kept for this process, so a test that reads a setup's record, or
    signs a copy of it, reuses the triage that its batch's bar test already ran (same setup,
    same seeds: the same record). Setup names are unique across the batches."""
    if name in _RECORDS:
        return _RECORDS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = labkit.diagnose((setups or SETUPS)[name](), seeds=(0, 1))
    if keep:
        _RECORDS[name] = record
    return record


def triage(name: str, keep: bool | None = None) -> dict:
    """The row of one setup. `keep` (see `record_of`) is, unless given, whether the setup has a
    fix in `fixed.FIXED`: test_own_sign then signs a copy of this very triage, in the same unit
    of work (conftest.work_unit)."""
    started = time.perf_counter()
    record = record_of(name, keep=name in FIXED if keep is None else keep)
    conv = record.rows["conviction"]
    system = conv["data"].get("system") or "UNKNOWN"
    mechanism = conv["data"].get("mechanism") or conv["text"]
    try:
        record.verdict()
        granted = True
    except TriageRefused:
        granted = False
    expected, terms = EXPECTED[name]
    right = system == expected
    if expected == "NONE":  # an acquittal is right only beside its references, with their numbers
        right_words = right and names_references(mechanism)
    else:
        right_words = right and mechanism_right(mechanism, terms)
    return {"name": name, "expected": expected, "system": system, "mechanism": mechanism,
            "key": record.finding_key, "margins": record.margins,
            "right_system": right, "right_mechanism": right_words,
            "granted": granted, "seconds": time.perf_counter() - started}


_NUMBERS = r"-?[\d.]+(?:e[+-]?\d+)? / -?[\d.]+(?:e[+-]?\d+)?"
REFERENCES = (  # what every acquittal must name, each with its two seeds' numbers (issue 55)
    re.compile(r"your run ends at " + _NUMBERS),
    re.compile(r"a plain loop with your model, data, loss and optimizer reaches " + _NUMBERS),
    re.compile(r"re-initialised by PyTorch's defaults reaches " + _NUMBERS),
)


def names_references(line: str) -> bool:
    """Whether an acquittal names the learner's level and each reference with its numbers."""
    return line.startswith("no defect found") and all(r.search(line) for r in REFERENCES)


def rates(rows: list[dict]) -> dict:
    buggy = [r for r in rows if r["expected"] != "NONE"]
    healthy = [r for r in rows if r["expected"] == "NONE"]
    return {"setups": len(rows), "buggy": len(buggy), "healthy": len(healthy),
            "right_system": sum(r["right_system"] for r in rows) / len(rows),
            "right_mechanism": sum(r["right_mechanism"] for r in rows) / len(rows),
            "buggy_right_system": sum(r["right_system"] for r in buggy) / max(1, len(buggy)),
            "buggy_right_mechanism": sum(r["right_mechanism"] for r in buggy) / max(1, len(buggy)),
            "healthy_convicted": sum(r["system"] not in ("NONE", "UNKNOWN") for r in healthy),
            "verdicts_granted": sum(r["granted"] for r in rows)}


def main(argv=None) -> int:
    torch.set_num_threads(1)
    prefix = (argv or sys.argv[1:] or [""])[0]
    rows = [triage(name) for name in SETUPS if name.startswith(prefix)]
    print(f"| setup | expected | convicted | system | mechanism | verdict | s |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['expected']} | {r['system']}: {r['mechanism'][:90]} | "
              f"{'right' if r['right_system'] else 'WRONG'} | {'right' if r['right_mechanism'] else 'WRONG'} | "
              f"{'granted' if r['granted'] else 'refused'} | {r['seconds']:.1f} |")
    print(rates(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
