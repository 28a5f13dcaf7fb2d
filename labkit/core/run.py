"""`Run`: the per-step table of a training run plus what is needed to reproduce it.

The table is columnar: ``run.table["loss_raw"][i]`` is the raw loss at row i.
Per-layer columns are named ``grad_norm/<group>`` and ``update_norm/<group>``.
A gradient that was None is stored as ``None`` (JSON null), never as 0.
Evaluations happen every few steps and live in their own table, ``run.evals``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from dataclasses import dataclass, field

from .hashing import hash_json
from ..store import decode_nonfinite, encode_nonfinite

FORMAT = "labkit.run/1"


def _mtime(path) -> float:
    import os

    return os.path.getmtime(path)


def _check_values(columns: dict) -> None:
    """Numbers at every step; None also allowed outside `step` and `loss_raw` (not logged)."""
    for name, values in columns.items():
        for i, v in enumerate(values):
            if v is None and name not in ("step", "loss_raw"):
                continue
            if type(v).__module__.startswith("torch"):
                raise TypeError(
                    f"columns[{name!r}][{i}] is a torch tensor; log loss.item() (a float), "
                    "not the tensor, so the log keeps no graph alive."
                )
            flag = isinstance(v, bool) and name not in ("step", "loss_raw", "loss_reported")
            if flag:  # a flag column, such as labkit.watch's `skipped`
                continue
            if isinstance(v, bool) or not hasattr(v, "__float__") or getattr(v, "ndim", 0):
                allowed = (
                    "a number"
                    if name in ("step", "loss_raw")
                    else "a number, or None where nothing was logged"
                )
                raise TypeError(
                    f"columns[{name!r}][{i}] is {type(v).__name__}; each value must be {allowed}."
                )


def _check_log(columns, seed, started_at) -> float:
    """Refuse rows instead of columns, a seed that is not an int, a start that is not a
    time, and steps that are not whole, non-negative and increasing; return the start."""
    if isinstance(columns, (list, tuple)) and columns and all(isinstance(r, dict) for r in columns):
        raise TypeError(
            f"columns is a list of {len(columns)} rows (one dict per step); pass "
            "columns instead, one list per name, e.g. {name: [row[name] for row in "
            "rows] for name in rows[0]}."
        )
    if not isinstance(columns, dict) or not all(
        hasattr(v, "__len__") and not isinstance(v, (str, bytes, dict)) for v in columns.values()
    ):
        raise TypeError(
            f"columns must be a dict of lists, one value per step, such as "
            f"{{'step': [0, 1], 'loss_raw': [2.3, 2.1]}}; got {type(columns).__name__}."
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(
            f"seed must be a whole number (int), or None when it is not known; got "
            f"{seed!r} ({type(seed).__name__})."
        )
    if isinstance(started_at, dt.datetime):
        started_at = started_at.timestamp()
    if (
        isinstance(started_at, bool)
        or not isinstance(started_at, (int, float))
        or not math.isfinite(started_at)
        or started_at < 0
    ):
        raise TypeError(
            f"started_at must be a time: time.time() taken when your run began "
            f"(seconds since 1970) or a datetime; got {started_at!r}."
        )
    steps = columns.get("step", [])
    for i, s in enumerate(steps):
        if isinstance(s, bool) or not hasattr(s, "__index__") or getattr(s, "ndim", 0):
            raise TypeError(f"columns['step'][{i}] is {s!r}; steps must be whole numbers (int).")
        if s < 0 or (i and s <= steps[i - 1]):
            why = "negative" if s < 0 else f"not after step {steps[i - 1]!r} before it"
            raise ValueError(
                f"columns['step'][{i}] is {s!r}, {why}; steps must be non-negative "
                "and increasing, one row per optimizer step."
            )
    return float(started_at)


@dataclass
class Run:
    """One training run: per-step table, periodic evals and metadata."""

    table: dict[str, list]
    evals: dict[str, list]
    meta: dict  # config, seed, data_hash, init_hash, bug, versions
    timing: dict = field(default_factory=dict)  # wall-clock fields, excluded from equality

    # ---- reading --------------------------------------------------------
    def __len__(self) -> int:
        return len(self.table["step"])

    @property
    def config(self) -> dict:
        return self.meta["config"]

    @property
    def groups(self) -> list[str]:
        """Layer-group names, e.g. ['backbone.0', 'backbone.2', 'head']."""
        return [c.split("/", 1)[1] for c in self.table if c.startswith("grad_norm/")]

    def column(self, name: str) -> list:
        if name in self.table:
            return self.table[name]
        if name in self.evals:
            return self.evals[name]
        from ..errors import suggest

        allowed = list(self.table) + list(self.evals)
        raise KeyError(
            f"column={name!r} is not in this run; available: "
            f"{', '.join(allowed)}.{suggest(name, allowed)}"
        )

    def rows(self):
        """Yield one dict per step."""
        keys = list(self.table)
        for values in zip(*(self.table[k] for k in keys)):
            yield dict(zip(keys, values))

    def first_nonfinite_step(self, column: str = "loss_raw") -> int | None:
        for step, v in zip(self.table["step"], self.column(column)):
            if v is not None and not math.isfinite(v):
                return step
        return None

    def summary(self, digits: int = 3) -> str:
        loss = self.table["loss_raw"]
        grad = self.table["grad_norm"]
        fmt = lambda v: "null" if v is None else f"{v:.{digits}f}"  # noqa: E731
        last_val = self.evals["val_loss"][-1] if self.evals.get("val_loss") else None
        return (
            f"Run(task={self.config['task']}, bug={self.meta.get('bug')}, seed={self.meta['seed']}, "
            f"steps={len(self)}): loss {fmt(loss[0])} -> {fmt(loss[-1])}, "
            f"grad_norm {fmt(grad[0])} -> {fmt(grad[-1])}, val_loss {fmt(last_val)}"
        )

    __repr__ = summary

    @classmethod
    def from_log(
        cls,
        columns: dict[str, list],
        *,
        seed: int,
        started_at: float,
        config: dict | None = None,
        data_hash: str | None = None,
        init_hash: str | None = None,
        meta: dict | None = None,
    ) -> Run:
        """Wrap the log of your own training loop so labkit's tools can read it.

        `columns` needs ``step`` and ``loss_raw``; ``loss_reported``, ``batch_id``,
        ``grad_norm``, ``update_norm`` and the rest are optional. Every column has one
        value per step; a value that was not logged at a step is ``None`` (e.g. a loss
        reported once per epoch). `started_at` is ``time.time()`` taken when your run
        began (a forecast must be sealed before it). Pass `data_hash` and `init_hash`
        (e.g. ``labkit._hash.hash_tensors``/``hash_module``) to fill the record's hashes
        row with `TriageRecord.record_hashes`. `meta` adds entries to ``run.meta``
        (`labkit.watch` adds ``groups``, ``findings`` and ``watch``).
        """
        started_at = _check_log(columns, seed, started_at)
        for name in ("step", "loss_raw"):
            if name not in columns:
                raise ValueError(
                    f"columns must include {name!r}; got {', '.join(columns) or 'none'}."
                )
        lengths = {k: len(v) for k, v in columns.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"every column must have one value per step; lengths are {lengths}.")
        _check_values(columns)
        table = {k: list(v) for k, v in columns.items()}
        table.setdefault("loss_reported", list(table["loss_raw"]))
        table.setdefault("batch_id", list(range(len(table["step"]))))
        table.setdefault("grad_norm", [None] * len(table["step"]))
        cfg = {"task": "own loop", **(config or {})}
        base = {
            "config": cfg,
            "bug": None,
            "seed": seed,
            "data_hash": data_hash,
            "init_hash": init_hash,
            "config_hash": hash_json({"config": cfg, "bug": None}),
            "groups": [],
        }
        return cls(
            table=table,
            evals={"step": []},
            meta={**base, **(meta or {})},
            timing={"started_at": started_at, "created_at": started_at},
        )

    @classmethod
    def from_csv(
        cls,
        path,
        *,
        raw: str,
        reported: str | None = None,
        step: str | None = None,
        columns: dict[str, str] | None = None,
        seed: int = 0,
        started_at: float | None = None,
        config: dict | None = None,
    ) -> Run:
        """A run someone already logged to CSV: `raw`/`reported` name its columns, `step` the
        step column (default: one row per step); `columns` maps more, e.g.
        ``{"grad_norm": "gnorm"}``. `started_at` defaults to the file's modification time."""
        from .logs import read_csv

        cols = read_csv(path, raw=raw, reported=reported, step=step, extra=columns)
        when = started_at if started_at is not None else _mtime(path)
        return cls.from_log(
            cols, seed=seed, started_at=when, config={"source": str(path), **(config or {})}
        )

    @classmethod
    def from_tensorboard(
        cls,
        logdir,
        *,
        raw: str,
        reported: str | None = None,
        tags: dict[str, str] | None = None,
        seed: int = 0,
        started_at: float | None = None,
        config: dict | None = None,
    ) -> Run:
        """A run logged to TensorBoard: `raw`/`reported` are scalar tags, aligned by global step;
        `tags` maps more, e.g. ``{"grad_norm": "grad/total"}``. Needs ``labkit[logs]``."""
        from .logs import read_tensorboard

        cols = read_tensorboard(logdir, raw=raw, reported=reported, extra=tags)
        when = started_at if started_at is not None else _mtime(logdir)
        return cls.from_log(
            cols, seed=seed, started_at=when, config={"source": str(logdir), **(config or {})}
        )

    def to_tensorboard(self, logdir) -> Path:
        """Write the table's numeric columns as TensorBoard scalars tagged by column name (evals
        as ``evals/<name>``), None as a gap; `Run.from_tensorboard` reads them back, e.g.
        ``raw="loss_raw", tags={"grad_norm": "grad_norm"}``. Needs ``labkit[logs]``."""
        from .logs import write_tensorboard

        return write_tensorboard(self.table, self.evals, logdir)

    # ---- identity and storage ------------------------------------------
    def to_dict(self, timing: bool = True) -> dict:
        d = {"format": FORMAT, "meta": self.meta, "table": self.table, "evals": self.evals}
        if timing:
            d["timing"] = self.timing
        return encode_nonfinite(d)

    def to_json(self, path=None, *, timing: bool = True) -> str:
        text = json.dumps(self.to_dict(timing), indent=None, separators=(",", ":"), allow_nan=False)
        if path is not None:
            from ..store.outputs import write_output

            write_output(path, text, backup=True)
        return text

    @classmethod
    def from_json(cls, text_or_path) -> Run:
        text = str(text_or_path)
        if not text.lstrip().startswith("{"):
            from ..store import read_text

            text = read_text(text_or_path, what="run")
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Run.from_json could not parse the JSON: {exc}.") from None
        except RecursionError:
            raise ValueError(
                "Run.from_json was given JSON that nests too deeply to be a run."
            ) from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"Run.from_json expected format={FORMAT!r}; got {got!r}.")
        d = decode_nonfinite(d)
        return cls(table=d["table"], evals=d["evals"], meta=d["meta"], timing=d.get("timing", {}))

    def fingerprint(self) -> str:
        """Hash of everything but wall-clock timing: equal seeds give equal fingerprints."""
        return hash_json(self.to_dict(timing=False))

    def __eq__(self, other) -> bool:
        return isinstance(other, Run) and self.to_json(timing=False) == other.to_json(timing=False)
