"""labkit.diagnose on distributed setups (world_size = 2): plain PyTorch DDP code
(`own_setups.ddp`) triaged on two gloo ranks that labkit launches itself. Every setup shares
one launch (the expensive part); the setup whose rank 1 dies comes last, so that its death
ends the launch and every other setup's evidence is already in. The one-process bugs inside
DDP (`SINGLE`) ride in the same launch; their healthy twin is `DDPSetup`. One more launch runs
a learner's fix (`record.intervene`), one the hung rank."""

import pickle
import sys
import types

import pytest

import labkit
import own_setups.ddp
from labkit.diagnosis.own.step1_capture.launch import by_path, pickled
from labkit.diagnosis.own.step1_capture.setup import load
from labkit.diagnosis.finding import Finding
from labkit.diagnosis.own.step4_h1.drift import unanswered_rule
from labkit.diagnosis.own.step6_decide.ranks import first, triage_ranks
from own_setups.ddp_second import BUGS as SECOND_BUGS, HEALTHY as SECOND_HEALTHY
from own_setups.ddp import (
    BUGS,
    SINGLE,
    DDPSetup,
    FixedDivisor,
    NoDDP,
    NoShuffle,
    RankDies,
    RankHangs,
)

TIMEOUT_S = 120  # the whole launch
SYSTEMS = {
    "forward_through_module": ("H1", "ddp.module"),
    "no_sync_every_step": ("H1", "no_sync()"),
    "no_set_epoch": ("H2", "set_epoch"),
    "double_allreduce": ("H1", "2 times too large"),
    "local_reported_loss": ("H3", "local value"),
    "buffers_not_broadcast": ("H1", "broadcast_buffers=False"),
}
ONE_PROCESS = {  # bug: (system, mechanism's key, its words)
    "missing_layer": ("H1", "not_in_optimizer", "3 is not in the optimizer: gradients arrive"),
    "zero_lr": ("H1", "lr_zero", "the learning rate is 0 at every step"),
    "wrong_divisor": ("H3", "divisor", "a constant divisor"),
}


@pytest.fixture(scope="module")
def records():
    setups = {"healthy": DDPSetup(), **{k: cls() for k, cls in BUGS.items()}}
    setups.update({k: cls() for k, cls in SINGLE.items()})
    setups.update({k: cls() for k, cls in {**SECOND_HEALTHY, **SECOND_BUGS}.items()})
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
def test_the_acquittal_lists_the_one_process_checks_run_and_those_not_run(records):
    said = records["healthy"].rows["conviction"]["text"]
    assert "The one-process checks found no defect (checked: the logger on every rank, the" in said
    assert "the label-shuffle control, held tensors that never move): every rank's report" in said
    assert "the labels carry signal" in said
    assert "frozen parameters, tensors the loss depends on that no optimizer steps" in said
    assert "the same loop on your model re-initialised by PyTorch's defaults reaches" in said
    assert said.endswith(
        "; not checked at world_size > 1: the overfit-64 gate (labkit's Adam on 64 of your examples)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("bug", list(SINGLE))
def test_a_one_process_bug_inside_ddp_is_convicted_with_its_mechanism(records, bug):
    system, key, words = ONE_PROCESS[bug]
    rec = records[bug]
    assert rec.finding_key == key  # the healthy twin, DDPSetup, is acquitted (above)
    said = rec.rows["conviction"]["text"]
    assert said.startswith(f"{system} (") and words in said


@pytest.mark.slow
@pytest.mark.parametrize("bug", ["missing_layer", "zero_lr"])
def test_an_optimizer_bug_inside_ddp_is_signed_by_labkits_plain_loops(records, bug):
    rec = records[bug]
    assert rec.verdict().startswith("CONVICTION: H1")
    for row in ("intervention", "confirmation"):
        assert rec.rows[row]["data"]["met"] is True


@pytest.mark.slow
def test_a_logger_fix_runs_on_the_ranks_against_the_sealed_forecast(records):
    rec = records["wrong_divisor"]
    assert "divided by 4 at every report instead of 1" in rec.rows["conviction"]["text"]
    with pytest.raises(labkit.TriageRefused, match="intervention is UNKNOWN"):
        rec.verdict()  # labkit cannot change the learner's logger: the fix signs it
    assert rec.forecast.text.startswith("loss_reported > ")
    assert rec.intervene(FixedDivisor()).startswith("CONVICTION: H3")
    for row in ("intervention", "confirmation"):
        assert rec.rows[row]["data"]["met"] is True
    assert rec.notes[-1].startswith("signed by your fix (FixedDivisor), run on 2 ranks")


@pytest.mark.slow
def test_a_fix_that_cannot_be_judged_is_refused_before_any_launch(records):
    with pytest.raises(labkit.TriageRefused, match="there is no conviction to test"):
        records["healthy"].intervene(DDPSetup())
    rec = records["missing_layer"]
    with pytest.raises(TypeError, match="fixed_setup is the class DDPSetup"):
        rec.intervene(DDPSetup)
    three = DDPSetup()
    three.world_size = 3
    with pytest.raises(ValueError, match="world_size=3: the setup was diagnosed on 2 ranks"):
        rec.intervene(three)


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


SECOND = {  # the second set, written after the zoo and its rules: (system, key, words)
    "lr_depends_on_rank": ("H1", "optimizer_differs_per_rank", "lr: 0.05 on rank 0, 0.1 on rank 1"),
    "step_on_rank_zero_only": ("H1", "steps_apart", "rank 0 made 24, rank 1 made 0"),
    "same_sampler_on_every_rank": ("H2", "ranks_same_data", "100% of rank 0's rows in epoch 0"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SECOND_HEALTHY))
def test_ddp_features_used_as_documented_are_acquitted(records, name):
    rec = records[name]  # no_sync() for accumulation, an LR scaled by world size, clipping
    assert rec.finding_key == "healthy" and rec.verdict().startswith("CONVICTION: NONE")
    assert "the ranks' parameters differ by 0 at most over" in rec.rows["conviction"]["text"]


@pytest.mark.slow
def test_the_effective_batch_counts_the_rows_of_every_micro_batch_of_a_step(records):
    assert (
        "16 + 16 = 32 rows per optimizer step"
        in records["ok_accumulate_with_no_sync"].rows["baseline"]["text"]
    )  # two micro-batches of 8 per rank: 32 rows a step, not the 16 of one forward


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SECOND))
def test_the_second_sets_bugs_are_convicted_with_their_mechanism(records, name):
    system, key, words = SECOND[name]
    rec = records[name]
    assert rec.finding_key == key
    said = rec.rows["conviction"]["text"]
    assert said.startswith(f"{system} (") and words in said


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


def test_the_first_system_wins_h3_then_h2_then_h1_the_distributed_finding_on_a_tie():
    drift, data, lr0 = (Finding(s, k, "") for s, k in (("H1", "drift"), ("H2", "x"), ("H1", "lr")))
    report = Finding("H3", "divisor", "")
    assert first(drift, report) is report  # a dishonest report before drifting ranks
    assert first(drift, data) is data
    assert first(drift, lr0) is drift  # the same system: the distributed finding
    assert first(None, lr0) is lr0 and first(drift, None) is drift
    assert first(None, Finding("NONE", "healthy", "")) is None
    unknown = Finding("UNKNOWN", "unknown", "")
    assert first(drift, unknown) is drift and first(None, unknown) is unknown


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
    from_path = load(f"{own_setups.ddp.__file__}:DDPSetup")  # as `labkit triage --setup` does
    module = type(from_path).__module__
    assert by_path([from_path]) == [(module, own_setups.ddp.__file__)]  # each rank loads it so
    assert pickle.loads(pickled({"path": from_path}))[0][0] == "path"
    made = types.ModuleType("made_in_memory")  # no file a rank could load it from
    exec("class InMemory:\n    pass", made.__dict__)
    made.InMemory.__module__ = made.__name__
    sys.modules[made.__name__] = made
    try:
        with pytest.raises(TypeError, match="has no file.*define the class in a module file"):
            pickled({"made": made.InMemory()})
    finally:
        del sys.modules[made.__name__]
    setup = DDPSetup()
    setup.hook = lambda: None
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickled({"lambda": setup})
    assert pickle.loads(pickled({"plain": DDPSetup()}))[0][0] == "plain"


def test_checks_left_unanswered_make_the_ranks_unknown_not_acquitted():
    said = (
        "the other ranks did not answer this rank's check at step 10 (waited 10 s; 1 check(s) "
        "unanswered): either the ranks did not make the same number of optimizer steps ..."
    )
    quiet = {"findings": []}
    found = unanswered_rule({0: [{"findings": [said]}, quiet], 1: [quiet, quiet]})
    assert (found.system, found.key) == ("UNKNOWN", "checks_unanswered") and said in found.mechanism
    assert unanswered_rule({0: [quiet, quiet], 1: [quiet, quiet]}) is None
