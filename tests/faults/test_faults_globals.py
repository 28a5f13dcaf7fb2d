"""The learner's process as labkit found it: torch's global settings that the learner's code
changes while `labkit.diagnose` runs it (make_model, train(), ...) are put back when the
triage ends, and the record says which changed, and in which call."""

import random

import pytest
import torch

import labkit
from labkit.core.process.torch_state import as_found, settings
from own_setups.common import batches_of, blob_mixture
from own_setups.healthy import BlobSetup


class ChangesGlobals(BlobSetup):
    """A small setup whose make_model and train() change torch's process-wide settings (and
    still trains: its own code turns grad mode back on where it needs it)."""

    def __init__(self):
        x, y = blob_mixture(n=64)
        self.x, self.y = x[:, :4], y

    def make_model(self, seed):
        torch.set_default_dtype(torch.float64)
        torch.use_deterministic_algorithms(True)
        torch.set_grad_enabled(False)
        torch.set_anomaly_enabled(True)
        torch.set_float32_matmul_precision("medium")
        torch.manual_seed(seed)
        return torch.nn.Linear(4, int(self.y.max()) + 1)

    def batches(self, seed):
        return [
            (x.to(torch.get_default_dtype()), y) for x, y in batches_of(self.x, self.y, 16, seed)
        ]

    def loss_fn(self, model, batch):
        with torch.enable_grad():
            return super().loss_fn(model, batch)

    def train(self, seed, epochs):
        torch.set_num_threads(3)
        random.seed(1234)
        with torch.enable_grad():
            return super().train(seed, epochs)


@pytest.mark.slow
def test_diagnose_puts_back_every_global_setting_the_setup_changed():
    torch.manual_seed(7)
    random.seed(7)
    before, rng, py_rng = settings(), torch.get_rng_state(), random.getstate()
    record = labkit.diagnose(ChangesGlobals())
    assert settings() == before  # dtype, threads, deterministic, grad, anomaly, device, matmul
    assert torch.equal(torch.get_rng_state(), rng) and random.getstate() == py_rng
    note = next(n for n in record.notes if n.startswith("Your code changed torch's global"))
    for said in (
        "default dtype from torch.float32 to torch.float64 (in ChangesGlobals.make_model(0))",
        "grad mode from True to False (in ChangesGlobals.make_model(0))",
        "deterministic algorithms (on, warn only) from (False, False) to (True, False)",
        f"threads from {before['threads']} to 3 (in ChangesGlobals.train(0, ",
        "labkit set each back as it was before the triage",
    ):
        assert said in note, note


def test_as_found_puts_settings_back_after_an_error_and_notes_nothing_unchanged():
    before = settings()
    with pytest.raises(RuntimeError), as_found() as changes:
        torch.set_default_dtype(torch.float64)
        torch.set_default_device("meta")
        raise RuntimeError("the learner's code failed")
    assert settings() == before and torch.empty(1).device.type == "cpu"
    assert [c[0] for c in changes] == ["default dtype", "default device"]
    with as_found() as changes:
        torch.randn(3)  # the generator moves, but no setting changed
    assert changes == []
