"""labkit: a study lab for model-training fundamentals and loss-curve diagnosis.

    >>> import labkit
    >>> run = labkit.train(seed=0)          # the healthy reference run
    >>> run.table["loss_raw"][:3]           # per-step raw loss
"""

__version__ = "0.1.0"

from .config import Config
from .data import Dataset, make_blobs, make_imbalanced, make_tokens
from .models import MLP, LMOutput, TinyCausalLM
from .run import Run
from .seams import Seams, evaluate
from .train import Trainer, train

__all__ = [
    "Config", "Dataset", "LMOutput", "MLP", "Run", "Seams", "TinyCausalLM", "Trainer",
    "evaluate", "make_blobs", "make_imbalanced", "make_tokens", "train",
]
