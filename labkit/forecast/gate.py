"""`SketchNotSealed`: the run cell's refusal while the learner's forecast is not sealed.

Raised by `SketchForecast.require()`. In a notebook it shows one friendly sentence in a
box, not a traceback, and it stops a Run All there, so no run happens before a forecast.
"""

from __future__ import annotations

from ..errors import notebook_box


class SketchNotSealed(RuntimeError):
    """The forecast sketch above has not been sealed, so the run must wait."""

    def _render_traceback_(self) -> list[str]:
        notebook_box("Forecast first", str(self), colour="#1f6fb2", once_for=self)
        return [f"\x1b[1;34mSketchNotSealed\x1b[0m: {self}"]
