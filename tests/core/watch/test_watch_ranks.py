"""`labkit.watch` and the distributed zoo on two real gloo ranks under DDP: the watch sees
through the wrapper, compares the ranks every `check_every` steps, stays silent on a healthy
run of 500 steps, and names each drift; every bug of `labkit.bugs.ddp` shows its symptom.
The two ranks start once (`labkit.learn.lessons.ranks`) and train every run in turn."""

import re
import time

import pytest
import torch

import labkit
from labkit.bugs.ddp import DDP_BUGS
from labkit.core.watch import ranks as watch_ranks
from labkit.learn.lessons.ranks import train_two_ranks

EVERY = 50


@pytest.fixture(scope="module")
def ranks():
    return train_two_ranks(
        {name: 500 if name == "healthy" else 120 for name in DDP_BUGS}, every=EVERY
    )


def test_a_healthy_ddp_run_of_500_steps_has_no_finding_and_equal_ranks(ranks):
    for result in ranks["healthy"]:
        assert result["groups"] == ["0", "1", "3"]  # the learner's names, not DDP's module.0
        assert result["findings"] == [] and result["max_param_diff"] == 0.0
        assert [c["step"] for c in result["checks"]] == list(range(0, 501, EVERY))
        assert all(d == 0.0 for c in result["checks"] for d in c["max_rel_diff"].values())
        assert all(c["buffers_rel_diff"] == 0.0 for c in result["checks"][:-1])
        assert result["steps"] == 500 and result["reported_gap"] == 0.0


@pytest.mark.parametrize("bug", ["forward_through_module", "no_sync_every_step"])
def test_skipped_gradient_sync_is_caught_within_one_check(ranks, bug):
    rank0, rank1 = ranks[bug]
    assert rank0["max_param_diff"] > 1e-2  # the ranks really drifted apart
    assert rank0["findings"] == rank1["findings"]
    said = rank0["findings"][0]
    assert said.startswith(f"ranks diverged between step 0 and step {EVERY}: group ")
    assert "gradients differ too" in said and "DDP's gradient sync was skipped" in said
    first = rank0["checks"][1]
    assert (
        first["grads_differ"] and max(first["max_rel_diff"].values()) > 100 * watch_ranks.TOLERANCE
    )


def test_buffers_not_broadcast_drift_while_the_parameters_agree(ranks):
    rank0, _ = ranks["buffers_not_broadcast"]
    assert rank0["max_param_diff"] == 0.0 and len(rank0["findings"]) == 1
    assert rank0["findings"][0].startswith(
        "ranks' buffers (running statistics such as "
        f"BatchNorm's) diverged between step 0 and step {EVERY}"
    )
    assert "while their parameters still agree" in rank0["findings"][0]
    assert rank0["checks"][1]["buffers_rel_diff"] > 100 * watch_ranks.TOLERANCE


def test_the_bugs_no_consistency_check_can_see_show_their_own_symptom(ranks):
    healthy = ranks["healthy"][0]
    orders = ranks["no_set_epoch"][0]["epoch_orders"]
    assert len(orders) >= 3 and all(o == orders[0] for o in orders)  # the same order every epoch
    assert len({tuple(o) for o in healthy["epoch_orders"][:3]}) == 3  # set_epoch reshuffles
    doubled = ranks["double_allreduce"][0]["update_norm_0"] / healthy["update_norm_0"]
    assert abs(doubled - 2.0) < 1e-4  # world-size times the step, from the first one
    local = ranks["local_reported_loss"]
    assert local[0]["reported_gap"] > 1e-3 and local[1]["reported_gap"] > 1e-3
    for bug in ("no_set_epoch", "double_allreduce", "local_reported_loss"):
        assert ranks[bug][0]["findings"] == [] and ranks[bug][0]["max_param_diff"] == 0.0


def test_a_rank_that_never_steps_ends_the_checks_with_a_sentence_not_a_hang(tmp_path):
    """The checks go on the watch's own group, without waiting inside a step: rank 1, which
    never calls optimizer.step(), never sends one, and rank 0 says so at close."""
    import json

    import torch.multiprocessing as mp

    from own_setups.ddp_watch import rank_zero_only_steps

    out = str(tmp_path / "said")
    # forked from this worker (torch and labkit already imported, one torch thread): the
    # ranks start in a fraction of the seconds two fresh imports take under "spawn"
    args = (str(tmp_path / "rdv"), out, 5.0)
    ranks = mp.start_processes(
        rank_zero_only_steps, args=args, nprocs=2, start_method="fork", join=False
    )
    deadline = time.monotonic() + 60
    while not ranks.join(timeout=1):
        if time.monotonic() > deadline:
            for p in ranks.processes:
                p.kill()
            pytest.fail("the two ranks did not end within 60 s: the watch's checks hung")
    rank0, rank1 = (json.loads((tmp_path / f"said.{r}.json").read_text()) for r in (0, 1))
    assert (rank0["steps"], rank1["steps"]) == (40, 0)
    assert len(rank0["findings"]) == 1 and rank0["findings"][0].startswith(
        "the other ranks did not answer this rank's check at step 10 ("
    )
    # when rank 0 learns it (at a later step, or at close) follows the two ranks' timing
    assert re.search(
        r"this rank made (\d+); optimizer\.step\(\) on some ranks", rank0["findings"][0]
    )
    assert rank0["s"] < 30
    assert rank1["findings"] == []  # it sent no check: nothing went unanswered


def test_one_process_has_no_rank_check_and_a_wrapper_is_seen_through():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    wrapped = torch.nn.DataParallel(model)  # the same .module attribute as DDP, no process group
    w = labkit.watch(wrapped, torch.optim.SGD(model.parameters(), lr=0.1))
    assert list(w.groups) == ["0"] and "ranks" not in w.describe()
    w.close()
    with pytest.raises(ValueError, match="check_every=0: give a whole number of steps, 1 or more"):
        labkit.watch(model, torch.optim.SGD(model.parameters(), lr=0.1), check_every=0)
    with pytest.raises(
        ValueError,
        match="bug='no_set_epok' is not in the distributed zoo.*Did you mean 'no_set_epoch'",
    ):
        train_two_ranks("no_set_epok")
