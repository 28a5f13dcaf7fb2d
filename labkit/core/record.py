"""Layer groups: how per-layer norm columns are named (``grad_norm/<group>``).

The per-step recorder that lived here (``NormRecorder``, a full copy of every trainable
parameter) is now `labkit.core.watch.Watch`: hooked on the optimizer's step, used by
`labkit.train` and by a learner's own loop alike, within a memory budget.
"""

from __future__ import annotations


def group_name(param_name: str, depth: int = 3) -> str:
    """'backbone.0.weight' -> 'backbone.0'; 'backbone.blocks.0.qkv.bias' -> 'backbone.blocks.0'."""
    owner = param_name.rsplit(".", 1)[0] if "." in param_name else param_name
    return ".".join(owner.split(".")[:depth])
