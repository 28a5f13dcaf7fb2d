"""The hand-over: what `labkit grade` puts into the learner's kernel, as source, before the
notebook's first cell. It is the only grading code that runs there, and it decides nothing.

The grader rewrites each answer check's call site, ``ex_a_transfer(groups, reason, deeper)``,
as ``__labkit_answer__(CELL, 'ex_a_transfer', K, ex_a_transfer)(groups, reason, deeper)``: the
arguments are written as data (JSON) and sent at once to the grader, as a display message of
the cell that runs (K: which call of that check in the cell), and then the check is called as
before, for the learner's feedback. The grader holds the first answer per call site as it
arrives, counting cells itself (`grade_run.Execution.hold`): nothing the kernel does later
reaches it. It reads that text as data (`labkit.learn.grade.answers`) and runs the check
itself, in its own process.

Everything this needs is taken when `install` runs, before any learner cell: a cell that
later patches ``json``, ``print``, ``open``, labkit's checks or their outcome list changes
nothing here. A learner who rewrites the hand-over itself can only change what their answer
is; the verdict on it is the grader's. labkit's classes are imported here before any learner
cell, and an object is read as one of them only if its class is that very class or derives
from it (a learner's class named ``labkit.core.run.Run`` is neither), through its own
attributes; what they give is data, checked by the grader like any other.
"""

MIME = "application/x-labkit-answer"  # grade_run.ANSWER_MIME
RUN_MIME = "application/x-labkit-run"  # grade_run.RUN_MIME: a labkit run begins
MAX_DEPTH = 40  # deeper nesting than any answer has is written as unreadable
TYPES = {  # qualified class name -> tag; each is read by `_labkit`
    "labkit.core.run.Run": "run",
    "labkit.diagnosis.probes._common.ProbeResult": "probe_result",
    "labkit.diagnosis.record.triage.TriageRecord": "triage_record",
    "labkit.widgets.sketch.SketchForecast": "sketch",
    "labkit.forecast.forecast.Forecast": "forecast",
    "labkit.widgets.prediction_form.PredictionForm": "prediction_form",
    "labkit.learn.curves.quiz.Quiz": "quiz",
}


def install(shell) -> None:
    """Define ``__labkit_answer__`` in the user namespace of `shell` (the kernel's IPython),
    sending each answer to the grader through its display publisher."""
    import importlib
    import json.encoder
    import math
    import types

    publish, known = shell.display_pub.publish, {}
    for qualified, tag in TYPES.items():
        module, _, name = qualified.rpartition(".")
        try:
            known[getattr(importlib.import_module(module), name)] = tag
        except (ImportError, AttributeError):  # e.g. no widgets installed: never an answer
            pass

    escape, isfinite = json.encoder.encode_basestring_ascii, math.isfinite
    _type, _repr, _isinstance, _list, _dict, _str, _int = (
        type,
        repr,
        isinstance,
        list,
        dict,
        str,
        int,
    )
    bases = (bool, int, float, str, list, tuple, dict, set, frozenset)
    exact = {_type(None), _type(...), *bases}

    def name_of(t) -> str:
        return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', '?')}"

    def plain(v, depth=0):
        if depth > MAX_DEPTH:
            return {"$": "unreadable", "type": "nesting deeper than 40 levels"}
        t, d = _type(v), depth + 1
        if t not in exact:
            return other(v, t, d)
        if v is None or t in (bool, int, str):
            return v
        if t is float:
            return v if isfinite(v) else {"$": "float", "value": _repr(v)}
        if t is list:
            return [plain(x, d) for x in v]
        if t is dict:
            return {"$": "dict", "items": [[plain(k, d), plain(x, d)] for k, x in v.items()]}
        if v is ...:
            return {"$": "..."}
        return {"$": "tuple" if t is tuple else "set", "items": [plain(x, d) for x in v]}

    def other(v, t, d):
        name = name_of(t)
        try:
            if name in ("torch.Tensor", "torch.nn.parameter.Parameter", "numpy.ndarray"):
                flat = v.detach().cpu().reshape(-1) if name != "numpy.ndarray" else v.reshape(-1)
                return {
                    "$": "tensor" if name != "numpy.ndarray" else "array",
                    "dtype": _str(v.dtype).removeprefix("torch."),
                    "shape": [_int(n) for n in v.shape],
                    "data": plain(flat.tolist(), d),
                }
            if t.__module__ == "numpy" and hasattr(v, "item"):  # numpy.float64 and the like
                return plain(v.item(), d)
            tag = next((known[k] for k in t.__mro__ if k in known), None)  # anywidget
            if tag is not None:  # subclasses each widget class once more, under its own name
                return {"$": tag, **_labkit(tag, v, lambda x: plain(x, d))}
            if name in TYPES:
                return {"$": "unreadable", "type": f"{name} that is not labkit's own class"}
            if _isinstance(v, types.FunctionType):
                import inspect

                return {"$": "function", "name": v.__name__, "source": inspect.getsource(v)}
            for base in bases:
                if _isinstance(v, base):  # a subclass (a version string, OrderedDict): as its base
                    return plain(base(v), d)
        except Exception as exc:  # noqa: BLE001 -- any failure is written down as unreadable
            return {"$": "unreadable", "type": f"{name} ({_type(exc).__name__} while reading it)"}
        return {"$": "unreadable", "type": name}

    def dump(v) -> str:  # JSON by hand: only the escaping function taken above is used
        if _isinstance(v, _dict):
            return "{" + ",".join(f"{escape(k)}:{dump(x)}" for k, x in v.items()) + "}"
        if _isinstance(v, _list):
            return "[" + ",".join([dump(x) for x in v]) + "]"
        if _isinstance(v, _str):
            return escape(v)
        return "null" if v is None else ("true" if v else "false") if _type(v) is bool else _repr(v)

    sent = set()

    def record(cell, name, k, args, kwargs) -> None:  # `cell` is the grader's to count
        if (cell, name, k) in sent:  # a check called in a loop: its first call is its answer
            return
        sent.add((cell, name, k))
        try:
            text = dump({"args": plain(_list(args)), "kwargs": plain(_dict(kwargs))})
            publish({MIME: f"{_str(name)}\n{_int(k)}\n{text}"}, metadata={})
        except Exception:  # noqa: BLE001 -- the grader gets no answer: "none was handed over"
            pass

    def answer(cell, name, k, check):
        def call(*args, **kwargs):
            record(cell, name, k, args, kwargs)
            return None if check is None else check(*args, **kwargs)

        return call

    shell.user_ns["__labkit_answer__"] = answer
    _announce_runs(importlib, publish)


def _announce_runs(importlib, publish) -> None:
    """Tell the grader as each labkit run begins (its setup, `train.setup_key`, and its run's
    config, bug and own seams): the grader stamps the time itself, as the message arrives."""
    try:
        train = importlib.import_module("labkit.core.train")
        hashed = importlib.import_module("labkit.core.hashing").hash_json
    except ImportError:
        return
    setup_key, own_seams, begin = train.setup_key, train.own_seams, train.Trainer.run

    def run(self, *args, **kwargs):
        try:
            what = [self.config.as_dict(), self.bug, own_seams(self.seams)]
            publish({RUN_MIME: f"setup:{setup_key(self)}\nrun:{hashed(what)}"}, metadata={})
        except Exception:  # noqa: BLE001 -- no word of it: the grader takes it as unheard
            pass
        return begin(self, *args, **kwargs)

    train.Trainer.run = run


def _labkit(tag: str, v, plain) -> dict:
    """The data of one labkit object, read through its attributes."""
    if tag == "run":
        return {
            "table": plain(v.table),
            "evals": plain(v.evals),
            "meta": plain(v.meta),
            "timing": plain(v.timing),
        }
    if tag == "probe_result":
        return {"probe": plain(v.probe), "verdict": plain(v.verdict), "details": plain(v.details)}
    if tag in ("triage_record", "forecast"):
        return {"record": plain(v.to_dict())}
    if tag == "sketch":
        sealed = bool(v.sealed)
        return {
            "sealed": sealed,
            "forecasts": plain(
                {k: None if f is None else f.to_dict() for k, f in v.forecasts().items()}
                if sealed
                else {}
            ),
        }
    if tag == "prediction_form":
        return {"prediction": plain(v.prediction)}
    return {"seed": plain(v.seed)}  # quiz
