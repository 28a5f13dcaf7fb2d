"""How long each drill probe takes to answer, per mystery: the bars are <= 1 s for a
classifier mystery and <= 5 s for an LM one (wall time, one thread, as the drill runs).

Run with ``make bench`` (or ``python benchmarks/bench_drill.py``). Each probe is timed on
a fresh case whose 50-step baseline already ran (the drill trains it to show the
symptom before any probe), so a probe pays for everything else it needs: label_shuffle
alone pays for the overfit run it compares against. Prints one line per mystery as it
goes, then the slowest answer of each probe for each task. Timing is not asserted by a
test: the machines differ too much.
"""

from __future__ import annotations

import argparse
import json
import time

from labkit.bugs import BUGS
from labkit.learn.drill.case import Case
from labkit.learn.drill.menu import MENU
from labkit.learn.drill.mystery import Mystery, mystery_names
from labkit.learn.drill.probes import answer

BARS = {"classify": 1.0, "lm": 5.0}


def mysteries(run_seed: int):
    yield Mystery(0, None, "classify", run_seed)
    yield Mystery(0, None, "lm", run_seed)
    for name in mystery_names():
        yield Mystery(0, name, BUGS[name.split(":")[0]].setup.get("task", "classify"), run_seed)


def time_probes(mystery: Mystery) -> dict:
    out = {}
    for probe in MENU:
        case = Case(mystery)
        case.baseline()  # shown as the symptom before any probe is bought
        t0 = time.perf_counter()
        answer(case, probe)
        out[probe] = time.perf_counter() - t0
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-seed", type=int, default=0, help="the mysteries' run seed")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    time_probes(Mystery(0, "detach", "classify", 0))  # warm-up: imports and first calls
    results = {}
    print(f"{'mystery':36} {'task':8} " + " ".join(f"{p[:8]:>8}" for p in MENU))
    for m in mysteries(args.run_seed):
        times = time_probes(m)
        results[f"{m.key} ({m.task})"] = {"task": m.task, "seconds": times}
        print(f"{m.key:36} {m.task:8} " + " ".join(f"{times[p]:8.2f}" for p in MENU), flush=True)
    print("slowest answer per probe (bar: classify <= 1 s, LM <= 5 s):")
    ok = True
    for probe in MENU:
        row = []
        for task, bar in BARS.items():
            rows = {k: r["seconds"][probe] for k, r in results.items() if r["task"] == task}
            worst = max(rows, key=rows.get)
            ok &= rows[worst] <= bar
            row.append(f"{task} {rows[worst]:5.2f} s ({worst.split(' (')[0][:24]})")
        print(f"  {probe:16} " + "   ".join(row))
    print("all within the bars" if ok else "SOME PROBE IS OVER ITS BAR")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
