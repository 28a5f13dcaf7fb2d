"""`make portability`: labkit's checks and verdicts under several CPU paths, one after another.

    python tools/portability.py [--paths native,portable,...] [--only setups|tests] [--out DIR]

For each path of tools/cpu_paths.py, with its variables set for the whole run:
1. tests: the notebooks and every test that asserts a trained number or a verdict (pytest
   `-m "not browser"` over the test files that train, see NUMERIC below), in parallel;
2. setups: every plain-PyTorch setup of tests/own_setups triaged on seeds 0 and 1
   (`own_setups.score_all --json`), with the threshold comparisons each triage made
   (labkit.diagnosis.own.margins).
Then one table: path x (tests run, passed, failed; setups whose system or mechanism differs
from the first path), and the margins: for each comparison of each setup, its distance to
its limit against how far its value moved between paths. A comparison that moved further
than it sits from its limit could decide the other way on a machine none of these paths
stands for. Exit 0 when every path passed and no verdict differs, else 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
from cpu_paths import PATHS  # noqa: E402
from labkit.diagnosis.own.margins import distance as margin_distance  # noqa: E402

PYTHON = (
    str(ROOT / ".venv" / "bin" / "python")
    if (ROOT / ".venv" / "bin" / "python").exists()
    else sys.executable
)
# The test files that train and assert a number or a verdict on it, and the executed
# notebooks; the rest (the store, the CLI's words, the widgets, the browser) compute nothing
# a CPU path could move.
NUMERIC = [
    "tests/reference",
    "solutions",
    "tests/diagnosis",
    "tests/setups",
    "tests/lab15",
    "tests/learn/check",
    "tests/bugs/test_bugs.py",
    "tests/core/test_train.py",
    "tests/core/watch",
    "tests/learn/test_gallery.py",
    "tests/learn/test_curves.py",
    "tests/learn/test_lessons.py",
    "tests/learn/drill/test_drill.py",
    "tests/forecast/test_forecast.py",
    "tests/forecast/test_calibration.py",
    "tests/core/test_run.py",
    "tests/core/test_metrics.py",
    "tests/core/test_lightning.py",
]


def _env(path: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ATEN_CPU", "MKL_", "ONEDNN_", "DNNL_", "OMP_NUM"))
    }
    env.update(PATHS[path][0])
    return env


def _threads(path: str) -> int:
    return int(PATHS[path][0].get("OMP_NUM_THREADS", "1"))


def run_tests(path: str, out: Path, patterns=NUMERIC) -> dict:
    """pytest over `patterns` (NUMERIC) under `path`; its counts from the junit file."""
    import glob

    files = sorted({f for pattern in patterns for f in glob.glob(str(ROOT / pattern))})
    cores = os.cpu_count() or 1
    workers = max(1, cores // _threads(path))
    junit = out / f"tests-{path}.xml"
    started = time.time()
    proc = subprocess.run(
        [
            PYTHON,
            "-m",
            "pytest",
            "-q",
            "-n",
            str(workers),
            "-m",
            "not browser",
            f"--junitxml={junit}",
            *files,
        ],
        cwd=ROOT,
        env=_env(path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    (out / f"tests-{path}.log").write_text(proc.stdout)
    counts = {
        "run": 0,
        "passed": 0,
        "failed": 0,
        "skipped": 0,
        "failures": [],
        "seconds": round(time.time() - started),
    }
    if junit.exists():
        import xml.etree.ElementTree as ET

        for case in ET.parse(junit).iter("testcase"):
            counts["run"] += 1
            kinds = {child.tag for child in case}
            if kinds & {"failure", "error"}:
                counts["failed"] += 1
                counts["failures"].append(f"{case.get('classname')}::{case.get('name')}")
            elif "skipped" in kinds:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    counts["rc"] = proc.returncode
    return counts


def run_notebooks(path: str, out: Path) -> Path:
    """Executed copies of every checked notebook under `path` (tools/notebook_margins.py)."""
    target = out / f"notebooks-{path}"
    started = time.time()
    proc = subprocess.run(
        [PYTHON, str(ROOT / "tools" / "notebook_margins.py"), "execute", str(target)],
        cwd=ROOT,
        env=_env(path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    (out / f"notebooks-{path}.log").write_text(proc.stdout)
    print(f"  notebooks executed on {path}: {time.time() - started:.0f} s", flush=True)
    return target


def run_setups(path: str, out: Path) -> list[dict]:
    rows = out / f"setups-{path}.json"
    jobs = max(1, (os.cpu_count() or 1) // _threads(path))
    started = time.time()
    proc = subprocess.run(
        [PYTHON, "-m", "own_setups.score_all", "--jobs", str(jobs), "--json", str(rows)],
        cwd=ROOT / "tests",
        env=_env(path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    (out / f"setups-{path}.log").write_text(proc.stdout)
    print(f"  setups on {path}: {time.time() - started:.0f} s", flush=True)
    return json.loads(rows.read_text()) if rows.exists() else []


def verdicts_differ(by_path: dict[str, list[dict]]) -> dict[str, dict]:
    """Setup -> {path: (system, key)} for the setups whose system or mechanism key differs."""
    seen: dict[str, dict] = defaultdict(dict)
    for path, rows in by_path.items():
        for r in rows:
            seen[f"{r['batch']}/{r['name']}"][path] = (r["system"], r.get("key"))
    return {name: got for name, got in seen.items() if len(set(got.values())) > 1}


def margins(by_path: dict[str, list[dict]]) -> list[dict]:
    """Per setup and comparison (name, seed, occurrence): distance to the limit on each path,
    and the spread of the value between paths, both relative to the limit."""
    table: dict[tuple, dict] = defaultdict(dict)
    for path, rows in by_path.items():
        for r in rows:
            count: dict = defaultdict(int)
            for e in r.get("margins") or []:
                key = (r["batch"], r["name"], e["name"], e["seed"])
                table[key + (count[key],)][path] = e
                count[key] += 1
    out = []
    for key, per_path in table.items():
        if len(per_path) < 2:
            continue  # a comparison one path made and another did not reach: its verdict differs
        entries = list(per_path.values())
        values = [e["value"] for e in entries]
        limit = entries[0]["limit"]
        if (
            limit is None
            or any(v is None or not math.isfinite(v) for v in values)
            or not math.isfinite(limit)
        ):
            continue
        distance = min(margin_distance(e) for e in entries)  # labkit's own reading, per path
        if entries[0].get("log") and limit > 0 and all(v > 0 for v in values):
            spread = math.log(max(values) / min(values))  # a factor: on a log scale
        else:
            spread = (max(values) - min(values)) / max(abs(limit), 1e-12)
        out.append(
            {
                "setup": f"{key[0]}/{key[1]}",
                "comparison": key[2],
                "seed": key[3],
                "limit": limit,
                "values": {p: e["value"] for p, e in per_path.items()},
                "outcomes": {p: e["outcome"] for p, e in per_path.items()},
                "distance": distance,
                "spread": spread,
                "ratio": distance / spread if spread > 0 else math.inf,
            }
        )
    return sorted(out, key=lambda m: m["ratio"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--only", choices=("setups", "tests"))
    ap.add_argument("--out", default=str(ROOT / ".portability"))
    ap.add_argument(
        "--tests", help="comma-separated test paths or globs instead of the numeric set"
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="keep the results a path already has in --out (a run cut short goes on)",
    )
    args = ap.parse_args(argv)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        print(
            f"portability: --paths names {', '.join(unknown)}, which tools/cpu_paths.py does not define; "
            f"paths are {', '.join(PATHS)}",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tests, setups, executed = {}, {}, []
    for path in paths:
        print(
            f"portability: path {path}: {' '.join(f'{k}={v}' for k, v in PATHS[path][0].items()) or '(nothing set)'}",
            flush=True,
        )
        kept = out / f"tests-{path}.json"
        if args.only != "setups" and args.reuse and kept.exists():
            tests[path] = json.loads(kept.read_text())
            executed.append(out / f"notebooks-{path}")
            print(f"  tests and notebooks on {path}: kept from an earlier run", flush=True)
        elif args.only != "setups":
            tests[path] = run_tests(path, out, args.tests.split(",") if args.tests else NUMERIC)
            kept.write_text(json.dumps(tests[path]))
            t = tests[path]
            print(
                f"  tests on {path}: {t['run']} run, {t['passed']} passed, {t['failed']} failed, "
                f"{t['skipped']} skipped, {t['seconds']} s",
                flush=True,
            )
            for f in t["failures"]:
                print(f"    FAILED {f}")
            executed.append(run_notebooks(path, out))
        if args.only != "tests" and args.reuse and (out / f"setups-{path}.json").exists():
            setups[path] = json.loads((out / f"setups-{path}.json").read_text())
            print(f"  setups on {path}: kept from an earlier run", flush=True)
        elif args.only != "tests":
            setups[path] = run_setups(path, out)
    differ = verdicts_differ(setups) if setups else {}
    print(
        "\n| path | tests run | passed | failed | setups triaged | verdicts that differ from the others |"
    )
    print("|---|---|---|---|---|---|")
    for path in paths:
        t = tests.get(path, {})
        n = len(setups.get(path, []))
        d = sum(1 for got in differ.values() if path in got)
        print(
            f"| {path} | {t.get('run', '-')} | {t.get('passed', '-')} | {t.get('failed', '-')} | {n or '-'} | "
            f"{d if setups else '-'} |"
        )
    for name, got in sorted(differ.items()):
        print(f"  differs: {name}: " + "; ".join(f"{p}: {s} {k}" for p, (s, k) in got.items()))
    ok = all(t.get("rc") == 0 for t in tests.values()) and not differ
    if setups and len(setups) > 1:
        ms = margins(setups)
        (out / "margins.json").write_text(json.dumps(ms, indent=1, default=str))
        risky = [m for m in ms if m["ratio"] < 1]
        moved = [m for m in ms if m["spread"] > 0]
        print(
            f"\nmargins: {len(ms)} threshold comparisons matched across {len(setups)} paths; "
            f"{len(moved)} moved between paths; {len(risky)} moved further than they sit from their limit"
        )
        for m in ms[:12]:
            print(
                f"  {m['setup']} {m['comparison']} seed {m['seed']}: distance {m['distance']:.2e}, "
                f"spread {m['spread']:.2e} (x{m['ratio']:.2g}); limit {m['limit']:.4g}, values "
                + ", ".join(f"{p} {v:.6g}" for p, v in m["values"].items())
            )
        ok = ok and not risky
    if len(executed) > 1:
        print(
            "\nnotebooks: the checked numbers' room before their two compared digits change, against "
            "their spread between paths",
            flush=True,
        )
        ok = (
            subprocess.run(
                [
                    PYTHON,
                    str(ROOT / "tools" / "notebook_margins.py"),
                    "compare",
                    *map(str, executed),
                ],
                cwd=ROOT,
            ).returncode
            == 0
            and ok
        )
    print(f"\nportability: {'passed' if ok else 'FAILED'} ({out})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
