"""Jupyter widgets for labkit. They hold state only; the logic lives in plain, tested modules.

    >>> from labkit.widgets import SketchForecast
    >>> SketchForecast(config=labkit.Config(), bug="zero_lr")   # draw, then press Seal
"""

from .sketch import SketchForecast

__all__ = ["SketchForecast"]
