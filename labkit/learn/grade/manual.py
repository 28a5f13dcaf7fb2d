"""What the learner store keeps of a grading: each grading (`keep_grading`), and the prose
for a person to grade (``labkit grade --manual PATH``), as nbgrader and otter leave it.

What a check judges exactly (a claim, a choice, a number) is graded by the program; the
learner's prose beside it (a mechanism's explanation, a transfer's reason, a prediction's
`why`, Lab 15's mechanism line) is kept for a person. `prose_of` reads it from the answer the
kernel handed over. Grading with ``--manual PATH``:

- where PATH does not exist, writes it: one CSV line per piece of prose (learner, notebook,
  check, part, prose, the check's own status, max_score 1, an empty score, a comment);
- where PATH exists, reads the person's scores from it (never writes it): each score is kept
  in the learner store (kind "manual_grade", one record per answer, never overwritten: a
  different score for the same prose is refused), and --csv, --gradebook and --json get the
  manual points as columns of their own, apart from the automatic points. A score given to
  prose the learner has since changed is not applied, and the summary line says so.
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import io
import math
import time
from dataclasses import asdict
from pathlib import Path

COLUMNS = ("learner", "notebook", "check", "part", "prose", "auto_status", "max_score")
EDITABLE = ("score", "comment")  # the person's columns
PROSE_PARAMS = ("explanation", "reason")  # a check's arguments that hold prose


def prose_of(check, text: str | None) -> dict:
    """{part: prose} of one handed-over answer of `check`; {} where it holds none."""
    from .answers import AnswerUnreadable, read_answer

    if not text or getattr(check, "__name__", "").endswith("_review"):
        return {}  # a review re-reads the sealed prediction: its `why` is the predict's
    try:
        args, kwargs = read_answer(text)
        bound = inspect.signature(check).bind_partial(*args, **kwargs).arguments
    except (AnswerUnreadable, TypeError, ValueError):
        return {}
    try:
        return _prose(bound)
    except (AttributeError, KeyError, TypeError):  # an answer of another shape: no prose
        return {}


def _prose(bound: dict) -> dict:
    from ...diagnosis.record.strict import RUN_ROWS as BELIEF_ROWS  # the rows with a belief
    from ...diagnosis.record.triage import TriageRecord

    out = {}
    for name, value in bound.items():
        if name in PROSE_PARAMS and isinstance(value, str) and value.strip():
            out[name] = value
        elif isinstance(value, dict) and isinstance(value.get("why"), str):
            out["why"] = value["why"]
        elif isinstance(value, TriageRecord):  # each run's UPDATED BELIEF, the mechanism line:
            rows = value.rows  # kept as written for a person; no verdict reads them
            data = {r: rows.get(r, {}).get("data") or {} for r in (*BELIEF_ROWS, "conviction")}
            said = {f"belief: {r}": data[r].get("belief") for r in BELIEF_ROWS}
            said["mechanism line"] = data["conviction"].get("mechanism")
            out.update({k: v for k, v in said.items() if isinstance(v, str) and v.strip()})
    return out


def _digest(prose: str) -> str:
    return hashlib.sha256(prose.encode()).hexdigest()[:16]


def export_text(rows) -> str:
    """The file a person fills in: one line per piece of prose, the score column empty."""
    from .formats import learner_id, relative

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow((*COLUMNS, *EDITABLE))
    for r in rows:
        for part, prose in r.prose.items():
            writer.writerow(
                (learner_id(r.notebook), relative(r.notebook), r.check, part, prose, r.status, 1)
                + ("", "")
            )
    return buf.getvalue()


def read_scores(path) -> list[dict]:
    """The scored lines of a filled-in file; ValueError with a sentence for anything else."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--manual={str(path)!r} cannot be read: {exc}.") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in (*COLUMNS, "score") if c not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(
            f"--manual={str(path)!r} has no column {missing[0]!r}: give the file that "
            "`labkit grade --manual` wrote, with the scores filled in the score column."
        )
    out = []
    for n, line in enumerate(reader, start=2):
        given = (line.get("score") or "").strip()
        if not given:
            continue
        where = f"--manual={str(path)!r} line {n} ({line['learner']}, {line['check']})"
        try:
            score, top = float(given), float(line["max_score"])
        except ValueError:
            raise ValueError(
                f"{where}: score {given!r} and max_score {line['max_score']!r} must be "
                "numbers, e.g. 0.5 of 1."
            ) from None
        if not (math.isfinite(score) and math.isfinite(top) and 0 <= score <= top):
            raise ValueError(
                f"{where}: score {given!r} must lie between 0 and its max_score {top:g}."
            )
        out.append({**line, "score": score, "max_score": top})
    return out


def keep_scores(scores) -> int:
    """Each score as a "manual_grade" record, all or none: where the store already holds
    another score for the same prose, ValueError before anything is written. Returns how
    many were new."""
    from ...store.learner import default_store

    store = default_store()
    records = []
    for s in scores:
        digest = _digest(s["prose"])
        key = f"{s['learner']}/{s['notebook']}/{s['check']}/{s['part']}/{digest}"
        body = {k: s[k] for k in ("learner", "notebook", "check", "part", "score", "max_score")}
        body |= {"prose_sha256": digest, "comment": s.get("comment") or ""}
        kept = store.get("manual_grade", key)
        if kept is not None and kept["body"]["score"] != body["score"]:
            raise ValueError(
                f"The learner store already holds a score of {kept['body']['score']:g} for "
                f"{s['learner']}'s {s['check']} ({s['part']}), and the file gives "
                f"{s['score']:g}: a kept grade is never replaced, so nothing was kept or "
                "graded; give the first score in the file, or grade from a fresh $LABKIT_HOME."
            )
        records.append((key, body, kept is None))
    for key, body, new in records:
        if new:
            store.add("manual_grade", key, body)
    return sum(new for *_, new in records)


def apply_scores(rows, scores) -> str:
    """Put the person's points on the rows (`row.manual`) where the prose is unchanged; one
    line saying what was applied, left ungraded, and not applied."""
    from .formats import learner_id, relative

    given = {
        (s["learner"], s["notebook"], s["check"], s["part"], _digest(s["prose"])): s for s in scores
    }
    applied = stale = ungraded = 0
    for r in rows:
        if not r.prose:
            continue
        who, nb = learner_id(r.notebook), relative(r.notebook)
        points = top = 0.0
        complete = True
        for part, prose in r.prose.items():
            s = given.get((who, nb, r.check, part, _digest(prose)))
            if s is None:
                complete = False
                stale += any(k[:4] == (who, nb, r.check, part) for k in given)
                ungraded += not any(k[:4] == (who, nb, r.check, part) for k in given)
                top += 1
                continue
            applied += 1
            points += s["score"]
            top += s["max_score"]
        r.manual = {"points": points if complete else None, "max_points": top}
    line = f"manual scores: {applied} applied, {ungraded} prose answer(s) not yet scored"
    if stale:
        line += f", {stale} not applied (the prose changed since it was scored)"
    return line


def keep_grading(path: Path, rows) -> str | None:
    """Add this grading to the learner store (kind "grade"): a grade is never replaced, each
    run of `labkit grade` adds one record per notebook. Returns why it could not, or None."""
    import uuid
    from ...store.learner import default_store
    from .formats import summary

    body = {
        "notebook": str(path.resolve()),
        "graded_at": time.time(),
        "rows": [asdict(r) for r in rows],
        "summary": summary(rows),
    }
    try:
        default_store().add("grade", f"{path.stem}/{uuid.uuid4().hex}", body)
    except (ValueError, OSError) as exc:  # a read-only or full $LABKIT_HOME, a damaged store
        return str(exc).rstrip(".")
    return None
