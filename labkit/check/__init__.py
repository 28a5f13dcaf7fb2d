"""Answer checks for the exercise notebooks. A wrong answer raises `CheckFailed` with a
sentence that teaches; a right one returns a short confirmation.

Each check is named after its exercise (``ex_a_...``, ``lab15_...``) and lives in that
exercise's module; its tests carry the same id as a pytest marker, so ``pytest -m lab15``
checks one exercise.
"""

from ._base import CheckFailed
from .lab15 import lab15_conviction, lab15_forecast, lab15_predictions

__all__ = ["CheckFailed", "lab15_conviction", "lab15_forecast", "lab15_predictions"]
