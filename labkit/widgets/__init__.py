"""Jupyter widgets for labkit. They hold state only; the logic lives in plain, tested modules.

>>> from labkit.widgets import SketchForecast, ExplorerPanel
>>> SketchForecast(config=labkit.Config(), bug="zero_lr")   # draw, then press Seal
>>> ExplorerPanel(bug="stale_log")                           # press "Run next" per probe
>>> FlashcardDrill()                                         # Leitner drill, self-graded
>>> DrillPanel()                                             # an interview drill, by clicks
>>> prediction = ask_prediction("ex_a")                      # answer in a form, then Seal
"""

from .drill import DrillPanel, VerbalPanel
from .explorer import ExplorerPanel
from .flashcards import FlashcardDrill
from .prediction_form import PredictionForm, PredictionNotGiven, ask_prediction
from .sketch import SketchForecast

__all__ = [
    "DrillPanel",
    "ExplorerPanel",
    "FlashcardDrill",
    "PredictionForm",
    "PredictionNotGiven",
    "SketchForecast",
    "VerbalPanel",
    "ask_prediction",
]
