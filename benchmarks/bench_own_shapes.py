"""Wall time of `labkit.diagnose(setup, seeds=(0, 1))` on small *real* models, one thread.

The bar (issue 26): <= 30 s for a small real LSTM or GPT of a few hundred thousand
parameters, on one core. The models are the re-creations in tests/own_setups/shapes.py,
made larger: nanoGPT's `GPT` (its loss computed in forward) and PyTorch examples'
word_language_model `RNNModel` (sequence-first 35 x 20 batches, a carried hidden state, no
optimizer: ``p.data.add_``), each healthy and with unshifted targets.

    OMP_NUM_THREADS=1 python benchmarks/bench_own_shapes.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import torch

import labkit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from own_setups.shapes import GPTSetup, WordLMSetup  # noqa: E402

GPT_SIZE = {"n_layer": 2, "n_head": 4, "n_embd": 128}
LSTM_SIZE = {"ninp": 128, "nhid": 128, "nlayers": 2}
BAR_S = 30.0


def main() -> int:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    labkit.diagnose(WordLMSetup())  # warm-up: imports and first-call costs (torch._dynamo)
    cases = {
        "GPT (healthy)": lambda: GPTSetup(**GPT_SIZE),
        "GPT (targets = inputs)": lambda: GPTSetup("unshifted", **GPT_SIZE),
        "word LM LSTM (healthy)": lambda: WordLMSetup(**LSTM_SIZE),
        "word LM LSTM (targets = inputs)": lambda: WordLMSetup("unshifted", **LSTM_SIZE),
    }
    worst = 0.0
    for name, make in cases.items():
        setup = make()
        params = sum(p.numel() for p in setup.make_model(0).parameters())
        started, cpu = time.perf_counter(), time.process_time()
        record = labkit.diagnose(setup, seeds=(0, 1))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        worst = max(worst, cpu)
        print(
            f"{name:32s} {params:8,d} params {seconds:6.1f} s wall {cpu:6.1f} s cpu  "
            f"{record.rows['conviction']['text'][:50]}"
        )
    # one thread: the CPU seconds are what an idle core takes; the wall time adds any load
    print(f"slowest: {worst:.1f} s of CPU (bar: <= {BAR_S:g} s on one core)")
    return 0 if worst <= BAR_S else 1


if __name__ == "__main__":
    sys.exit(main())
