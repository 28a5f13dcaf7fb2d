"""Plain-text pieces of the drill's terminal output; every line fits in 100 columns."""

from __future__ import annotations

import math
import textwrap

WIDTH = 100


def wrap(text: str, indent: str = "", width: int = WIDTH) -> list[str]:
    """One paragraph as lines of at most `width` columns (continuation lines indented)."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=True,
    ) or [indent]


def num(v, digits: int = 4) -> str:
    if v is None:
        return "None"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def point_rows(values, *, start: int = 0, per_row: int = 10, every: int = 1) -> list[str]:
    """Raw values as rows "steps a-b: v v v ...", `per_row` values a row (8 columns each)."""
    out = []
    steps = list(range(start, start + len(values) * every, every))
    for i in range(0, len(values), per_row):
        chunk = values[i : i + per_row]
        span = f"{steps[i]:>3}-{steps[i + len(chunk) - 1]:<3}"
        out.append(f"  steps {span} " + " ".join(f"{num(v):>7}" for v in chunk))
    return out


def ascii_plot(values, *, height: int = 7, label: str = "loss") -> list[str]:
    """The raw points marked '*', one column per step (NaN and inf: '!' on the top row)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return [f"  {label}: every value is NaN or inf"]
    lo, hi = min(finite), max(finite)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5 * max(abs(lo), 1e-3), hi + 0.5 * max(abs(hi), 1e-3)
    grid = [[" "] * len(values) for _ in range(height)]
    for x, v in enumerate(values):
        if v is None or not math.isfinite(v):
            grid[0][x] = "!"
            continue
        y = round((hi - v) / (hi - lo) * (height - 1))
        grid[y][x] = "*"
    digits = next((d for d in range(3, 7) if num(float(hi), d) != num(float(lo), d)), 7)
    lines = []  # the two ends labelled with as many digits as it takes to tell them apart
    for i, row in enumerate(grid):
        tick = hi - i * (hi - lo) / (height - 1)
        axis = f"{num(float(tick), digits):>8} |" if i in (0, height - 1) else " " * 8 + " |"
        lines.append((axis + "".join(row)).rstrip())
    lines.append(" " * 9 + "+" + "-" * len(values) + f"> step (0-{len(values) - 1})")
    return lines


def fits(lines, width: int = WIDTH) -> bool:
    return all(len(line) <= width for line in lines)
