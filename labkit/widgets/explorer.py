"""`ExplorerPanel`: the Training Run Explorer as buttons over a live `TriageRecord`.

It holds widgets only: every step is `labkit.explorer.Explorer.run_next()`, and the
form is the record's own HTML, with UNKNOWN rows highlighted.
"""

from __future__ import annotations

import html

import ipywidgets as w

from ..diagnosis.explorer import Explorer
from ..diagnosis.triage import TriageRefused


class ExplorerPanel(w.VBox):
    def __init__(self, explorer: Explorer | None = None, *, bug: str | None = None,
                 seeds=(0, 1), config=None):
        self.explorer = explorer or Explorer(bug, seeds=seeds, config=config)
        self.form = w.HTML()
        self.next_button = w.Button(button_style="primary", layout=w.Layout(width="auto"))
        self.all_button = w.Button(description="Run all remaining steps",
                                   layout=w.Layout(width="auto"))
        self.messages_html = w.HTML()
        self.verdict = w.HTML()
        self.next_button.on_click(lambda _: self.step())
        self.all_button.on_click(lambda _: self.step(all_steps=True))
        super().__init__([w.HBox([self.next_button, self.all_button]), self.form, self.verdict,
                          self.messages_html])
        self.messages: list[str] = []
        self.refresh()

    def step(self, all_steps: bool = False) -> None:
        while self.explorer.next_step is not None:
            self.messages.append(self.explorer.run_next())
            self.refresh()
            if not all_steps:
                break

    def refresh(self) -> None:
        nxt = self.explorer.next_step
        self.next_button.description = f"Run next: {nxt}" if nxt else "Triage complete"
        self.next_button.disabled = self.all_button.disabled = nxt is None
        self.form.value = self.explorer.record._repr_html_()
        try:
            line = self.explorer.record.verdict()
            self.verdict.value = f"<b>{html.escape(line)}</b> <i>(a suggestion: check and sign off)</i>"
        except TriageRefused as exc:
            self.verdict.value = f"<span style='color:#a00'>{html.escape(str(exc))}</span>"
        self.messages_html.value = "<br>".join(html.escape(m) for m in self.messages[-8:])

    def __repr__(self) -> str:
        nxt = self.explorer.next_step or "none (complete)"
        return (f"ExplorerPanel({self.explorer.record.subject}; steps done: "
                f"{len(self.explorer.done)}; next: {nxt})")
