"""Distributed mysteries in the drill (`labkit drill --distributed`): every entry of the
distributed zoo on two real gloo ranks, from ONE launch shared by the module (each entry on
seeds 0 and 1, 32 steps: two epochs, the watch's checks at steps 0, 16 and 32). Each probe's
outcome is asserted against the healthy loop's, so every assertion changes when the bug is
removed; the facts asserted are exact zeros (DDP keeps the ranks equal bit for bit),
orderings and a factor of 2 with margins. The tests that read the launch are slow (it takes
5 to 20 s on two cores, most of it starting the processes)."""

import pytest

from helpers import labkit_cli
from labkit.bugs.ddp import DDP_BUGS
from labkit.core.ddp_loop import first_update_one_process as reference
from labkit.learn.drill.log import DrillLog
from labkit.learn.drill.ranks import RankCase, RankMystery, draw_ranks, rank_seed_for
from labkit.learn.drill.ranks.book import ANSWERS, KEY_TERMS, MENU, OUTCOMES, PATHS
from labkit.learn.drill.ranks.launch import launch
from labkit.learn.drill.ranks.mystery import SYSTEMS
from labkit.learn.drill.ranks.probes import answer
from labkit.learn.drill.session import Drill
from labkit.learn.drill.stats import stats_lines

NAMES = list(DDP_BUGS)
STEPS = 32
CHEAP = ("reported_vs_mean", "rank_losses", "rank_check", "epoch_order", "first_update")


@pytest.fixture(scope="module")
def launched():
    lines = []
    runs = [(n, s, STEPS) for n in NAMES for s in (0, 1)]
    got = launch(runs, progress=lines.append, meanwhile=lambda: [reference(s) for s in (0, 1)])
    return {(n, s): pair for (n, s, _), pair in zip(runs, got)}, lines


@pytest.fixture(scope="module")
def cases(launched):
    """A case per entry of the zoo, on the module's launch (each computes its one-process
    reference once)."""
    runs, _ = launched
    return {
        n: RankCase(
            RankMystery(seed=0, name=n, run_seed=0),
            runs={0: runs[n, 0], 1: runs[n, 1]},
            steps=STEPS,
        )
        for n in NAMES
    }


@pytest.fixture(scope="module")
def outcomes(cases):
    return {n: {p: answer(cases[n], p).outcome for p in MENU} for n in NAMES}


@pytest.mark.slow
def test_one_launch_trains_every_run_and_says_so_as_it_goes(launched):
    runs, lines = launched
    assert len(runs) == 2 * len(NAMES)
    assert lines[0].startswith("starting two gloo ranks") and "14 run(s)" in lines[0]
    assert "both ranks started" in lines[1]
    assert [line.split(" trained")[0].strip() for line in lines[2:]] == [
        f"run {i} of 14" for i in range(1, 15)
    ]
    for pair in runs.values():
        assert [r["rank"] for r in pair] == [0, 1] and all(r["steps"] == STEPS for r in pair)


@pytest.mark.slow
def test_each_path_shows_its_outcomes_and_each_bug_differs_from_healthy(outcomes):
    for name, paths in PATHS.items():
        for path in paths:
            for probe, outcome in path:
                assert outcomes[name][probe] == outcome, (name, probe)
        last, shown = paths[0][-1]
        if name != "healthy":  # the probe that convicts the bug says otherwise without it
            assert outcomes["healthy"][last] != shown, name
    assert outcomes["healthy"] == {
        "reported_vs_mean": "agree",
        "rank_losses": "fall",
        "rank_check": "equal",
        "epoch_order": "reshuffled",
        "first_update": "matches",
        "second_seed": "same",
    }
    assert all(o["second_seed"] == "same" for o in outcomes.values())  # not a fluke of a seed


@pytest.mark.slow
def test_every_probe_reads_otherwise_with_some_bug(cases):
    healthy = {p: answer(cases["healthy"], p).lines for p in MENU}
    for probe in MENU:
        assert any(answer(cases[n], probe).lines != healthy[probe] for n in NAMES[1:]), probe
    # a report from one rank leaves the training as it was: each rank's own curve is the same
    assert answer(cases["local_reported_loss"], "rank_losses").lines == healthy["rank_losses"]


@pytest.mark.slow
def test_rank_check_exact_zeros_under_ddp_and_drift_without_sync(launched, cases):
    runs, _ = launched
    for name in ("healthy", "no_set_epoch", "double_allreduce", "local_reported_loss"):
        for r in runs[name, 0]:
            assert r["max_param_diff"] == 0.0, name
            assert all(v == 0.0 for c in r["checks"] for v in c["max_rel_diff"].values())
            assert all(c.get("buffers_rel_diff", 0.0) == 0.0 for c in r["checks"])
    for name in ("forward_through_module", "no_sync_every_step"):
        r = runs[name, 0][0]
        assert r["max_param_diff"] > 1e-3 and r["checks"][1]["grads_differ"]
    b = runs["buffers_not_broadcast", 0][0]
    assert b["max_param_diff"] == 0.0 and b["checks"][1]["buffers_rel_diff"] > 1e-3
    healthy = answer(cases["healthy"], "rank_check").lines
    drift = answer(cases["forward_through_module"], "rank_check").lines
    assert healthy[-1] == "watch: no finding"
    assert any(line.startswith("watch: ranks diverged") for line in drift)


@pytest.mark.slow
def test_first_update_twice_one_process_when_summed_again(launched, cases):
    runs, _ = launched
    healthy, double = runs["healthy", 0], runs["double_allreduce", 0]
    for h, d in zip(healthy, double):
        assert 1.99 < d["update_norm_0"] / h["update_norm_0"] < 2.01  # the sum of 2 means
    assert healthy[0]["update_norm_0"] == healthy[1]["update_norm_0"]  # the same step
    skipped = runs["forward_through_module", 0]
    assert skipped[0]["update_norm_0"] != skipped[1]["update_norm_0"]  # each its own shard
    lines = answer(cases["double_allreduce"], "first_update").lines
    assert "x one process" in lines[1] and lines[-1].endswith("norms are equal")


@pytest.mark.slow
def test_reported_loss_of_one_rank_and_epoch_order(launched, cases):
    runs, _ = launched
    for r in runs["healthy", 0]:
        assert r["reported"] == r["mean_loss"]  # the all-reduced mean itself
    local = runs["local_reported_loss", 0]
    for r in local:
        assert r["reported"] == r["local_loss"] and r["reported"] != r["mean_loss"]
    lines = answer(cases["local_reported_loss"], "reported_vs_mean").lines
    assert lines[-1].endswith("the reported value is this rank's own loss at every step")
    for name, repeats in (("healthy", False), ("no_set_epoch", True)):
        for r in runs[name, 0]:
            first, second = r["epoch_orders"]
            assert (first == second) is repeats, name
    r0, r1 = runs["healthy", 0]
    assert not set(r0["epoch_orders"][0]) & set(r1["epoch_orders"][0])  # disjoint shards


@pytest.mark.slow
def test_a_distributed_drill_is_scored_logged_and_counted(cases, tmp_path):
    log = DrillLog(tmp_path / "labkit.sqlite3")
    seed = rank_seed_for("buffers_not_broadcast")
    drill = Drill(RankMystery(seed=seed, name="buffers_not_broadcast", run_seed=0), log=log)
    drill.case = cases["buffers_not_broadcast"]  # the module's launch
    intro = drill.intro_lines()
    assert any(line.startswith("Rank 0's reported training loss") for line in intro)
    drill.state = log.save_session(drill.state)
    assert log.open_session(seed, world=2) and not log.open_session(seed, world=1)
    for line in (
        "hypothesis H1 the ranks' BatchNorm statistics drift",
        "forecast agree",
        "probe reported_vs_mean",
        "forecast buffers differ",
        "probe rank_check",
    ):
        drill.handle(line)
    out = drill.handle("convict H1 broadcast_buffers=False lets each rank keep its own BatchNorm")
    assert out[-1] == "SCORE: 100"
    attempt = log.attempts("drill")[-1]
    assert attempt["world"] == 2 and attempt["bug"] == "buffers_not_broadcast"
    assert attempt["probes"] == ["reported_vs_mean", "rank_check"]
    stats = stats_lines(log.attempts(), str(log.path))
    assert any(line.strip().startswith("ddp:buffers_not_broadcast") for line in stats)


def test_draws_cover_the_zoo_and_keep_their_own_seeds():
    drawn = [draw_ranks(s) for s in range(300)]
    assert {m.name for m in drawn} == set(NAMES)
    assert 20 < sum(m.name == "healthy" for m in drawn) < 70  # about one in seven
    assert (
        draw_ranks(17) == draw_ranks(17) and repr(draw_ranks(17)) == "RankMystery(seed=17, hidden)"
    )
    assert set(PATHS) == set(KEY_TERMS) == set(ANSWERS) == set(SYSTEMS) == set(NAMES)
    for paths in PATHS.values():
        for path in paths:
            assert all(outcome in OUTCOMES[probe] for probe, outcome in path)


def test_cli_answer_and_its_errors(tmp_path):
    seed = rank_seed_for("double_allreduce")
    rc, out, err = labkit_cli(
        "drill", "--distributed", "--answer", "--seed", str(seed), home=tmp_path
    )
    assert rc == 0 and "bug: double_allreduce" in out
    assert "cheapest path: reported_vs_mean (agree) -> first_update (double): 4 credits" in out
    rc, out, err = labkit_cli("drill", "--distributed", "--stats", home=tmp_path)
    assert rc == 2 and "--distributed chooses the kind of mystery" in err
    assert "Traceback" not in err
    with pytest.raises(ValueError, match="bug='nope' is not in the distributed zoo"):
        launch([("nope", 0, STEPS)])
