"""Jupyter widgets for labkit. They hold state only; the logic lives in plain, tested modules.

    >>> from labkit.widgets import SketchForecast, ExplorerPanel
    >>> SketchForecast(config=labkit.Config(), bug="zero_lr")   # draw, then press Seal
    >>> ExplorerPanel(bug="stale_log")                           # press "Run next" per probe
"""

from .explorer import ExplorerPanel
from .sketch import SketchForecast

__all__ = ["ExplorerPanel", "SketchForecast"]
