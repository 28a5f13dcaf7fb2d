"""The drill's smaller promises: its ASCII chart labels the two ends of its axis apart, and
its clock counts the wall time a drill spent away between an interruption and its resume."""

import time

from labkit.learn.drill.log import DrillLog
from labkit.learn.drill.mystery import draw
from labkit.learn.drill.session import Drill
from labkit.learn.drill.front.text import ascii_plot


def test_the_chart_labels_its_ends_apart_on_a_narrow_range():
    lines = ascii_plot([2.2990 + 0.0001 * i for i in range(50)])  # 2.2990 .. 2.3039
    top, bottom = lines[0].split("|")[0].strip(), lines[-2].split("|")[0].strip()
    assert top != bottom and float(top) > float(bottom)
    wide = ascii_plot([2.3 - 0.008 * i for i in range(50)])
    assert wide[0].split("|")[0].strip() == "2.3" and wide[-2].split("|")[0].strip() == "1.91"


def test_a_resumed_drill_counts_the_wall_time_it_was_away(tmp_path):
    log = DrillLog(tmp_path / "d.sqlite3")
    first = Drill(draw(8), log=log)
    first.handle("probe raw_vs_reported")
    state = log.open_session(8)
    away = {**state, "saved_at": state["saved_at"] - 600}  # interrupted ten minutes ago
    resumed = Drill(log=log, state=away)
    assert resumed.resumed
    assert resumed.state["elapsed_s"] >= state["elapsed_s"] + 600
    assert (
        resumed.state["elapsed_s"]
        < state["elapsed_s"] + 600 + (time.time() - state["saved_at"]) + 5
    )
