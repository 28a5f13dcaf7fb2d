"""`labkit drill --stats`: what the log says about a learner's drills and verbal answers."""

from __future__ import annotations

from collections import defaultdict

from .verbal import ELEMENTS

BARS = "▁▂▃▄▅▆▇█"


def _rate(rows) -> str:
    right = sum(
        r["conviction"] is not None and r["conviction"]["system"] == r["system"] for r in rows
    )
    return f"{right}/{len(rows)} ({100 * right / len(rows):.0f}%)"


def bug_key(attempt: dict) -> str:
    """The bug an attempt is counted under; a distributed mystery's with a "ddp:" prefix."""
    name = attempt["bug"] or "healthy"
    return f"ddp:{name}" if attempt.get("world", 1) == 2 else name


def spark(scores) -> str:
    return "".join(BARS[min(len(BARS) - 1, int(s / 100 * len(BARS)))] for s in scores)


def stats_lines(attempts: list[dict], path: str) -> list[str]:
    drills = [a for a in attempts if a.get("kind") == "drill"]
    verbal = [a for a in attempts if a.get("kind") == "verbal"]
    out = [f"drill log: {path}"]
    if not drills:
        out.append("no finished drills yet: `labkit drill` starts one.")
    else:
        scores = [a["score"] for a in drills]
        ends = defaultdict(int)
        for a in drills:
            ends[a["ended"]] += 1
        how = ", ".join(f"{n} {k}" for k, n in sorted(ends.items()))
        out.append(f"attempts: {len(drills)} ({how}); mean score {sum(scores) / len(scores):.1f}")
        seen = sum(bool(a.get("answer_seen")) for a in drills)
        if seen:
            out.append(f"  {seen} of them with the answer shown while open (--answer)")
        out.append("right system named, by the mystery's system:")
        by_system, by_bug = defaultdict(list), defaultdict(list)
        for a in drills:
            by_system[a["system"]].append(a)
            by_bug[bug_key(a)].append(a)
        for system in sorted(by_system):
            out.append(f"  {system:<5} {_rate(by_system[system])}")
        out.append("right system named, by bug:")
        for bug in sorted(by_bug):
            rows = by_bug[bug]
            mean = sum(r["score"] for r in rows) / len(rows)
            out.append(f"  {bug[:36]:<36} {_rate(rows):<14} mean score {mean:.0f}")
        k = min(5, len(scores) // 2)
        if k:
            first, last = sum(scores[:k]) / k, sum(scores[-k:]) / k
            out.append(
                f"trend: mean of the first {k} {first:.1f}, of the last {k} {last:.1f} "
                f"({last - first:+.1f})"
            )
        else:
            out.append("trend: needs two finished drills")
        out.append(f"scores, oldest first (last 60): {spark(scores[-60:])}")
    if verbal:
        counts = [sum(bool(v) for v in a["elements"].values()) for a in verbal]
        out.append(
            f"verbal answers: {len(verbal)}, mean {sum(counts) / len(counts):.1f} of "
            f"{len(ELEMENTS)} elements"
        )
        for element in ELEMENTS:
            have = sum(bool(a["elements"].get(element)) for a in verbal)
            out.append(f"  {element:<13} present in {have}/{len(verbal)}")
    return out


def _right(rows) -> dict:
    right = sum(
        r["conviction"] is not None and r["conviction"]["system"] == r["system"] for r in rows
    )
    return {"right": right, "attempts": len(rows)}


def stats_document(attempts: list[dict], path: str) -> dict:
    """What `stats_lines` says, as the body of a ``labkit.drill_stats/1`` document."""
    drills = [a for a in attempts if a.get("kind") == "drill"]
    verbal = [a for a in attempts if a.get("kind") == "verbal"]
    by_system, by_bug = defaultdict(list), defaultdict(list)
    for a in drills:
        by_system[a["system"]].append(a)
        by_bug[bug_key(a)].append(a)
    scores = [a["score"] for a in drills]
    return {
        "log": path,
        "drills": len(drills),
        "scores": scores,
        "mean_score": sum(scores) / len(scores) if scores else None,
        "answer_seen": sum(bool(a.get("answer_seen")) for a in drills),
        "by_system": {s: _right(rows) for s, rows in sorted(by_system.items())},
        "by_bug": {b: _right(rows) for b, rows in sorted(by_bug.items())},
        "verbal": {
            "answers": len(verbal),
            "present": {e: sum(bool(a["elements"].get(e)) for a in verbal) for e in ELEMENTS},
        },
    }
