"""Helpers for bugs that rewrite the token data the way a faulty collator would."""

from ..core.data import Dataset
from ..core.seams import make_data


def rewrite_labels(config, rewrite) -> Dataset:
    """The reference token data with `rewrite(split) -> labels` applied to both splits."""
    data = make_data(config)
    for split in (data.train, data.val):
        split["labels"] = rewrite(split)
    return data
