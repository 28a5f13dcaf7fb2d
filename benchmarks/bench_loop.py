"""Instrumented reference loop vs a plain PyTorch loop: same model, data, batches, seed.

Run with ``make bench`` (or ``python benchmarks/bench_loop.py``). Prints the
median seconds per step of each loop, their ratio, and the wall time of a
whole 200-step toy-MLP `labkit.train` run, all on one CPU thread.

The plain loop does what a careful hand-written loop does: index the batch,
zero_grad, forward, cross-entropy, backward, step, and keep loss.item() for
its log. The labkit loop additionally records raw and reported loss, the
learning rate, and total and per-layer-group gradient and update norms at
every step, plus periodic evaluation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import labkit
from labkit.core.seams import batch_indices, make_batch, make_data, make_model, steps_per_epoch


def plain_loop(config: labkit.Config) -> float:
    """Seconds for `config.steps` steps of an uninstrumented loop on the same setup."""
    torch.manual_seed(config.seed)
    data = make_data(config)
    model = make_model(config, data)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    spe = steps_per_epoch(config, data)
    n = len(data)
    losses = []
    t0 = time.perf_counter()
    model.train()
    for step in range(config.steps):
        epoch, batch_id = divmod(step, spe)
        batch = make_batch(data.train, batch_indices(config, n, epoch, batch_id), config, batch_id)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(batch["x"]), batch["y"])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return time.perf_counter() - t0


def labkit_loop(config: labkit.Config) -> float:
    """Seconds spent in the instrumented loop, setup and evaluation passes excluded as for
    the plain loop (which has neither); turning the recorded tensors into the Run's
    columns at the end is included."""
    run = labkit.train(config)
    return run.timing["loop_s"] - run.timing["eval_s"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    # eval_every larger than the run: the per-step instrumentation alone is compared (the one
    # evaluation at the end is timed separately and left out).
    config = labkit.Config(steps=args.steps, eval_every=10 * args.steps)
    plain_loop(config), labkit_loop(config)  # warm-up: first calls pay one-off costs
    plain, inst = [], []
    for _ in range(args.repeats):  # interleave so machine noise hits both alike
        plain.append(plain_loop(config) / args.steps)
        inst.append(labkit_loop(config) / args.steps)
    p, i = statistics.median(plain), statistics.median(inst)
    whole = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        labkit.train(labkit.Config(steps=200))  # default evals included
        whole.append(time.perf_counter() - t0)
    result = {
        "plain_s_per_step": p,
        "instrumented_s_per_step": i,
        "ratio": i / p,
        "train_200_steps_s": statistics.median(whole),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "repeats": args.repeats,
        "steps": args.steps,
    }
    print(f"plain loop        {p * 1e6:8.1f} us/step")
    print(f"labkit loop       {i * 1e6:8.1f} us/step  (per-layer grad + update norms every step)")
    print(f"ratio             {i / p:8.2f}x   (bar: <= 1.30x)")
    print(
        f"200-step MLP run  {result['train_200_steps_s']:8.3f} s      (bar: <= 0.25 s, one thread)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
