"""The setup protocol: the learner's code, as five methods, checked with sentences.

    class MySetup:
        def make_model(self, seed): ...         # -> nn.Module, init fixed by seed
        def make_optimizer(self, model): ...    # -> torch.optim.Optimizer (may change the model)
        def batches(self, seed): ...            # -> list of one epoch's batches, order fixed by seed
        def loss_fn(self, model, batch): ...    # -> scalar loss tensor
        def train(self, seed, epochs): ...      # -> labkit.Run (the learner's loop, via Run.from_log)
        def val_batches(self, seed): ...        # optional: held-out batches
        def init_state(self, model, batch): ... # optional: a carried state (see own_carry)

A batch may be a tuple or list ``(x, y)`` or a dict; inputs and labels are found by position
or by their usual names; labels may be one per position of a token grid, flattened (own_rows).
make_optimizer may return None, with update(model) for a loop without torch.optim (own_carry).

An attribute ``world_size`` (default 1) asks for a distributed triage: with 2 or more,
`labkit.diagnose` starts that many gloo ranks on the CPU and calls ``train(seed, epochs)`` on
each inside the process group, where the loop wraps its model in DistributedDataParallel
(see `own.step1_capture.launch` and docs/own/distributed.md)."""

from __future__ import annotations

import torch
import torch.nn as nn

METHODS = ("make_model", "make_optimizer", "batches", "loss_fn", "train")
INPUT_KEYS = ("x", "input_ids", "inputs", "input", "images", "image", "features", "pixel_values")
LABEL_KEYS = ("y", "labels", "label", "targets", "target")


def _name(setup) -> str:
    return type(setup).__name__  # an adapted setup (own_carry) carries the learner's class name


def check_methods(setup) -> None:
    """Refuse an object that lacks one of the five methods, naming what is missing."""
    if isinstance(setup, str):
        raise TypeError(
            f"setup={setup!r} is a string; pass a setup object with the methods "
            f"{', '.join(METHODS)}, or a zoo bug's name as bug=."
        )
    missing = [m for m in METHODS if not callable(getattr(setup, m, None))]
    if missing:
        raise TypeError(
            f"setup {_name(setup)} lacks {', '.join(f'{m}()' for m in missing)}; a setup "
            f"needs all five methods: {', '.join(METHODS)} (see labkit.diagnosis.own.step1_capture.setup)."
        )


MAX_WORLD = 8  # ranks labkit starts on this machine's CPU


def world_size_of(setup) -> int:
    """The setup's ``world_size`` (1 when it has none), checked."""
    world = getattr(setup, "world_size", 1)
    if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= MAX_WORLD:
        raise ValueError(
            f"{_name(setup)}.world_size={world!r}: give a whole number of ranks from 1 (one "
            f"process, the default) to {MAX_WORLD} (labkit starts that many gloo ranks on "
            "this machine's CPU)."
        )
    if world > 1:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_gloo_available()):
            raise ValueError(
                f"{_name(setup)}.world_size={world} needs torch.distributed with the gloo "
                "backend, which this torch build lacks; use world_size=1, or a torch build "
                "with distributed support (the CPU wheels from pytorch.org have it)."
            )
    return world


def _key(batch, keys, what: str):
    if isinstance(batch, dict):
        for k in keys:
            if k in batch:
                return k
        raise ValueError(
            f"cannot find the {what} in a batch with keys {', '.join(map(repr, batch))}; "
            f"name them one of {', '.join(map(repr, keys))}."
        )
    if isinstance(batch, (tuple, list)):
        index = 0 if what == "inputs" else 1
        if len(batch) <= index:
            raise ValueError(
                f"a batch of {len(batch)} item(s) has no {what}; give (inputs, labels)."
            )
        return index
    raise TypeError(f"a batch must be a tuple, a list or a dict; got {type(batch).__name__}.")


def inputs_of(batch) -> torch.Tensor:
    return batch[_key(batch, INPUT_KEYS, "inputs")]


def labels_of(batch) -> torch.Tensor:
    return batch[_key(batch, LABEL_KEYS, "labels")]


def _replace(batch, key, value):
    if isinstance(batch, dict):
        return {**batch, key: value}
    out = list(batch)
    out[key] = value
    return type(batch)(out) if isinstance(batch, tuple) else out


def with_labels(batch, labels):
    return _replace(batch, _key(batch, LABEL_KEYS, "labels"), labels)


def with_inputs(batch, inputs):
    return _replace(batch, _key(batch, INPUT_KEYS, "inputs"), inputs)


def describe(batch) -> str:
    items = batch.items() if isinstance(batch, dict) else enumerate(batch)
    parts = [
        f"{k}: {tuple(v.shape)} {str(v.dtype).replace('torch.', '')}"
        for k, v in items
        if isinstance(v, torch.Tensor)
    ]
    return "; ".join(parts) or type(batch).__name__


def call(setup, method: str, *args):
    """Call a learner's method; an exception becomes a sentence naming the method.
    ``train`` runs under the time budget of `labkit.diagnose` (`budget`)."""
    from .. import nograph
    from .budget import BudgetExceeded, within

    try:
        if method == "train":
            return within(lambda: setup.train(*args), f"{_name(setup)}.train{tuple(args)}")
        return getattr(setup, method)(*args)
    except BudgetExceeded:
        raise
    except Exception as exc:  # the learner's code may raise anything
        from .bounded import shown

        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        said = f"{_name(setup)}.{method}({shown(args)}) raised {type(exc).__name__}: {first}"
        if method == "train" and nograph.NO_GRAPH in first:  # which part lost the graph
            said += "; " + (nograph.cause(setup, args[0]) or "no loss reached the parameters")
        raise ValueError(said) from exc


def make_model(setup, seed: int) -> nn.Module:
    model = call(setup, "make_model", seed)
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"{_name(setup)}.make_model({seed}) returned {type(model).__name__}; it must "
            "return a torch.nn.Module."
        )
    if not any(p.requires_grad for p in model.parameters()) and not list(model.parameters()):
        raise ValueError(f"{_name(setup)}.make_model({seed}) returned a model with no parameters.")
    return model


def make_optimizer(setup, model: nn.Module) -> torch.optim.Optimizer:
    opt = call(setup, "make_optimizer", model)
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(
            f"{_name(setup)}.make_optimizer(model) returned {type(opt).__name__}; it must return a "
            "torch.optim.Optimizer (build the scheduler inside train()), or None with a method "
            "update(model) for a loop without torch.optim (see own_carry)."
        )
    return opt


def batches(setup, seed: int, method: str = "batches") -> list:
    out = call(setup, method, seed)
    if not isinstance(out, (list, tuple)):
        hint = " (return list(loader))" if hasattr(out, "__iter__") else ""
        raise TypeError(
            f"{_name(setup)}.{method}({seed}) returned {type(out).__name__}; it must "
            f"return a list of one epoch's batches{hint}."
        )
    if not out:
        raise ValueError(
            f"{_name(setup)}.{method}({seed}) returned an empty list: an epoch with no "
            "batches cannot be trained or triaged."
        )
    for i, b in enumerate(out):
        try:
            x, y = inputs_of(b), labels_of(b)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{_name(setup)}.{method}({seed})[{i}]: {exc}") from None
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            raise TypeError(
                f"{_name(setup)}.{method}({seed})[{i}] holds inputs of type "
                f"{type(x).__name__} and labels of type {type(y).__name__}; both must be "
                "torch.Tensor."
            )
        from .rows import check_rows  # a token grid's labels may be one per position

        check_rows(x, y, f"{_name(setup)}.{method}({seed})[{i}]")
    return list(out)


def loss(setup, model: nn.Module, batch, index: int = 0) -> torch.Tensor:
    try:
        value = setup.loss_fn(model, batch)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(
            f"{_name(setup)}.loss_fn(model, batch) failed on batch {index} ({describe(batch)}): the "
            f"model cannot take this batch. {type(exc).__name__}: {first}"
        ) from exc
    if not isinstance(value, torch.Tensor):
        hint = " (return the tensor, not loss.item())" if isinstance(value, float) else ""
        raise TypeError(
            f"{_name(setup)}.loss_fn(model, batch) returned {type(value).__name__}; it must return a "
            f"scalar loss tensor{hint}."
        )
    if value.numel() != 1:
        raise ValueError(
            f"{_name(setup)}.loss_fn(model, batch) returned a tensor of shape "
            f"{tuple(value.shape)}; reduce it to one number (e.g. .mean())."
        )
    return value.reshape(())


def train(setup, seed: int, epochs: int):
    from ....core.run import Run

    run = call(setup, "train", seed, epochs)
    if not isinstance(run, Run):
        raise TypeError(
            f"{_name(setup)}.train({seed}, {epochs}) returned {type(run).__name__}; wrap "
            "your loop's log with labkit.Run.from_log(columns, seed=..., started_at=...)."
        )
    if len(run) == 0:
        raise ValueError(f"{_name(setup)}.train({seed}, {epochs}) returned a Run with no steps.")
    return run


def check(setup, seed: int = 0) -> list[str]:
    """Call every method once on `seed` (train for one epoch); return what was checked."""
    check_methods(setup)
    model = make_model(setup, seed)
    opt = make_optimizer(setup, model)
    data = batches(setup, seed)
    value = loss(setup, model, data[0])
    lines = [
        f"make_model({seed}): {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters",
        f"make_optimizer: {type(opt).__name__}",
        (f"batches({seed}): {len(data)} batches, the first {describe(data[0])}"),
        f"loss_fn: {value.item():.4g} on batch 0",
    ]
    if callable(getattr(setup, "val_batches", None)):
        val = batches(setup, seed, "val_batches")
        lines.append(f"val_batches({seed}): {len(val)} batches")
    return lines


def take(batches: list, n: int = 64):
    """The first `n` examples of an epoch as one batch of the same structure (the first batch
    alone when they cannot be joined: sequences of other lengths, labels per position)."""
    if len(labels_of(batches[0])) != len(inputs_of(batches[0])):
        return batches[0]
    need, used = 0, []
    for b in batches:
        used.append(b)
        need += len(labels_of(b))
        if need >= n:
            break

    def join(values):
        if all(isinstance(v, torch.Tensor) and v.dim() > 0 for v in values):
            return torch.cat(values)[:n]
        return values[0]

    try:
        if isinstance(batches[0], dict):
            return {k: join([b[k] for b in used]) for k in batches[0]}
        joined = [join([b[i] for b in used]) for i in range(len(batches[0]))]
        return tuple(joined) if isinstance(batches[0], tuple) else joined
    except RuntimeError:
        return batches[0]


def load(spec: str):
    """``path/to/file.py:MySetup`` -> an instance of MySetup (a class is called with no
    arguments; an object is used as it is). Without ``:Name``, the file's one class with
    the five methods is used."""
    import importlib.util
    import sys
    from pathlib import Path

    from ....errors import suggest

    path_text, _, name = spec.partition(":")
    path = Path(path_text)
    if path.suffix != ".py":
        raise ValueError(
            f"--setup={spec!r} must name a Python file and a class, like path/to/file.py:MySetup."
        )
    if not path.exists():
        raise FileNotFoundError(f"--setup file {path} does not exist.")
    module_name = f"labkit_setup_{abs(hash(str(path.resolve())))}"
    loader = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[module_name] = module  # as an import would; ranks load it so too (launch)
    sys.path.insert(0, str(path.resolve().parent))  # the script may import its neighbours
    try:
        loader.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"importing {path} failed: {type(exc).__name__}: {first}") from exc
    finally:
        sys.path.remove(str(path.resolve().parent))
    found = [
        k
        for k, v in vars(module).items()
        if isinstance(v, type)
        and v.__module__ == module_name
        and all(callable(getattr(v, m, None)) for m in METHODS)
    ]
    if not name:
        if len(found) != 1:
            raise ValueError(
                f"{path} has {len(found)} setup classes ({', '.join(found) or 'none'}); "
                f"name one, like {path}:{found[0] if found else 'MySetup'}."
            )
        name = found[0]
    if not hasattr(module, name):
        raise ValueError(
            f"{path} has no {name!r}; its setup classes are {', '.join(found) or 'none'}."
            f"{suggest(name, found)}"
        )
    obj = getattr(module, name)
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:
            raise ValueError(f"{name}() failed: {type(exc).__name__}: {exc}") from exc
    check_methods(obj)
    return obj
