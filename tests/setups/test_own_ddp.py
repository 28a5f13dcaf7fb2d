"""labkit.diagnose on distributed setups (world_size = 2): plain PyTorch DDP code
(`own_setups.ddp`) triaged on two gloo ranks that labkit launches itself. Every setup shares
one launch (the expensive part); the setup whose rank 1 dies comes last, so that its death
ends the launch and every other setup's evidence is already in."""

import pickle

import pytest

import labkit
import own_setups.ddp
from labkit.diagnosis.own.step1_capture.launch import pickled
from labkit.diagnosis.own.step1_capture.setup import load
from labkit.diagnosis.own.step6_decide.ranks import triage_ranks
from own_setups.ddp import BUGS, DDPSetup, NoDDP, NoShuffle, RankDies, RankHangs

TIMEOUT_S = 120  # the whole launch
SYSTEMS = {
    "forward_through_module": ("H1", "ddp.module"),
    "no_sync_every_step": ("H1", "no_sync()"),
    "no_set_epoch": ("H2", "set_epoch"),
    "double_allreduce": ("H1", "2 times too large"),
    "local_reported_loss": ("H3", "local value"),
    "buffers_not_broadcast": ("H1", "broadcast_buffers=False"),
}


@pytest.fixture(scope="module")
def records():
    setups = {"healthy": DDPSetup(), **{k: cls() for k, cls in BUGS.items()}}
    setups.update(no_ddp=NoDDP(), no_shuffle=NoShuffle(), dies=RankDies())
    return triage_ranks(setups, timeout_s=TIMEOUT_S)


@pytest.mark.slow
def test_a_healthy_ddp_setup_is_acquitted(records):
    rec = records["healthy"]
    assert rec.finding_key == "healthy"
    assert rec.verdict().startswith("CONVICTION: NONE")
    said = rec.rows["conviction"]["text"]
    assert "the ranks' parameters differ by 0 at most over" in said
    assert "0% of rank 0's rows" in said and "changes from epoch to epoch" in said
    assert {"ranks.report_gap", "ranks.overlap"} <= {m["name"] for m in rec.margins}


@pytest.mark.slow
@pytest.mark.parametrize("bug", list(BUGS))
def test_each_distributed_bug_is_convicted_and_signed_on_two_ranks(records, bug):
    rec = records[bug]
    system, words = SYSTEMS[bug]
    assert rec.finding_key == bug
    assert rec.verdict().startswith(f"CONVICTION: {system}")  # signed on both seeds
    assert words in rec.rows["conviction"]["text"]
    for row in ("intervention", "confirmation"):
        assert rec.rows[row]["data"]["met"] is True


@pytest.mark.slow
@pytest.mark.parametrize("bug", ["forward_through_module", "no_sync_every_step"])
def test_a_skipped_sync_is_seen_in_the_gradients_at_the_check_that_drifted(records, bug):
    said = records[bug].rows["conviction"]["text"]
    assert "ranks diverged between step 0 and step 10: group " in said
    assert "the ranks' gradients already differed at that check (step 10)" in said


@pytest.mark.slow
def test_double_allreduce_is_measured_as_world_size_times_the_gradient(records):
    said = records["double_allreduce"].rows["intervention"]["text"]
    assert "gradient norm is 2 times the one without the hand all-reduce" in said


@pytest.mark.slow
def test_a_loop_without_ddp_is_convicted_but_left_unsigned(records):
    rec = records["no_ddp"]
    assert rec.finding_key == "no_ddp"
    said = rec.rows["conviction"]["text"]
    assert said.startswith("H1 (optimizer/loss): the watch's check: ranks diverged between step")
    assert "of 24 training forwards, 0 went through the DDP wrapper" in said
    with pytest.raises(labkit.TriageRefused, match="intervention is UNKNOWN"):
        rec.verdict()  # labkit cannot wrap the model for the learner: no signature


@pytest.mark.slow
def test_the_same_order_every_epoch_is_told_apart_by_what_the_sampler_said(records):
    said = records["no_set_epoch"].rows["conviction"]["text"]
    assert "the DistributedSampler's epoch was 0 at the start of all 3 epochs" in said
    rec = records["no_shuffle"]
    assert rec.finding_key == "sampler_no_shuffle"  # set_epoch would not help: not suggested
    assert rec.rows["conviction"]["text"].endswith("made with shuffle=False")


@pytest.mark.slow
def test_a_rank_killed_mid_run_ends_in_a_sentence_within_the_timeout(records):
    rec = records["dies"]
    assert rec.finding_key == "rank_failed"
    said = rec.rows["conviction"]["text"]
    assert said.startswith(
        "UNKNOWN: rank 1 exited with code 1 while running dies.train(seed 0) (own arm), "
        "after 3 optimizer steps, without a Python error"
    )
    assert "rank 0 failed while running dies.train(seed 0)" in said
    with pytest.raises(labkit.TriageRefused, match="conviction is UNKNOWN"):
        rec.verdict()
    assert records["dies"].launch_s <= TIMEOUT_S


@pytest.mark.slow
def test_a_hung_rank_ends_in_a_sentence_after_one_collective_timeout():
    rec = labkit.diagnose(RankHangs(), budget_s=30)  # a collective times out after 5 s
    said = rec.rows["conviction"]["text"]
    assert said.startswith(
        "UNKNOWN: rank 1 hung while running RankHangs.train(seed 0) (own arm), after 3 "
        "optimizer steps (no optimizer step for longer than the 5 s collective timeout): "
        "labkit stopped it once another rank had stopped"
    )
    assert "rank 0 failed while running RankHangs.train(seed 0)" in said
    assert rec.launch_s <= 30


def test_world_size_must_be_a_whole_number_of_ranks():
    for bad in (0, True, 2.0, 9, "2"):
        setup = DDPSetup()
        setup.world_size = bad
        with pytest.raises(ValueError, match=f"DDPSetup.world_size={bad!r}: give a whole number"):
            labkit.diagnose(setup)


class InMain(DDPSetup):
    pass


def test_a_setup_the_ranks_cannot_import_is_refused_with_the_fix():
    InMain.__module__ = "__main__"  # as a class written in a notebook cell is
    with pytest.raises(TypeError, match="defined in __main__.*from my_setup import InMain"):
        pickled({"main": InMain()})
    from_path = load(f"{own_setups.ddp.__file__}:DDPSetup")  # as `labkit diagnose --setup` does
    with pytest.raises(TypeError, match="loaded from a file path.*PYTHONPATH"):
        pickled({"path": from_path})
    setup = DDPSetup()
    setup.hook = lambda: None
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickled({"lambda": setup})
    assert pickle.loads(pickled({"plain": DDPSetup()}))[0][0] == "plain"
