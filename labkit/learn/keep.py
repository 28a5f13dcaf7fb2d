"""Keep a learner's work: the whole learner store as one `labkit export` document, and, on
Binder, a notice that the store lives only as long as the session, with a download of it.

    from labkit.learn.keep import keep_your_work
    keep_your_work()        # on Binder: writes labkit-export.json and shows a download link;
                            # anywhere else: shows nothing and returns None

Binder's session disk, ``~/.labkit`` included, is gone when the session ends; a file
downloaded to the learner's own machine is not. `labkit import labkit-export.json` on
any later machine brings every record back.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

# mybinder.org sets these in every session it launches
BINDER_VARS = ("BINDER_LAUNCH_HOST", "BINDER_REPO_URL", "BINDER_REQUEST")
EXPORT_NAME = "labkit-export.json"


def load_kinds() -> None:
    """Load the features that keep records, so the store knows their rules and formats."""
    from ..diagnosis.record import triage  # noqa: F401
    from ..forecast import kept  # noqa: F401
    from . import flashcards  # noqa: F401 (reads an old flashcards.json)
    from .drill import log  # noqa: F401 (reads an old drill.json)


def on_binder(environ=None) -> bool:
    """True in a session that mybinder.org launched."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in BINDER_VARS)


def keep_your_work(path=EXPORT_NAME, *, environ=None) -> Path | None:
    """On Binder: export the store to `path` and show where the learner downloads it; run it
    again before closing the tab. Elsewhere: nothing (the store stays in $LABKIT_HOME)."""
    if not on_binder(environ):
        return None
    from ..store.outputs import write_json
    from ..store.learner import default_store

    load_kinds()
    store = default_store()
    doc = store.export()
    target = write_json(path, doc, parameter="path").resolve()
    n = len(doc["records"])
    text = (
        f"On Binder your learner store ({store.path}) lives only as long as this session. "
        f"{n} record(s) exported to {path}: download it (right-click it in the file browser, "
        f"Download) and bring it back anywhere with `labkit import {path}`."
    )
    _show(text, path, n)
    return target


def _show(text: str, path, n: int) -> None:
    try:
        from IPython.display import display
    except ImportError:  # a plain Python session
        print(text)
        return
    link = html.escape(str(path))
    page = (
        f"<div><b>Binder keeps your work only for this session.</b> {n} record(s) exported: "
        f'<a href="{link}" download="{html.escape(Path(path).name)}">download '
        f"{link}</a>, and run <code>labkit import {link}</code> wherever you continue. Run "
        "this cell again before you close the tab.</div>"
    )
    display({"text/plain": text, "text/html": page}, raw=True)
