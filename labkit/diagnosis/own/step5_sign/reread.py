"""labkit's own intervention for a one-way RNN read at its first time step (``first_step_read``,
`step6_decide.parts.first_step_gap`): the learner's own loop with that layer's outputs read in
reverse time order, and nothing else changed. Position 0, which the learner's forward reads,
then holds the state after the whole sequence, as its last step's output does.

The layers are those whose hidden-to-hidden weight had a gradient of exactly 0 after every
``backward()`` of the learner's run (`acquit.zero_grad`): the state before the first step is 0,
so only a read of the first step leaves it so. It runs on a copy of the setup whose
``make_model`` adds a forward hook to each (`stepped.with_method`); a ``train()`` that builds its
model without ``make_model`` is not changed, and the prescription alone then signs the
conviction. The forecast is read off seed 0's run, as `stepped`'s.
"""

from __future__ import annotations

import torch

from ..step1_capture.loops import learner_model
from .acquit import zero_grad
from .stepped import own_loop_plan, with_method


def _reverse(module, args, out):
    """An RNN's forward hook: its output sequence in reverse time order, the state unchanged."""
    seq, rest = (out[0], out[1:]) if isinstance(out, tuple) else (out, ())
    if not torch.is_tensor(seq):  # a PackedSequence: left as it is
        return out
    seq = seq.flip(1 if module.batch_first and seq.dim() == 3 else 0)
    return (seq, *rest) if isinstance(out, tuple) else seq


def reversed_rnn(model, names: list[str]):
    """`model` with the outputs of its RNN layers named in `names` read in reverse time order."""
    for name, module in model.named_modules():
        if name in names:
            module.register_forward_hook(_reverse)
    return model


def with_reversed(setup, names: list[str]):
    """A copy of `setup` whose ``make_model`` reads those layers in reverse time order."""
    return with_method(setup, "make_model", lambda model, fixed, seed: reversed_rnn(model, names))


def first_step_rnns(ev) -> list[str]:
    """The names of the one-way RNN layers of the learner's model whose hidden-to-hidden weight
    had a gradient of exactly 0 after every backward() (`zero_grad`); [] where none did, or the
    replay is not here (the ranks of a DDP run)."""
    try:
        zero = zero_grad(ev.replay)
    except Exception:  # a replay that did not travel: nothing read
        return []
    modules = dict(learner_model(ev).named_modules())
    return sorted(
        {
            prefix
            for name, _, recurrent in zero
            if recurrent
            for prefix in [name.rsplit(".", 1)[0] if "." in name else ""]
            if isinstance(modules.get(prefix), torch.nn.RNNBase)
            and not modules[prefix].bidirectional
        }
    )


def plan(evs):
    """(forecast, run(seed) -> Run, variable), or None (see the module docstring)."""
    ev, names = evs[0], first_step_rnns(evs[0])
    if not names or getattr(type(ev.setup), "make_model", None) is None:
        return None
    return own_loop_plan(
        evs,
        lambda: with_reversed(ev.setup, names),
        ("the time step read", "the first", "the last (outputs read in reverse time order)"),
    )
