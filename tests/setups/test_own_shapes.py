"""The own-code triage on real code shapes (tests/own_setups/shapes.py): a loss computed in the
model's forward (nanoGPT, a Hugging Face-style ``labels=``), sequence-first batches with
flattened targets, a carried hidden state and a loop without torch.optim."""

import warnings

import pytest

import labkit
from labkit.diagnosis.own.step1_capture import inner as own_inner, setup as proto
from labkit.diagnosis.own.step1_capture.carry import LoopUpdate, adapt
from labkit.diagnosis.own.step1_capture.loops import plain_loop
from labkit.diagnosis.own.step4_h1.losspath import _first_prediction, audit
from labkit.diagnosis.own.step4_h1.flow import facts
from labkit.diagnosis.own.step1_capture.shapes import time_axis
from labkit.diagnosis.own.step1_capture.replay import Replay
from own_setups.shapes import GPTSetup, HFStyleSetup, WordLMSetup, repackage_hidden


def _audit(setup):
    setup = adapt(setup)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit(setup, 0, proto.batches(setup, 0))


def test_a_loss_computed_in_the_models_forward_is_found_and_unshifted_targets_convicted():
    bug, ok = GPTSetup("unshifted"), GPTSetup()
    model, batch = bug.make_model(0), bug.batches(0)[0]
    found = own_inner.meets(bug, model, batch)
    assert [m[1] for m in found] == ["cross_entropy"]  # the call inside GPT.forward
    assert found[0][2][0].shape == (16 * 16, 20)  # logits.view(-1, V): the prediction it scores
    assert _audit(bug)["copies"] is True
    healthy = _audit(ok)
    assert (
        healthy["floor"] is not None and not healthy["copies"]
    )  # the loss is read; shifted: no copies


def test_a_hugging_face_style_labels_loss_is_read_and_its_inner_shift_is_right():
    found = _audit(HFStyleSetup())
    assert (
        found["floor"] is not None and found["floor"]["call"] == "cross_entropy"
    )  # measured inside
    assert found["floor"]["classes"] == 20
    assert not found["copies"]  # labels=input_ids is right: the model shifts them itself


def test_sequence_first_batches_are_accepted_and_their_time_axis_found_from_the_model():
    lm, gpt = adapt(WordLMSetup()), GPTSetup()
    data = proto.batches(lm, 0)  # (35, 20) inputs with 700 flattened targets: not refused
    assert (
        tuple(proto.inputs_of(data[0]).shape) == (35, 20) and len(proto.labels_of(data[0])) == 700
    )
    assert proto.take(data, 64) is data[0]  # a token grid is kept whole, never cut to 64 labels

    def axis(setup):
        model = setup.make_model(0)
        return time_axis(lambda b: _first_prediction(setup, model, b, 0), setup.batches(0)[0])

    assert axis(lm) == 0 and axis(gpt) == 1


def test_unshifted_targets_are_convicted_on_sequence_first_lstm_batches():
    assert _audit(WordLMSetup("unshifted"))["copies"] is True
    assert not _audit(WordLMSetup())["copies"]


def test_labkits_loop_carries_the_hidden_state_and_runs_the_learners_update_like_its_loop():
    setup = WordLMSetup()
    adapted = adapt(setup)
    data = proto.batches(adapted, 0)
    own = setup.train(0, 2).table["loss_raw"]  # the example's loop: 2 epochs of 4 batches
    arm = plain_loop(adapted, 0, 8, "own", batches=data)
    assert isinstance(proto.make_optimizer(adapted, setup.make_model(0)), LoopUpdate)
    assert arm.losses == pytest.approx(own, rel=1e-5)
    seen = []
    original = setup.loss_fn
    setup.loss_fn = lambda m, b, h: (seen.append(h), original(m, b, h))[1]
    model = setup.make_model(0)
    for b in (data[0], data[1], data[1]):
        adapted.loss_fn(model, b)
    assert not seen[0][0].any() and seen[1][0].any()  # batch 1 starts from batch 0's state
    assert not seen[2][0].any()  # a batch repeated is not the next one: it starts afresh


def test_the_replay_reads_a_loop_without_an_optimizer_from_its_parameters():
    setup = WordLMSetup()
    with Replay(setup) as rp:
        run = setup.train(0, 2)
    assert len(rp.steps) == 8 and all(s["update_norm"] > 0 for s in rp.steps)
    assert all(s["lr"][0] == pytest.approx(s["update_norm"] / s["grad_norm"]) for s in rp.steps)
    f = facts(rp, run)
    assert f["steps"] == 8 and not f["lr_all_zero"]


def test_the_replay_wraps_an_adapted_setups_batches_without_recursion():
    class CallsBatches(WordLMSetup):  # a loop that takes its batches from self.batches()
        def train(self, seed, epochs):
            model, raw = self.make_model(seed), []
            for _ in range(epochs):
                hidden = model.init_hidden(self.batch_size)
                for data, targets in self.batches(seed):
                    model.zero_grad()
                    output, hidden = model(data, repackage_hidden(hidden))
                    loss = self.criterion(output, targets)
                    loss.backward()
                    self.update(model)
                    raw.append(loss.item())
            return labkit.Run.from_log(
                {"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=0.0
            )

    setup = adapt(CallsBatches())
    with Replay(setup, after_step_loss=True) as rp:
        setup.train(0, 1)
    assert "batches" not in vars(setup.setup)  # the wrapper is gone again
    assert len(rp.steps) == 4 and all(s["loss_after"] is not None for s in rp.steps)


def test_no_optimizer_and_no_update_is_refused_with_a_sentence():
    class NoUpdate(GPTSetup):
        def make_optimizer(self, model):
            return None

    with pytest.raises(TypeError, match=r"or None with a method update\(model\)"):
        proto.make_optimizer(adapt(NoUpdate()), GPTSetup().make_model(0))

    class WithState(NoUpdate):
        def init_state(self, model, batch):
            return None

    with pytest.raises(TypeError, match=r"or None with a method update\(model\)"):
        proto.make_optimizer(
            adapt(WithState()), GPTSetup().make_model(0)
        )  # adapted: the same sentence
    plain = GPTSetup()
    assert adapt(plain) is plain  # nothing to adapt: the learner's object itself


def _diagnose(setup):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = labkit.diagnose(setup, seeds=(0, 1))
    return rec.rows["conviction"]["data"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "make",
    [lambda: GPTSetup("unshifted"), lambda: WordLMSetup("unshifted")],
    ids=["gpt_forward_loss", "lstm_sequence_first"],
)
def test_diagnose_convicts_unshifted_targets_on_real_shapes(make):
    found = _diagnose(make())
    assert found["system"] == "H2", found["mechanism"]
    assert found["mechanism"].startswith(
        "the labels are the model's own inputs, position for position"
    )


@pytest.mark.slow
def test_diagnose_acquits_the_healthy_word_language_model_with_its_carried_state_and_own_update():
    found = _diagnose(WordLMSetup())
    assert found["system"] == "NONE", found["mechanism"]


@pytest.mark.slow
def test_diagnose_convicts_nanogpts_tied_head_frozen_at_its_init_and_acquits_its_twin():
    """nanoGPT's init (N(0, 0.02)) with ``lm_head.weight.requires_grad_(False)``: the tied
    token embedding freezes with it, at a random init (issue 55); the twin trains everything."""
    found = _diagnose(GPTSetup("frozen_tied_head"))
    assert found["system"] == "H1" and "frozen parameters" in found["mechanism"], found["mechanism"]
    assert "lm_head holds the same tensor as a frozen input layer" in found["mechanism"]
    healthy = _diagnose(GPTSetup("nanogpt_init"))
    assert healthy["system"] == "NONE", healthy["mechanism"]
    assert "re-initialised by PyTorch's defaults reaches" in healthy["mechanism"]
