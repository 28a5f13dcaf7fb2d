import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from labkit import train  # noqa: E402
from labkit.core import plots  # noqa: E402


def test_loss_plot_draws_every_finite_raw_point_and_marks_nan():
    run = train(steps=30)
    run.table["loss_raw"][10] = math.nan
    ax = plots.plot_loss(run, baseline=math.log(10))
    raw = ax.lines[0]
    assert raw.get_linestyle() == "None" and raw.get_marker() == "."  # points, not a line
    assert len(raw.get_xdata()) == 29
    assert any("first non-finite" in (line.get_label() or "") for line in ax.lines)
    plt.close("all")


def test_norm_plot_has_a_series_per_layer_group_and_counts_nulls():
    from labkit import Seams

    def forward(ctx):
        return ctx.model.head(ctx.model.backbone(ctx.batch["x"]).detach())

    run = train(steps=8, seams=Seams().replace(forward=forward))
    axes = plots.plot_norms(run)
    labels = [line.get_label() for line in axes[0].lines]
    assert labels[0] == "backbone.0 (8 null)" and labels[2] == "head"
    plt.close("all")


def test_train_val_and_compare_plots():
    run = train(steps=20, eval_every=10)
    ax = plots.plot_train_val(run)
    assert [line.get_label() for line in ax.lines][1:] == [
        "online train loss (logger's epoch mean)",
        "train_eval_loss",
        "val_loss",
    ]
    ax = plots.plot_compare({"a": run, "b": train(steps=20, seed=1)})
    assert len(ax.lines) == 2
    ax = plots.plot_compare({"a": run}, column="val_loss")
    assert list(ax.lines[0].get_xdata()) == [9, 19]  # eval columns sit at their eval steps
    plt.close("all")
