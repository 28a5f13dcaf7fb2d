"""What the fewest torch calls an exact update norm needs cost inside a real loop, with no
labkit code: the floor under `labkit.watch`'s per-step ratio at a small size.

    OMP_NUM_THREADS=1 python benchmarks/bench_watch_floor.py [--model mlp-10k] [--pairs 9]

Each variant registers its own two optimizer hooks and is timed against the plain loop in
interleaved blocks (process CPU time, median of the pairs): empty hooks; the gradient norms
alone (what reading plain SGD's update from its gradient costs); a copy before the step, a
subtraction and one fused norm after it (what an exact copied update costs); the calls of a
small model's ring (`labkit.core.watch.ring`: a copy before the step, a copy of the gradients
and a subtraction after it, its norms every K steps left out); and `labkit.watch` itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

import labkit
from bench_watch import SPECS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp-10k", choices=[s.name for s in SPECS])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--steps", type=int, default=300, help="steps per block")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model, opt, loss_fn = next(s for s in SPECS if s.name == args.model).build("cpu")
    params = list(model.parameters())
    data, before, rows = [p.detach() for p in params], [p.detach().clone() for p in params], []

    def block(n: int) -> float:
        c = time.process_time()
        for _ in range(n):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn()
            loss.backward()
            opt.step()
            loss.item()
        return (time.process_time() - c) / n

    def keep(rows_now):
        rows.append(rows_now)
        if len(rows) > 256:
            rows.clear()

    def nothing(*_):
        pass

    def copy(*_):
        torch._foreach_copy_(before, data)

    def grads(*_):
        keep(torch._foreach_norm([p.grad for p in params]))

    def copied(*_):
        torch._foreach_sub_(before, data)
        keep(torch._foreach_norm([p.grad for p in params] + before))

    # the ring's calls (labkit/core/watch/ring.py), without its norms taken every K steps
    n_all = sum(p.numel() for p in params)
    ring = [torch.empty(n_all), torch.empty(n_all)]
    spans = torch.tensor([0] + [p.numel() for p in params]).cumsum(0).tolist()
    ring_rows = [[r[a:b].view(p.shape) for p, a, b in zip(params, spans, spans[1:])] for r in ring]

    def ring_copy(*_):
        torch._foreach_copy_(ring_rows[0], data)

    def ring_put(*_):
        torch._foreach_copy_(ring_rows[1], [p.grad for p in params])
        torch._foreach_sub_(ring_rows[0], data)

    variants = {
        "empty hooks": (nothing, nothing),
        "gradient norms only": (nothing, grads),
        "copy, subtract, norms": (copy, copied),
        "ring: copy; copy, subtract": (ring_copy, ring_put),
        "labkit.watch": None,
    }
    block(50)
    print(f"{args.model}, one thread, {args.pairs} pairs of {args.steps} steps (process CPU time)")
    for name, hooks in variants.items():
        plain, hooked = [], []
        for _ in range(args.pairs):
            plain.append(block(args.steps))
            if hooks is None:
                w = labkit.watch(model, opt)
            else:
                handles = [
                    opt.register_step_pre_hook(hooks[0]),
                    opt.register_step_post_hook(hooks[1]),
                ]
            hooked.append(block(args.steps))
            if hooks is None:
                w.close()
            else:
                for h in handles:
                    h.remove()
        ratio = statistics.median(b / a for a, b in zip(plain, hooked))
        added = (statistics.median(hooked) - statistics.median(plain)) * 1e6
        print(f"  {name:28s} +{added:6.1f} us a step   ratio {ratio:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
