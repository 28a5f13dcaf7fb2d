"""Exercise E's checks, and the loss floors computed from the generator's own table."""

import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import nbformat
import pytest

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_e import (
    ex_e_predict,
    ex_e_review,
    ex_e_transfer,
    ex_e_two_ahead_floor,
    truth_of,
)
from labkit.core.data import EOS, IGNORE, SEP, make_tokens
from labkit.core.seams import Seams
from labkit.bugs._lm import rewrite_labels
from labkit.learn.lm_floor import floor, successor_table, target_entropies
from helpers import one_sentence, printed, run_solution, misjudged

pytestmark = pytest.mark.ex_e
ROOT = Path(__file__).resolve().parents[3]
BASE = labkit.Config(task="lm", steps=60, eval_every=20)
SETUPS = {
    "correct": (BASE, None),
    "double_shift": (BASE, "double_shift"),
    "padding_in_loss": (BASE, "padding_in_loss"),
    "all_masked_labels": (BASE, "all_masked_labels"),
    "prompt_in_loss": (BASE.replace(response_only=False), None),
}


def empirical_entropy(seqs, ahead):
    """Conditional entropy of the token `ahead` steps on, counted over (last token, tokens
    emitted) contexts of many sequences: an estimate that knows nothing of lm_floor."""
    counts = defaultdict(Counter)
    for ids in seqs:
        s, e = ids.index(SEP), ids.index(EOS)
        if ahead == 2:
            counts["first", ids[s - 1]][ids[s + 1]] += 1  # from the last prompt token
        for m in range(e - s - ahead + 1):
            tok = ids[s + m] if m else ids[s - 1]
            counts[tok, m][ids[s + m + ahead]] += 1
    total = sum(sum(c.values()) for c in counts.values())
    return (
        sum(-n * math.log(n / sum(c.values())) for c in counts.values() for n in c.values()) / total
    )


@pytest.fixture(scope="module")
def big():
    """20,000 training sequences (generated once for the module) and their token lists."""
    data = make_tokens(seed=0, n_train=20000, n_val=1)
    return data, data.train["input_ids"].tolist()


def test_the_table_is_the_generators_own():
    data, succ = make_tokens(seed=0), successor_table(50, 0)
    for ids in data.train["input_ids"].tolist():
        s, e = ids.index(SEP), ids.index(EOS)
        prev = ids[s - 1]
        for tok in ids[s + 1 : e]:
            assert tok in succ[prev].tolist()
            prev = tok


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [1, 2])
def test_the_floor_matches_an_empirical_entropy_within_001(big, ahead):
    data, seqs = big
    exact = floor(data.train, successor_table(50, 0), ahead)
    assert abs(exact - empirical_entropy(seqs, ahead)) < 0.01


@pytest.mark.slow
def test_the_printed_floor_is_the_computed_one(big):
    nb = nbformat.read(ROOT / "solutions" / "ex_e_masking_errors.ipynb", as_version=4)
    shown = float(
        re.search(
            r"floor of the correct run's targets: train [\d.]+, val ([\d.]+)", printed(nb)
        ).group(1)
    )
    data = make_tokens(seed=0)
    assert abs(shown - floor(data.val, successor_table(50, 0))) < 0.0006
    assert abs(shown - empirical_entropy(big[1], 1)) < 0.01


def test_target_entropies_refuse_prompt_targets_two_ahead():
    data = make_tokens(seed=0, n_train=8, n_val=1)
    padded = data.train["input_ids"].clone()
    with pytest.raises(ValueError, match="Two-ahead targets must be response tokens or EOS"):
        target_entropies({**data.train, "labels": padded}, successor_table(50, 0), ahead=2)


@pytest.fixture(scope="module")
def runs_and_batches():
    trainers = {n: labkit.Trainer(cfg, bug=bug) for n, (cfg, bug) in SETUPS.items()}
    return ({n: t.run() for n, t in trainers.items()}, {n: t.batch(0) for n, t in trainers.items()})


@pytest.mark.slow
def test_the_truth_is_read_from_the_runs(runs_and_batches):
    runs, batches = runs_and_batches
    truth = truth_of(runs, batches)
    assert truth["nan_run"] == "all_masked_labels"
    assert truth["two_ahead_run"] == "double_shift"
    assert truth["inflated_runs"] == ["padding_in_loss", "prompt_in_loss"]
    assert truth["lowest_train_loss"] == "padding_in_loss"  # its trivially predictable pads


@pytest.mark.slow
def test_review_shows_misses(runs_and_batches):
    prediction = {
        "nan_run": "correct",
        "two_ahead_run": "double_shift",
        "inflated_runs": ["padding_in_loss"],
        "lowest_train_loss": "correct",
        "why": "a guess about the loss of each run",
    }
    ex_e_predict(prediction)
    trainers = {n: labkit.Trainer(cfg, bug=bug) for n, (cfg, bug) in SETUPS.items()}
    fresh = {n: t.run(steps=5) for n, t in trainers.items()}
    text = ex_e_review(prediction, fresh, runs_and_batches[1])
    assert "nan_run: you predicted 'correct'; the run shows 'all_masked_labels': miss" in text


def test_mechanism_and_floor_checks():
    data, succ = make_tokens(seed=0), successor_table(50, 0)
    assert ex_e_two_ahead_floor(floor(data.val, succ, 2), data.val, succ).startswith("ok")
    for wrong, words in (
        (floor(data.val, succ), "floor one token ahead"),
        (math.log(4), "is not that floor"),
    ):
        with pytest.raises(CheckFailed, match=words) as info:
            ex_e_two_ahead_floor(wrong, data.val, succ)
        assert one_sentence(str(info.value))


@pytest.mark.slow
def test_transfer_without_eos(runs_and_batches):
    def no_eos_labels(split):
        return split["labels"].masked_fill(split["input_ids"] == EOS, IGNORE)

    no_eos = labkit.train(
        BASE, seams=Seams().replace(data=lambda cfg: rewrite_labels(cfg, no_eos_labels))
    )
    correct = runs_and_batches[0]["correct"]
    reason = "when the response ends depends on a random length; val_response_loss scores EOS"
    assert ex_e_transfer("lower", "higher", reason, no_eos, correct).startswith("ok")
    with pytest.raises(CheckFailed, match="compare the two runs' val_response_loss"):
        ex_e_transfer("lower", "lower", reason, no_eos, correct)
    assert not misjudged("ex_e_transfer", lambda c, r: ex_e_transfer(*c, r, no_eos, correct))


@pytest.mark.slow
@pytest.mark.chaotic  # all_masked_labels is NaN
def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_e_masking_errors", tmp_path, seed=1)
    assert "predictions hit" in text and text.count("ok: ") >= 5
