"""The gradient norm `labkit.watch` records is the one backward gave, before any clipping.

While a `Watch` is open, ``torch.nn.utils.clip_grad_norm_`` and ``clip_grad_value_`` (looked
up as attributes at call time, as ``torch.nn.utils.clip_grad_norm_(...)`` does) first let
every open watch that holds one of the parameters measure the gradients (`measure_grads`),
then clip. Without it the norm recorded at ``optimizer.step()`` is the clipped one (exactly
``max_norm`` at every step that clips), unless the learner adds a line before the clip.
The wrapper is put in place by the first open watch and taken away by the last one to close,
unless something else has wrapped the functions since (then it stays, and does nothing).
A name imported before the watch opened (``from torch.nn.utils import clip_grad_norm_``)
is the original function, which this cannot see: call ``watch.measure_grads()`` there.
"""

from __future__ import annotations

import functools
import weakref

import torch
import torch.nn.utils as nn_utils
import torch.nn.utils.clip_grad as clip_grad

NAMES = ("clip_grad_norm_", "clip_grad_value_")
_OPEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # watch -> ids of its parameters
_INSTALLED = False  # labkit's wrappers are in place (each one's __wrapped__ is torch's function)


def _wrapper(original):
    @functools.wraps(original)  # sets clip.__wrapped__ = original
    def clip(parameters, *args, **kwargs):
        if _OPEN:
            parameters = [parameters] if torch.is_tensor(parameters) else list(parameters)
            ids = {id(p) for p in parameters}
            for watch, held in list(_OPEN.items()):
                if not held.isdisjoint(ids):
                    watch.measure_grads()
        return original(parameters, *args, **kwargs)

    clip.__labkit_clip__ = True
    return clip


class _Handle:
    def __init__(self, watch):
        self._watch = weakref.ref(watch)

    def remove(self) -> None:
        watch = self._watch()
        if watch is not None:
            _OPEN.pop(watch, None)
        _restore_if_idle()


def _unwrapped(fn):
    """`fn` without labkit's wrappers on top. One can be left behind by another wrapper that
    saw ours, outlived the last watch and then put back what it saw (a `with` block around a
    training run, a test's monkeypatch): it is taken off like our own."""
    while getattr(fn, "__labkit_clip__", False):
        fn = fn.__wrapped__
    return fn


def _restore_if_idle() -> None:
    """Put torch's own clip functions back once no watch is open (closed, or collected)."""
    global _INSTALLED
    if not _OPEN:
        for name in NAMES:
            current = getattr(clip_grad, name)
            if getattr(current, "__labkit_clip__", False):
                original = _unwrapped(current)
                setattr(clip_grad, name, original)
                setattr(nn_utils, name, original)
        _INSTALLED = False


def register(watch) -> _Handle:
    """Measure `watch`'s gradients before each clip of its parameters, until removed."""
    global _INSTALLED
    if not _INSTALLED:
        for name in NAMES:
            wrapped = _wrapper(_unwrapped(getattr(clip_grad, name)))
            setattr(clip_grad, name, wrapped)
            setattr(nn_utils, name, wrapped)
        _INSTALLED = True
    # A watch dropped without close() lets go too. Registered before the _OPEN entry: weakref
    # callbacks run newest first, so _OPEN has dropped the dead watch when this one runs.
    weakref.finalize(watch, _restore_if_idle)
    _OPEN[watch] = frozenset(id(p) for p in watch.params)
    return _Handle(watch)
