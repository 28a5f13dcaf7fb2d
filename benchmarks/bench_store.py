"""Time to add one record to the learner store holding 10, 1,000 and 10,000 forecasts.

Run with ``make bench`` (or ``python benchmarks/bench_store.py``). For each size a fresh
store is filled in one transaction with scored forecasts (about 1 kB of JSON each). Then
single writes, each a full transaction with its fsync, go to the three stores in turn
(so machine noise hits every size alike), and the median of `--repeats` is printed:

    add forecast    ForecastHistory.add of a newly sealed forecast
    attach score    ForecastHistory.add(forecast, score) for a forecast already stored
    add drill       LearnerStore.add of a small generic record

For comparison, `json rewrite` is what one add cost before the store: read the whole
JSON history, append, write it all back atomically (with its .bak). The bar: an add costs
about the same at 10,000 entries as at 10.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from labkit.forecast import Forecast
from labkit.forecast.history import HISTORY_FORMAT, ForecastHistory
from labkit.forecast.score import ForecastScore
from labkit.store.learner import LearnerStore
from labkit.store import atomic_write_json, read_json

SIZES = (10, 1_000, 10_000)


def sealed(i: int) -> Forecast:
    return Forecast(
        [[0, 2.3], [50, 1.5], [100, 1.0], [150, 0.8], [199, 0.7]], note=f"bench {i}"
    ).seal("0123456789ab")


def scored(i: int) -> ForecastScore:
    return ForecastScore(
        steps=[0, 50, 100, 150, 199],
        predicted=[2.3, 1.5, 1.0, 0.8, 0.7],
        actual=[2.3, 1.4, 1.1, 0.9, 0.8],
        log_errors=[0.0, 0.07, 0.1, 0.1, 0.13],
        mean_log_error=0.08,
        misses=0,
        nan_predicted=None,
        nan_actual=None,
        nan_hit=True,
        shape_predicted="descending",
        shape_actual="descending",
        verdict=f"A good forecast ({i}).",
    )


def entry(i: int) -> dict:
    f = sealed(i)
    return {"forecast": f.to_dict(), "score": scored(i).to_dict(), "added_at": f.sealed_at}


def filled(n: int, folder: Path) -> dict:
    """A store holding n scored forecasts, and the same history as one old-style JSON file."""
    entries = [entry(i) for i in range(n)]
    path = folder / f"store-{n}.sqlite3"
    LearnerStore(path).merge(
        [
            {
                "kind": "forecast",
                "key": e["forecast"]["content_hash"],
                "body": e,
                "created_at": e["added_at"],
            }
            for e in entries
        ]
    )
    old = folder / f"forecasts-{n}.json"
    atomic_write_json(old, {"format": HISTORY_FORMAT, "entries": entries})
    history = ForecastHistory(path)
    len(history)  # opened before timing starts
    return {"n": n, "history": history, "store": LearnerStore(path), "old": old}


def writes(s: dict, k: int) -> dict:
    """One write of each kind into the store s; returns seconds per kind."""
    f, out = sealed(s["n"] + k), {}
    for name, write in (
        ("add forecast", lambda: s["history"].add(f)),
        ("attach score", lambda: s["history"].add(f, scored(k))),
        ("add drill", lambda: s["store"].add("drill", f"q{k}", {"answer": k})),
    ):
        t0 = time.perf_counter()
        write()
        out[name] = time.perf_counter() - t0
    return out


def json_rewrite(s: dict, k: int) -> float:
    t0 = time.perf_counter()
    doc = read_json(s["old"])
    doc["entries"].append(entry(s["n"] + k))
    atomic_write_json(s["old"], doc)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    times = {n: {} for n in SIZES}
    with tempfile.TemporaryDirectory(prefix="labkit-bench-store-") as folder:
        stores = [filled(n, Path(folder)) for n in SIZES]
        for s in stores:
            writes(s, -1)  # first-call costs, not counted
        for k in range(args.repeats):  # interleaved, so machine noise hits every size alike
            for s in stores:
                for name, sec in writes(s, k).items():
                    times[s["n"]].setdefault(name, []).append(sec)
        for k in range(5):  # the old way is slow at 10,000: five rewrites are enough
            for s in stores:
                times[s["n"]].setdefault("json rewrite", []).append(json_rewrite(s, k))
    results = {n: {name: statistics.median(v) for name, v in t.items()} for n, t in times.items()}
    names = list(results[SIZES[0]])
    print(f"{'ms per write (median)':22s}" + "".join(f"{n:>10,d}" for n in SIZES) + "  entries")
    for name in names:
        print(f"{name:22s}" + "".join(f"{results[n][name] * 1e3:10.2f}" for n in SIZES))
    ratio = results[SIZES[-1]]["add forecast"] / results[SIZES[0]]["add forecast"]
    print(f"add forecast at {SIZES[-1]:,} / at {SIZES[0]}: {ratio:.2f}x  (bar: about 1x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "sizes": SIZES,
                    "seconds": {str(n): r for n, r in results.items()},
                    "repeats": args.repeats,
                },
                f,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
