"""A grading kept in the learner store: one record of kind "grade" per notebook graded."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from .formats import summary


def keep_grading(path: Path, rows) -> str | None:
    """Add this grading to the learner store (kind "grade"); a grade is never replaced, each
    run of `labkit grade` adds one record per notebook. Returns why it could not, or None."""
    import uuid
    from ...store.learner import default_store

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
