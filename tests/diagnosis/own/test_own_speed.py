"""diagnose's time: the held-out check reuses the arm that trained (no second run), and under a
tight budget_s the checks that only sharpen a finding are skipped and named in the record."""

import warnings


import labkit
from labkit.diagnosis.own.step6_decide import evidence as own_evidence
from labkit.diagnosis.own.step1_capture import skips as own_skips
from labkit.diagnosis.own.step1_capture.budget import budget
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
from own_setups.healthy import BlobSetup


class BlobWithVal(BlobSetup):
    def val_batches(self, seed):
        return self.batches(seed + 100)[:2]


def test_the_held_out_check_reads_the_arm_that_trained(monkeypatch):
    calls = []
    original = own_evidence.plain_loop
    monkeypatch.setattr(
        own_evidence,
        "plain_loop",
        lambda *a, **k: calls.append(k.get("held_out")) or original(*a, **k),
    )
    ev = SeedEvidence(BlobWithVal(), 0)
    own = ev.arm("own")
    assert ev.held_out() is ev.arm(ev.best_arm())
    assert (
        len(calls) == len(ev._arms) and calls[0] is not None
    )  # one run per arm, scored as it trained
    assert own.evals[0][0] == 0 and own.evals[-1][0] == ev.steps and len(own.evals) >= 5


def test_a_skipped_check_is_named_with_its_cost():
    own_skips.start()
    own_skips.measured(100, 2.0)  # 0.02 s a step
    with budget(1.0):
        assert own_skips.affordable("ten steps", 10)
        assert not own_skips.affordable("the overfit-64 gate", 100)
    assert own_skips.skipped() == [
        "the overfit-64 gate (about 2.0 s of training; 1.0 s of budget_s=1 s were left)"
    ]
    own_skips.start()
    assert own_skips.affordable("anything", 10**6)  # no budget: nothing is skipped


def test_diagnose_under_a_tight_budget_says_what_it_skipped(monkeypatch):
    """What is left of the budget is set, not timed (a loaded machine would move a timed
    one): always a little less than the overfit gate costs at the rate measured so far, so
    that gate, and only a check as long, is skipped, and the record says so."""
    from labkit.diagnosis.own.step6_decide.explorer import OVERFIT_STEPS

    rate = lambda: own_skips._SEEN["seconds"] / max(own_skips._SEEN["steps"], 1)  # noqa: E731
    monkeypatch.setattr(own_skips, "left", lambda: 0.9 * OVERFIT_STEPS * rate())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = labkit.diagnose(BlobSetup(), seeds=(0, 1), budget_s=600)
    assert record.rows["overfit"]["text"] == "skipped to keep to the time budget"
    notes = [
        n for n in record.notes if n.startswith("to keep to the time budget, labkit skipped: ")
    ]
    assert len(notes) == 1 and "the overfit-64 gate (about" in notes[0]
    assert "of budget_s=600 s were left" in notes[0]
    assert (
        record.rows["conviction"]["data"]["system"] == "NONE"
    )  # the rest of the evidence still decides


def test_the_overfit_gate_stops_once_it_has_its_answer():
    import torch
    from labkit.diagnosis.probes import overfit_probe

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    batch = (torch.randn(64, 8), torch.randint(0, 4, (64,)))
    adam = lambda ps: torch.optim.Adam(ps, lr=1e-2)  # noqa: E731
    full = overfit_probe(model, batch, steps=300, make_optimizer=adam)
    short = overfit_probe(model, batch, steps=300, make_optimizer=adam, stop_when_reached=True)
    assert full.details["reached"] and short.details["reached"]
    n = short.details["steps"]
    assert (
        n < 300 and short.details["losses"] == full.details["losses"][:n]
    )  # the same run, cut short
    assert (
        short.details["losses"][-1]
        < 0.1 * short.details["losses"][0]
        <= short.details["losses"][-2]
    )
