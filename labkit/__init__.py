"""labkit: a study lab for model-training fundamentals and loss-curve diagnosis.

    import labkit
    run = labkit.train(seed=0)          # the healthy reference run
    run.table["loss_raw"][:3]           # per-step raw loss
    watch = labkit.watch(model, opt)    # the same per-step norms on your own loop
"""

__version__ = "0.1.0"

from .config import Config
from .data import Dataset, make_blobs, make_imbalanced, make_tokens
from .diagnose import diagnose
from .forecast import Forecast
from .forecast_history import ForecastHistory
from .forecast_score import ForecastScore
from .models import MLP, LMOutput, TinyCausalLM
from .run import Run
from .seams import Seams, evaluate
from .train import Trainer, config_hash, train
from .triage import Prediction, TriageRecord, TriageRefused
from .watch import Watch, watch

__all__ = [
    "Config", "Dataset", "Forecast", "ForecastHistory", "ForecastScore", "LMOutput", "MLP",
    "Prediction", "Run", "Seams", "TinyCausalLM", "Trainer", "TriageRecord", "TriageRefused",
    "Watch", "config_hash", "diagnose", "evaluate", "make_blobs", "make_imbalanced", "make_tokens",
    "train", "watch",
]
