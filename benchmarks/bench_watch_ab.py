"""The watch's per-step ratio in two checkouts, alternated process by process.

    python benchmarks/bench_watch_ab.py OLD_TREE NEW_TREE [--models mlp-10k,gpt-2M] [--rounds 3]

Each round runs `bench_watch.measure` (5 pairs of blocks, one thread) once in each tree, in a
fresh process, so a change's effect is read on the same machine at the same hour; a busy
machine swings the wall-clock ratio, so read the `cpu` one (process CPU seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, sys
tree = sys.argv[1]
sys.path[:0] = [tree, tree + "/benchmarks"]
import torch
torch.set_num_threads(1)
import bench_watch as B
out = {}
for name in sys.argv[2].split(","):
    r = B.measure(next(s for s in B.SPECS if s.name == name), "cpu", 5, 0.4)
    out[name] = [round(r["ratio"], 3), round(r["cpu_ratio"], 3), r["exact"]]
print(json.dumps(out))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--models", default="mlp-10k,mlp-100k,mlp-1M,gpt-2M")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for tree in (args.old, args.new):
        if not os.path.isdir(os.path.join(tree, "labkit")):
            parser.error(f"{tree!r} holds no labkit/ folder: give two checkouts of this repository")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for r in range(args.rounds):
        for label, tree in (("old", args.old), ("new", args.new)):
            done = subprocess.run(
                [sys.executable, "-c", CHILD, os.path.abspath(tree), args.models],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            line = "  ".join(f"{m} {w:.3f} (cpu {c:.3f}, {how})" for m, (w, c, how) in rows.items())
            print(f"round {r + 1} {label}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
