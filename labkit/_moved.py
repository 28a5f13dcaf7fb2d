"""Import paths that moved when labkit was grouped into subpackages.

`SHORT` are short names kept for good: ``labkit.probes`` is ``labkit.diagnosis.probes``,
``labkit.check`` is ``labkit.learn.check`` and ``labkit.checklist`` is
``labkit.learn.checklist``, the very same module objects; ``labkit.check.ex_a`` to
``labkit.check.ex_f``, as the notebooks import them, are ``labkit.learn.check.ex.a`` to ``.f``.
`OLD` are the flat module paths of labkit 0.1; they still import, with a
DeprecationWarning naming the new path, until labkit 0.3.

Two old paths are not here: ``labkit.train`` and ``labkit.diagnose`` are the public
functions of those names, and importing a module under either name would replace
the function on the package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

SHORT = {
    "labkit.probes": "labkit.diagnosis.probes",
    "labkit.check": "labkit.learn.check",
    "labkit.checklist": "labkit.learn.checklist",
    # the exercises' checks by the names the notebooks import them by
    **{f"labkit.learn.check.ex_{x}": f"labkit.learn.check.ex.{x}" for x in "abcdef"},
}
OLD = {
    "labkit.config": "labkit.core.config",
    "labkit.data": "labkit.core.data",
    "labkit.models": "labkit.core.models",
    "labkit.seams": "labkit.core.seams",
    "labkit.run": "labkit.core.run",
    "labkit.record": "labkit.core.record",
    "labkit.metrics": "labkit.core.metrics",
    "labkit.guards": "labkit.core.guards",
    "labkit._hash": "labkit.core.hashing",
    "labkit.core.budget": "labkit.core.watch.budget",
    "labkit.triage": "labkit.diagnosis.record.triage",
    "labkit.explorer": "labkit.diagnosis.zoo.explorer",
    "labkit.lab15": "labkit.diagnosis.lab15",
    "labkit.forecast_score": "labkit.forecast.score",
    "labkit.forecast_history": "labkit.forecast.history",
    "labkit.gallery": "labkit.learn.gallery",
    "labkit.plots": "labkit.core.plots",
}

# Module paths of labkit 0.2 that moved when its families became packages (the watch family
# into core/watch/, grading, curves and the checklist into learn/, the bugs by triage system,
# the own-code triage by protocol step). They import, with a DeprecationWarning naming the
# new path, until labkit 0.4; the names are written without the leading "labkit.".
RENAMED = {
    f"labkit.{old}": f"labkit.{new}"
    for old, new in {
        "bugs.all_masked_labels": "bugs.h2.all_masked_labels",
        "bugs.constant_inputs": "bugs.h2.constant_inputs",
        "bugs.detach": "bugs.h1.detach",
        "bugs.double_shift": "bugs.h2.double_shift",
        "bugs.double_softmax": "bugs.h1.double_softmax",
        "bugs.fp16_overflow": "bugs.h1.fp16_overflow",
        "bugs.loss_from_item": "bugs.h1.loss_from_item",
        "bugs.lr_too_high": "bugs.h1.lr_too_high",
        "bugs.missing_optimizer_params": "bugs.h1.missing.optimizer_params",
        "bugs.missing_step": "bugs.h1.missing.step",
        "bugs.missing_zero_grad": "bugs.h1.missing.zero_grad",
        "bugs.nan_in_inputs": "bugs.h2.nan_in_inputs",
        "bugs.padding_in_loss": "bugs.h1.padding_in_loss",
        "bugs.shuffled_labels": "bugs.h2.shuffled_labels",
        "bugs.stale_log": "bugs.h3.stale_log",
        "bugs.wrong_logging_divisor": "bugs.h3.wrong_logging_divisor",
        "bugs.zero_lr": "bugs.h1.zero_lr",
        "core.watch_checks": "core.watch.checks",
        "core.watch_clip": "core.watch.clip",
        "core.watch_follow": "core.watch.follow",
        "core.watch_guard": "core.watch.guard",
        "core.watch_lightning": "core.watch.lightning",
        "core.watch_manual": "core.watch.manual",
        "core.watch_ranks": "core.watch.ranks",
        "core.watch_scaler": "core.watch.scaler",
        "core.watch_table": "core.watch.table",
        "core.watch_writer": "core.watch.writer",
        "diagnosis.own.acquit": "diagnosis.own.step5_sign.acquit",
        "diagnosis.own.bounded": "diagnosis.own.step1_capture.bounded",
        "diagnosis.own.budget": "diagnosis.own.step1_capture.budget",
        "diagnosis.own.carry": "diagnosis.own.step1_capture.carry",
        "diagnosis.own.data": "diagnosis.own.step3_h2.data",
        "diagnosis.own.entropy": "diagnosis.own.step3_h2.entropy",
        "diagnosis.own.evidence": "diagnosis.own.step6_decide.evidence",
        "diagnosis.own.explorer": "diagnosis.own.step6_decide.explorer",
        "diagnosis.own.floor": "diagnosis.own.step4_h1.floor",
        "diagnosis.own.flow": "diagnosis.own.step4_h1.flow",
        "diagnosis.own.frozen": "diagnosis.own.step4_h1.frozen",
        "diagnosis.own.inner": "diagnosis.own.step1_capture.inner",
        "diagnosis.own.intervene": "diagnosis.own.step5_sign.intervene",
        "diagnosis.own.logcount": "diagnosis.own.step2_h3.logcount",
        "diagnosis.own.logger": "diagnosis.own.step2_h3.logger",
        "diagnosis.own.loops": "diagnosis.own.step1_capture.loops",
        "diagnosis.own.losspath": "diagnosis.own.step4_h1.losspath",
        "diagnosis.own.lossrange": "diagnosis.own.step4_h1.lossrange",
        "diagnosis.own.lowlr": "diagnosis.own.step4_h1.lowlr",
        "diagnosis.own.manual": "diagnosis.own.step1_capture.manual",
        "diagnosis.own.norms": "diagnosis.own.step4_h1.norms",
        "diagnosis.own.offset": "diagnosis.own.step3_h2.offset",
        "diagnosis.own.onechange": "diagnosis.own.step5_sign.onechange",
        "diagnosis.own.padding": "diagnosis.own.step4_h1.padding",
        "diagnosis.own.prescribe": "diagnosis.own.step5_sign.prescribe",
        "diagnosis.own.rebuild": "diagnosis.own.step2_h3.rebuild",
        "diagnosis.own.refloss": "diagnosis.own.step5_sign.refloss",
        "diagnosis.own.replay": "diagnosis.own.step1_capture.replay",
        "diagnosis.own.rows": "diagnosis.own.step1_capture.rows",
        "diagnosis.own.rules": "diagnosis.own.step6_decide.rules",
        "diagnosis.own.seeds": "diagnosis.own.step6_decide.seeds",
        "diagnosis.own.settings": "diagnosis.own.step4_h1.settings",
        "diagnosis.own.setup": "diagnosis.own.step1_capture.setup",
        "diagnosis.own.shapes": "diagnosis.own.step1_capture.shapes",
        "diagnosis.own.sign": "diagnosis.own.step5_sign.sign",
        "diagnosis.own.skips": "diagnosis.own.step1_capture.skips",
        "diagnosis.own.targets": "diagnosis.own.step4_h1.targets",
        "diagnosis.own.unsettled": "diagnosis.own.step4_h1.unsettled",
        "learn.checklist_items": "learn.checklist.items",
        "learn.check.rubrics": "learn.check.ex.rubrics",
        **{f"learn.check.rubrics.ex_{x}": f"learn.check.ex.rubrics.{x}" for x in "abcdef"},
        "widgets.sketch_gate": "widgets.sketch.gate",
        "widgets.sketch_keys": "widgets.sketch.keys",
        "widgets.sketch_series": "widgets.sketch.series",
        "learn.curve_plots": "learn.curves.plots",
        "learn.curve_probes": "learn.curves.probes",
        "learn.curve_quiz": "learn.curves.quiz",
        "learn.curve_setups": "learn.curves.setups",
        "learn.drill.svg": "learn.drill.front.svg",
        "learn.drill.terminal": "learn.drill.front.terminal",
        "learn.drill.text": "learn.drill.front.text",
        "learn.drill.verbal_cases": "learn.drill.verbal.cases",
        "learn.drill.verbal_terminal": "learn.drill.verbal.terminal",
        "learn.grade_answers": "learn.grade.answers",
        "learn.grade_formats": "learn.grade.formats",
        "learn.grade_handover": "learn.grade.handover",
        "learn.grade_read": "learn.grade.read",
        "learn.grade_run": "learn.grade.run",
        "learn.grade_sites": "learn.grade.sites",
        "learn.grade_store": "learn.grade.manual",
        "learn.grade.store": "learn.grade.manual",
        "learn.grade_verdict": "learn.grade.verdict",
        "learn.hidden": "learn.grade.hidden",
    }.items()
}


def target(name: str) -> str | None:
    """The module that `name` stands for now, or None when `name` did not move."""
    for table in (SHORT, OLD, RENAMED):
        for old, new in table.items():
            if name == old or name.startswith(old + "."):
                return new + name[len(old) :]
    return None


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an import of a moved path with the module at its new path."""

    def find_spec(self, fullname, path=None, target_=None):
        if fullname.startswith("labkit.") and target(fullname):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder; exec_module swaps the real module in

    def exec_module(self, module):
        name = module.__name__
        new = target(name)
        for table, until in ((OLD, "0.3"), (RENAMED, "0.4")):
            if name in table:
                warnings.warn(
                    f"{name} moved to {new}; import it from there (the old path "
                    f"works until labkit {until}).",
                    DeprecationWarning,
                    stacklevel=_user_frame(),
                )
        # The import system returns whatever sys.modules holds under the name after this
        # call, so both names end up bound to one module object.
        sys.modules[name] = importlib.import_module(new)


def _user_frame() -> int:
    """The stacklevel of the frame that wrote the import. `warnings` itself steps over
    importlib's frames, so only this module's own frames are counted."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        if name == __file__:
            level += 1
        elif not (name.startswith("<frozen importlib") or "importlib" in name):
            break
        frame = frame.f_back
    return level


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
