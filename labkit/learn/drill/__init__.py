"""Interview drills: a hidden bug, a probe budget, a clock, a score and feedback.

    >>> from labkit.learn.drill import Drill, draw
    >>> drill = Drill(draw(3))          # the same seed draws the same mystery
    >>> drill.symptom_lines()           # the first 50 reported steps and a teammate's take
    >>> drill.handle("probe raw_vs_reported")

`labkit drill` plays it in a terminal, one command per line (so a pipe can play it too);
`labkit.widgets.DrillPanel` plays it with buttons and the sketch widget. `verbal` holds
the spoken-answer practice for the study packet's seven curve cases; `ranks` the
distributed mysteries (`labkit drill --distributed`: a bug of the distributed zoo on two
real gloo ranks, started once per mystery).
"""
