"""Wall time of `labkit.diagnose(setup)` on two seeds, one thread: the learner's-code triage.

Run with ``make bench`` (or ``python benchmarks/bench_own_triage.py``). The bar is
<= 10 s for the triage of one small setup on one core. The setups are the examples/
scripts (the GPT-2 one only with --all: it is not small) and a plain MLP script written
here, with nothing of labkit but Run.from_log.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class SmallMlp:
    """The small setup the bar is about: 1,024 points, 16 batches, an MLP, Adam."""

    def __init__(self):
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(1024, 10, generator=gen)
        self.y = (self.x[:, :3].sum(1) > 0).long() + 2 * (self.x[:, 3] > 0).long()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 4))

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        order = torch.randperm(1024, generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(64)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        started, model = time.time(), self.make_model(seed)
        opt, raw = self.make_optimizer(model), []
        for _ in range(epochs):
            for batch in self.batches(seed):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                raw.append(loss.item())
        return labkit.Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=started
        )


def _example(name, cls, **kwargs):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, cls)(**kwargs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also the GPT-2 example (not small)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cases = {
        "small MLP (healthy)": lambda: SmallMlp(),
        "examples/dataloader_classifier": lambda: _example(
            "dataloader_classifier", "DataLoaderClassifier"
        ),
        "examples/cnn_synthetic_images": lambda: _example("cnn_synthetic_images", "CnnImages"),
    }
    if args.all:
        cases["examples/gpt2_finetune"] = lambda: _example("gpt2_finetune", "Gpt2FineTune")
    labkit.diagnose(SmallMlp())  # warm-up: imports and first-call costs
    results = {}
    for name, make in cases.items():
        setup = make()
        t0 = time.perf_counter()
        record = labkit.diagnose(setup, seeds=(0, 1))
        seconds = time.perf_counter() - t0
        verdict = record.rows["conviction"]["text"]
        results[name] = {"seconds": seconds, "conviction": verdict}
        print(f"{name:34s} {seconds:6.2f} s  {verdict[:70]}")
    small = results["small MLP (healthy)"]["seconds"]
    print(f"small setup: {small:.2f} s   (bar: <= 10 s on one core)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if small <= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
