"""labkit: a study lab for model-training fundamentals and loss-curve diagnosis.

    import labkit
    run = labkit.train(seed=0)          # the healthy reference run
    run.table["loss_raw"][:3]           # per-step raw loss
    watch = labkit.watch(model, opt)    # the same per-step norms on your own loop

The package is grouped by job (docs/developer/architecture.md): `core` (the run),
`bugs` (the zoo), `diagnosis` (probes, the triage record, automatic triage),
`forecast` (sealed predictions and their scores), `learn` (answer checks, grading,
gallery, plots), `widgets`, and the plumbing (`cli`, `store`, `errors`).

`import labkit` loads none of them: each public name below is imported on first use,
so the import costs nearly nothing and never pulls in matplotlib or the widgets.
"""

from __future__ import annotations

import importlib

from . import _moved

__version__ = "0.2.0"

_moved.install()

# public name -> the module that defines it
_PUBLIC = {
    "Config": "core.config",
    "Dataset": "core.data",
    "make_blobs": "core.data",
    "make_imbalanced": "core.data",
    "make_tokens": "core.data",
    "MLP": "core.models",
    "LMOutput": "core.models",
    "TinyCausalLM": "core.models",
    "Run": "core.run",
    "Seams": "core.seams",
    "evaluate": "core.seams",
    "config_hash": "core.train",
    "Watch": "core.watch",
    "watch": "core.watch",
    "Trainer": "bugs.inject",
    "train": "bugs.inject",
    "diagnose": "diagnosis.diagnose",
    "Prediction": "diagnosis.record.triage",
    "TriageRecord": "diagnosis.record.triage",
    "TriageRefused": "diagnosis.record.triage",
    "Forecast": "forecast",
    "ForecastHistory": "forecast",
    "ForecastScore": "forecast",
}
_SUBPACKAGES = (
    "core",
    "bugs",
    "diagnosis",
    "forecast",
    "learn",
    "widgets",
    "probes",
    "check",
    "checklist",
    "cli",
    "store",
    "errors",
)

__all__ = sorted(_PUBLIC)  # noqa: PLE0605 (a list built from the one table of names)


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
        globals()[name] = value  # the next lookup is a plain attribute
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    from .errors import suggest

    raise AttributeError(
        f"labkit has no attribute {name!r}.{suggest(name, list(_PUBLIC) + list(_SUBPACKAGES))}"
    )


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC) | set(_SUBPACKAGES))
