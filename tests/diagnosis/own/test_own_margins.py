"""The threshold comparisons a triage logs (labkit.diagnosis.own.margins), and the rebound that
the edge-of-stability rule reads (own.flow.rebound): both without training."""

import math

from labkit.diagnosis.own.step4_h1.unsettled import rebound, smoothed
from labkit.diagnosis.own.margins import above, below, closest, distance, recording


def test_a_comparison_answers_as_the_operator_and_is_logged_only_while_recording():
    assert (
        above("x", 2.0, 1.0) is True and below("x", 2.0, 1.0) is False
    )  # nothing recording: no error
    with recording() as log:
        assert above("a", 3.0, 2.0, seed=0) is True
        assert below("b", 3.0, 2.0, seed=1) is False
        assert above("c", 2.0, 2.0) is False  # strict, as `>`
    assert [(e["name"], e["seed"], e["outcome"]) for e in log] == [
        ("a", 0, True),
        ("b", 1, False),
        ("c", None, False),
    ]
    with recording() as other:
        pass
    assert (
        other == [] and len(log) == 3
    )  # a second recording starts empty and leaves the first alone


def test_distance_is_relative_to_the_limit_and_infinite_off_the_reals():
    assert math.isclose(distance({"value": 1.1, "limit": 1.0}), 0.1)
    assert math.isclose(distance({"value": 0.0, "limit": 4.0}), 1.0)
    assert distance({"value": math.nan, "limit": 1.0}) == math.inf
    assert distance({"value": 1.0, "limit": None}) == math.inf
    log = [{"value": v, "limit": 1.0} for v in (5.0, 1.01, 0.5, math.inf)]
    assert [e["value"] for e in closest(log, 2)] == [1.01, 0.5]


def test_rebound_is_one_for_a_falling_loss_and_reads_the_climb_back_over_its_best():
    falling = [2.0 / (1 + i) for i in range(60)]
    assert rebound(falling) == 1.0
    climbs = (
        [1.0] * 20 + [0.1] * 20 + [1.0] * 20
    )  # the 10-step mean falls to 0.1, then climbs to 1.0
    assert math.isclose(rebound(climbs), 10.0)
    spike = [1.0] * 30 + [5.0] + [1.0] * 29  # one noisy batch moves a 10-step mean by 40%
    assert math.isclose(rebound(spike), 1.4)
    assert rebound([1.0, 0.5, math.nan, 0.4]) == math.inf


def test_smoothed_is_the_moving_mean_and_stays_infinite_after_a_non_finite_loss():
    assert smoothed([2.0, 4.0, 6.0], window=2) == [2.0, 3.0, 5.0]
    assert smoothed([1.0, math.inf, 1.0], window=2) == [1.0, math.inf, math.inf]
    rising = [1.0 + 0.1 * i for i in range(40)]  # a maximised loss: it never dips below its start
    means = smoothed(rising)
    assert min(means) / means[0] == 1.0 and rebound(rising) > 2  # climbs, but never learned first
