"""``labkit export`` and ``labkit import``: the learner store as one JSON document, and back.

    labkit export                   # the whole store ($LABKIT_HOME/labkit.sqlite3) to stdout
    labkit export --json all.json   # ... to a file, written atomically
    labkit import all.json          # merge a document in; records already here are skipped

`labkit import` also takes an old forecast history (``forecasts.json``, ``.bak``), one
saved forecast or one saved triage record.
"""

from __future__ import annotations

import json
import sys


def add_export(sub):
    p = sub.add_parser("export", help="write everything in the learner store as one JSON document")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write it here (default: print it to stdout)")
    p.set_defaults(func=cmd_export)


def _kinds() -> None:
    """Load the features that keep records, so the store knows their rules and formats."""
    from ..diagnosis import triage  # noqa: F401
    from ..forecast import kept  # noqa: F401
    from ..learn import flashcards  # noqa: F401 (reads an old flashcards.json)
    from ..learn.drill import log  # noqa: F401 (reads an old drill.json)


def cmd_export(args) -> int:
    from ..store.guard import check_output_path
    from ..store.learner import default_store
    if args.json:
        check_output_path(args.json, "--json")
    _kinds()
    from ..store import atomic_write_json
    store = default_store()
    doc = store.export()
    if args.json:
        atomic_write_json(args.json, doc, backup=False)
        print(f"wrote {len(doc['records'])} record(s) from {store.path} to {args.json}",
              file=sys.stderr)
    else:
        print(json.dumps(doc, indent=2, sort_keys=True))
    return 0


def add_import(sub):
    p = sub.add_parser("import", help="merge a `labkit export` file (or an old forecasts.json) "
                                      "into the learner store")
    p.add_argument("path", metavar="PATH", help="the JSON document to read")
    p.set_defaults(func=cmd_import)


def cmd_import(args) -> int:
    from ..store.learner import default_store
    _kinds()
    from ..store import read_json
    from ..store.exchange import records_in
    records = records_in(read_json(args.path, what="file to import"), args.path)
    store = default_store()
    n = store.merge(records, source=repr(args.path))
    print(f"imported {args.path} into {store.path}: {n['added']} new record(s), {n['merged']} "
          f"updated (a score added), {n['same']} already there.")
    return 0
