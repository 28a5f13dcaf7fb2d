"""Small helpers shared by the exercise-check tests."""

import re


def one_sentence(message: str) -> bool:
    """A teaching message is one sentence: it ends with a period and has no second sentence."""
    return message.endswith(".") and not re.search(r"[.:;]\s+[A-Z]", message)
