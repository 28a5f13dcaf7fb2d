"""The interview drill: mysteries, probes, the rubric, the session, the log, the CLI."""

import html
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import labkit_cli
from labkit.bugs import BUGS
from labkit.learn.drill.answers import ANSWERS, PARTS
from labkit.learn.drill.case import Case
from labkit.learn.drill.log import DrillConflict, DrillLog
from labkit.learn.drill.menu import MENU, menu_lines
from labkit.learn.drill.mystery import HEALTHY_SHARE, Mystery, draw, mystery_names, seed_for
from labkit.learn.drill.paths import KEY_TERMS, PATHS
from labkit.learn.drill.probes import answer
from labkit.learn.drill.score import MAX, score
from labkit.learn.drill.session import Drill
from labkit.learn.drill.verbal import ELEMENTS, grade, model_answer
from labkit.learn.drill.verbal.cases import CASES
from labkit.learn.drill.words import OUTCOMES, read_outcome

ROOT = Path(__file__).resolve().parents[3]
KEYS = mystery_names() + ["healthy"]
STALE = seed_for("stale_log")  # seed 2: H3, the teammate blames the LR
DISCIPLINED = """hypothesis H3 the logger may not show the optimised loss
forecast the raw loss falls while the reported one stays put: disagree
probe raw_vs_reported
convict H3 the logger reports a stale value read once at the first step
"""
CARELESS = """probe lr_sweep
probe second_seed
convict H1 the learning rate is too low
"""


def cli(stdin: str, *args, home, timeout=180, process=False):
    """`labkit drill ARGS < stdin` (see helpers.labkit_cli: in this process unless the test is
    about the process itself)."""
    rc, out, err = labkit_cli(
        "drill", *args, stdin=stdin, home=home, process=process, timeout=timeout
    )
    return subprocess.CompletedProcess(["labkit", "drill", *args], rc, out, err)


def final_score(out: str) -> int:
    last = out.strip().splitlines()[-1]
    assert last.startswith("SCORE: "), last
    return int(last.split()[1])


def task_of(key):
    return (
        "classify" if key == "healthy" else (BUGS[key.split(":")[0]].setup.get("task", "classify"))
    )


# ---- the mystery ---------------------------------------------------------------------
def test_same_seed_same_mystery_and_about_one_in_six_healthy():
    assert [draw(s) for s in range(50)] == [draw(s) for s in range(50)]
    draws = [draw(s) for s in range(3000)]
    healthy = sum(m.bug is None for m in draws) / len(draws)
    assert abs(healthy - HEALTHY_SHARE) < 0.03
    assert {m.key for m in draws} == set(KEYS)  # every bug and variant comes up
    assert {m.run_seed for m in draws} == {0, 1, 2}
    assert {m.task for m in draws if m.bug is None} == {"classify", "lm"}


def test_a_mystery_echo_hides_the_bug():
    m = draw(STALE)
    assert "stale" not in repr(m) and "H3" not in repr(m)
    assert m.answer()["bug"] == "stale_log"


@pytest.mark.parametrize("key", KEYS)
def test_every_mystery_has_a_path_key_terms_and_an_answer(key):
    assert PATHS[key] and all(path[0][0] == "raw_vs_reported" for path in PATHS[key])
    assert all(
        probe in MENU and outcome in OUTCOMES[probe]
        for path in PATHS[key]
        for probe, outcome in path
    )
    assert len(ANSWERS[key]) == len(PARTS)
    if key != "healthy":  # the zoo's own mechanism line names every key-term group
        from labkit.learn.drill.words import groups_matched

        assert all(groups_matched(Mystery(0, key, task_of(key), 0).mechanism, KEY_TERMS[key]))


PATH_CASES = [
    (key, task, rs)
    for key in PATHS
    for task in (("classify", "lm") if key == "healthy" else (task_of(key),))
    for rs in (0, 1, 2)
]


@pytest.mark.slow
@pytest.mark.parametrize("key,task,run_seed", PATH_CASES)
def test_each_cheapest_path_shows_what_it_says_on_every_run_seed(key, task, run_seed):
    case = Case(Mystery(0, None if key == "healthy" else key, task, run_seed))
    for path in PATHS[key]:
        for probe, outcome in path:
            assert answer(case, probe).outcome == outcome, (probe, path)


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in KEYS if task_of(k) == "classify"] + ["padding_in_loss"])
def test_no_probe_names_the_bug_before_the_conviction(key):
    m = Mystery(0, None if key == "healthy" else key, task_of(key), 0)
    drill = Drill(m)
    text = "\n".join(drill.intro_lines())
    for name in MENU:
        text += "\n".join(drill.handle(f"probe {name}"))
    names = set(BUGS) | {n.split(":")[1] for n in mystery_names() if ":" in n}
    assert not [n for n in names if re.search(rf"\b{n}\b", text)], key


# ---- reading words -------------------------------------------------------------------
def test_forecast_words_longest_match_wins():
    assert read_outcome("raw_vs_reported", "they will disagree") == "disagree"
    assert read_outcome("raw_vs_reported", "they will match") == "agree"
    assert read_outcome("raw_vs_reported", "they don't match") == "disagree"
    assert read_outcome("overfit", "it stalls high") == "stalls"
    assert (
        read_outcome("update_probe", "already zero everywhere") == "zero"
    )  # 'lr' not in 'already'
    assert read_outcome("lr_sweep", "flat at every lr") == "flat"
    assert read_outcome("overfit", "no idea") is None


# ---- the rubric ------------------------------------------------------------------------
def _random_probes(rng, mystery, hypotheses: bool):
    names = rng.sample(list(MENU), rng.randint(0, 5))
    case_outcomes = {n: rng.choice(list(OUTCOMES[n])) for n in names}
    return [
        {
            "name": n,
            "hypothesis": {"system": "H1", "text": "x"} if hypotheses else None,
            "predicted": rng.choice([None, case_outcomes[n]]),
            "outcome": case_outcomes[n],
        }
        for n in names
    ]


def test_a_careless_wrong_conviction_always_scores_below_a_disciplined_right_one():
    rng = random.Random(0)
    for _ in range(300):
        m = draw(rng.randrange(10_000))
        wrong = rng.choice([s for s in ("H1", "H2", "H3", "NONE") if s != m.system])
        careless = score(
            m,
            _random_probes(rng, m, rng.random() < 0.5),
            {"system": wrong, "text": "the learning rate is too low"},
            elapsed_s=rng.uniform(0, 600),
        )
        path = rng.choice(PATHS[m.key])
        disciplined = score(
            m,
            [
                {
                    "name": n,
                    "hypothesis": {"system": m.system, "text": "t"},
                    "predicted": rng.choice([None, o]),
                    "outcome": o,
                }
                for n, o in path
            ],
            {"system": m.system, "text": "nothing relevant"},
            elapsed_s=rng.uniform(0, 3600),
        )
        assert careless.total <= 45 < 60 <= disciplined.total


def test_rubric_parts_add_to_100_and_deduct_for_sweep_first():
    assert sum(MAX.values()) == 100
    m = draw(STALE)
    probes = [{"name": "lr_sweep", "hypothesis": None, "predicted": None, "outcome": "responds"}]
    parts = score(m, probes, {"system": "H3", "text": "stale log"}, elapsed_s=5).as_dict()
    assert parts["order"] == 10 - 5 - 2 - 1 and parts["probes"] < 15 and parts["forecasts"] == 0


def test_time_points_with_and_without_a_clock():
    m, conv = draw(STALE), {"system": "H3", "text": "stale log"}
    assert score(m, [], conv, elapsed_s=60).as_dict()["time"] == 10
    assert score(m, [], conv, elapsed_s=60 * 30).as_dict()["time"] == 5
    assert score(m, [], conv, elapsed_s=300, minutes=10).as_dict()["time"] == 8
    assert score(m, [], None, elapsed_s=700, minutes=10, timed_out=True).as_dict()["time"] == 0


# ---- the session -----------------------------------------------------------------------
class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_the_clock_ends_the_drill_and_the_budget_refuses_what_it_cannot_pay():
    clock = FakeClock()
    drill = Drill(draw(STALE), minutes=1, budget=9, clock=clock)
    out = drill.handle("probe lr_sweep")
    assert "8 credit(s), 1 left" in out[0]
    assert "error: second_seed costs 8" in drill.handle("probe second_seed")[0]
    clock.t = 61
    out = drill.handle("convict H3 stale logger")
    assert out[0].startswith("Time is up") and out[-1] == f"SCORE: {drill.result['score']}"
    assert (
        drill.finished and drill.result["ended"] == "clock" and drill.result["parts"]["time"] == 0
    )


def test_a_drawn_forecast_is_read_for_curve_probes():
    drill = Drill(draw(STALE))
    drill.forecast(points=[(0, 2.3), (25, 1.9), (49, 1.4)])  # raw falls; reported is flat
    drill.handle("probe raw_vs_reported")
    drill.forecast(points=[(0, 2.3), (199, 0.01)])
    drill.handle("probe overfit")
    assert [(p["predicted"], p["outcome"]) for p in drill.state["probes"]] == [
        ("disagree", "disagree"),
        ("reaches", "reaches"),
    ]


def test_a_forecast_that_names_no_outcome_is_refused_before_the_probe_is_paid_for():
    drill = Drill(draw(STALE))
    assert drill.handle("forecast maybe")[0].startswith("error: 'maybe' names none of the outcomes")
    assert drill.state["forecast"] is None
    assert drill.handle("forecast it stalls high") == ["forecast sealed for your next probe."]
    refused = drill.handle("probe raw_vs_reported")  # 'stalls' is an overfit outcome, not this one
    assert (
        len(refused) == 1
        and "names none of raw_vs_reported's outcomes (agree, disagree)" in refused[0]
    )
    assert (drill.state["spent"], drill.state["probes"], drill.state["forecast"]) == (0, [], None)
    ran = drill.handle("probe raw_vs_reported")  # set aside: now it runs without one
    assert drill.state["spent"] == 1 and "no forecast written" in ran[-1]


def test_a_probe_run_twice_is_shown_again_for_free():
    drill = Drill(draw(STALE))
    drill.handle("probe raw_vs_reported")
    again = drill.handle("probe raw_vs_reported")
    assert "no charge" in again[0] and drill.state["spent"] == 1


# ---- the log ---------------------------------------------------------------------------
def test_log_resumes_a_session_and_refuses_a_stale_window(tmp_path):
    log = DrillLog(tmp_path / "d.sqlite3")
    a = Drill(draw(STALE), log=log)
    a.handle("probe raw_vs_reported")
    b = Drill.open(STALE, log=log)  # another window on the same drill
    assert b.resumed and b.state["spent"] == 1
    a.handle("hypothesis H3 stale")
    with pytest.raises(DrillConflict, match="another window"):
        b.handle("hypothesis H1 lr")
    a.handle("convict H3 the logger shows a stale value")
    assert log.open_session(STALE) is None and len(log.attempts("drill")) == 1


def test_a_damaged_store_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "d.sqlite3"
    path.write_text("{not a store")
    r = cli("", "--stats", "--log", str(path), home=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert str(path) in r.stderr and path.read_text() == "{not a store"


def test_a_json_log_path_is_refused_with_the_way_forward(tmp_path):
    r = cli("", "--stats", "--log", str(tmp_path / "drill.json"), home=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "learner store" in r.stderr and "labkit import" in r.stderr


def test_the_first_drill_logs_json_file_is_imported_once(tmp_path):
    old = {
        "format": "labkit.drill-log/1",
        "sessions": {},
        "attempts": [{"kind": "drill", "score": 70}, {"kind": "verbal", "score": 3}],
    }
    (tmp_path / "drill.json").write_text(json.dumps(old))
    log = DrillLog(tmp_path / "labkit.sqlite3")
    assert [a["score"] for a in log.attempts()] == [70, 3]
    assert (tmp_path / "drill.json.imported").exists() and not (tmp_path / "drill.json").exists()
    assert len(DrillLog(tmp_path / "labkit.sqlite3").attempts()) == 2  # not imported twice


def test_an_attempt_lands_in_the_one_store_and_its_export(tmp_path):
    from labkit.store.learner import LearnerStore

    DrillLog(tmp_path / "labkit.sqlite3").append({"kind": "drill", "score": 55})
    doc = LearnerStore(tmp_path / "labkit.sqlite3").export()
    drills = [r for r in doc["records"] if r["kind"] == "drill"]
    assert [r["body"]["score"] for r in drills] == [55]


WRITER = """
import sys
from labkit.learn.drill.log import DrillLog
log = DrillLog(sys.argv[1])
for i in range(int(sys.argv[2])):
    log.append({"kind": "drill", "writer": sys.argv[3], "i": i, "pad": "x" * int(sys.argv[4])})
print("done", flush=True)
"""


def test_two_writers_at_once_lose_no_attempt(tmp_path):
    path = tmp_path / "d.sqlite3"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), "25", w, "10"], cwd=ROOT)
        for w in "ab"
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    got = DrillLog(path).attempts()
    assert sorted((a["writer"], a["i"]) for a in got) == sorted(
        (w, i) for w in "ab" for i in range(25)
    )


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_every_finished_attempt(tmp_path):
    path = tmp_path / "d.sqlite3"
    DrillLog(path).append({"kind": "drill", "writer": "seed", "i": -1})
    seen = 1
    for delay in (0.3, 0.6, 0.9):
        p = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), "100000", "k", "30000"], cwd=ROOT
        )
        time.sleep(delay + 1.0)  # + python and labkit start-up
        p.send_signal(signal.SIGKILL)
        p.wait()
        attempts = DrillLog(path).attempts()  # opens: the last commit is whole
        assert len(attempts) >= seen
        assert all(len(a["pad"]) == 30000 for a in attempts if a["writer"] == "k")
        seen = len(attempts)
    assert seen > 1  # the writers did get attempts in
    DrillLog(path).append({"kind": "drill", "writer": "after", "i": 0})
    assert DrillLog(path).attempts()[-1]["writer"] == "after"


# ---- the command line ------------------------------------------------------------------
@pytest.mark.slow
def test_disciplined_right_beats_careless_wrong_through_stdin(tmp_path):
    good = cli(DISCIPLINED, "--seed", str(STALE), home=tmp_path / "a")
    bad = cli(CARELESS, "--seed", str(STALE), home=tmp_path / "b")
    assert good.returncode == bad.returncode == 0, good.stderr + bad.stderr
    assert final_score(good.stdout) == 100
    assert final_score(bad.stdout) < 20 < final_score(good.stdout)
    for out in (good.stdout, bad.stdout):
        assert all(len(line) <= 100 for line in out.splitlines())
        before = out.split("CONVICTION:")[0]
        assert "stale_log" not in before  # the bug is named only after the conviction


@pytest.mark.slow
def test_same_seed_same_symptom_and_answer(tmp_path):
    runs = [
        cli("quit\n", "--seed", "8", home=tmp_path / str(i), process=i == 0).stdout
        for i in range(2)
    ]  # a fresh process, and this one with whatever it has cached
    assert runs[0].split("You gave up")[0] == runs[1].split("You gave up")[0]
    answers = [cli("", "--seed", "8", "--answer", home=tmp_path / "x").stdout for _ in range(2)]
    assert answers[0] == answers[1] and "bug: detach" in answers[0]


def test_bad_flags_exit_2_with_one_line(tmp_path):
    for i, args in enumerate(
        (
            ["--seed", "-3"],
            ["--minutes", "nan"],
            ["--answer"],
            ["--stats", "--verbal"],
            ["--seed", "x"],
        )
    ):
        r = cli("", *args, home=tmp_path, process=i == 0)
        assert r.returncode == 2, args
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow
def test_a_drill_killed_between_commands_resumes(tmp_path):
    env = {**os.environ, "LABKIT_HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen(
        [sys.executable, "-m", "labkit.cli", "drill", "--seed", "8"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    p.stdin.write("hypothesis H3 logging\nforecast agree\nprobe raw_vs_reported\nhelp\n")
    p.stdin.flush()
    for line in p.stdout:  # help's last line comes after the probe's state was saved
        if "symptom | help | quit" in line:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    r = cli(
        "forecast none\nprobe gradient_audit\nconvict H1 a detach cuts the backbone from the "
        "graph\n",
        "--seed",
        "8",
        home=tmp_path,
    )
    assert "Resuming drill seed 8: 1 probe(s) run, 19 of 20 credits left." in r.stdout
    assert "hypothesis: H3 logging" in r.stdout
    assert final_score(r.stdout) == 100  # the killed process's probe still counts, once
    assert len(DrillLog(tmp_path / "labkit.sqlite3").attempts()) == 1


@pytest.mark.slow
def test_answer_marks_an_open_drill_and_stats_summarise(tmp_path):
    cli("probe raw_vs_reported\n", "--seed", "8", home=tmp_path)  # left open (EOF pauses)
    shown = cli("", "--seed", "8", "--answer", home=tmp_path)
    assert "will say so" in shown.stdout
    done = cli("convict H1 detach in forward\n", "--seed", "8", home=tmp_path)
    assert "the answer of this seed was shown" in done.stdout
    cli(CARELESS, "--seed", str(STALE), home=tmp_path)
    verbal = cli(model_answer(0) + "\nskip\nquit\n", "--verbal", home=tmp_path)
    assert "6 of 6 elements present" in verbal.stdout
    stats = cli("", "--stats", home=tmp_path).stdout
    assert "attempts: 2" in stats and "H1    1/1 (100%)" in stats and "H3    0/1 (0%)" in stats
    assert "verbal answers: 1, mean 6.0 of 6 elements" in stats
    assert all(len(line) <= 100 for line in stats.splitlines())


# ---- verbal practice -------------------------------------------------------------------
@pytest.mark.parametrize("i", range(len(CASES)))
def test_each_model_answer_has_every_element_and_a_bare_label_has_none(i):
    assert all(grade(i, model_answer(i)).values())
    assert not any(grade(i, CASES[i].title).values())


def test_the_menu_lists_every_probe_with_its_price():
    text = "\n".join(menu_lines())
    assert all(f"{p.name:<16} {p.price}" in text for p in MENU.values())
    assert ELEMENTS == ("hedge", "leading", "alternatives", "test", "intervention", "confirm")


# ---- the notebook panel (clicks, no browser) ------------------------------------------
def test_drill_panel_plays_by_clicks_and_resumes_after_a_restart(tmp_path):
    from labkit.widgets import DrillPanel, VerbalPanel

    log = tmp_path / "d.sqlite3"
    panel = DrillPanel(seed=STALE, log=log)
    panel.system.value, panel.mechanism.value = "H3", "the logger may be stale"
    panel.hypothesis_button.click()
    panel.sketch.shape = "descending"  # the preset menu of the sketch, then its Seal button
    panel.sketch.seal_requested += 1
    assert panel.sketch.sealed
    panel.run_button.click()
    shown = html.unescape(panel.answer.value)
    assert "outcome: disagree (your forecast read as 'disagree': right)" in shown
    earlier = html.unescape(panel.transcript.value)  # each result once: not again below it
    assert "hypothesis noted" in earlier and "outcome: disagree" not in earlier
    assert "help" not in html.unescape(panel.symptom.value)  # no box to type it into
    again = DrillPanel(log=log)  # a restarted kernel: no seed given, the open drill resumes
    assert again.drill.resumed and again.drill.state["spent"] == 1
    again.verdict_system.value, again.verdict_text.value = "H3", "a stale logged value"
    again.convict_button.click()
    assert "SCORE: 100" in html.unescape(again.answer.value) and again.run_button.disabled
    assert "DrillPanel(seed 2, 1 probe(s) run" in repr(again)
    verbal = VerbalPanel(log=log)
    verbal.text.value = model_answer(0)
    verbal.check_button.click()
    assert "6 of 6 elements present" in verbal.result.value
    assert len(DrillLog(log).attempts("verbal")) == 1


def test_the_committed_notebook_gives_nothing_away():
    nb = json.loads((ROOT / "notebooks" / "interview_drill.ipynb").read_text())
    text = json.dumps(nb["cells"]) + json.dumps(nb["metadata"])
    assert "SCORE:" not in text and "hidden setup" not in text.lower()
    names = set(BUGS) - {"detach"}  # 'detach' is an ordinary word in the packet's prose
    assert not [n for n in names if n in text]
