"""A reviewed prediction is kept in the learner store and summed up per exercise."""

import labkit
from labkit.check.ex_a import ex_a_predict, ex_a_review
from labkit.learn import predictions
from labkit.store.learner import LearnerStore


def test_a_review_is_kept_and_summed(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    store = LearnerStore(tmp_path / "labkit.sqlite3")
    assert predictions.summary(store) == "No prediction reviewed yet."
    prediction = {
        "null_groups": ["head"],
        "head_learns": True,
        "why": "a guess about the loss of each run",
    }
    ex_a_predict(prediction)
    ex_a_review(prediction, labkit.train(steps=25), labkit.train(bug="detach", steps=25))
    kept = predictions.records(store)
    assert len(kept) == 1 and kept[0]["exercise"] == "ex_a" and kept[0]["hits"] == 1
    assert predictions.summary(store).splitlines()[0] == "ex_a: 1 of 2 predicted answers hit"
