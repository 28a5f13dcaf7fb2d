"""Small SVG charts of raw points for the notebook drill (no matplotlib: quick and exact).

Every series is drawn as dots, one per step, the way the packet asks curves to be read;
a drawn forecast goes beside them as a dashed line. NaN and inf are marked on the top edge.
"""

from __future__ import annotations

import html
import math

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
W, H, L, R, T, B = 520, 220, 52, 12, 14, 34


def curves_svg(curves: dict, *, forecast=None, title: str = "", reference=None) -> str:
    """`curves`: label -> list of losses (one per step); `forecast`: [(step, loss), ...]."""
    finite = [v for vals in curves.values() for v in vals if v is not None and math.isfinite(v)]
    finite += [p[1] for p in forecast or []]
    top = max(finite + [reference or 0.0, 1e-6]) * 1.1
    n = max([len(v) for v in curves.values()] + [p[0] + 1 for p in forecast or []] + [2])
    x = lambda s: L + s / (n - 1) * (W - L - R)  # noqa: E731
    y = lambda v: T + (1 - min(v, top) / top) * (H - T - B)  # noqa: E731
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'viewBox="0 0 {W} {H}" role="img" aria-label="{html.escape(title)}">'
        ),
        (
            f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="#fafafa" '
            'stroke="#ccc"/>'
        ),
    ]
    for frac in (0, 0.5, 1):
        v = top * frac
        parts.append(
            f'<text x="{L - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.3g}</text>'
        )
    parts.append(
        f'<text x="{L}" y="{H - 18}" font-size="10">0</text>'
        f'<text x="{W - R}" y="{H - 18}" font-size="10" text-anchor="end">{n - 1}</text>'
        f'<text x="{(L + W) / 2}" y="{H - 4}" font-size="11" text-anchor="middle">'
        f"step</text>"
    )
    if reference is not None:
        parts.append(
            f'<line x1="{L}" x2="{W - R}" y1="{y(reference):.1f}" y2="{y(reference):.1f}" '
            'stroke="#888" stroke-dasharray="4 3"/>'
        )
    for i, (label, vals) in enumerate(curves.items()):
        color = COLORS[i % len(COLORS)]
        for s, v in enumerate(vals):
            if v is None or not math.isfinite(v):
                parts.append(
                    f'<text x="{x(s):.1f}" y="{T + 9}" font-size="9" fill="{color}" '
                    'text-anchor="middle">!</text>'
                )
            else:
                parts.append(f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="1.8" fill="{color}"/>')
        parts.append(
            f'<text x="{W - R - 4}" y="{T + 14 + 13 * i}" font-size="11" fill="{color}" '
            f'text-anchor="end">{html.escape(label)}</text>'
        )
    if forecast:
        pts = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in forecast)
        parts.append(
            f'<polyline points="{pts}" fill="none" stroke="#ff7f0e" stroke-width="2" '
            'stroke-dasharray="6 4"/>'
        )
        parts.append(
            f'<text x="{W - R - 4}" y="{T + 14 + 13 * len(curves)}" font-size="11" '
            'fill="#ff7f0e" text-anchor="end">your forecast</text>'
        )
    if title:
        parts.append(f'<text x="{L + 4}" y="{T + 12}" font-size="11">{html.escape(title)}</text>')
    return "".join(parts) + "</svg>"
