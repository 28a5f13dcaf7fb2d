"""`labkit.diagnose`: the one entry of both triages, above them both.

A bug of the zoo, given by name (or None for the healthy reference), goes to the zoo's
triage (`zoo.explorer.Explorer`); a setup object, the learner's own code, goes to the
own-code triage (`own.explorer.SetupExplorer`), under a time budget. Neither triage
knows of the other: the choice is made here, once.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.process.torch_state import as_found, sentence
from .own.step1_capture.bounded import bounded
from .own.step1_capture.budget import DEFAULT_BUDGET_S, budget
from .own.step1_capture.setup import world_size_of
from .own.step6_decide.explorer import diagnose_setup
from .record.triage import TriageRecord
from .zoo.explorer import Explorer


def diagnose(
    bug=None, seeds=(0, 1), config: Config | None = None, *, budget_s: float | None = None
) -> TriageRecord:
    """Triage on two seeds: a zoo bug by name (or the healthy reference), or your own setup.

    ``diagnose("stale_log")`` triages labkit's loop with a bug of the zoo;
    ``diagnose(MySetup())`` triages your own code, given as an object with the five
    methods of `labkit.diagnosis.own.step1_capture.setup` (make_model, make_optimizer, batches, loss_fn,
    train). Returns a filled `TriageRecord` whose conviction is marked as a suggestion.
    The same steps, one button at a time, are `zoo.explorer.Explorer` and
    `own.explorer.SetupExplorer`.

    `budget_s` bounds the time every call into your setup takes together (make_model,
    make_optimizer, batches, val_batches, loss_fn, train; default
    ``own.budget.DEFAULT_BUDGET_S``, 600 s, at most ``MAX_BUDGET_S``); one still running
    when it runs out is stopped with a `BudgetExceeded` sentence naming it, even a loop that
    never ends. ``record.intervene(fix)`` gets the same budget unless given its own.

    A setup with ``world_size = 2`` (or more) is triaged on that many gloo ranks that
    labkit starts itself (docs/own/distributed.md); `budget_s` then bounds the whole launch
    (default 300 s), and a rank that dies or hangs ends in a sentence in the record.
    """
    if bug is None or isinstance(bug, str):
        return _zoo(bug, seeds, config, budget_s)
    if config is not None:
        raise ValueError(
            "config= applies to zoo bugs only; a setup object brings its own model, data and loop."
        )
    with as_found() as changes:  # torch's global settings, as the learner's code left them
        if world_size_of(bug) > 1:  # the ranks are launched: see own.step6_decide.ranks
            from .own.step6_decide.ranks import diagnose_ranks

            record = diagnose_ranks(bug, seeds, timeout_s=budget_s)
        else:
            seconds = DEFAULT_BUDGET_S if budget_s is None else budget_s
            with budget(seconds), bounded(bug):  # every call into the setup, from here on
                record = diagnose_setup(bug, seeds=seeds)
            record.budget_s = seconds  # what record.intervene(fix) gets unless given its own
    if sentence(changes):  # the record says when the learner's code changed them
        record.notes.append(sentence(changes))
    return record


def _zoo(bug: str | None, seeds, config: Config | None, budget_s) -> TriageRecord:
    if budget_s is not None:
        raise ValueError(
            f"budget_s={budget_s!r} bounds the train() of your own setup; labkit's "
            "own loop on a zoo bug needs no budget, so leave it out."
        )
    explorer = Explorer(bug, seeds=seeds, config=config)
    explorer.run_all()
    return explorer.record
