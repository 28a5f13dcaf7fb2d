"""H3 on a learner's own log: honest loggers pass, each common mistake is named."""

import pytest

from labkit import Run
from labkit.diagnosis.own.step2_h3.logger import check_logger

PER_EPOCH, EPOCHS = 5, 4
RAW = [2.3 * 0.93**t + 0.05 * ((t * 7) % 3) for t in range(PER_EPOCH * EPOCHS)]  # descending, noisy


def _run(reported):
    return Run.from_log(
        {"step": list(range(len(RAW))), "loss_raw": RAW, "loss_reported": reported},
        seed=0,
        started_at=0.0,
    )


def _epoch_ends(values):
    return [v if t % PER_EPOCH == PER_EPOCH - 1 else None for t, v in enumerate(values)]


def _sums(start):
    out, total = [], 0.0
    for t, v in enumerate(RAW):
        total = (0.0 if start(t) else total) + v
        out.append(total)
    return out


EPOCH_SUM = _sums(lambda t: t % PER_EPOCH == 0)
RUN_SUM = _sums(lambda t: t == 0)
EPOCH_MEAN = [s / (t % PER_EPOCH + 1) for t, s in enumerate(EPOCH_SUM)]


def _ema(beta=0.9):
    out, e = [], 0.0
    for t, v in enumerate(RAW):
        e = beta * e + (1 - beta) * v
        out.append(e / (1 - beta ** (t + 1)))
    return out


@pytest.mark.parametrize(
    "reported, honest",
    [
        (RAW, "per-batch raw loss"),
        (EPOCH_MEAN, "epoch running mean"),
        (_epoch_ends(EPOCH_MEAN), "epoch running mean"),
        ([s / (t + 1) for t, s in enumerate(RUN_SUM)], "running mean over the run"),
        (_ema(), "exponential moving average of the raw loss"),
    ],
)
def test_honest_loggers_agree(reported, honest):
    result = check_logger(_run(reported), per_epoch=PER_EPOCH)
    assert result.details["agree"] and result.details["matches"].startswith(honest)  # an EMA
    # is named with its beta and correction (h32)


@pytest.mark.parametrize(
    "reported, mechanism, words",
    [
        ([1.7] * len(RAW), "stale", "stuck at 1.7"),
        (
            [EPOCH_MEAN[t - t % PER_EPOCH - 1] if t >= PER_EPOCH else 0.0 for t in range(len(RAW))],
            "stale",
            "repeats a value computed at an earlier step",
        ),
        (
            _epoch_ends([s / 100 for s in EPOCH_SUM]),
            "divisor",
            ("divided by 100 at every report instead of the 5 batches of an epoch"),
        ),
        (_epoch_ends(EPOCH_SUM), "sum", "a sum where a mean was meant"),
        (
            [v * 32 for v in RAW],
            "sum",
            "sum of the per-sample losses (loss x batch size) of this batch",
        ),
        (
            _epoch_ends([s / PER_EPOCH for s in RUN_SUM]),
            "never_reset",
            "an accumulator never reset",
        ),
        (
            [s / (t % PER_EPOCH + 1) for t, s in enumerate(RUN_SUM)],
            "never_reset",
            "an accumulator never reset",
        ),
        (
            [v * (1.1 if t % 2 else 0.9) for t, v in enumerate(RAW)],
            "other_tensor",
            "another tensor",
        ),
        (
            [min(RAW[: t + 1]) for t in range(len(RAW))],
            "running_extreme",
            "the lowest raw loss so far",
        ),
        (
            [e * (1 - 0.9 ** (t + 1)) for t, e in enumerate(_ema())],
            "ema_from_zero",
            "started at 0 and shown without bias correction",
        ),
    ],
)
def test_each_mistake_is_named(reported, mechanism, words):
    result = check_logger(_run(reported), per_epoch=PER_EPOCH, sizes_by_position=[32] * PER_EPOCH)
    assert not result.details["agree"]
    assert result.details["mechanism"] == mechanism and words in result.verdict


def test_a_value_recomputed_after_the_step_is_named_when_the_replay_measured_it():
    after = [v * 0.97 for v in RAW]  # what the loss was on the same batch after the update
    reported = [
        sum(after[t - t % PER_EPOCH : t + 1]) / (t % PER_EPOCH + 1) for t in range(len(RAW))
    ]
    result = check_logger(_run(reported), per_epoch=PER_EPOCH, after_step=after)
    assert result.details["mechanism"] == "after_step" and "after the step" in result.verdict
    assert check_logger(_run(reported), per_epoch=PER_EPOCH).details["mechanism"] == "other_tensor"
