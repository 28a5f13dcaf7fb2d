"""What every answer check shares."""


class CheckFailed(AssertionError):
    """Raised with a teaching sentence when an answer is not right yet."""
