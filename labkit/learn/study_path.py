"""The study path: an orientation, four hours and an optional fifth, kept here once for everything
that names it.

The README's study-path table shows `HOURS` row by row (`tests/learn/test_study_path.py` compares
them), and `00_start_here` ends by printing `next_step()`, the first hour, from the same rows.
"""

from __future__ import annotations

HOURS = (  # (hour, goal, notebooks and exercises), as the README's table writes them
    (
        "0",
        "orientation: the loop, one healthy run, the loss at init against ln 10",
        "`00_start_here`",
    ),
    (
        "1",
        (
            "the mechanism: write the training step from memory (checked), derive `p - onehot(y)` "
            "and check it against autograd, `None` vs zero gradients, cross-entropy by numbers, "
            "learning rate and curvature"
        ),
        (
            "`10_training_mechanism`, `11_cross_entropy`, `13_learning_rate`, `02_forecast_first`, "
            "Exercise C"
        ),
    ),
    (
        "2",
        (
            "debugging mechanics: the six-step sequence, overfit one batch, the gradient/optimizer "
            "audit, `.detach()`, zero LR, missing optimizer parameters"
        ),
        (
            "`14_debugging_sequence`, `01_bug_gallery` (H1 section), Exercises A and B, "
            "`03_triage_explorer`"
        ),
    ),
    (
        "3",
        (
            "LM mechanics: the causal shift, attention mask vs loss mask, valid-token-weighted "
            "loss, perplexity, padding in the loss, all-masked batches, prompt-dominated loss, the "
            "LLM checklist"
        ),
        (
            "`12_causal_lm_objective`, `17_llm_checklist`, `01_bug_gallery` (`double_shift`, "
            "`padding_in_loss`, `all_masked_labels`), Exercise E"
        ),
    ),
    (
        "4",
        (
            "saying a diagnosis out loud: leading hypothesis, alternatives, first discriminating "
            "test, intervention, evidence of success"
        ),
        (
            "`15_curve_gallery` (the seven cases, then a quiz of fresh unlabelled curves), Exercises D "
            "and F, Lab 15, `bring_your_own_loop`"
        ),
    ),
    (
        "5 (optional)",
        (
            "past one process: two real ranks, what DDP all-reduces and when, effective batch "
            "and LR scaling, `set_epoch`, `no_sync` for accumulation, ranks that drift apart, "
            "the distributed checklist"
        ),
        "`18_distributed`, then its six cards in `16_flashcards`",
    ),
    (
        "any day",
        "recall the interview questions",
        "`16_flashcards` (Leitner boxes, a few minutes a day)",
    ),
)


def next_step(after: str = "0") -> str:
    """The hour after hour `after`, as one line: its goal and its notebooks, in order."""
    hours = [h for h, _, _ in HOURS]
    hour, goal, where = HOURS[hours.index(str(after)) + 1]
    return (
        f"Next, hour {hour} of the study path ({goal.split(':')[0]}): "
        f"{where.replace('`', '')}, in this order."
    )
