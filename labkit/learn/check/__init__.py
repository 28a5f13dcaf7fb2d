"""Answer checks for the exercise notebooks. A wrong answer raises `CheckFailed` with a
sentence that teaches; a right one returns a short confirmation.

Each check is named after its exercise (``ex_a_...``, ``lab15_...``) or study notebook
(``loop_...`` for the training mechanism, ``curves_...`` for the curve gallery) and lives in
that module. An exercise's tests carry its id as a pytest marker, so ``pytest -m lab15``
checks one exercise.
"""

from ._base import CheckFailed, NotYetAnswered
from .ex_a import ex_a_curve, ex_a_head_learns, ex_a_null_groups
from .ex_b import ex_b_frozen_groups, ex_b_grad_state, ex_b_worse_variant, ex_b_zero_grad_clears
from .ex_c import ex_c_forecast, ex_c_lr_roles, ex_c_update_ratio
from .ex_d import ex_d_cause, ex_d_eval_vs_no_grad, ex_d_ordering
from .ex_e import (ex_e_double_shift_floor, ex_e_inflated_count, ex_e_nan_variant,
                   ex_e_perplexity, ex_e_two_ahead)
from .ex_f import (ex_f_exact_match, ex_f_exposing_metric, ex_f_majority_accuracy,
                   ex_f_minority_recall)
from .curves import curves_quiz
from .lab15 import lab15_conviction, lab15_forecast, lab15_predictions
from .loop import loop_train_step

__all__ = [
    "CheckFailed", "NotYetAnswered", "curves_quiz", "ex_a_curve", "ex_a_head_learns", "ex_a_null_groups",
    "ex_b_frozen_groups", "ex_b_grad_state", "ex_b_worse_variant", "ex_b_zero_grad_clears",
    "ex_c_forecast", "ex_c_lr_roles", "ex_c_update_ratio", "ex_d_cause", "ex_d_eval_vs_no_grad",
    "ex_d_ordering", "ex_e_double_shift_floor", "ex_e_inflated_count", "ex_e_nan_variant",
    "ex_e_perplexity", "ex_e_two_ahead", "ex_f_exact_match", "ex_f_exposing_metric",
    "ex_f_majority_accuracy", "ex_f_minority_recall", "lab15_conviction", "lab15_forecast",
    "lab15_predictions", "loop_train_step",
]
