"""Every bug in the zoo reproduces its documented symptom, proved from the Run's numbers.

Each signature compares the buggy run with the healthy run on the same seed, on
seeds 0 and 1. The tests are parametrised over the registry: a new bug without a
signature here fails `test_every_registered_bug_has_a_signature`.
"""

import math
import statistics
from functools import cache

import pytest

import labkit
from labkit.bugs import BUGS, STAGES, SYSTEMS, get_bug
from labkit.core.config import Config
from labkit.core.data import make_tokens
from labkit.core.seams import batch_indices

from helpers import chaotic_cases, labkit_cli

SEEDS = (0, 1)
LN10 = math.log(10)


@cache
def healthy(task: str, seed: int, precision: str = "fp32", input_scale: float = 1.0):
    return labkit.train(task=task, seed=seed, precision=precision, input_scale=input_scale)


@cache
def buggy(name: str, seed: int):
    return labkit.train(bug=name, seed=seed)


class _Later:
    """A run trained when a signature first reads it: `all_masked_labels` never reads the
    healthy run, and in the portable pass nothing else on its worker trains that 2-s LM run."""

    def __init__(self, make):
        self._make = make

    def __getattr__(self, name):
        return getattr(self._make(), name)


def col(run, name):
    return run.table[name]


def finite(values):
    return all(v is not None and math.isfinite(v) for v in values)


def tail_mean(values, n=20):
    return statistics.fmean(values[-n:])


# ---- signatures: (bug run, healthy run on the same seed, seed) -> assertions ----------


def sig_detach(run, ok, seed):
    for g in ("backbone.0", "backbone.2"):
        assert col(run, f"grad_norm/{g}") == [None] * len(run)  # None, not 0
        assert set(col(run, f"update_norm/{g}")) == {0.0}
    assert all(v > 0 for v in col(run, "grad_norm/head"))
    assert tail_mean(col(run, "loss_raw")) < LN10 - 0.5  # the head still learns...
    assert tail_mean(col(run, "loss_raw")) > tail_mean(col(ok, "loss_raw")) + 0.8  # ...not enough


def sig_missing_optimizer_params(run, ok, seed):
    assert all(v is not None and v > 0 for v in col(run, "grad_norm/head"))
    assert set(col(run, "update_norm/head")) == {0.0}  # gradient, yet exactly no update
    assert all(v > 0 for v in col(run, "update_norm/backbone.0"))
    assert tail_mean(col(run, "loss_raw")) > LN10 - 0.1


def sig_missing_optimizer_params_head_only(run, ok, seed):
    assert set(col(run, "update_norm/backbone.0")) == {0.0}
    assert all(v > 0 for v in col(run, "grad_norm/backbone.0"))
    assert all(v > 0 for v in col(run, "update_norm/head"))


def sig_zero_lr(run, ok, seed):
    assert set(col(run, "lr")) == {0.0}
    assert set(col(run, "update_norm")) == {0.0}
    assert all(v > 0.1 for v in col(run, "grad_norm"))  # gradients flow normally
    assert max(abs(v - LN10) for v in col(run, "loss_raw")) < 0.05  # flat at ln C


def sig_zero_lr_per_batch_scheduler(run, ok, seed):
    lr = col(run, "lr")
    assert lr[0] == 0.1 and lr[1] == 0.05 and lr[16] < 1e-5  # about 0 by epoch 2
    assert set(col(run, "update_norm")[60:]) == {0.0}
    assert tail_mean(col(run, "loss_raw")) > 2.0


def sig_double_shift(run, ok, seed):
    assert tail_mean(col(run, "loss_raw")) > tail_mean(col(ok, "loss_raw")) + 0.4  # higher floor
    assert run.evals["val_response_loss"][-1] > 2 * ok.evals["val_response_loss"][-1]
    assert col(run, "valid_tokens") == col(ok, "valid_tokens")  # same count, wrong targets


def sig_padding_in_loss(run, ok, seed):
    assert all(b > h for b, h in zip(col(run, "valid_tokens"), col(ok, "valid_tokens")))
    assert tail_mean(col(run, "loss_raw")) < tail_mean(col(ok, "loss_raw")) - 0.2  # easy pads
    lag = [b - h for b, h in zip(run.evals["val_response_loss"], ok.evals["val_response_loss"])]
    assert lag[0] > 0.2 and lag[1] > 0.1  # the tokens that matter learn more slowly


def sig_all_masked_labels(run, ok, seed):
    assert run.first_nonfinite_step() == 0
    assert all(math.isnan(v) for v in col(run, "loss_raw"))
    assert set(col(run, "valid_tokens")) == {0}
    assert set(col(run, "grad_norm")) == {0.0} and set(col(run, "update_norm")) == {0.0}


def sig_fp16_overflow(run, ok, seed):
    nan_step = run.first_nonfinite_step()
    assert nan_step is not None and nan_step >= 10  # healthy at first, then overflow
    scale = col(run, "amp_scale")
    assert scale[-1] < scale[nan_step] / 1e6  # GradScaler skipping and backing off
    skipped = [
        u
        for loss, u in zip(col(run, "loss_raw"), col(run, "update_norm"))
        if not math.isfinite(loss)
    ]
    assert len(skipped) > 50 and set(skipped) == {0.0}  # GradScaler skips every NaN step
    fp32 = labkit.train(bug="fp16_overflow", seed=seed, precision="fp32")  # control
    assert fp32.first_nonfinite_step() is None
    same_setup = healthy("classify", seed, "fp16", 8.0)  # fp16 without the hand-written softmax
    assert same_setup.first_nonfinite_step() is None


def sig_wrong_logging_divisor(run, ok, seed):
    assert col(run, "loss_raw") == col(ok, "loss_raw")  # training itself is untouched
    rep, raw, bid = col(run, "loss_reported"), col(run, "loss_raw"), col(run, "batch_id")
    assert max(rep) < 0.1 and raw[0] - raw[-1] > 1.5  # tiny, flat-looking vs real descent
    for i in range(len(run)):
        epoch_sum = sum(raw[i - bid[i] : i + 1])
        assert rep[i] == pytest.approx(epoch_sum / 500)


def sig_stale_log(run, ok, seed):
    assert col(run, "loss_raw") == col(ok, "loss_raw")
    assert set(col(run, "loss_reported")) == {col(run, "loss_raw")[0]}
    assert col(run, "loss_reported")[0] == pytest.approx(LN10, abs=0.01)
    assert tail_mean(col(run, "loss_raw")) < 0.5


def sig_lr_too_high(run, ok, seed):
    nan_step = run.first_nonfinite_step()
    assert nan_step is not None and nan_step <= 20
    before = [g for g in col(run, "grad_norm")[:nan_step] if g is not None]
    assert max(before) > 1e3 * col(ok, "grad_norm")[0]  # explosion precedes the NaN
    assert col(run, "lr")[0] == pytest.approx(30.0)


def sig_missing_step(run, ok, seed):
    assert set(col(run, "lr")) == {0.1}
    assert set(col(run, "update_norm")) == {0.0}
    assert all(v > 0.1 for v in col(run, "grad_norm"))
    assert max(abs(v - LN10) for v in col(run, "loss_raw")) < 0.05


def sig_loss_from_item(run, ok, seed):
    for g in run.groups:
        assert col(run, f"grad_norm/{g}") == [None] * len(run)
    assert col(run, "grad_norm") == [None] * len(run)
    assert max(abs(v - LN10) for v in col(run, "loss_raw")) < 0.05


def sig_double_softmax(run, ok, seed):
    assert tail_mean(col(run, "loss_raw")) > tail_mean(col(ok, "loss_raw")) + 1.5
    assert statistics.fmean(col(run, "grad_norm")[:50]) < 0.25 * statistics.fmean(
        col(ok, "grad_norm")[:50]
    )
    assert min(col(run, "loss_raw")) > math.log(1 + 9 / math.e) - 0.01  # the 1.46 floor


def sig_missing_zero_grad(run, ok, seed):
    g = col(run, "grad_norm")
    assert statistics.median(g[-50:]) > 10 * statistics.median(g[:10])
    assert max(col(ok, "grad_norm")) < 5 * col(ok, "grad_norm")[0]  # healthy stays in range
    assert tail_mean(col(run, "loss_raw")) > LN10


def sig_shuffled_labels(run, ok, seed):
    assert run.evals["val_acc"][-1] < 0.3 and ok.evals["val_acc"][-1] > 0.95
    assert tail_mean(col(run, "loss_raw")) > 2.1
    assert min(col(run, "grad_norm")) > 0.05  # flow is healthy: no signal, not no flow


def sig_constant_inputs(run, ok, seed):
    assert abs(tail_mean(col(run, "loss_raw")) - LN10) < 0.03  # the balanced class prior
    assert run.evals["val_acc"][-1] <= 0.2
    assert col(run, "grad_norm")[0] > 0.1


def sig_nan_in_inputs(run, ok, seed):
    from labkit.bugs.h2.nan_in_inputs import CORRUPT_ROW

    cfg = Config(seed=seed)
    first = next(
        s
        for s in range(len(run))
        if CORRUPT_ROW in batch_indices(cfg, 1024, *divmod(s, 16)).tolist()
    )
    assert run.first_nonfinite_step() == first
    assert col(run, "loss_raw")[:first] == col(ok, "loss_raw")[:first]  # identical until then
    assert all(math.isnan(v) for v in col(run, "loss_raw")[first:])


SIGNATURES = {name[4:]: fn for name, fn in globals().items() if name.startswith("sig_")}
CASES = list(BUGS) + ["missing_optimizer_params:head_only", "zero_lr:per_batch_scheduler"]


def test_every_registered_bug_has_a_signature():
    missing = [n for n in BUGS if n not in SIGNATURES]
    assert not missing, f"bugs without a signature test: {missing}"
    for name, bug in BUGS.items():
        for variant in bug.variants:
            assert f"{name}_{variant}" in SIGNATURES, f"variant {name}:{variant} has no signature"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", chaotic_cases(CASES))
def test_bug_reproduces_its_signature(name, seed):
    run = buggy(name, seed)
    ok = _Later(lambda: healthy(run.config["task"], seed))
    assert run.meta["bug"] == name
    SIGNATURES[name.replace(":", "_")](run, ok, seed)


@pytest.mark.parametrize("name", list(BUGS))
def test_bug_documents_itself(name):
    bug = get_bug(name)
    for part in ("Symptom:", "Mechanism:", "Fix:", "Stage:", "System:", "Taught in:"):
        assert part in bug.doc, f"{name}: docstring lacks {part}"
    assert bug.system in SYSTEMS and bug.stage in STAGES
    assert f"System: {bug.system}" in " ".join(bug.doc.split())


def test_zoo_covers_every_system_and_stage():
    assert {b.system for b in BUGS.values()} == set(SYSTEMS)
    assert {b.stage for b in BUGS.values()} == set(STAGES)
    assert len(BUGS) >= 16


def test_a_bug_replaces_exactly_one_seam():
    base = labkit.Seams()
    for bug in BUGS.values():
        patched = bug.patch(base)
        changed = [
            s
            for s in ("data", "model", "optimizer", "forward", "loss", "backward", "step", "log")
            if getattr(patched, s) is not getattr(base, s)
        ]
        assert changed == [bug.seam], bug.name


def test_unknown_bug_is_refused_with_a_suggestion():
    with pytest.raises(ValueError, match="unknown bug 'detatch'; did you mean 'detach'"):
        labkit.train(bug="detatch")
    with pytest.raises(ValueError, match="no variant 'head'.*Did you mean 'head_only'"):
        get_bug("missing_optimizer_params:head")
    with pytest.raises(ValueError, match="bug 'double_shift' needs task='lm'"):
        labkit.train(Config(), bug="double_shift")


@pytest.mark.slow
def test_cli_lists_bugs_and_refuses_unknown_names():
    import json

    rc, out, _ = labkit_cli("bugs", "--json")
    listed = json.loads(out)
    assert [b["name"] for b in listed] == list(BUGS)
    assert set(listed[0]) >= {"name", "system", "stage", "symptom"}
    rc, text, _ = labkit_cli("bugs")
    assert rc == 0 and "detach" in text and "H3 instrumentation" in text
    from labkit.bugs.ddp import DDP_BUGS  # the distributed zoo too, with how to run it

    tail = text.split("Distributed (")[1]
    assert "labkit drill --distributed" in tail and "18_distributed" in tail
    assert all(name in tail for name in DDP_BUGS if name != "healthy")
    rc, _, err = labkit_cli("run", "--bug", "detatch", process=True)  # as a shell sees it
    assert rc == 2 and "did you mean 'detach'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_all_masked_guard_catches_what_pytorch_turns_into_nan():
    from labkit.bugs.h2.all_masked_labels import data_all_masked
    from labkit.core.guards import require_supervised_tokens

    data = data_all_masked(Config(task="lm"))
    with pytest.raises(ValueError, match="no supervised tokens"):
        require_supervised_tokens(data.train["labels"][:32])
    assert require_supervised_tokens(make_tokens().train["labels"][:32]) > 0
