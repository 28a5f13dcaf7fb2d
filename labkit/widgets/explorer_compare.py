"""What the learner-mode Explorer shows: the learner's lines per step, and their conviction
beside labkit's with the differences marked. Plain HTML strings, testable without a browser."""

from __future__ import annotations

import html
import re

# Words too common to say anything about a mechanism.
STOP = set(
    """the a an of to in on and or is are was be by for with from at as it its this that
not no than then into out over under per each every one two some any more less loss step steps
run runs model your you what when which while because so but""".split()
)


def terms(text: str) -> set[str]:
    """The content words of a mechanism line: lower case, 3+ letters, no stop words."""
    return {w for w in re.findall(r"[a-z0-9_]{3,}", text.lower()) if w not in STOP}


def learner_table(entries: list[dict]) -> str:
    if not entries:
        return "<i>No step has run yet: the table fills with your lines and what happened.</i>"
    head = (
        "<tr><th>step</th><th>your hypothesis</th><th>your forecast</th><th>what happened</th></tr>"
    )
    rows = "".join(
        f"<tr><td>{html.escape(e['step'])}</td><td>{html.escape(e['system'])} "
        f"{html.escape(e['mechanism'])}</td><td>{html.escape(e['forecast'])}</td>"
        f"<td>{html.escape(e['result'])}</td></tr>"
        for e in entries
    )
    return f"<table class='labkit-learner-record'>{head}{rows}</table>"


def compare_convictions(mine: dict, theirs: dict | None, labkit_line: str) -> str:
    """Both convictions side by side: the system agreed or not, and the mechanism's words
    that both name, only labkit names, and only the learner names."""
    if theirs is None or not theirs.get("system"):
        return (
            f"<p>Your conviction: <b>{html.escape(mine['system'])}</b> — "
            f"{html.escape(mine['mechanism'])}. labkit reached no conviction: {labkit_line}</p>"
        )
    same = mine["system"] == theirs["system"]
    a, b = terms(mine["mechanism"]), terms(theirs["mechanism"])
    both, only_labkit, only_mine = sorted(a & b), sorted(b - a), sorted(a - b)
    mark = (
        "<span style='color:#2a7d2a'>same system</span>"
        if same
        else f"<span style='color:#c0392b'>different system: you {html.escape(mine['system'])}, "
        f"labkit {html.escape(theirs['system'])}</span>"
    )
    words = (
        f"shared words: {html.escape(', '.join(both) or 'none')}; only labkit names: "
        f"{html.escape(', '.join(only_labkit) or 'nothing more')}; only you name: "
        f"{html.escape(', '.join(only_mine) or 'nothing more')}"
    )
    return (
        f"<table><tr><th></th><th>you</th><th>labkit's suggestion</th></tr>"
        f"<tr><td>system</td><td>{html.escape(mine['system'])}</td>"
        f"<td>{html.escape(str(theirs['system']))}</td></tr>"
        f"<tr><td>mechanism</td><td>{html.escape(mine['mechanism'])}</td>"
        f"<td>{html.escape(theirs['mechanism'])}</td></tr></table>"
        f"<p>{mark}; {words}. labkit's line is a suggestion from its own probes, not the "
        f"answer key: check the evidence in the record below.</p>"
    )
