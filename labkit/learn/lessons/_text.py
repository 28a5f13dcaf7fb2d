"""Fixed-width text tables for notebook cells: numbers rounded, -0 shown as 0, NaN as nan."""

from __future__ import annotations

import math


def number(v, digits: int = 4, decimals: int | None = None) -> str:
    """`v` with `digits` significant digits (or a fixed number of `decimals`); None as '-',
    NaN as 'nan', inf as 'inf'."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, int):
        return str(v)
    if decimals is not None:
        text = f"{v:.{decimals}f}"
        return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"
    return f"{v + 0.0:.{digits}g}"  # + 0.0 turns -0.0 into 0.0


def table(
    rows: list[dict],
    columns: list[str],
    digits: int = 4,
    width: int = 10,
    decimals: int | None = None,
) -> str:
    """One header line and one line per row, each column right-aligned in `width` characters."""
    lines = [" ".join(f"{c:>{width}}" for c in columns)]
    for row in rows:
        lines.append(" ".join(f"{number(row.get(c), digits, decimals):>{width}}" for c in columns))
    return "\n".join(lines)
