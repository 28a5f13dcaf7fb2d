"""The helpers of `18_distributed` on two real gloo ranks, started once: DDP averages the
gradients in backward bucket by bucket, `no_sync()` left on the last micro-batch keeps the
ranks equal and never left lets them drift, each zoo bug fails its own items of the
distributed checklist, and a sketch sealed before the launch scores against each rank's loss.
The launch takes 10 to 20 s on two cores, so the tests that read it are in the slow tier (nbval
runs the same launch in the notebook)."""

import gc

import pytest

from labkit.forecast import Forecast
from labkit.learn.lessons import distributed

BUGS = ("healthy", "forward_through_module", "no_set_epoch", "buffers_not_broadcast")
STEPS = 40


@pytest.fixture(scope="module")
def sealed():
    return Forecast([[0, 1.4], [STEPS - 1, 0.8]]).seal(
        distributed.setup_hash("forward_through_module", STEPS)
    )


@pytest.fixture(scope="module")
def launched(sealed):  # after the seal, as in the notebook
    return distributed.launch(BUGS, steps=STEPS, every=20)


@pytest.mark.slow
def test_ddp_averages_the_gradients_in_backward_bucket_by_bucket(launched):
    for a in launched["anatomy"]:
        assert a["vs_mean"] == 0.0 and a["vs_own"] > 0.01  # the mean, not its own gradient
        assert a["vs_one_process"] < 1e-6  # one process on the whole global batch
        assert [b["params"] for b in a["buckets"]] == [
            ["2.bias", "2.weight"],
            ["0.bias", "0.weight"],
        ]
        assert all(b["in_backward"] for b in a["buckets"])
    assert launched["anatomy"][0]["losses"][0] != launched["anatomy"][0]["losses"][1]


@pytest.mark.slow
def test_no_sync_left_on_the_last_micro_batch_keeps_the_ranks_equal(launched):
    for leave, never in zip(*launched["accumulate"].values()):
        assert leave["allreduces"] == leave["steps"] and leave["max_param_diff"] == 0.0
        assert never["allreduces"] == 0 and never["max_param_diff"] > 0.01


@pytest.mark.slow
def test_each_bug_fails_its_own_items_of_the_distributed_checklist(launched):
    failed = {
        bug: [k for k, v in pair[0]["at_end"]["status"].items() if v == "FAIL"]
        for bug, pair in launched["runs"].items()
    }
    assert failed == {
        "healthy": [],
        "forward_through_module": ["same_parameters", "same_buffers", "gradients_averaged"],
        "no_set_epoch": ["sampler_epoch"],
        "buffers_not_broadcast": ["same_buffers"],
    }
    for pair in launched["runs"].values():  # the audit put back what it touched
        assert pair[0]["at_end"]["status"] == pair[1]["at_end"]["status"]


@pytest.mark.slow
def test_a_sketch_sealed_before_the_launch_scores_against_each_ranks_loss(launched, sealed):
    runs = distributed.rank_runs(launched, "forward_through_module")
    assert list(runs) == ["rank 0", "rank 1"]
    assert runs["rank 0"].table["loss_raw"] != runs["rank 1"].table["loss_raw"]
    assert sealed.score(runs["rank 1"]).shape_actual in ("descending", "spiky")
    late = Forecast([[0, 1.4]]).seal(distributed.setup_hash("forward_through_module", STEPS))
    with pytest.raises(ValueError, match="hindsight"):
        late.score(runs["rank 0"])


@pytest.mark.slow
def test_ranks_started_ahead_and_never_sent_a_plan_exit():
    waiting = distributed.start()
    processes = waiting.context.processes
    del waiting  # dropped unused: it tells the ranks there is nothing to train
    gc.collect()
    for p in processes:
        p.join(timeout=60)
    assert [p.exitcode for p in processes] == [0, 0]


def test_shards_are_disjoint_and_only_set_epoch_reshuffles():
    e0, e1 = distributed.shards(0), distributed.shards(1)
    assert not set(e0[0]) & set(e0[1]) and len(set(e0[0]) | set(e0[1])) == 512
    assert e1[0] != e0[0] and distributed.shards(1, set_epoch=False) == distributed.shards(0)


def test_bad_input_is_a_sentence():
    with pytest.raises(ValueError, match="Did you mean 'healthy'"):
        distributed.launch(("helthy",))
    from labkit.learn.checklist.ranks import audit_ranks

    with pytest.raises(ValueError, match="no process group is running"):
        audit_ranks(None, None)
