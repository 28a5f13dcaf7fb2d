"""Truth the grader makes itself: every run an answer hands over is trained again here.

A check that works its right answer out of a run (``ex_d_first_gap(value, control)``) would
take a run the learner made up as readily as a real one: wrap ``labkit.train`` to blank a
column, and a wrong answer reads as right. So before any check sees a run, the grader trains
that run again in its own process, from labkit alone: the config and the zoo bug its
``meta`` names, and, for a seam that was not labkit's own, the exercise's copy of it
(`labkit.learn.check.ex.seams`), never the notebook's. The run handed over must be the run it
gets (every column of the table and the evals, the data and init hashes); the check then
judges the grader's run, started when the grader heard it begin (the hand-over says so as each
labkit run begins, and the grader stamps its own clock; `Heard`), or, unheard, when the answer
holding it arrived: never the time the kernel wrote (what a review compares the seal with). A run it cannot train again, or that differs, fails its row with a
sentence that says which, and what to pass instead. Runs trained once are kept for the rest
of the grading: a class hands over the same few runs.

The same holds for the data a check works its answer out from beside a run (``g_sq`` and
``g_h_g``, a sweep's arms, a split, labels, a confusion matrix): `given` makes each again as the
exercise's cell makes it (`labkit.learn.check.ex.made`), from the notebook's seed, and the
check judges the grader's own, or the row says which part differs.
"""

from __future__ import annotations

import json
import math
import threading
import time

RTOL, ATOL = 1e-5, 1e-7  # the same setup on the same machine agrees to the last bit; this
# only absorbs a summation order that differs between the kernel's threads and the grader's
HASHES = ("data_hash", "init_hash")
LIMITS = {
    "hidden": 1024,
    "n_classes": 1000,
    "vocab_size": 10_000,
    "batch_size": 4096,
    "steps": 10_000,
}
# far above any exercise's runs (64, 10, 50, 64, 320) and small enough that the grader trains
# one in seconds: a run made up with a huge config must not keep the grader busy for hours
_MADE: dict = {}  # the key of a setup -> the Run the grader trained for it
_TRAINING = threading.Lock()  # one at a time: a run seeds torch's one global generator


class NotReproduced(ValueError):
    """A run the grader could not train again, or that differs from what it trained."""


class Heard:
    """What the grader heard from one kernel, each stamped with its own clock as it arrived:
    when each labkit run began (`grade_handover` says it, keyed by `train.setup_key` and by the
    run's config, bug and own seams), and each answer. Times a kernel writes count for nothing."""

    def __init__(self):
        self.begun: dict = {}  # "setup:..." or "run:..." -> when the grader first heard it
        self.answers: list = []  # (when, check, the answer's text), as they arrived

    def run_begins(self, payload) -> None:
        for key in str(payload).split("\n")[:2]:
            self.begun.setdefault(key, time.time())

    def answered(self, name: str, text: str) -> float:
        self.answers.append((time.time(), name, text))
        return self.answers[-1][0]

    def began(self, run, received: float | None) -> float | None:
        """When the grader heard `run` begin; else when it received the answer holding it."""
        from ...core.hashing import hash_json

        meta = run.meta
        key = "run:" + hash_json([meta.get("config"), meta.get("bug"), meta.get("seams") or {}])
        heard = self.begun.get(key)
        return heard if heard is not None and (received is None or heard <= received) else received


def recreated(args: list, kwargs: dict, heard=None, received=None) -> tuple[list, dict]:
    """`args` and `kwargs` with every Run in them (at any depth of lists, tuples and dicts)
    replaced by the grader's own, started when the grader heard it begin (`Heard.began`; the
    kernel's own time where grading hears nothing); NotReproduced names the first that is not
    reproduced."""
    from ...core.run import Run

    def swap(v, where):
        if isinstance(v, Run):
            own = _checked(v, where)
            if heard is not None:
                own.timing["started_at"] = heard.began(v, received)
            return own
        if isinstance(v, (list, tuple)):
            return type(v)(swap(x, f"{where}[{i}]") for i, x in enumerate(v))
        if isinstance(v, dict):
            return {k: swap(x, f"{where}[{k!r}]") for k, x in v.items()}
        return v

    return (
        [swap(a, f"argument {i + 1}") for i, a in enumerate(args)],
        {k: swap(v, f"{k}=") for k, v in kwargs.items()},
    )


def _checked(run, where: str):
    from ...core.run import Run

    own = _made(run, where)
    differs = _difference(run, own)
    if differs:
        raise NotReproduced(
            f"the run given as {where} is not the run its config trains: {differs}; pass the "
            "run labkit.train returned, unchanged"
        )
    import copy

    return Run(  # a copy: a check that changes its run changes nothing for the next learner
        table={k: list(v) for k, v in own.table.items()},
        evals={k: list(v) for k, v in own.evals.items()},
        meta=copy.deepcopy({**own.meta, "seams": meta_seams(run)}),  # the names it trained
        timing=dict(run.timing),
    )


def meta_seams(run) -> dict:
    """The seams `run` names (the exercise's, by name: what the grader trained it with), which
    the grader's own run does not record (its seams are labkit's, `check.ex.seams`)."""
    return dict(run.meta.get("seams") or {})


def _made(run, where: str):
    """The grader's own run of `run`'s setup: trained once, then kept."""
    meta = run.meta
    config, bug, seams = meta.get("config"), meta.get("bug"), meta.get("seams") or {}
    steps = len(run.table.get("step", []))  # a run stopped early (Trainer.run(steps=k)): as far
    key = json.dumps([config, bug, seams, steps], sort_keys=True, default=repr)
    with _TRAINING:
        if key not in _MADE:
            _MADE[key] = _train(config, bug, seams, steps, where)
        return _MADE[key]


def _train(config, bug, seams, steps: int, where: str):
    from ...bugs.inject import Trainer
    from ...core.config import Config
    from ...core.seams import Seams
    from ..check.ex.seams import GIVEN

    if not isinstance(config, dict) or config.get("task") not in ("classify", "lm"):
        task = config.get("task") if isinstance(config, dict) else None
        raise NotReproduced(
            f"the run given as {where} was not trained by labkit.train (its task is {task!r}), "
            "so the grader cannot train it again to know what is true; pass the run the "
            "notebook's labkit.train returned"
        )
    if not isinstance(seams, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in seams.items()
    ):
        raise NotReproduced(f"the run given as {where} names its seams as {seams!r}")
    unknown = [f"{k}={v}" for k, v in seams.items() if (k, v) not in GIVEN]
    if unknown:
        raise NotReproduced(
            f"the run given as {where} was trained with a seam of your own ({unknown[0]}), "
            "and the grader trains only the seams the exercise gives "
            f"({', '.join(f'{k}={v}' for k, v in GIVEN)}); keep the exercise's own cell"
        )
    big = next(
        (k for k, most in LIMITS.items() if k != "steps" and _over(config.get(k), most)), None
    )
    if big is not None or steps > LIMITS["steps"]:
        name, value = (big, config[big]) if big else ("steps", steps)
        raise NotReproduced(
            f"the run given as {where} has {name}={value}, more than the grader trains again "
            f"(at most {LIMITS[name]}); the exercise's own runs are far smaller"
        )
    try:
        own = Seams().replace(**{k: GIVEN[k, v] for k, v in seams.items()})
        trainer = Trainer(Config(**config), bug=bug, seams=own)
        return trainer.run(steps=steps)
    except Exception as exc:  # noqa: BLE001 -- whatever a made-up config makes torch raise is
        raise NotReproduced(  # this row's sentence, never a traceback that stops the class
            f"the grader could not train the run given as {where} again from its config "
            f"({type(exc).__name__}: {str(exc)[:160]})"
        ) from None


def _over(value, most) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > most


def _difference(given, own) -> str | None:
    """Where `given` differs from the grader's `own` run, in words; None if nowhere."""
    for name in HASHES:
        if given.meta.get(name) != own.meta.get(name):
            return f"its {name} is {given.meta.get(name)!r}, and the grader's is {own.meta.get(name)!r}"
    for part in ("table", "evals"):
        mine, theirs = getattr(given, part), getattr(own, part)
        if set(mine) != set(theirs):
            extra = sorted(set(mine) ^ set(theirs))
            return f"its {part} has other columns ({', '.join(map(repr, extra[:3]))})"
        for column, values in theirs.items():
            if len(mine[column]) != len(values):
                return f"its {part}[{column!r}] has {len(mine[column])} values, not {len(values)}"
            for i, (a, b) in enumerate(zip(mine[column], values)):
                if not _same(a, b):
                    return f"its {part}[{column!r}][{i}] is {a!r}, and the grader's run has {b!r}"
    return None


def _same(a, b) -> bool:
    if a is None or b is None or isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return type(a) is type(b) and a == b
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    if not (math.isfinite(a) and math.isfinite(b)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)


def given(name: str, check, args: list, kwargs: dict, notebook=None) -> tuple[list, dict]:
    """`args` and `kwargs` of check `name` with each argument the exercise makes
    (`labkit.learn.check.ex.made.GIVEN`) replaced by the grader's own, made from the
    `notebook`'s parameters (a `made.Notebook`; None: the notebooks' defaults); NotReproduced
    names the first that is none of the data the exercise's cells make."""
    import copy
    import inspect

    from ..check.ex.made import GIVEN, Notebook

    notebook = notebook or Notebook()

    makers = GIVEN.get(name)
    if not makers or any(a is ... for a in (*args, *kwargs.values())):
        return args, kwargs  # a placeholder: the check says "not yet answered"
    try:
        bound = inspect.signature(getattr(check, "__wrapped__", check)).bind(*args, **kwargs)
    except TypeError:
        return args, kwargs  # the check says what is missing, in its own words
    for param, make in makers.items():
        if param not in bound.arguments:
            continue
        value, where = bound.arguments[param], _where(bound, param)
        try:
            own = make(value, notebook, dict(bound.arguments))
        except ValueError as exc:
            raise NotReproduced(
                f"{param} (given as {where}) is not {exc}; pass what the exercise's cell made, "
                "unchanged"
            ) from None
        except Exception as exc:  # noqa: BLE001 -- whatever made-up data makes a maker raise
            raise NotReproduced(  # is this row's sentence, never a traceback that stops the class
                f"the grader could not make {param} (given as {where}) again to compare "
                f"({type(exc).__name__}: {str(exc)[:160]}); pass what the exercise's cell made"
            ) from None
        differs = {what: _differs(value, mine) for what, mine in own.items()}
        same = next((what for what, d in differs.items() if d is None), None)
        if same is None:
            what, why = next(iter(differs.items()))
            others = f" (nor {', '.join(list(differs)[1:])})" if len(differs) > 1 else ""
            raise NotReproduced(
                f"{param} (given as {where}) is not {what}, as the exercise's cell makes it "
                f"from seed {notebook.seed}{others}: {why}; pass what that cell made, unchanged"
            )
        bound.arguments[param] = copy.deepcopy(own[same])  # a check may change what it gets
    return list(bound.args), dict(bound.kwargs)


def _where(bound, param: str) -> str:
    names = list(bound.signature.parameters)
    if param in bound.kwargs:
        return f"{param}="
    return f"argument {names.index(param) + 1}"


def _differs(given, own, at: str = "") -> str | None:
    """Where `given` differs from the grader's `own` data, in words; None if nowhere."""
    from ...core.run import Run
    from ...diagnosis.probes._common import ProbeResult

    it = f"its part {at}" if at else "it"
    if given is own:
        return None
    if isinstance(own, Run):
        return f"{it} is another run than the one its LR names"
    if isinstance(own, ProbeResult):
        if not isinstance(given, ProbeResult):
            return f"{it} is a {type(given).__name__}, not a probe's result"
        if (given.probe, given.verdict) != (own.probe, own.verdict):
            return f"{it} says {given.verdict!r}, and the grader's says {own.verdict!r}"
        return _differs(given.details, own.details, f"{at}.details")
    if type(own).__name__ == "Tensor":
        return _tensor_differs(given, own, it)
    if isinstance(own, dict):
        if not isinstance(given, dict):
            return f"{it} is a {type(given).__name__}, not a dict"
        for k in sorted(set(own) ^ set(given), key=repr)[:1]:
            return f"{it} has no {k!r}" if k in own else f"{it} has {k!r} too"
        return next((d for k in own if (d := _differs(given[k], own[k], f"{at}[{k!r}]"))), None)
    if isinstance(own, (list, tuple)):
        if not isinstance(given, (list, tuple)) or len(given) != len(own):
            return f"{it} is not {len(own)} values long"
        pairs = enumerate(zip(given, own))
        return next((d for i, (a, b) in pairs if (d := _differs(a, b, f"{at}[{i}]"))), None)
    if _same(given, own):
        return None
    return f"{it} is {given!r}, and the grader's is {own!r}"


def _tensor_differs(given, own, it: str) -> str | None:
    import torch

    try:
        mine = torch.as_tensor(given)
    except (TypeError, ValueError, RuntimeError):
        return f"{it} is a {type(given).__name__}, not numbers shaped {tuple(own.shape)}"
    if tuple(mine.shape) != tuple(own.shape):
        return f"{it} has shape {tuple(mine.shape)}, and the grader's {tuple(own.shape)}"
    if own.dtype.is_floating_point or mine.dtype.is_floating_point:
        ok = torch.allclose(mine.double(), own.double(), rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        ok = torch.equal(mine.long(), own.long())
    if ok:
        return None
    i = int((mine.double() != own.double()).flatten().nonzero()[0])
    a, b = mine.flatten()[i].item(), own.flatten()[i].item()
    return f"{it} differs at flat index {i}: {a!r}, and the grader's has {b!r}"
