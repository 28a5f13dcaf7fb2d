"""A learner's answers, read strictly as data: what the hand-over (`grade_handover`) wrote
from the kernel, checked against its schema and rebuilt as the objects the checks take.

A file is JSON and nothing else (no pickle, no code); every object in it is one of the tagged
forms the hand-over writes, with exactly its fields of exactly their types. Anything else
raises `AnswerUnreadable` with a sentence that says what was wrong, and the row says the
answer could not be read; it never passes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

MAX_BYTES = 64 * 2**20  # one call's answer; Exercise E's largest (the validation split) is ~1 MB
MAX_DEPTH = 48  # the hand-over writes at most 40 levels of nesting, tags included
DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
SCALARS = (type(None), bool, int, float, str)
FIELDS = {  # tag -> its fields, besides "$"
    "float": ("value",),
    "...": (),
    "dict": ("items",),
    "tuple": ("items",),
    "set": ("items",),
    "tensor": ("dtype", "shape", "data"),
    "array": ("dtype", "shape", "data"),
    "run": ("table", "evals", "meta", "timing"),
    "probe_result": ("probe", "verdict", "details"),
    "triage_record": ("record",),
    "forecast": ("record",),
    "sketch": ("sealed", "forecasts"),
    "prediction_form": ("prediction",),
    "quiz": ("seed",),
    "function": ("name", "source"),
    "unreadable": ("type",),
}


class AnswerUnreadable(ValueError):
    """An answer that did not arrive as valid data; its row says so and does not pass."""


@dataclass(frozen=True)
class FunctionAnswer:
    """A function the learner wrote, handed over as its source alone (checked in a process of
    its own: `labkit.learn.grade.verdict`)."""

    name: str
    source: str


class Sketch:
    """A sealed multi-series sketch as data: what `SketchForecast` gives the checks."""

    def __init__(self, sealed: bool, forecasts: dict):
        self.sealed, self._forecasts = sealed, forecasts

    def forecasts(self) -> dict:
        return dict(self._forecasts)


class Form:
    """A prediction form as data: its sealed answers, or None if it was never sealed."""

    def __init__(self, prediction):
        self.prediction = prediction

    def require(self):
        if self.prediction is None:
            raise AnswerNotGiven("the prediction form was not sealed")
        return self.prediction


class AnswerNotGiven(NotImplementedError):
    """A form or sketch the learner never sealed: graded "not yet answered"."""


def read_answer(text: str) -> tuple[list, dict]:
    """The positional and keyword arguments of one check call, from the hand-over's text."""
    size = len(text)
    if size > MAX_BYTES:
        raise AnswerUnreadable(
            f"it is {size / 2**20:.0f} MB, and an answer may be at most {MAX_BYTES // 2**20} MB"
        )
    try:
        doc = json.loads(text.encode("ascii").decode("ascii"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise AnswerUnreadable(
            f"it is not JSON as the hand-over writes it ({type(exc).__name__})"
        ) from None
    if not isinstance(doc, dict) or set(doc) != {"args", "kwargs"}:
        raise AnswerUnreadable("it is not an object with exactly 'args' and 'kwargs'")
    args, kwargs = decode(doc["args"]), decode(doc["kwargs"])
    if (
        not isinstance(args, list)
        or not isinstance(kwargs, dict)
        or not all(isinstance(k, str) for k in kwargs)
    ):
        raise AnswerUnreadable("'args' must be a list and 'kwargs' a dict with text keys")
    return args, kwargs


def _no_constant(name):
    raise ValueError(f"{name} is written as a tagged float, never bare")


def decode(v, depth: int = 0):
    """One value of the hand-over's schema, rebuilt; AnswerUnreadable for anything else."""
    if depth > MAX_DEPTH:
        raise AnswerUnreadable(f"it nests deeper than {MAX_DEPTH} levels")
    if isinstance(v, SCALARS):
        return v
    if isinstance(v, list):
        return [decode(x, depth + 1) for x in v]
    if not isinstance(v, dict) or v.get("$") not in FIELDS:
        raise AnswerUnreadable(
            f"it holds an object tagged {_tag(v)}, and the tags are {', '.join(map(repr, FIELDS))}"
        )
    tag = v["$"]
    if set(v) != {"$", *FIELDS[tag]}:
        raise AnswerUnreadable(
            f"its {tag!r} object has the fields {sorted(set(v) - {'$'})}, "
            f"and one has exactly {list(FIELDS[tag])}"
        )
    return _BUILD[tag](v, lambda x: decode(x, depth + 1))


def _tag(v) -> str:
    return repr(v.get("$")) if isinstance(v, dict) else type(v).__name__


def need(ok: bool, what: str) -> None:
    if not ok:
        raise AnswerUnreadable(what)


def _float(v, _):
    need(
        v["value"] in ("nan", "inf", "-inf"),
        f"a tagged float is 'nan', 'inf' or '-inf', not {v['value']!r}",
    )
    return float(v["value"])


def _dict(v, dec):
    items = v["items"]
    need(
        isinstance(items, list) and all(isinstance(p, list) and len(p) == 2 for p in items),
        "a dict's items are a list of [key, value] pairs",
    )
    out = {}
    for k, x in items:
        key = dec(k)
        try:
            out[key] = dec(x)
        except TypeError:
            raise AnswerUnreadable(
                f"a dict key {key!r} cannot be a key (it is a {type(key).__name__})"
            ) from None
    return out


def _items(v, dec):
    need(isinstance(v["items"], list), f"a {v['$']}'s items are a list")
    items = [dec(x) for x in v["items"]]
    if v["$"] == "tuple":
        return tuple(items)
    try:
        return set(items)
    except TypeError:
        raise AnswerUnreadable("a set holds a value that cannot be in a set") from None


def _tensor(v, dec):
    shape, data = v["shape"], dec(v["data"])
    need(
        v["dtype"] in DTYPES, f"a tensor's dtype is one of {', '.join(DTYPES)}, not {v['dtype']!r}"
    )
    need(
        isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape),
        "a tensor's shape is a list of whole numbers",
    )
    need(
        isinstance(data, list)
        and len(data) == math.prod(shape)
        and all(type(x) in (bool, int, float) for x in data),
        "a tensor's data is a flat list of numbers, one per element of its shape",
    )
    if v["$"] == "array":
        import numpy

        return numpy.array(
            data, dtype="float32" if v["dtype"] == "bfloat16" else v["dtype"]
        ).reshape(shape)
    import torch

    return torch.tensor(data, dtype=getattr(torch, v["dtype"])).reshape(shape)


def _columns(d, what: str) -> dict:
    need(
        isinstance(d, dict)
        and all(
            isinstance(k, str) and isinstance(c, list) and all(isinstance(x, SCALARS) for x in c)
            for k, c in d.items()
        ),
        f"a run's {what} maps column names to lists of numbers, text or None",
    )
    return d


def _run(v, dec):
    from ...core.run import Run

    table, evals = _columns(dec(v["table"]), "table"), _columns(dec(v["evals"]), "evals")
    meta, timing = dec(v["meta"]), dec(v["timing"])
    need("step" in table and "step" in evals, "a run's table and evals each have a 'step' column")
    need(
        isinstance(meta, dict) and isinstance(meta.get("config"), dict),
        "a run's meta is a dict with a 'config' dict",
    )
    need(isinstance(timing, dict), "a run's timing is a dict")
    return Run(table=table, evals=evals, meta=meta, timing=timing)


def _probe_result(v, dec):
    from ...diagnosis.probes._common import ProbeResult

    probe, verdict, details = dec(v["probe"]), dec(v["verdict"]), dec(v["details"])
    need(
        isinstance(probe, str) and isinstance(verdict, str) and isinstance(details, dict),
        "a probe result has a probe name, a verdict (text) and a details dict",
    )
    return ProbeResult(probe, verdict, details)


def _loaded(v, dec):
    from ...diagnosis.record.triage import TriageRecord
    from ...forecast.forecast import Forecast

    cls = TriageRecord if v["$"] == "triage_record" else Forecast
    try:
        return cls.from_dict(dec(v["record"]))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise AnswerUnreadable(
            f"its {v['$']} does not load ({type(exc).__name__}: {str(exc)[:120]})"
        ) from None


def _sketch(v, dec):
    from ...forecast.forecast import Forecast

    forecasts = dec(v["forecasts"])
    need(
        isinstance(v["sealed"], bool) and isinstance(forecasts, dict),
        "a sketch is 'sealed' (True or False) with a dict of forecasts",
    )
    try:
        return Sketch(
            v["sealed"],
            {k: None if f is None else Forecast.from_dict(f) for k, f in forecasts.items()},
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise AnswerUnreadable(
            f"a sketch's forecast does not load as a sealed forecast ({type(exc).__name__})"
        ) from None


def _quiz(v, _):
    from ..curves.quiz import draw

    need(type(v["seed"]) is int and 0 <= v["seed"] < 2**63, "a quiz's seed is a whole number")
    return draw(v["seed"], train=False)


def _function(v, _):
    need(
        isinstance(v["name"], str) and isinstance(v["source"], str),
        "a function is handed over as its name and its source, both text",
    )
    return FunctionAnswer(v["name"], v["source"])


def _unreadable(v, _):
    raise AnswerUnreadable(
        f"it holds a {v['type']}, which cannot be handed over as data "
        "(numbers, text, lists, dicts, tensors and labkit's runs and records "
        "can)"
    )


_BUILD = {
    "float": _float,
    "...": lambda v, _: ...,
    "dict": _dict,
    "tuple": _items,
    "set": _items,
    "tensor": _tensor,
    "array": _tensor,
    "run": _run,
    "probe_result": _probe_result,
    "triage_record": _loaded,
    "forecast": _loaded,
    "sketch": _sketch,
    "prediction_form": lambda v, dec: Form(dec(v["prediction"])),
    "quiz": _quiz,
    "function": _function,
    "unreadable": _unreadable,
}
