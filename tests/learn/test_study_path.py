"""One study path: the README's table, and the line `00_start_here` ends with, come from
`labkit.learn.study_path.HOURS`."""

import re
from pathlib import Path

import nbformat

from labkit.learn.study_path import HOURS, next_step

ROOT = Path(__file__).resolve().parents[2]


def readme_rows() -> list[tuple]:
    text = (ROOT / "README.md").read_text()
    table = re.search(
        r"\| hour \| goal \| notebooks and exercises \|\n\|---\|---\|---\|\n"
        r"((?:\|.*\|\n)+)",
        text,
    ).group(1)
    return [
        tuple(cell.strip() for cell in row.strip().strip("|").split(" | "))
        for row in table.splitlines()
    ]


def test_the_readme_table_is_the_study_path():
    assert readme_rows() == [tuple(h) for h in HOURS]


def test_start_here_ends_with_the_first_hour_of_the_same_path():
    assert next_step() == (
        "Next, hour 1 of the study path (the mechanism): "
        "10_training_mechanism, 11_cross_entropy, 13_learning_rate, "
        "02_forecast_first, Exercise C, in this order."
    )
    for folder in ("notebooks", "tests/reference"):
        nb = nbformat.read(ROOT / folder / "00_start_here.ipynb", as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "code" and "next_step()" in c.source]
        assert len(cells) == 1 and "nbval-check-output" in cells[0].metadata.get("tags", [])
        assert not any("Next: `0" in c.source for c in nb.cells if c.cell_type == "markdown")
    printed = "".join(o.get("text", "") for o in cells[0].outputs)  # the executed reference
    assert printed == next_step() + "\n"
