"""What `labkit.watch` costs on a DistributedDataParallel run: two gloo ranks on this machine.

Run with ``make bench`` (or ``python benchmarks/bench_watch_ddp.py``). Two ranks start once;
for each MLP size they alternate blocks of plain DDP steps with blocks of watched DDP steps
(a fresh `labkit.watch` per block), one thread per rank, and rank 0 reports medians:

    plain, watched  seconds per step (zero_grad, forward, loss, backward, step); a watched
                    block's steps include its cross-rank checks (every `--every` steps)
    ratio           median over the pairs of (watched block / the plain block before it)
                    (bar: <= 1.10)
    checks          cross-rank checks inside a watched block's steps
    bytes/check     what each rank sends in one check's two all-gathers: 8 x (1 + 4 x groups) + 16
    made ms         making the watch (its first check included) and closing it, once per run:
                    outside the per-step figures, and reported here

Each rank trains on its own batches; both hold the same parameters throughout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta

SIZES = {"10k": (32, 128, 2), "1M": (256, 512, 4), "10M": (1024, 1024, 10)}  # in, width, depth


def _model(inp: int, width: int, depth: int):
    import torch.nn as nn

    layers, d = [], inp
    for _ in range(depth - 1):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, 10))


def _block(ddp, optimizer, x, y, steps: int, watched: bool, every: int):
    """(seconds per step, seconds to make and close the watch, the watch). The steps are timed
    alone; the checks every `every` steps fall inside them, the one at the start and at
    close (when due) in the second figure."""
    import torch.nn.functional as F

    import labkit

    made = time.perf_counter()
    w = labkit.watch(ddp, optimizer, check_every=every) if watched else None
    started = time.perf_counter()
    for i in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(ddp(x[i % len(x)]), y[i % len(y)]).backward()
        optimizer.step()
    per_step = (time.perf_counter() - started) / steps
    closing = time.perf_counter()
    if w is not None:
        w.close()
    return per_step, (started - made) + (time.perf_counter() - closing), w


def _rank(rank: int, rendezvous: str, args) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{rendezvous}",
        rank=rank,
        world_size=2,
        timeout=timedelta(seconds=120),
    )
    if rank == 0:
        print(
            f"{'model':>6} {'params':>10} {'plain s':>10} {'watched s':>10} {'ratio':>6} "
            f"{'checks':>6} {'bytes/check':>11} {'made ms':>8}"
        )
    for name in args.sizes:
        inp, width, depth = SIZES[name]
        torch.manual_seed(0)
        ddp = DDP(_model(inp, width, depth))
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
        g = torch.Generator().manual_seed(rank)
        x = torch.randn(8, 64, inp, generator=g)
        y = torch.randint(0, 10, (8, 64), generator=g)
        _block(ddp, optimizer, x, y, 10, True, args.every)  # warm-up, both kinds
        _block(ddp, optimizer, x, y, 10, False, args.every)
        ratios, plain, watched, made, w = [], [], [], [], None
        for _ in range(args.pairs):
            p, _, _ = _block(ddp, optimizer, x, y, args.steps, False, args.every)
            t, m, w = _block(ddp, optimizer, x, y, args.steps, True, args.every)
            plain.append(p), watched.append(t), ratios.append(t / p), made.append(m)
        if rank == 0:
            n = sum(p.numel() for p in ddp.parameters())
            checks = sum(1 for c in w.describe()["ranks"]["checks"] if 0 < c["step"] <= args.steps)
            print(
                f"{name:>6} {n:>10,} {statistics.median(plain):>10.5f} "
                f"{statistics.median(watched):>10.5f} {statistics.median(ratios):>6.3f} "
                f"{checks:>6} {8 * (1 + 4 * len(w.groups)) + 16:>11} "
                f"{1e3 * statistics.median(made):>8.2f}",
                flush=True,
            )
    dist.destroy_process_group()


def main(argv=None) -> int:
    import torch.multiprocessing as mp

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10k,1M,10M", help="comma-separated, of " + ", ".join(SIZES))
    p.add_argument("--steps", type=int, default=100, help="steps per block (default 100)")
    p.add_argument("--pairs", type=int, default=5, help="plain/watched pairs (default 5)")
    p.add_argument("--every", type=int, default=50, help="steps between checks (default 50)")
    args = p.parse_args(argv)
    args.sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in args.sizes if s not in SIZES]
    if unknown:
        p.error(f"--sizes: {unknown[0]!r} is not a size; choose from {', '.join(SIZES)}")
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_rank, args=(os.path.join(tmp, "rendezvous"), args), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
