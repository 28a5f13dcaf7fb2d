"""`FlashcardDrill`: the Leitner drill as buttons. Show the answer, then grade yourself.

It holds widgets only: what is due, and where a graded card goes, is
`labkit.learn.flashcards.Deck`, which saves every answer to disk at once.

Why not jupytercards or jupyterquiz: both render cards in the browser with JavaScript
and never send the learner's answer back to the kernel, so nothing could be saved and no
box could change. These plain ipywidgets buttons run Python on every click.
"""

from __future__ import annotations

import html

import ipywidgets as w

from ..learn.flashcards import Deck


class FlashcardDrill(w.VBox):
    def __init__(self, deck: Deck | None = None, *, path=None, today=None):
        if deck is not None and not isinstance(deck, Deck):
            raise TypeError(f"deck must be a labkit Deck; got {type(deck).__name__}.")
        self.deck = deck or Deck(path)
        self.today = today
        self.status = w.HTML()
        self.question = w.HTML()
        self.answer_box = w.HTML()
        self.show_button = w.Button(description="Show answer", layout=w.Layout(width="auto"))
        self.knew_button = w.Button(
            description="I knew it", button_style="success", layout=w.Layout(width="auto")
        )
        self.missed_button = w.Button(
            description="Not yet", button_style="warning", layout=w.Layout(width="auto")
        )
        self.show_button.on_click(lambda _: self.show())
        self.knew_button.on_click(lambda _: self.grade(True))
        self.missed_button.on_click(lambda _: self.grade(False))
        super().__init__(
            [
                self.status,
                self.question,
                self.answer_box,
                w.HBox([self.show_button, self.knew_button, self.missed_button]),
            ]
        )
        self.graded = 0
        self.card = None
        self.next_card()

    def next_card(self) -> None:
        due = self.deck.due(self.today)
        self.card = due[0] if due else None
        self.answer_box.value = ""
        boxes = " · ".join(f"box {b}: {n}" for b, n in self.deck.boxes().items())
        self.status.value = (
            f"<small>{len(due)} due · {self.graded} graded this session · {boxes}</small>"
        )
        if self.card is None:
            self.question.value = "<b>Nothing is due today.</b> Come back tomorrow."
        else:
            self.question.value = (
                f"<b>{html.escape(self.card.question)}</b> "
                f"<small>(box {self.deck.box(self.card.id)})</small>"
            )
        self.show_button.disabled = self.card is None
        self.knew_button.disabled = self.missed_button.disabled = True

    def show(self) -> None:
        """Reveal the answer; only now can the card be graded."""
        if self.card is None:
            return
        self.answer_box.value = (
            f"<div style='margin:4px 0 8px 0'>{html.escape(self.card.answer)}</div>"
        )
        self.knew_button.disabled = self.missed_button.disabled = False

    def grade(self, knew_it: bool) -> None:
        """Record the self-grade (saved at once) and move to the next due card."""
        if self.card is None or self.knew_button.disabled:
            return
        self.deck.answer(self.card.id, knew_it, today=self.today)
        self.graded += 1
        self.next_card()

    def __repr__(self) -> str:
        showing = self.card.id if self.card else "nothing due"
        return f"FlashcardDrill({len(self.deck.due(self.today))} due; {self.deck!r}; showing {showing})"
