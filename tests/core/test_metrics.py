"""labkit.metrics against hand-counted values (and scikit-learn, where it is installed)."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from labkit.core.metrics import (
    confusion_matrix,
    model_confusion,
    per_class_recall,  # noqa: E402
    plot_confusion,
)

pytestmark = pytest.mark.ex_f

Y_TRUE = [0, 0, 0, 0, 1, 1, 2]
Y_PRED = [0, 0, 1, 0, 1, 0, 1]


def test_confusion_matrix_counts_rows_true_columns_predicted():
    cm = confusion_matrix(Y_TRUE, Y_PRED, 3)
    assert cm.tolist() == [[3, 1, 0], [1, 1, 0], [0, 1, 0]]
    assert int(cm.sum()) == len(Y_TRUE)


def test_per_class_recall_is_diagonal_over_row_and_nan_for_an_empty_row():
    recall = per_class_recall(confusion_matrix(Y_TRUE, Y_PRED, 4))
    assert recall[:3] == [0.75, 0.5, 0.0]
    assert math.isnan(recall[3])  # class 3 never occurs: recall is undefined, not 0


def test_always_majority_on_95_5_data_scores_095_with_zero_minority_recall():
    y_true = torch.tensor([0] * 95 + [1] * 5)
    cm = confusion_matrix(y_true, torch.zeros(100, dtype=torch.long), 2)
    assert cm.tolist() == [[95, 0], [5, 0]]
    assert float(cm.trace()) / float(cm.sum()) == 0.95
    assert per_class_recall(cm) == [1.0, 0.0]


@pytest.mark.parametrize(
    "y_true, y_pred, n, words",
    [
        ([0, 1], [0, 2], 2, "y_pred holds class id 2, outside 0..1"),
        ([0, 1, 1], [0, 1], 2, "y_true has 3 labels but y_pred has 2"),
        ([0.0, 1.0], [0, 1], 2, "y_true must hold integer class ids"),
    ],
)
def test_bad_input_gets_a_sentence(y_true, y_pred, n, words):
    with pytest.raises((ValueError, TypeError), match=words):
        confusion_matrix(y_true, y_pred, n)
    with pytest.raises(ValueError, match="cm must be a square"):
        per_class_recall([[1, 2, 3]])


def test_matches_sklearn_where_installed():
    metrics = pytest.importorskip(
        "sklearn.metrics",
        reason="scikit-learn is not installed; the hand-counted tests above cover the same cases",
    )
    gen = torch.Generator().manual_seed(0)
    y_true, y_pred = (
        torch.randint(0, 4, (200,), generator=gen),
        torch.randint(0, 4, (200,), generator=gen),
    )
    ours = confusion_matrix(y_true, y_pred, 4)
    assert ours.tolist() == metrics.confusion_matrix(y_true, y_pred, labels=range(4)).tolist()
    theirs = metrics.recall_score(y_true, y_pred, average=None, labels=range(4))
    assert per_class_recall(ours) == pytest.approx(list(theirs))


def test_model_confusion_uses_argmax_in_eval_mode_and_restores_the_mode():
    model = torch.nn.Sequential(torch.nn.Dropout(0.9), torch.nn.Linear(1, 2))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([[-1.0], [1.0]]))  # x > 0 -> class 1
        model[1].bias.zero_()
    model.train()
    x, y = torch.tensor([[-2.0], [-1.0], [1.0], [3.0]]), torch.tensor([0, 1, 1, 1])
    assert model_confusion(model, x, y, 2).tolist() == [[1, 0], [1, 2]]  # dropout off: exact
    assert model.training


def test_plot_writes_every_count_in_its_cell():
    ax = plot_confusion(torch.tensor([[95, 0], [5, 0]]), class_names=["majority", "minority"])
    assert sorted(t.get_text() for t in ax.texts) == ["0", "0", "5", "95"]
    assert ax.get_xlabel() == "predicted class" and ax.get_ylabel() == "true class"
    plt.close("all")
