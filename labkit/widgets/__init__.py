"""Jupyter widgets for labkit. They hold state only; the logic lives in plain, tested modules.

    >>> from labkit.widgets import SketchForecast, ExplorerPanel
    >>> SketchForecast(config=labkit.Config(), bug="zero_lr")   # draw, then press Seal
    >>> ExplorerPanel(bug="stale_log")                           # press "Run next" per probe
    >>> FlashcardDrill()                                         # Leitner drill, self-graded
    >>> DrillPanel()                                             # an interview drill, by clicks
"""

from .drill import DrillPanel, VerbalPanel
from .explorer import ExplorerPanel
from .flashcards import FlashcardDrill
from .sketch import SketchForecast

__all__ = ["DrillPanel", "ExplorerPanel", "FlashcardDrill", "SketchForecast", "VerbalPanel"]
