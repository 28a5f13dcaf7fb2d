import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import pytest  # noqa: E402

from labkit.learn import gallery  # noqa: E402


@pytest.mark.chaotic  # nan_in_inputs
def test_signature_and_table_report_the_measured_numbers():
    runs, healthy = gallery.run_zoo(seed=0, names=["detach", "stale_log", "nan_in_inputs"])
    assert set(healthy) == {"classify"}
    sig = gallery.signature(runs["detach"])
    assert sig["null_grad_groups"] == ["backbone.0", "backbone.2"]
    assert sig["zero_update_groups"] == ["backbone.0", "backbone.2"]
    assert gallery.signature(runs["nan_in_inputs"])["first_nonfinite"] == 10
    table = gallery.signature_table(runs, "H3").splitlines()
    assert len(table) == 2 and table[1].startswith("stale_log") and "2.302" in table[1]
    table = gallery.signature_table(runs, "H3", healthy).splitlines()
    assert table[1].startswith("healthy (classify)") and table[2].startswith("stale_log")
    fig = gallery.plot_system(runs, healthy, "H1")
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["detach"]
    plt.close("all")
