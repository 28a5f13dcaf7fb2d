"""The rubrics of the free-text checks, one module per exercise: the concepts each reads, and
the ideas (with their reversals) built from them. `common` holds the concepts they share.
The answers they are tested on live in `tests/data/free_text/`, one file per check."""
