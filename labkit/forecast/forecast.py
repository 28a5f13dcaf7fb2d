"""`Forecast`: a prediction of a loss curve, sealed before the run and scored after it.

    >>> f = Forecast([(0, 2.3), (100, 2.3), (199, 2.3)], shape="flat")
    >>> f.seal(labkit.Config(), bug="zero_lr")       # before training: hash + time stamp
    >>> run = labkit.train(bug="zero_lr")
    >>> f.score(run)                                  # log-error, NaN step, shape, verdict

A sealed forecast cannot be edited, and its content hash (sha256 over points,
NaN step, shape, note, config hash and seal time) shows whether a saved copy was
changed later. Scoring refuses a forecast made for another setup or sealed after
the run began. `ForecastHistory` keeps every sealed forecast with its score.

The shape rule (`classify_shape`) lives in `labkit.forecast.shapes`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time

from ..errors import check_choice, check_number
from ..store import read_json
from ..store.outputs import write_json
from .points import check_fields, check_points  # noqa: F401 (check_points re-exported)
from .shapes import SHAPES, classify_shape

FORMAT = "labkit.forecast/1"


# ---- the forecast ------------------------------------------------------------

LN10 = math.log(10)  # the loss of a uniform guess over 10 classes: a preset's start


class Forecast:
    """(step, loss) points, plus an optional NaN step, shape label and note."""

    __slots__ = ("_fields", "_seal")

    def __init__(self, points=(), *, shape=None, nan_step=None, note=""):
        object.__setattr__(self, "_fields", check_fields(points, shape, nan_step, note))
        object.__setattr__(self, "_seal", None)  # {config_hash, sealed_at, content_hash}

    @classmethod
    def from_shape(
        cls, shape, steps=200, *, start=LN10, end=None, nan_step=None, checkpoints=5, note=""
    ):
        """A preset curve to adjust: `checkpoints` points over steps 0 .. steps-1."""
        check_choice("shape", shape, SHAPES)
        check_number("steps", steps, minimum=2, integer=True)
        check_number("start", start, minimum=0, strict_min=True)
        check_number("checkpoints", checkpoints, minimum=2, integer=True)
        if shape == "nan":
            nan_step = steps // 2 if nan_step is None else nan_step
            check_number("nan_step", nan_step, minimum=0, maximum=steps - 1, integer=True)
        last = nan_step - 1 if shape == "nan" else steps - 1  # the last step with a finite loss
        xs = (
            sorted({round(i * last / (checkpoints - 1)) for i in range(checkpoints)})
            if last >= 0
            else []
        )
        if end is None:
            end = {"flat": start, "diverging": start * 10}.get(shape, start / 10)
        check_number("end", end, minimum=0, strict_min=True)
        span = max(steps - 1, 1)
        ys = [start * (end / start) ** (x / span) for x in xs]  # a straight line on log axes
        if shape == "spiky":
            ys = [y * 4 if 0 < i < len(ys) - 1 and i % 2 else y for i, y in enumerate(ys)]
        return cls(
            list(zip(xs, ys)), shape=shape, nan_step=nan_step if shape == "nan" else None, note=note
        )

    # ---- reading (and editing, until sealed) ----
    def _edit(self, **change):
        if self._seal is not None:
            raise AttributeError(
                "This forecast is sealed, so it can no longer be edited; make a "
                "new Forecast to predict something else."
            )
        object.__setattr__(self, "_fields", check_fields(**{**self._fields, **change}))

    def __setattr__(self, name, value):
        if name not in ("points", "shape", "nan_step", "note"):
            raise AttributeError(
                f"Forecast has no setting {name!r}; you can set points, shape, nan_step and note."
            )
        self._edit(**{name: value})

    points = property(lambda self: self._fields["points"])
    shape = property(lambda self: self._fields["shape"])
    nan_step = property(lambda self: self._fields["nan_step"])
    note = property(lambda self: self._fields["note"])
    sealed = property(lambda self: self._seal is not None)
    config_hash = property(lambda self: (self._seal or {}).get("config_hash"))
    sealed_at = property(lambda self: (self._seal or {}).get("sealed_at"))
    content_hash = property(lambda self: (self._seal or {}).get("content_hash"))

    @property
    def expected_shape(self) -> str:
        """The shape label given, or the one the shape rule reads off the points."""
        return self.shape or classify_shape([p[1] for p in self.points], self.nan_step)

    def __repr__(self) -> str:
        span = f" from step {self.points[0][0]} to {self.points[-1][0]}" if self.points else ""
        seal = f"sealed for config {self.config_hash}" if self.sealed else "not sealed"
        return (
            f"Forecast({len(self.points)} points{span}, shape={self.shape!r}, "
            f"nan_step={self.nan_step}, {seal})"
        )

    def __eq__(self, other):
        return isinstance(other, Forecast) and self.to_dict() == other.to_dict()

    __hash__ = None

    # ---- sealing ----
    def _digest(self) -> str:
        body = {**self._content(), "config_hash": self.config_hash, "sealed_at": self.sealed_at}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def _content(self) -> dict:
        return {
            "points": [list(p) for p in self.points],
            "nan_step": self.nan_step,
            "shape": self.shape,
            "note": self.note,
        }

    def seal(self, config=None, bug=None) -> Forecast:
        """Fix this forecast to one setup (a Config and bug, or a config hash) and to now."""
        if self.sealed:
            raise ValueError(
                "This forecast is already sealed; sealing again would move its time "
                "stamp. Make a new Forecast to predict another run."
            )
        if isinstance(config, str):
            if len(config) != 12 or config.strip("0123456789abcdef"):
                raise ValueError(
                    f"config={config!r} is not a config hash; pass a Config, or the "
                    "12 hex characters of run.meta['config_hash']."
                )
            if bug is not None:
                raise ValueError("Pass bug only with a Config; a config hash already includes it.")
            the_hash = config
        else:
            from ..bugs.inject import resolve
            from ..core.train import config_hash

            config, _, bug_name = resolve(config, bug, None, {})
            the_hash = config_hash(config, bug_name)
        object.__setattr__(self, "_seal", {"config_hash": the_hash, "sealed_at": time.time()})
        self._seal["content_hash"] = self._digest()
        return self

    def is_intact(self) -> bool:
        """True when sealed and nothing changed since (the content hash still matches)."""
        return self.sealed and self._digest() == self.content_hash

    def verify(self) -> Forecast:
        if not self.sealed:
            raise ValueError(
                "This forecast is not sealed; call forecast.seal(config, bug=...) "
                "before the run, so the score can prove it came first."
            )
        if not self.is_intact():
            raise ValueError(
                f"This forecast was changed after it was sealed: its content hash "
                f"{self.content_hash[:12]} no longer matches its contents."
            )
        return self

    # ---- scoring and plotting ----
    def score(self, run, column: str = "loss_raw"):
        """Compare with the run this forecast was sealed for; see `ForecastScore`.

        `column` is what the forecast predicted: the raw loss, or e.g. ``"grad_norm"``.
        """
        self.verify()
        run_hash, started = run.meta.get("config_hash"), run.timing.get("started_at")
        if run_hash != self.config_hash:
            raise ValueError(
                f"This forecast was sealed for config {self.config_hash}, but the run "
                f"has config {run_hash}; score it against the run it predicted."
            )
        if started is None:
            raise ValueError(
                "The run has no start time (run.timing['started_at']), so nothing "
                "shows the forecast came first; score it against a fresh run."
            )
        if self.sealed_at > started:
            clock = lambda t: time.strftime("%H:%M:%S", time.localtime(t))  # noqa: E731
            raise ValueError(
                f"This forecast was sealed at {clock(self.sealed_at)}, after the run "
                f"started at {clock(started)}, so it is hindsight, not a forecast; "
                "seal before training."
            )
        from .score import ForecastScore

        return ForecastScore.compare(self, run, column)

    def plot(self, run=None, ax=None, *, log=False):
        """Forecast points and line; with `run`, its raw per-step loss as points beside them."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        if run is not None:
            pts = [
                (s, v)
                for s, v in zip(run.table["step"], run.table["loss_raw"])
                if v is not None and math.isfinite(v)
            ]
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                ".",
                ms=3,
                alpha=0.6,
                label="actual loss_raw (each step)",
            )
            c = run.config
            size, letter = (c["vocab_size"], "V") if c["task"] == "lm" else (c["n_classes"], "C")
            ax.axhline(
                math.log(size),
                color="grey",
                ls="--",
                lw=1,
                label=f"ln {letter} = {math.log(size):.3f}",
            )
            if run.first_nonfinite_step() is not None:
                ax.axvline(
                    run.first_nonfinite_step(),
                    color="crimson",
                    ls=":",
                    label=f"actual first NaN @ {run.first_nonfinite_step()}",
                )
        ax.plot(
            [p[0] for p in self.points],
            [p[1] for p in self.points],
            "o--",
            color="tab:orange",
            label=f"forecast ({'sealed' if self.sealed else 'not sealed'})",
        )
        if self.nan_step is not None:
            ax.axvline(
                self.nan_step, color="tab:orange", ls="--", label=f"forecast NaN @ {self.nan_step}"
            )
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(
                0, ax.get_ylim()[1] * 1.2
            )  # from zero, so a flat run does not look like noise
        ax.set(title="forecast vs actual", xlabel="step", ylabel="loss")
        ax.legend(fontsize=7)
        return ax

    # ---- storage ----
    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            **self._content(),
            "config_hash": self.config_hash,
            "sealed_at": self.sealed_at,
            "content_hash": self.content_hash,
        }

    @classmethod
    def from_dict(cls, d) -> Forecast:
        """Load a forecast; a tampered copy loads, but `verify()` and `score()` refuse it."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"Forecast.from_dict expected format={FORMAT!r}; got {got!r}.")
        f = cls(
            d["points"], shape=d.get("shape"), nan_step=d.get("nan_step"), note=d.get("note", "")
        )
        seal = {k: d.get(k) for k in ("config_hash", "sealed_at", "content_hash")}
        if any(v is not None for v in seal.values()):
            if any(v is None for v in seal.values()):
                raise ValueError(
                    "This forecast record is half sealed (config_hash, sealed_at and "
                    "content_hash must all be present); it cannot be trusted."
                )
            object.__setattr__(f, "_seal", seal)
        return f

    def to_json(self, path=None) -> str:
        if path is not None:
            write_json(path, self.to_dict(), backup=True)
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, text_or_path) -> Forecast:
        text = str(text_or_path)
        if text.lstrip().startswith("{"):
            return cls.from_dict(json.loads(text))
        return cls.from_dict(read_json(text_or_path, what="forecast"))
