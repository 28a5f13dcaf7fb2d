"""Run.from_log with sparse reported values, Run.from_csv and Run.from_tensorboard."""

import pytest
import torch

from labkit import Run
from labkit.diagnosis.own.step2_h3.logger import check_logger
from labkit.probes import raw_vs_reported

RAW = [2.0, 1.8, 1.6, 1.5, 1.2, 1.1, 1.0, 0.9]  # two epochs of four batches


def _epoch_means(raw, per_epoch=4):
    return [sum(raw[e : e + per_epoch]) / per_epoch for e in range(0, len(raw), per_epoch)]


def test_from_log_accepts_a_value_reported_once_per_epoch():
    means = _epoch_means(RAW)
    reported = [None, None, None, means[0], None, None, None, means[1]]
    run = Run.from_log(
        {
            "step": list(range(8)),
            "loss_raw": RAW,
            "loss_reported": reported,
            "batch_id": [0, 1, 2, 3] * 2,
            "grad_norm": [1.0] * 8,
            "update_norm": [0.1] * 8,
        },
        seed=0,
        started_at=0.0,
    )
    assert run.table["loss_reported"][0] is None
    assert raw_vs_reported(run).details["agree"]
    assert check_logger(run, per_epoch=4).details["agree"]


def test_from_log_names_a_tensor_or_a_missing_value():
    with pytest.raises(
        TypeError, match=r"columns\['loss_raw'\]\[1\] is a torch tensor; log loss.item"
    ):
        Run.from_log({"step": [0, 1], "loss_raw": [1.0, torch.tensor(0.5)]}, seed=0, started_at=0.0)
    with pytest.raises(
        TypeError, match=r"columns\['loss_raw'\]\[0\] is NoneType; each value must be a number"
    ):
        Run.from_log({"step": [0], "loss_raw": [None]}, seed=0, started_at=0.0)
    with pytest.raises(TypeError, match="or None where nothing was logged"):
        Run.from_log({"step": [0], "loss_raw": [1.0], "grad_norm": ["big"]}, seed=0, started_at=0.0)


def test_the_zoo_probe_still_names_a_divisor_when_only_epoch_ends_are_reported():
    sums = [sum(RAW[:4]), sum(RAW[4:])]
    reported = [None, None, None, sums[0] / 500, None, None, None, sums[1] / 500]
    result = raw_vs_reported(raw=RAW, reported=reported, batch_id=[0, 1, 2, 3] * 2)
    assert result.details["mechanism"] == "divisor" and round(result.details["divisor"]) == 500


def _write_lightning_csv(path):
    """Lightning's CSVLogger layout: step rows, then an epoch row with the epoch mean."""
    lines = ["epoch,step,train_loss_step,train_loss_epoch"]
    for e in range(2):
        for i in range(4):
            lines.append(f"{e},{e * 4 + i},{RAW[e * 4 + i]},")
        lines.append(f"{e},{e * 4 + 3},,{_epoch_means(RAW)[e] / 100}")  # divided by 100: H3
    path.write_text("\n".join(lines) + "\n")


def test_from_csv_merges_rows_of_one_step_and_feeds_the_logger_check(tmp_path):
    path = tmp_path / "metrics.csv"
    _write_lightning_csv(path)
    run = Run.from_csv(path, raw="train_loss_step", reported="train_loss_epoch", step="step")
    assert run.table["step"] == list(range(8)) and run.table["loss_raw"] == RAW
    assert run.table["loss_reported"][:3] == [None] * 3
    result = check_logger(run, per_epoch=4)
    assert result.details["mechanism"] == "divisor" and "divided by 400" in result.verdict
    assert run.timing["started_at"] == pytest.approx(path.stat().st_mtime)


def test_from_csv_explains_bad_columns_and_cells(tmp_path):
    path = tmp_path / "m.csv"
    _write_lightning_csv(path)
    with pytest.raises(
        ValueError, match="raw='train_los_step' is not a column.*Did you mean 'train_loss_step'"
    ):
        Run.from_csv(path, raw="train_los_step")
    path.write_text("step,loss\n0,1.5\n1,oops\n")
    with pytest.raises(
        ValueError, match=r"m.csv line 3, column 'loss' holds 'oops', which is not a number"
    ):
        Run.from_csv(path, raw="loss", step="step")
    with pytest.raises(FileNotFoundError, match="No CSV log at"):
        Run.from_csv(tmp_path / "none.csv", raw="loss")


def test_from_tensorboard_reads_scalars_by_global_step(tmp_path):
    pytest.importorskip(
        "tensorboard", reason="Run.from_tensorboard needs labkit[logs] (tensorboard)"
    )
    writer_mod = pytest.importorskip(
        "tensorboardX", reason="writing the test log needs tensorboardX"
    )
    writer = writer_mod.SummaryWriter(str(tmp_path))
    total = 0.0
    for step, value in enumerate(RAW):
        writer.add_scalar("loss/batch", value, step)
        total += value
        writer.add_scalar("loss/shown", total / 4, step)  # the epoch sum never reset, / 4: H3
    writer.close()
    run = Run.from_tensorboard(tmp_path, raw="loss/batch", reported="loss/shown")
    assert run.table["step"] == list(range(8))
    assert [round(v, 5) for v in run.table["loss_raw"]] == RAW
    assert not check_logger(run, per_epoch=4).details["agree"]
    with pytest.raises(ValueError, match="reported='loss/shwn' is not a scalar tag.*'loss/shown'"):
        Run.from_tensorboard(tmp_path, raw="loss/batch", reported="loss/shwn")


def test_from_tensorboard_without_the_package_says_what_to_install(monkeypatch, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name.startswith("tensorboard"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    with pytest.raises(ImportError, match=r"pip install 'labkit\[logs\]'"):
        Run.from_tensorboard(tmp_path, raw="loss")
