"""The Lightning callback around `labkit.watch`: a tiny model, 20 real Lightning steps."""

import subprocess
import sys

import pytest
import torch
import torch.nn as nn


def test_import_labkit_pulls_none_of_the_extras():
    probe = (
        "import sys, labkit; labkit.watch; labkit.Run; import labkit.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'lightning', "
        "'pytorch_lightning', 'tensorboard', 'tensorboardX', 'transformers', 'wandb'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


L = pytest.importorskip(
    "lightning", reason="Lightning is an optional extra: pip install 'labkit[lightning]'"
)


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        self.seen = []  # the total gradient norm, measured by Lightning's own hook

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def on_before_optimizer_step(self, optimizer):
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        self.seen.append(
            torch.linalg.vector_norm(
                torch.stack([torch.linalg.vector_norm(g) for g in grads])
            ).item()
        )

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@pytest.mark.slow
def test_callback_records_20_steps_as_lightning_trains_them(tmp_path):
    from labkit.core.watch.lightning import WatchCallback

    torch.manual_seed(0)
    x, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    module, cb = Tiny(), WatchCallback(writer="logger")  # the trainer's TensorBoardLogger
    logger = L.pytorch.loggers.TensorBoardLogger(tmp_path, name="tb", version=0)
    trainer = L.Trainer(
        max_steps=20,
        accelerator="cpu",
        devices=1,
        logger=logger,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[cb],
    )
    trainer.fit(module, data)
    run = cb.run()
    assert len(run) == 20 == len(module.seen)
    assert all(abs(a - b) <= 1e-5 * b for a, b in zip(run.table["grad_norm"], module.seen))
    assert all(u > 0 for u in run.table["update_norm"])
    assert run.groups == ["net.0", "net.2"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb" / "version_0"))
    acc.Reload()
    logged = [e.value for e in acc.Scalars("grad_norm")]
    assert len(logged) == 20 and all(abs(a - b) <= 1e-5 * b for a, b in zip(logged, module.seen))
