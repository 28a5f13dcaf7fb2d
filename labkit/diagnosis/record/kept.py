"""Triage records in the learner store: a snapshot's key, keeping one, reading them back,
and reading a saved record file for ``labkit import``."""

from __future__ import annotations

import hashlib
import json

from ...store import decode_nonfinite, encode_nonfinite


def triage_key(body: dict) -> str:
    """A snapshot's key: equal contents give equal keys, so keeping twice is one record."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def keep(record, store=None) -> str:
    """Add a snapshot of `record` (NaN written as "NaN") to the store; returns its key."""
    from ...store.learner import default_store

    body = encode_nonfinite(record.to_dict())
    key = triage_key(body)
    (store or default_store()).add("triage", key, body)
    return key


def kept(cls, store=None) -> list:
    """Every kept record, as `cls` (TriageRecord) objects, oldest first."""
    from ...store.learner import default_store

    return [
        cls.from_dict(decode_nonfinite(r["body"]))
        for r in (store or default_store()).records("triage")
    ]


def reader(cls):
    """The ``labkit import`` reader of a record file saved by `cls.save`: one checked record."""

    def read(doc, source) -> list[dict]:
        cls.from_dict(decode_nonfinite(doc), source)
        return [{"kind": "triage", "key": triage_key(doc), "body": doc}]

    return read
