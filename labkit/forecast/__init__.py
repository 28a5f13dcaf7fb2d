"""Forecasting: a curve predicted and sealed before the run (`forecast`), the shape
rule (`shapes`), its score against the run (`score`) and the learner's history
(`history`).

Imports from `core` and `bugs` below it (a forecast is sealed for one setup).
"""

from .forecast import Forecast
from .points import check_points
from .shapes import SHAPES, classify_shape
from .history import ForecastHistory
from .score import ForecastScore

__all__ = [
    "SHAPES",
    "Forecast",
    "ForecastHistory",
    "ForecastScore",
    "check_points",
    "classify_shape",
]
