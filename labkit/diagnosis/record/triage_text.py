"""The Training Run Explorer's paper form, as text and as an HTML table."""

from __future__ import annotations

import html

from .prediction import TriageRefused

UNKNOWN = "UNKNOWN"
LABELS = {
    "hashes": "Hashes (seed/data/model-init)",
    "baseline": "Baseline",
    "raw_vs_reported": "H3 raw-vs-reported",
    "overfit": "Overfit 64-sample",
    "label_shuffle": "Label-shuffle control",
    "intervention": "Intervention (one)",
    "confirmation": "Confirm (second seed)",
    "conviction": "Conviction",
}


def to_text(record) -> str:
    lines = [f"TRAINING RUN EXPLORER — {record.subject}"]
    for name, label in LABELS.items():
        row = record.rows[name]
        shown = row["text"] if row["status"] != UNKNOWN or row["text"] else UNKNOWN
        if row["status"] == UNKNOWN and row["text"]:
            shown = f"{UNKNOWN} ({row['text']})"
        lines.append(f"{label + ':':32s} {shown}")
        if record.strict and row["data"].get("belief"):
            lines.append(f"{'':32s} UPDATED BELIEF: {row['data']['belief']}")
    if record.strict:
        lines.append(f"{'Conviction attempts:':32s} {record.attempts}")
    if record.rows["conviction"]["data"].get("by") == "diagnose":
        lines.append("(suggested by labkit.diagnose: a human must check the evidence and sign off)")
    for note in record.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def to_html(record) -> str:
    cells = []
    for name in LABELS:
        row = record.rows[name]
        unknown = row["status"] == UNKNOWN
        style = ' style="background:#fde2e2;font-weight:bold"' if unknown else ""
        text = html.escape(row["text"] or "")
        if unknown:
            text = f"{UNKNOWN} ({text})" if text else UNKNOWN
        belief = row["data"].get("belief") if record.strict else None
        if belief:
            text += f"<br><i>UPDATED BELIEF: {html.escape(belief)}</i>"
        cells.append(f"<tr><th style='text-align:left'>{name}</th><td{style}>{text}</td></tr>")
    try:
        footer = html.escape(record.verdict())
    except TriageRefused as exc:
        footer = f"<span style='color:#a00'>{html.escape(str(exc))}</span>"
    return (
        f"<table><caption>Training Run Explorer — {html.escape(record.subject)}</caption>"
        + "".join(cells)
        + f"</table><p>{footer}</p>"
    )
