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
        print(
            f"wrote {len(doc['records'])} record(s) from {store.path} to {target}", file=sys.stderr
        )
    if doc["left_out"]:
        print(
            f"labkit: left out {doc['left_out']} malformed record(s) that cannot be read; "
            "`labkit store check` lists them and `labkit store remove KIND KEY` removes one.",
            file=sys.stderr,
        )
    return 0


def add_import(sub):
    p = sub.add_parser(
        "import",
        help="merge a `labkit export` file (or an old forecasts.json) into the learner store",
    )
    p.add_argument("path", metavar="PATH", help="the JSON document to read")
    p.set_defaults(func=cmd_import)


def cmd_import(args) -> int:
    from ..learn.keep import load_kinds
    from ..store.learner import default_store

    load_kinds()
    from ..store import read_json
    from ..store.exchange import records_in
    from ..store.guard import is_sqlite

    if is_sqlite(args.path):
        raise ValueError(
            f"{args.path!r} is an SQLite database (a labkit store?), not a JSON "
            "document; to bring in another store's records, run `labkit export "
            "--json other.json` with LABKIT_HOME set to its folder, then import that file."
        )
    records = records_in(read_json(args.path, what="file to import"), args.path)
    store = default_store()
    n = store.merge(records, source=repr(args.path))
    print(
        f"imported {args.path} into {store.path}: {n['added']} new record(s), {n['merged']} "
        f"updated (a score added), {n['same']} already there."
    )
    return 0


def add_store(sub):
    p = sub.add_parser("store", help="check the learner store for malformed records, or remove one")
    inner = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    inner.required = True
    inner.add_parser("check", help="list the records that readers skip as malformed")
    inner.add_parser(
        "upgrade", help="bring a store an older labkit wrote to this format (a copy is kept)"
    )
    rm = inner.add_parser("remove", help="remove one record, after a confirmation")
    rm.add_argument("kind", metavar="KIND")
    rm.add_argument("key", metavar="KEY")
    rm.add_argument("--yes", action="store_true", help="remove without asking")
    p.set_defaults(func=cmd_store)


def cmd_store(args) -> int:
    from ..store.learner import FORMAT, default_store
    from ..learn.keep import load_kinds
    from ..store.repair import find, malformed, remove

    load_kinds()
    store = default_store()
    if args.action == "upgrade":
        from ..store.upgrade import upgrade

        before, kept = upgrade(store.path)
        if kept is None:
            print(f"{store.path} already has this labkit's format ({before}); nothing was done.")
        else:
            print(
                f"Upgraded {store.path} from {before} to {FORMAT}; the store as it was is "
                f"kept at {kept}."
            )
        return 0
    if args.action == "check":
        bad = malformed(store)
        for r in bad:
            print(f"{r['kind']}  {r['key']}  {r['why']}")
        total = store._read("SELECT COUNT(*) FROM records")[0][0]
        print(
            f"{store.path}: {total} record(s), {len(bad)} of them malformed"
            + (" (remove one with `labkit store remove KIND KEY`)." if bad else ".")
        )
        return 1 if bad else 0
    find(store, args.kind, args.key)  # a key that is not there is said before any question
    if not args.yes:
        if sys.stdin is None or sys.stdin.closed or not sys.stdin.isatty():
            raise ValueError(
                "`labkit store remove` asks before removing, but there is no "
                "terminal to ask in; add --yes to remove without asking."
            )
        reply = input(f"Remove the {args.kind} record {args.key!r} from {store.path}? [y/N] ")
        if reply.strip().lower() not in ("y", "yes"):
            print("Nothing was removed.")
            return 1
    remove(store, args.kind, args.key)
    print(f"Removed the {args.kind} record {args.key!r} from {store.path}.")
    return 0
