"""`labkit.watch` on two real gloo ranks under DistributedDataParallel: it sees through the
wrapper, adds a cross-rank check every `check_every` steps, stays silent on a healthy run of
500 steps, and names the drift when the forward skips DDP (through ``ddp.module``).
The two ranks start once (`labkit.learn.lessons.ranks`) and train both runs in turn."""

import pytest
import torch

import labkit
from labkit.core import watch_ranks
from labkit.learn.lessons.ranks import train_two_ranks

EVERY = 50


@pytest.fixture(scope="module")
def ranks():
    return train_two_ranks(("ddp", "module"), steps=500, every=EVERY)


def test_a_healthy_ddp_run_of_500_steps_has_no_finding_and_equal_ranks(ranks):
    for result in ranks["ddp"]:
        assert result["groups"] == ["0", "2"]  # the learner's names, not DDP's module.0
        assert result["findings"] == [] and result["max_param_diff"] == 0.0
        assert [c["step"] for c in result["checks"]] == list(range(0, 501, EVERY))
        assert all(d == 0.0 for c in result["checks"] for d in c["max_rel_diff"].values())
        assert result["table_steps"] == 500


def test_a_forward_through_ddp_module_is_caught_within_one_check(ranks):
    rank0, rank1 = ranks["module"]
    assert rank0["max_param_diff"] > 1e-2  # the ranks really drifted apart
    assert rank0["findings"] == rank1["findings"] and len(rank0["findings"]) == 1
    said = rank0["findings"][0]
    assert said.startswith(f"ranks diverged between step 0 and step {EVERY}: group ")
    assert "gradients differ too" in said and "DDP's gradient sync was skipped" in said
    first = rank0["checks"][1]
    assert first["grads_differ"] and max(first["max_rel_diff"].values()) > 100 * watch_ranks.TOLERANCE


def test_one_process_has_no_rank_check_and_a_wrapper_is_seen_through():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    wrapped = torch.nn.DataParallel(model)  # the same .module attribute as DDP, no process group
    w = labkit.watch(wrapped, torch.optim.SGD(model.parameters(), lr=0.1))
    assert list(w.groups) == ["0"] and "ranks" not in w.describe()
    w.close()
    with pytest.raises(ValueError, match="check_every=0: give a whole number of steps, 1 or more"):
        labkit.watch(model, torch.optim.SGD(model.parameters(), lr=0.1), check_every=0)
