"""Answer checks for the exercise notebooks. A wrong answer raises `CheckFailed` with a
sentence that teaches; a right one returns a short confirmation.

Each check is named after its exercise (``ex_a_...``, ``lab15_...``) or study notebook
(``loop_...`` for the training mechanism, ``curves_...`` for the curve gallery) and lives in
that module. An exercise's tests carry its id as a pytest marker, so ``pytest -m lab15``
checks one exercise.
"""

from ._base import CheckFailed, NotYetAnswered
from .ex.a import ex_a_mechanism, ex_a_predict, ex_a_review, ex_a_steps_to, ex_a_transfer
from .ex.b import ex_b_growth, ex_b_mechanism, ex_b_predict, ex_b_review, ex_b_transfer
from .ex.c import (
    ex_c_mechanism,
    ex_c_predict,
    ex_c_review,
    ex_c_transfer,
    ex_c_uphill_lr,
    ex_c_update_ratio,
)
from .ex.d import ex_d_first_gap, ex_d_mechanism, ex_d_predict, ex_d_review, ex_d_transfer
from .ex.e import ex_e_mechanism, ex_e_predict, ex_e_review, ex_e_transfer, ex_e_two_ahead_floor
from .ex.f import (
    ex_f_constant_loss,
    ex_f_exact_match,
    ex_f_majority_accuracy,
    ex_f_mechanism,
    ex_f_minority_precision,
    ex_f_predict,
    ex_f_review,
    ex_f_transfer,
)
from .curves import curves_quiz
from .lab15 import lab15_conviction, lab15_forecast, lab15_predictions
from .loop import loop_train_step

__all__ = [
    "CheckFailed",
    "NotYetAnswered",
    "curves_quiz",
    "ex_a_mechanism",
    "ex_a_predict",
    "ex_a_review",
    "ex_a_steps_to",
    "ex_a_transfer",
    "ex_b_growth",
    "ex_b_mechanism",
    "ex_b_predict",
    "ex_b_review",
    "ex_b_transfer",
    "ex_c_mechanism",
    "ex_c_predict",
    "ex_c_review",
    "ex_c_transfer",
    "ex_c_update_ratio",
    "ex_c_uphill_lr",
    "ex_d_first_gap",
    "ex_d_mechanism",
    "ex_d_predict",
    "ex_d_review",
    "ex_d_transfer",
    "ex_e_mechanism",
    "ex_e_predict",
    "ex_e_review",
    "ex_e_transfer",
    "ex_e_two_ahead_floor",
    "ex_f_constant_loss",
    "ex_f_exact_match",
    "ex_f_majority_accuracy",
    "ex_f_mechanism",
    "ex_f_minority_precision",
    "ex_f_predict",
    "ex_f_review",
    "ex_f_transfer",
    "lab15_conviction",
    "lab15_forecast",
    "lab15_predictions",
    "loop_train_step",
]
