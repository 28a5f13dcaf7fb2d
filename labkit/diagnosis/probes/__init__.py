"""Diagnostic probes that work on any ``nn.Module`` and optimizer, not only labkit's.

Each returns a `ProbeResult` (a verdict sentence plus the numbers) and refuses bad
input with a sentence: a model with no trainable parameters, an optimizer that owns
none of the model's parameters, a batch the model cannot take, a checkpoint of
another architecture.
"""

from ._common import ProbeResult, default_forward, default_loss, grad_total
from .audit import UpdateProbe, gradient_audit, loss_at_init, uniform_loss, update_probe
from .lr import load_checkpoint, lr_sweep, replay_batch, save_checkpoint
from .nonfinite import first_nonfinite
from .overfit import label_alignment, label_shuffle_control, overfit_probe, shuffle_labels
from .reported import raw_vs_reported

__all__ = [
    "ProbeResult",
    "UpdateProbe",
    "default_forward",
    "default_loss",
    "first_nonfinite",
    "grad_total",
    "gradient_audit",
    "label_alignment",
    "label_shuffle_control",
    "load_checkpoint",
    "loss_at_init",
    "lr_sweep",
    "overfit_probe",
    "raw_vs_reported",
    "replay_batch",
    "save_checkpoint",
    "shuffle_labels",
    "uniform_loss",
    "update_probe",
]
