"""The setup protocol: every method the learner gives is checked with a sentence."""

import time

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit
from labkit.diagnosis.own.step1_capture import setup as proto


def _data(n=64):
    gen = torch.Generator().manual_seed(0)
    return torch.randn(n, 4, generator=gen), torch.randint(0, 3, (n,), generator=gen)


class Tiny:
    """A healthy, tiny setup; each test breaks one method."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Linear(4, 3)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1)

    def batches(self, seed):
        x, y = _data()
        return [(x[i : i + 16], y[i : i + 16]) for i in range(0, 64, 16)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        started, model = time.time(), self.make_model(seed)
        opt, raw = self.make_optimizer(model), []
        for _ in range(epochs):
            for b in self.batches(seed):
                opt.zero_grad()
                loss = self.loss_fn(model, b)
                loss.backward()
                opt.step()
                raw.append(loss.item())
        return labkit.Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=started
        )


def _broken(**methods):
    return type("Broken", (Tiny,), methods)()


def test_a_healthy_setup_passes_every_check():
    lines = proto.check(Tiny())
    assert lines[0].startswith("make_model(0): Linear, 15 parameters")
    assert "4 batches" in lines[2] and lines[3].startswith("loss_fn: ")


def test_missing_methods_and_strings_are_refused_by_name():
    class Partial:
        def make_model(self, seed): ...

    with pytest.raises(
        TypeError,
        match=r"setup Partial lacks make_optimizer\(\), batches\(\), loss_fn\(\), train\(\)",
    ):
        labkit.diagnose(Partial())
    with pytest.raises(TypeError, match="is a string; pass a setup object"):
        proto.check_methods("detach")


@pytest.mark.parametrize(
    "methods, error, words",
    [
        (
            {"make_model": lambda self, seed: [nn.Linear(4, 3)]},
            TypeError,
            r"make_model\(0\) returned list; it must return a torch.nn.Module",
        ),
        (
            {"make_optimizer": lambda self, model: {"lr": 0.1}},
            TypeError,
            r"make_optimizer\(model\) returned dict; it must return a torch.optim.Optimizer",
        ),
        (
            {"batches": lambda self, seed: []},
            ValueError,
            r"batches\(0\) returned an empty list: an epoch with no batches",
        ),
        (
            {"batches": lambda self, seed: iter([])},
            TypeError,
            r"returned list_iterator; .* \(return list\(loader\)\)",
        ),
        (
            {
                "batches": lambda self, seed: [
                    {"features_in": torch.zeros(2, 4), "y": torch.zeros(2)}
                ]
            },
            ValueError,
            r"cannot find the inputs in a batch with keys 'features_in', 'y'",
        ),
        (
            {"batches": lambda self, seed: [(torch.zeros(2, 5), torch.zeros(2, dtype=torch.long))]},
            ValueError,
            r"loss_fn\(model, batch\) failed on batch 0 \(0: \(2, 5\) float32; 1: \(2,\) int64\): the model cannot take this batch",
        ),
        (
            {
                "loss_fn": lambda self, model, batch: F.cross_entropy(
                    model(batch[0]), batch[1]
                ).item()
            },
            TypeError,
            r"loss_fn\(model, batch\) returned float; .* \(return the tensor, not loss.item\(\)\)",
        ),
        (
            {
                "loss_fn": lambda self, model, batch: F.cross_entropy(
                    model(batch[0]), batch[1], reduction="none"
                )
            },
            ValueError,
            r"returned a tensor of shape \(16,\); reduce it to one number",
        ),
    ],
)
def test_each_wrong_method_is_named_in_a_sentence(methods, error, words):
    with pytest.raises(error, match=words):
        proto.check(_broken(**methods))


def test_train_must_return_a_run():
    setup = _broken(train=lambda self, seed, epochs: {"loss": [1.0]})
    with pytest.raises(
        TypeError,
        match=r"Broken.train\(0, 3\) returned dict; wrap your loop's log with "
        r"labkit.Run.from_log",
    ):
        proto.train(setup, 0, 3)
    crash = _broken(train=lambda self, seed, epochs: 1 / 0)
    with pytest.raises(ValueError, match=r"Broken.train\(0, 3\) raised ZeroDivisionError"):
        proto.train(crash, 0, 3)


def test_batches_are_read_by_position_or_by_usual_names():
    x, y = torch.zeros(2, 4), torch.ones(2)
    for batch in [
        (x, y),
        [x, y],
        {"x": x, "y": y},
        {"input_ids": x, "labels": y},
        {"inputs": x, "targets": y},
        {"images": x, "target": y},
    ]:
        assert proto.inputs_of(batch) is x and proto.labels_of(batch) is y
        new = proto.with_labels(batch, y + 1)
        assert type(new) is type(batch) and torch.equal(proto.labels_of(new), y + 1)
        assert proto.labels_of(batch) is y  # the original is left alone
    joined = proto.take([(x, y), (x + 1, y)], 3)
    assert joined[0].shape == (3, 4) and isinstance(joined, tuple)


def test_load_reads_a_file_and_explains_what_is_wrong(tmp_path):
    src = tmp_path / "mine.py"
    src.write_text(
        "class Helper:\n    pass\n\n"
        "class MySetup:\n"
        + "".join(f"    def {m}(self, *a):\n        return None\n" for m in proto.METHODS)
    )
    assert type(proto.load(f"{src}:MySetup")).__name__ == "MySetup"
    assert type(proto.load(str(src))).__name__ == "MySetup"  # the file's one setup class
    with pytest.raises(
        ValueError, match="has no 'MySetp'; its setup classes are MySetup. Did you mean 'MySetup'"
    ):
        proto.load(f"{src}:MySetp")
    with pytest.raises(TypeError, match="setup Helper lacks make_model"):
        proto.load(f"{src}:Helper")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        proto.load(f"{tmp_path}/none.py:MySetup")
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_anywhere\n")
    with pytest.raises(ValueError, match="importing .*bad.py failed: ModuleNotFoundError"):
        proto.load(f"{bad}:X")
