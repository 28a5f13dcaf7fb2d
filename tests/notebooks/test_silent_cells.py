"""No silent cells: every cell of a study notebook, an exercise or Lab 15 that takes over 2 s
says what it is doing within its first second (a line, or a progress bar).

Read from the executed references and the solutions (the exercises are derived from them):
`tools/references.py` notes in each cell that took over a second how long it took and when
its first output came (``labkit_timing``), on the machine that ran them (`make references`,
and `python tools/references.py --solutions`).
"""

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "reference"
NAMES = sorted(
    str(p.relative_to(ROOT))
    for p in [*REFERENCE.glob("*.ipynb"), *(ROOT / "solutions").glob("*.ipynb")]
)
SLOW_S, FIRST_S = 2.0, 1.0


def _first_line(cell) -> str:
    for out in cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "") or out.get("ename", "")
        return (text.splitlines() or [out["output_type"]])[0]
    return "(nothing)"


def slow_cells(name):
    nb = nbformat.read(ROOT / name, as_version=4)
    return [
        (i, c.metadata["labkit_timing"], _first_line(c))
        for i, c in enumerate(nb.cells)
        if c.metadata.get("labkit_timing", {}).get("seconds", 0) > SLOW_S
    ]


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_was_built_with_cell_timing(name):
    nb = nbformat.read(ROOT / name, as_version=4)
    assert any("labkit_timing" in c.metadata for c in nb.cells), (
        f"{name} has no cell timing; rebuild it with `make references` (study notebooks) or "
        "`python tools/references.py --solutions`"
    )


@pytest.mark.parametrize("name", NAMES)
def test_no_cell_over_2_s_is_silent_in_its_first_second(name):
    silent = [
        (i, t)
        for i, t, _ in slow_cells(name)
        if t["first_output_s"] is None or t["first_output_s"] > FIRST_S
    ]
    assert not silent, (
        f"{name}: cells over {SLOW_S:g} s that show nothing in their first "
        f"{FIRST_S:g} s (cell index, timing): {silent}"
    )
