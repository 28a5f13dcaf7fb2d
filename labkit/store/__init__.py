"""Where what a learner writes is kept.

`files`: atomic JSON files (a write never leaves half a file; the last good copy stays as
`.bak`), and strict-JSON encoding of NaN and infinity. `learner`: the `LearnerStore`, one
SQLite file under $LABKIT_HOME for every record a learner makes, safe with several writers.
`guard`: never the store, its journal or any SQLite file; `outputs`: the one rule every
output path follows (a device or FIFO written through, a link followed, a foreign file or
the command's own input refused). `schema`: what a record of each kind may hold, checked on import, write and read;
`repair`: listing and removing malformed records.
The JSON helpers are re-exported here; the store is imported from `labkit.store.learner`
when it is used, so reading a Run never loads sqlite3.
"""

from .files import decode_nonfinite, encode_nonfinite, read_json, read_text, sweep_tmp
from .outputs import atomic_write_json, atomic_write_text

__all__ = [
    "atomic_write_json",
    "atomic_write_text",
    "decode_nonfinite",
    "encode_nonfinite",
    "read_json",
    "read_text",
    "sweep_tmp",
]
