"""``labkit export`` and ``labkit import``: the learner store as one JSON document, and back.

    labkit export --json -          # the whole store ($LABKIT_HOME/labkit.sqlite3) to stdout
    labkit export --json all.json   # ... to a file, written atomically
    labkit import all.json          # merge a document in; records already here are skipped

`labkit import` also takes an old forecast history (``forecasts.json``, ``.bak``), one
saved forecast or one saved triage record.
"""

from __future__ import annotations

import sys

from .output import add_json, deprecated, write_json


def add_export(sub):
    p = sub.add_parser("export", help="write everything in the learner store as one JSON document")
    add_json(p, "the store (labkit.store/1)")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from ..learn.keep import load_kinds
    from ..store.learner import default_store
    load_kinds()
    store = default_store()
    doc = store.export()
    target = args.json
    if target is None:  # labkit 0.1 printed the store with no --json
        deprecated("`labkit export` with no --json printing the store", "`labkit export --json -`")
        target = "-"
    write_json(doc, target)
    if target != "-":
        print(f"wrote {len(doc['records'])} record(s) from {store.path} to {target}",
              file=sys.stderr)
    return 0


def add_import(sub):
    p = sub.add_parser("import", help="merge a `labkit export` file (or an old forecasts.json) "
                                      "into the learner store")
    p.add_argument("path", metavar="PATH", help="the JSON document to read")
    p.set_defaults(func=cmd_import)


def cmd_import(args) -> int:
    from ..learn.keep import load_kinds
    from ..store.learner import default_store
    load_kinds()
    from ..store import read_json
    from ..store.exchange import records_in
    records = records_in(read_json(args.path, what="file to import"), args.path)
    store = default_store()
    n = store.merge(records, source=repr(args.path))
    print(f"imported {args.path} into {store.path}: {n['added']} new record(s), {n['merged']} "
          f"updated (a score added), {n['same']} already there.")
    return 0
