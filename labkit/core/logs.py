"""Logs people already have, as `Run.from_log` columns: a CSV file or a TensorBoard log dir.

    Run.from_csv("metrics.csv", raw="train_loss_step", reported="train_loss_epoch", step="step")
    Run.from_tensorboard("runs/exp1", raw="loss/batch", reported="loss/epoch")
    run.to_tensorboard("runs/labkit")     # and back: every numeric column as a scalar tag

Values are aligned by step: a step where the reported value was not logged gets
``None``, as in a loop that reports once per epoch. CSV rows that share a step are
merged (Lightning's CSVLogger writes step-level and epoch-level values on separate
rows). TensorBoard's own event reader (the ``tensorboard`` package, ``pip install
'labkit[logs]'``) is imported only here, when a TensorBoard log is read.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..errors import suggest


def _number(text: str, where: str) -> float | None:
    text = text.strip()
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{where} holds {text!r}, which is not a number.") from None


def _role(column: str) -> str:
    """The argument a learner passed for a `from_log` column: raw=, reported=, or its own name."""
    return {"loss_raw": "raw", "loss_reported": "reported"}.get(column, column)


def _pick(name: str, available: list[str], role: str, what: str, source="this log") -> str:
    if not isinstance(name, str):
        raise TypeError(f"{role} must name a {what} of {source}, as text; got {name!r}.")
    if name not in available:
        raise ValueError(
            f"{role}={name!r} is not a {what} of {source}; it has "
            f"{', '.join(map(repr, available)) or 'none'}.{suggest(name, available)}"
        )
    return name


def read_csv(
    path,
    *,
    raw: str,
    reported: str | None = None,
    step: str | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, list]:
    """Columns for `Run.from_log` from a CSV file with a header row (see the module doc)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No CSV log at {path}.")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        if not header:
            raise ValueError(
                f"The CSV log {str(path)!r} is empty: it has no header row naming "
                "its columns, so there is no run to read."
            )
        wanted = {"loss_raw": raw, "loss_reported": reported, **(extra or {})}
        wanted = {
            k: _pick(v, header, _role(k), "column", repr(str(path)))
            for k, v in wanted.items()
            if v is not None or k == "loss_raw"
        }
        if step is not None:
            _pick(step, header, "step", "column", repr(str(path)))
        merged: dict[float, dict] = {}
        for i, row in enumerate(reader, start=2):
            key = _number(row[step], f"{path.name} line {i}, column {step!r}") if step else i - 2
            if key is None:
                continue
            slot = merged.setdefault(key, {})
            for name, col in wanted.items():
                value = _number(row.get(col) or "", f"{path.name} line {i}, column {col!r}")
                if value is not None:
                    slot[name] = value
    steps = [s for s in merged if "loss_raw" in merged[s]]
    if not steps:
        raise ValueError(f"{path.name} has no row with a value in the raw column {raw!r}.")
    orphans = [s for s in merged if "loss_raw" not in merged[s] and len(merged[s])]
    if orphans:
        raise ValueError(
            f"{path.name} has values at step(s) {orphans[:5]} where the raw column "
            f"{raw!r} is empty; log every column against the same step."
        )
    cols = {"step": [int(s) if float(s).is_integer() else s for s in steps]}
    for name in wanted:
        cols[name] = [merged[s].get(name) for s in steps]
    return cols


def read_tensorboard(
    logdir, *, raw: str, reported: str | None = None, extra: dict[str, str] | None = None
) -> dict[str, list]:
    """Columns for `Run.from_log` from the scalar tags of a TensorBoard log directory."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator
    except ImportError:
        raise ImportError(
            "Run.from_tensorboard needs the tensorboard package, which reads the "
            "event files without TensorFlow: pip install 'labkit[logs]'."
        ) from None
    logdir = Path(logdir)
    if not logdir.exists():
        raise FileNotFoundError(f"No TensorBoard log directory at {logdir}.")
    acc = EventAccumulator(str(logdir), size_guidance={SCALARS: 0})
    try:
        acc.Reload()
    except Exception as exc:  # noqa: BLE001 (a damaged or truncated events file: TensorBoard's own errors)
        raise ValueError(
            f"The TensorBoard log {str(logdir)!r} could not be read: an events file "
            f"in it is damaged ({type(exc).__name__})."
        ) from None
    tags = list(acc.Tags().get("scalars", []))
    if not tags:
        found = sorted(logdir.glob("*tfevents*")) if logdir.is_dir() else []
        if found:  # TensorBoard skips what it cannot parse without a word: say it here
            raise ValueError(
                f"The TensorBoard log {str(logdir)!r} holds no scalars that could be "
                f"read: its {len(found)} events file(s) ({found[0].name}"
                f"{', ...' if len(found) > 1 else ''}) hold no add_scalar values, "
                "or are damaged or truncated."
            )
        what = (
            "a file, not a log folder" if logdir.is_file() else "an empty folder, or the wrong one"
        )
        raise ValueError(
            f"The TensorBoard log {str(logdir)!r} holds no scalars: no events file "
            f"with add_scalar values is in it ({what})."
        )
    wanted = {"loss_raw": raw, "loss_reported": reported, **(extra or {})}
    series = {}
    for name, tag in wanted.items():
        if tag is None and name != "loss_raw":
            continue
        _pick(tag, tags, _role(name), "scalar tag", repr(str(logdir)))
        series[name] = {e.step: float(e.value) for e in acc.Scalars(tag)}  # the last value wins
    steps = sorted(series["loss_raw"])
    for name, values in series.items():
        stray = sorted(set(values) - set(steps))
        if stray:
            raise ValueError(
                f"tag {wanted[name]!r} has values at step(s) {stray[:5]} where {raw!r} has "
                "none; log both against the same global step."
            )
    cols = {"step": steps}
    for name, values in series.items():
        cols[name] = [values.get(s) for s in steps]
    return cols


def write_tensorboard(table: dict[str, list], evals: dict[str, list], logdir) -> Path:
    """`Run.to_tensorboard`: each numeric column of `table` as a scalar tag of its own name at
    the global step ``table["step"]``, each eval column as ``evals/<name>``; None is a gap.
    TensorBoard keeps float32, so values come back within float32 rounding."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ImportError(
            "Run.to_tensorboard needs the tensorboard package: pip install 'labkit[logs]'."
        ) from None
    logdir = Path(_folder(logdir))
    writer = SummaryWriter(log_dir=str(logdir))
    try:
        for columns, prefix in ((table, ""), (evals, "evals/")):
            steps = columns.get("step", [])
            for name, values in columns.items():
                if name == "step":
                    continue
                for step, value in zip(steps, values):
                    if isinstance(value, (int, float)) and not isinstance(value, str):
                        writer.add_scalar(prefix + name, float(value), int(step))
    finally:
        writer.close()
    return logdir


def _folder(logdir):
    """`Run.to_tensorboard`'s folder: a path, never '' or None (SummaryWriter would pick one
    itself), and never a file (the store, a report) that the events file would go beside."""
    import os

    if logdir is None or not isinstance(logdir, (str, os.PathLike)):
        raise TypeError(f"logdir must be a folder path, such as 'runs/exp1'; got {logdir!r}.")
    if not os.fspath(logdir):
        raise ValueError(
            "logdir='' is an empty path; give a folder, such as 'runs/exp1', where "
            "TensorBoard's events file goes."
        )
    if os.path.exists(logdir) and not os.path.isdir(logdir):
        raise ValueError(
            f"logdir={os.fspath(logdir)!r} is a file, not a folder, and it was left "
            "as it was; give a folder, such as 'runs/exp1', where TensorBoard's "
            "events file goes."
        )
    return logdir
