"""`DrillPanel` and `VerbalPanel`: the interview drill and verbal practice with buttons.

They hold widgets only: every action is a command of `labkit.learn.drill.Drill` (the
same state machine `labkit drill` drives), and the drill is saved to the drill log
after each one, so a restarted kernel resumes it. Curve probes take a forecast drawn
on a `SketchForecast`: pick a preset or draw, press Seal, then Run probe.
"""

from __future__ import annotations

import hashlib
import html
import json
import math

import ipywidgets as w

from ..learn.drill.log import DrillLog
from ..learn.drill.menu import CURVE_PROBES, MENU
from ..learn.drill.session import Drill
from ..learn.drill.front.svg import curves_svg
from ..learn.drill.verbal import model_answer, report_lines
from ..learn.drill.verbal.cases import CASES
from ..learn.drill.words import OUTCOMES
from .sketch import SketchForecast

NO_FORECAST = "(no forecast)"


class DrillSketch(SketchForecast):
    """A sketch whose Seal locks the drawing for the drill's next probe (no forecast history)."""

    gates_runs = False  # the drill's Run probe takes the sketch or the words; it never waits

    def seal(self):
        if self._sealed is not None:
            return self.sealed_forecast
        forecast = self.forecast()  # refuses an empty drawing with a sentence
        self._sealed = {self.series_names[0]: forecast}
        body = json.dumps([forecast.points, forecast.nan_step])
        self.sealed_hash = hashlib.sha256(body.encode()).hexdigest()[:12]
        self.message = "Sealed for the next probe: press Run probe."
        self.sealed = True
        return forecast


def _pre(lines) -> str:
    return (
        "<pre style='font-size:12px;line-height:1.3;white-space:pre-wrap'>"
        + html.escape("\n".join(lines))
        + "</pre>"
    )


class DrillPanel(w.VBox):
    def __init__(
        self,
        seed: int | None = None,
        *,
        log=None,
        minutes: float | None = None,
        drill: Drill | None = None,
    ):
        self.drill_log = log if isinstance(log, DrillLog) else DrillLog(log)
        self.drill = drill or Drill.open(seed, log=self.drill_log, minutes=minutes)
        if not self.drill.resumed and drill is None:
            self.drill.state = self.drill_log.save_session(self.drill.state)
        task = self.drill.mystery.task
        self.chance = math.log(50 if task == "lm" else 10)
        intro = self.drill.intro_lines(typed=False)  # buttons, no box to type `help` into
        reported = self.drill.case.baseline().table["loss_reported"]
        self.symptom = w.HTML(
            curves_svg(
                {"reported loss": reported},
                reference=self.chance,
                title="the first 50 reported steps",
            )
            + _pre(intro)
        )
        self.system = w.Dropdown(options=["H3", "H2", "H1", "NONE"], description="system")
        self.mechanism = w.Text(
            placeholder="mechanism, e.g. the logger shows a stale value",
            layout=w.Layout(width="420px"),
        )
        self.hypothesis_button = w.Button(description="State hypothesis")
        self.probe = w.Dropdown(
            options=[
                (f"{p.name} ({p.price} credit{'s' * (p.price > 1)})", p.name) for p in MENU.values()
            ],
            description="probe",
        )
        self.words = w.Dropdown(description="forecast")
        self.sketch_box = w.VBox()
        self.run_button = w.Button(description="Run probe", button_style="primary")
        self.verdict_system = w.Dropdown(options=["H3", "H2", "H1", "NONE"], description="convict")
        self.verdict_text = w.Text(placeholder="the mechanism line", layout=w.Layout(width="420px"))
        self.convict_button = w.Button(description="Convict", button_style="danger")
        self.status = w.HTML()
        self.answer = w.HTML()
        self.transcript = w.HTML()
        self.hypothesis_button.on_click(
            lambda _: self._command(f"hypothesis {self.system.value} {self.mechanism.value}")
        )
        self.run_button.on_click(lambda _: self.run_probe())
        self.convict_button.on_click(lambda _: self.convict())
        self.probe.observe(lambda _: self._new_forecast(), "value")
        self._earlier: list[str] = []  # the transcript: commands before the one shown above
        self._latest: list[str] = []
        self._new_forecast()
        super().__init__(
            [
                self.symptom,
                w.HBox([self.system, self.mechanism, self.hypothesis_button]),
                w.HBox([self.probe, self.words]),
                self.sketch_box,
                self.run_button,
                self.answer,
                w.HBox([self.verdict_system, self.verdict_text, self.convict_button]),
                self.status,
                self.transcript,
            ]
        )
        self._refresh()

    def _new_forecast(self) -> None:
        name = self.probe.value
        self.words.options = [NO_FORECAST] + list(OUTCOMES[name])
        self.words.value = NO_FORECAST
        self.sketch = None
        if name in CURVE_PROBES:
            steps = 50 if name != "overfit" else (100 if self.drill.mystery.task == "lm" else 200)
            self.sketch = DrillSketch(steps=steps, loss_max=self.chance * 1.6)
            self.sketch.reference, self.sketch.reference_label = self.chance, "chance"
            self.sketch_box.children = [
                w.HTML(
                    "Draw the curve you expect (or pick a preset), "
                    "then Seal; or forecast in words above."
                ),
                self.sketch,
            ]
        else:
            self.sketch_box.children = []

    def run_probe(self) -> None:
        """Seal the forecast shown (the sealed sketch, else the words) and run the probe."""
        drawn = self.sketch is not None and self.sketch.sealed
        if drawn:
            f = self.sketch.sealed_forecast
            self.drill.forecast(points=f.points, nan_step=f.nan_step)
        elif self.words.value != NO_FORECAST:
            self.drill.forecast(text=self.words.value)
        before = len(self.drill.state["probes"])
        lines = self._command(f"probe {self.probe.value}")
        if len(self.drill.state["probes"]) > before:
            ans = self.drill.last_answer
            fc = list(f.points) if drawn else None
            svg = (
                curves_svg(ans.curves, forecast=fc, reference=self.chance, title=self.probe.value)
                if ans.curves
                else ""
            )
            self.answer.value = svg + _pre(lines)
            self._new_forecast()
        else:
            self.answer.value = _pre(lines)

    def convict(self) -> list[str]:
        return self._command(f"convict {self.verdict_system.value} {self.verdict_text.value}")

    def _command(self, line: str) -> list[str]:
        try:
            lines = self.drill.handle(line)
        except ValueError as exc:  # e.g. the drill was moved on from another window
            lines = [f"error: {exc}"]
        self._earlier, self._latest = self._earlier + self._latest, [f"> {line}", *lines]
        self.answer.value = _pre(lines)  # each result once: here, then in the transcript below
        self._refresh()
        return lines

    def _refresh(self) -> None:
        d = self.drill
        done = d.finished
        for control in (
            self.hypothesis_button,
            self.run_button,
            self.convict_button,
            self.system,
            self.mechanism,
            self.probe,
            self.words,
            self.verdict_system,
            self.verdict_text,
        ):
            control.disabled = done
        if done:
            self.sketch_box.children = []
        hyp = d.state.get("hypothesis")
        credits = "drill over" if done else f"{d.left} of {d.state['budget']} credits left"
        said = html.escape(f"{hyp['system']} {hyp['text']}") if hyp else "none"
        self.status.value = f"<b>{credits}</b> &middot; hypothesis: {said}"
        self.transcript.value = (
            "<b>earlier</b>" + _pre(self._earlier[-60:]) if self._earlier else ""
        )

    def __repr__(self) -> str:
        s = self.drill.state
        return (
            f"DrillPanel(seed {s['seed']}, {len(s['probes'])} probe(s) run, "
            f"{self.drill.left} of {s['budget']} credits left"
            f"{', finished' if self.drill.finished else ''})"
        )


class VerbalPanel(w.VBox):
    """Pick a case, type your spoken answer, press Check: the rubric shows what is there."""

    def __init__(self, *, log=None):
        self.drill_log = log if isinstance(log, DrillLog) else DrillLog(log)
        self.case = w.Dropdown(
            options=[(f"{i + 1}. {c.title}", i) for i, c in enumerate(CASES)], description="case"
        )
        self.curve = w.HTML()
        self.text = w.Textarea(
            placeholder="Say it as you would in an interview ...",
            layout=w.Layout(width="100%", height="110px"),
        )
        self.check_button = w.Button(description="Check my answer", button_style="primary")
        self.result = w.HTML()
        self.case.observe(lambda _: self._show_case(), "value")
        self.check_button.on_click(lambda _: self.check())
        super().__init__([self.case, self.curve, self.text, self.check_button, self.result])
        self._show_case()

    def _show_case(self) -> None:
        self.curve.value = f"<i>{html.escape(CASES[self.case.value].curve)}</i>"
        self.result.value = ""

    def check(self) -> list[str]:
        from ..learn.drill.verbal import ELEMENTS, grade

        i, answer = self.case.value, self.text.value.strip()
        if not answer:
            self.result.value = "<i>Type an answer first.</i>"
            return []
        lines = report_lines(i, answer) + ["", "a strong answer: " + model_answer(i)]
        self.result.value = _pre(lines)
        hits = grade(i, answer)
        self.drill_log.append(
            {
                "kind": "verbal",
                "case": i + 1,
                "title": CASES[i].title,
                "answer": answer,
                "elements": {e: hits[e] for e in ELEMENTS},
            }
        )
        return lines

    def __repr__(self) -> str:
        return f"VerbalPanel(case {self.case.value + 1} of {len(CASES)})"
