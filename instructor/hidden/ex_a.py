"""Hidden checks for Exercise A: kept in the instructor's tree, never in the learners' repository.

`labkit grade exercises/ex_a_break_the_graph.ipynb --hidden instructor/hidden` grades with this
file: the arguments of the calls at the end (`steps_to_2`, `deeper_null_groups`, `deeper`, the
learner's own names) are evaluated in the learner's kernel after the last cell and handed over
as data; the rest of the file runs in the grader, and its checks judge that data there, out of
the learner's reach. Each call is a row; points are set beside each check; Gradescope shows
these rows after the grades are published.
"""

from labkit.learn.check._base import CheckFailed, answer_check


@answer_check
def ex_a_hidden_order(steps_to):
    """The detached run reaches loss 2.0 later than the healthy one."""
    if not steps_to["detached"] > steps_to["healthy"]:
        raise CheckFailed(
            "A run whose backbone never learns cannot reach loss 2.0 sooner than "
            "the healthy one; recount the steps in steps_to_2."
        )
    return "ok: detached later than healthy"


@answer_check(points=2)
def ex_a_hidden_deeper(groups, run):
    """Exactly the groups the deeper run leaves without a gradient at every step."""
    never = {g for g in run.groups if all(v is None for v in run.table[f"grad_norm/{g}"])}
    if set(groups) != never:
        raise CheckFailed(
            "The groups named are not the ones whose grad_norm is None at every "
            "step of the deeper run."
        )
    return "ok"


ex_a_hidden_order(steps_to_2)  # noqa: F821 (the learner's notebook defines it)
ex_a_hidden_deeper(deeper_null_groups, deeper)  # noqa: F821
