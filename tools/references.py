"""Executed references for the study notebooks, kept where learners don't read them.

A learner opens `notebooks/` and must not see a run's result before forecasting it, so those
notebooks ship with no outputs. nbval still needs executed copies to compare against: this
script runs each study notebook with papermill (headless parameters below, e.g. the sketch
as points), writes the executed copy to `tests/reference/`, and writes the learner copy back
to `notebooks/` with every output cleared. `tests/notebooks/test_notebooks.py` checks the two agree.

Usage: python tools/references.py [NAME ...]        (default: every notebook)
       python tools/references.py --check           (exit 1 if a learner copy has outputs or
                                                     its code differs from its reference)
       python tools/references.py --solutions       (time each solution's cells, as above,
                                                     and note the timing in solutions/ without
                                                     touching their committed outputs; the
                                                     exercises are derived from them)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LEARNER, REFERENCE = ROOT / "notebooks", ROOT / "tests" / "reference"

# What a headless run passes where a learner would draw: the instructor's sketch, as points.
HEADLESS = {
    "00_start_here.ipynb": {"forecast_points": [[0, 2.3], [50, 1.0], [199, 0.4]]},
    "02_forecast_first.ipynb": {"forecast_points": [[0, 2.3], [50, 2.3], [100, 2.3], [199, 2.3]]},
    "18_distributed.ipynb": {
        "forecast_points": {
            "rank 0": [[0, 1.4], [40, 1.0], [119, 0.6]],
            "rank 1": [[0, 1.4], [40, 1.0], [119, 0.6]],
        }
    },
}


def strip(nb) -> None:
    """Clear every output and execution count; keep sources, tags and notebook metadata."""
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)  # saved widget views: a stale panel would show before any run


def code_of(nb) -> list[str]:
    """The code the learner runs: every code cell but papermill's injected parameters."""
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]


TIMING = "labkit_timing"  # cell metadata: seconds, and when its first output came


def execute_timed(nb, cwd: str) -> None:
    """Run `nb` in place with nbclient, noting in each slow cell's metadata how long it took
    and how soon it first showed something (tests/notebooks/test_silent_cells.py reads these)."""
    from nbclient import NotebookClient

    class Timed(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            self._first.setdefault(cell_index, time.monotonic())
            return super().output(outs, msg, display_id, cell_index)

    def start(cell, cell_index):
        client._started[cell_index] = time.monotonic()

    def done(cell, cell_index, execute_reply):
        took = time.monotonic() - client._started[cell_index]
        first = client._first.get(cell_index)
        if took > 1.0:  # the fast cells stay as they were, so a rebuild changes little
            cell.metadata[TIMING] = {
                "seconds": round(took, 1),
                "first_output_s": None
                if first is None
                else round(first - client._started[cell_index], 2),
            }

    client = Timed(
        nb,
        kernel_name="python3",
        timeout=600,
        on_cell_execute=start,
        on_cell_executed=done,
        resources={"metadata": {"path": cwd}},
    )
    client._started, client._first = {}, {}
    with tempfile.TemporaryDirectory(prefix="labkit-ref-") as home:  # a fresh learner store
        client.execute(env={**os.environ, "LABKIT_HOME": home})


def build(name: str) -> float:
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    started = time.perf_counter()
    src = LEARNER / name
    REFERENCE.mkdir(parents=True, exist_ok=True)
    ref = load_notebook_node(str(src))
    if HEADLESS.get(name):  # papermill's parameters, as `papermill -p` would inject them
        ref = parameterize_notebook(ref, HEADLESS[name], kernel_name="python3")
    execute_timed(ref, str(LEARNER))
    for cell in ref.cells:  # timing metadata that would change on every build
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    ref.metadata.pop("papermill", None)
    nbformat.write(ref, REFERENCE / name)
    learner = nbformat.read(src, as_version=4)
    strip(learner)
    nbformat.write(learner, src)
    return time.perf_counter() - started


def time_solutions() -> None:
    """Execute a copy of each solution with timing; note the timing in the committed one."""
    import copy

    for i, path in enumerate(sorted((ROOT / "solutions").glob("*.ipynb")), 1):
        print(f"[{i}] {path.name} ...", end=" ", flush=True)
        started = time.perf_counter()
        nb = nbformat.read(path, as_version=4)
        timed = copy.deepcopy(nb)
        execute_timed(timed, str(path.parent))
        for cell, ran in zip(nb.cells, timed.cells):
            cell.metadata.pop(TIMING, None)
            if TIMING in ran.metadata:
                cell.metadata[TIMING] = ran.metadata[TIMING]
        nbformat.write(nb, path)
        print(f"{time.perf_counter() - started:.1f} s", flush=True)


def problems(name: str) -> list[str]:
    learner = nbformat.read(LEARNER / name, as_version=4)
    out = []
    if any(
        c.get("outputs") or c.get("execution_count") for c in learner.cells if c.cell_type == "code"
    ):
        out.append(
            f"notebooks/{name} ships outputs; a learner would see results before forecasting"
        )
    if "widgets" in learner.metadata:
        out.append(
            f"notebooks/{name} ships saved widget views; a stale panel would show before "
            "any cell runs"
        )
    ref_path = REFERENCE / name
    if not ref_path.exists():
        out.append(f"tests/reference/{name} is missing")
    elif code_of(nbformat.read(ref_path, as_version=4)) != code_of(learner):
        out.append(f"tests/reference/{name} was executed from different code")
    return out


def main(argv: list[str]) -> int:
    if "--solutions" in argv:
        time_solutions()
        return 0
    names = [a for a in argv if not a.startswith("--")] or sorted(
        p.name for p in LEARNER.glob("*.ipynb")
    )
    unknown = [n for n in names if not (LEARNER / n).exists()]
    if unknown:
        print(f"references: no notebook {', '.join(unknown)} in notebooks/", file=sys.stderr)
        return 2
    if "--check" in argv:
        found = [p for n in names for p in problems(n)]
        for p in found:
            print(p, file=sys.stderr)
        if found:
            print("run `python tools/references.py` to rebuild them", file=sys.stderr)
        return 1 if found else 0
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name} ...", end=" ", flush=True)
        print(f"{build(name):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
