"""`ExplorerPanel`: the Training Run Explorer as buttons over a live `TriageRecord`.

Two modes. In "learner" mode (the default) you do the thinking: before each step you pick
the system you suspect (H1/H2/H3), write the mechanism and forecast what the step will show;
only then does it run, and your lines go beside what happened. labkit's own record and its
suggested conviction stay hidden until you have typed your conviction; then they show
beside yours, with the differences marked. "auto" mode runs labkit's triage step by step
and shows its record and suggestion as it goes.

Every step is the explorer's ``run_next()`` (`Explorer` for a zoo bug, `SetupExplorer` for
your own setup: ``ExplorerPanel(setup=MySetup())``).
"""

from __future__ import annotations

import html

import ipywidgets as w

from ..diagnosis.zoo.explorer import Explorer
from ..diagnosis.record.triage import TriageRefused
from ..errors import check_choice
from .explorer_compare import compare_convictions, learner_table

MODES = ("learner", "auto")


class ExplorerPanel(w.VBox):
    def __init__(
        self,
        explorer=None,
        *,
        bug: str | None = None,
        setup=None,
        seeds=(0, 1),
        config=None,
        mode: str = "learner",
    ):
        check_choice("mode", mode, MODES)
        if setup is not None:
            if bug is not None or config is not None or explorer is not None:
                raise ValueError(
                    "setup= triages your own code; pass it without bug=, config= or explorer=."
                )
            from ..diagnosis.own.step6_decide.explorer import SetupExplorer

            explorer = SetupExplorer(setup, seeds=seeds)
        self.explorer = explorer or Explorer(bug, seeds=seeds, config=config)
        self.mode = mode
        self.form = w.HTML()
        self.next_button = w.Button(button_style="primary", layout=w.Layout(width="auto"))
        self.all_button = w.Button(
            description="Run all remaining steps", layout=w.Layout(width="auto")
        )
        self.messages_html = w.HTML()
        self.verdict = w.HTML()
        self.next_button.on_click(lambda _: self.step())
        self.all_button.on_click(lambda _: self.step(all_steps=True))
        self.entries: list[dict] = []  # the learner's lines, one per step run
        self.conviction: dict | None = None  # the learner's, once typed
        self.messages: list[str] = []
        # the learner's inputs (learner mode)
        self.system = w.Dropdown(
            options=[
                ("(your leading system)", ""),
                ("H3 instrumentation", "H3"),
                ("H2 data", "H2"),
                ("H1 optimizer/loop", "H1"),
            ],
            description="hypothesis",
        )
        self.mechanism = w.Text(
            placeholder="the mechanism you suspect, in your words", layout=w.Layout(width="60%")
        )
        self.forecast = w.Text(
            placeholder="what will this step show? e.g. 'raw and reported agree'",
            description="forecast",
            layout=w.Layout(width="80%"),
        )
        self.convict_system = w.Dropdown(
            options=[
                ("(system)", ""),
                ("H3", "H3"),
                ("H2", "H2"),
                ("H1", "H1"),
                ("healthy", "healthy"),
            ],
            description="convict",
        )
        self.convict_mechanism = w.Text(
            placeholder="the mechanism, in your words", layout=w.Layout(width="60%")
        )
        self.convict_button = w.Button(description="Convict", button_style="danger")
        self.convict_button.on_click(lambda _: self.convict())
        self.hint = w.HTML()
        for box in (
            self.system,
            self.mechanism,
            self.forecast,
            self.convict_system,
            self.convict_mechanism,
        ):
            box.observe(lambda _: self.refresh(), "value")
        rows = [
            w.HBox([self.next_button, self.all_button]),
            self.form,
            self.verdict,
            self.messages_html,
        ]
        if mode == "learner":
            rows = [
                w.HBox([self.system, self.mechanism]),
                self.forecast,
                self.next_button,
                self.hint,
                self.form,
                w.HBox([self.convict_system, self.convict_mechanism, self.convict_button]),
                self.verdict,
            ]
        super().__init__(rows)
        self.refresh()

    # ---- acting ----------------------------------------------------------------------
    def step(self, all_steps: bool = False) -> None:
        """Run the next step (all of them with all_steps, in auto mode only)."""
        if self.mode == "learner":
            missing = self._missing_inputs()
            if missing or self.explorer.next_step is None:
                self.refresh()
                return
            name = self.explorer.next_step
            result = self.explorer.run_next()
            self.entries.append(
                {
                    "step": name,
                    "system": self.system.value,
                    "mechanism": self.mechanism.value.strip(),
                    "forecast": self.forecast.value.strip(),
                    "result": result,
                }
            )
            self.forecast.value = ""  # a fresh forecast for the next step; the hypothesis stays
            self.refresh()
            return
        while self.explorer.next_step is not None:
            self.messages.append(self.explorer.run_next())
            self.refresh()
            if not all_steps:
                break

    def convict(self) -> None:
        """Keep the learner's conviction; then show labkit's beside it."""
        if (
            self.explorer.next_step is not None
            or not self.convict_system.value
            or not self.convict_mechanism.value.strip()
        ):
            self.refresh()
            return
        self.conviction = {
            "system": self.convict_system.value,
            "mechanism": self.convict_mechanism.value.strip(),
        }
        self.refresh()

    def _missing_inputs(self) -> list[str]:
        missing = []
        if not self.system.value:
            missing.append("pick the system you suspect")
        if not self.forecast.value.strip():
            missing.append("write what you expect this step to show")
        return missing

    # ---- showing ---------------------------------------------------------------------
    def refresh(self) -> None:
        nxt = self.explorer.next_step
        self.next_button.description = f"Run next: {nxt}" if nxt else "Triage complete"
        self.all_button.disabled = nxt is None
        if self.mode == "auto":
            self.next_button.disabled = nxt is None
            self.form.value = self.explorer.record._repr_html_()
            self.verdict.value = self._labkit_verdict(
                suffix=" <i>(a suggestion: check and sign off)</i>"
            )
            self.messages_html.value = "<br>".join(html.escape(m) for m in self.messages[-8:])
            return
        missing = self._missing_inputs() if nxt else []
        self.next_button.disabled = bool(missing) or nxt is None
        self.hint.value = (
            ("<i>Before it runs: " + "; ".join(missing) + ".</i>")
            if missing
            else (
                ""
                if nxt
                else "<i>Every step has run. Type your conviction, then press Convict.</i>"
            )
        )
        self.form.value = learner_table(self.entries)
        done = nxt is None
        for box in (self.convict_system, self.convict_mechanism, self.convict_button):
            box.disabled = not done or self.conviction is not None
        for box in (self.system, self.mechanism, self.forecast):
            box.disabled = done
        if self.conviction is None:
            self.verdict.value = ""
            return
        try:
            d = self.explorer.record.rows["conviction"]["data"]
            theirs = {"system": d.get("system"), "mechanism": d.get("mechanism", "")}
        except (KeyError, TypeError):
            theirs = None
        self.verdict.value = (
            compare_convictions(self.conviction, theirs, self._labkit_verdict())
            + self.explorer.record._repr_html_()
        )

    def _labkit_verdict(self, suffix: str = "") -> str:
        try:
            return f"<b>{html.escape(self.explorer.record.verdict())}</b>{suffix}"
        except TriageRefused as exc:
            return f"<span style='color:#a00'>{html.escape(str(exc))}</span>"

    def __repr__(self) -> str:
        nxt = self.explorer.next_step or "none (complete)"
        return (
            f"ExplorerPanel({self.explorer.record.subject}; {self.mode} mode; steps done: "
            f"{len(self.explorer.done)}; next: {nxt})"
        )
