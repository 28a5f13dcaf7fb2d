"""Putting a zoo bug into a run by name: `labkit.train(bug=...)` and `labkit.Trainer(bug=...)`.

The reference loop in `labkit.core.train` knows nothing of the zoo: it runs whatever
seams it is given. This module turns a bug's name into its patched seams and the setup
the bug shows under (``get_bug(name).setup``), then hands both to that loop.
"""

from __future__ import annotations

from ..core import train as core_train
from ..core.config import Config
from ..core.run import Run
from ..core.seams import Seams
from . import get_bug


def resolve(config: Config | None, bug, seams: Seams | None, settings: dict):
    """(config, seams, bug name) of a run: a bug brings its seam and the setup it shows under."""
    seams = seams or Seams()
    if config is not None and not isinstance(config, Config):
        raise TypeError(f"config must be a labkit Config; got {type(config).__name__}.")
    if bug is None:
        base = config or Config()
        return (base.replace(**settings) if settings else base), seams, None
    the_bug = get_bug(bug)
    if config is None:  # the bug's setup (e.g. task="lm", precision="fp16") unless overridden
        config = Config.make(**{**the_bug.setup, **settings})
    elif settings:
        config = config.replace(**settings)
    needed = the_bug.setup.get("task", "classify")
    if config.task != needed:
        raise ValueError(f"bug {the_bug.name!r} needs task={needed!r}; got task={config.task!r}.")
    return config, the_bug.patch(seams), the_bug.name


class Trainer(core_train.Trainer):
    """The reference loop one step at a time, with an optional zoo bug given by name.

    ``Trainer(bug="detach", seed=1).run()`` is ``train(bug="detach", seed=1)``.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        bug: str | None = None,
        seams: Seams | None = None,
        **settings,
    ):
        config, seams, name = resolve(config, bug, seams, settings)
        super().__init__(config, seams=seams, bug=name)


def train(
    config: Config | None = None, *, bug: str | None = None, seams: Seams | None = None, **settings
) -> Run:
    """Train the reference setup and return its `Run`.

    ``train()`` trains the healthy classifier; ``train(task="lm", seed=1)`` changes
    settings; ``train(bug="detach")`` injects a bug from the zoo, under the setup where
    it shows unless `config` is given.
    """
    trainer = Trainer(config, bug=bug, seams=seams, **settings)
    try:
        return trainer.run()
    finally:  # the run is whole: its hooks go, torch's global one included
        trainer.watch.close()
