"""What `labkit.watch` costs: time per step, watched vs plain, and the memory it adds.

Run with ``make bench`` (or ``python benchmarks/bench_watch.py``). One process, one table.
For each model (MLPs of about 10k to 10M parameters trained with SGD, GPT-2-shaped
decoders of about 2M to 100M parameters trained with AdamW, random init, nothing
downloaded) and each thread setting (1 thread, then torch's default), it alternates a
block of plain steps with a block of at least 20 watched steps (a fresh `labkit.watch`
per block) and reports medians:

    plain, watched  seconds per step: zero_grad, forward, loss, backward, step, loss.item()
    ratio           median over the pairs of (watched block / the plain block before it)
                    (bar: <= 1.10); pairing keeps a busy machine's drift out of it
    best            fastest watched block / fastest plain block: on a shared machine other
                    jobs only ever add time, so this is the cost of the work itself
    once            what a run pays once, whatever its length: building the watch and
                    reading its table back (`columns()`), in ms; outside the ratio, which
                    is the cost of a step
    cpu             the same ratio of process CPU seconds: a cross-check when other jobs
                    share the cores (wall time then swings far more than CPU time)
    kept            bytes the watch keeps beside the parameters, % of parameter bytes
    peak+           peak memory of a watched step minus that of a plain step, % of
                    parameter bytes (bar: <= 10% above 10M parameters). CPU: glibc's
                    in-use bytes, sampled at every call (one thread); CUDA:
                    torch.cuda.max_memory_allocated.
    norms           exact (copy), exact (optimizer: read from its state) or estimated
                    (sampled, with a band; see labkit.core.watch.budget)

CUDA rows are added when a GPU is present. ``--quick`` runs the small models only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit


# ---- models ------------------------------------------------------------------------


class Block(nn.Module):
    """GPT-2's block: pre-norm causal self-attention and a 4x MLP."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.attn_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):  # (B, T, d)
        B, T, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)  # (B, T, d) each
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, d/h)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(B, T, d))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """A GPT-2-shaped decoder: token + position embeddings, blocks, tied LM head."""

    def __init__(self, d: int, layers: int, heads: int, vocab: int, ctx: int):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids):  # (B, T) -> (B, T, vocab)
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str  # "mlp" or "gpt"
    size: tuple  # mlp: (in, hidden, classes, batch); gpt: (d, layers, heads, vocab, ctx, batch, T)

    @property
    def params_hint(self) -> float:
        """Rough parameter count, to give the big models fewer repeats."""
        if self.kind == "mlp":
            i, h, c, _ = self.size
            return i * h + h * h + h * c
        d, layers, _, vocab, ctx, _, _ = self.size
        return 12 * layers * d * d + (vocab + ctx) * d

    def build(self, device):
        torch.manual_seed(0)
        if self.kind == "mlp":
            i, h, c, b = self.size
            model = labkit.MLP(in_dim=i, hidden=h, n_classes=c, depth=2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            x, y = torch.randn(b, i, device=device), torch.randint(0, c, (b,), device=device)
            return model, opt, lambda: F.cross_entropy(model(x), y)
        d, layers, heads, vocab, ctx, b, T = self.size
        model = GPT(d, layers, heads, vocab, ctx).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        ids = torch.randint(0, vocab, (b, T + 1), device=device)
        return (
            model,
            opt,
            lambda: F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()),
        )


SPECS = [
    Spec("mlp-10k", "mlp", (64, 64, 10, 64)),
    Spec("mlp-100k", "mlp", (64, 300, 10, 64)),
    Spec("mlp-1M", "mlp", (64, 1000, 10, 64)),
    Spec("mlp-10M", "mlp", (64, 3150, 10, 64)),
    Spec("gpt-2M", "gpt", (128, 8, 4, 4096, 128, 4, 64)),
    Spec("gpt-10M", "gpt", (256, 10, 4, 8192, 128, 4, 64)),
    Spec("gpt-30M", "gpt", (512, 8, 8, 8192, 128, 2, 64)),
    Spec("gpt-100M", "gpt", (768, 12, 12, 16384, 128, 1, 64)),
]
GPT2_SMALL = Spec("gpt2-small", "gpt", (768, 12, 12, 50257, 1024, 8, 1024))  # CUDA only
QUICK = {"mlp-10k", "mlp-100k", "gpt-2M"}


# ---- measuring -----------------------------------------------------------------------


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


MIN_STEPS = 20  # steps per timed block, at least (models under 20M parameters)
CPU_S = [0.0]  # process CPU seconds of the last timed block (a cross-check on a busy machine)


def steps(model, opt, loss_fn, n, device) -> float:
    """Seconds for n plain steps of the learner's loop (the log keeps loss.item())."""
    raw = []
    sync(device)
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        opt.step()
        raw.append(loss.item())
    sync(device)
    CPU_S[0] = time.process_time() - c0
    return time.perf_counter() - t0


ONCE_S = [0.0]  # seconds of the last watched block spent once per run: watch() and columns()


def watched(model, opt, loss_fn, n, device) -> tuple[float, labkit.Watch]:
    """Seconds for n watched steps; the watch's once-per-run costs (building it, reading its
    table back) are timed apart, in ONCE_S: a run of any length pays them once."""
    sync(device)
    t_once = time.perf_counter()
    watch = labkit.watch(model, opt)
    built = time.perf_counter() - t_once
    c0, t0 = time.process_time(), time.perf_counter()
    steps(model, opt, loss_fn, n, device)
    sync(device)
    seconds = time.perf_counter() - t0
    CPU_S[0] = time.process_time() - c0
    t_read = time.perf_counter()
    watch.columns()  # reading the norms back: once per run
    sync(device)
    ONCE_S[0] = built + time.perf_counter() - t_read
    watch.close()
    return seconds, watch


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _in_use():
    """glibc's bytes in use (heap + mmapped), or None off glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return None

    def read():
        m = libc.mallinfo2()
        return m.uordblks + m.hblkhd

    return read


def peak_of(fn, device) -> int | None:
    """Peak bytes in use while fn() runs, above what was in use before it."""
    if device.startswith("cuda"):
        sync(device)
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        sync(device)
        return torch.cuda.max_memory_allocated() - base
    read = _in_use()
    if read is None:
        return None
    base, peak = read(), [0]

    def probe(frame, event, arg):  # sample at every call and return, Python or C
        peak[0] = max(peak[0], read())

    sys.setprofile(probe)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return max(peak[0], read()) - base


def peak_added(model, opt, loss_fn, device) -> int | None:
    """Peak of a watched step minus peak of a plain step, both from the same state; the
    watch is made inside the measured region, so its kept copies count."""
    one = lambda: steps(model, opt, loss_fn, 1, device)  # noqa: E731
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # glibc reports the main arena: keep every allocation on it
    try:
        one()
        plain = peak_of(one, device)
        box = []

        def watched_step():
            box.append(labkit.watch(model, opt))
            one()

        added = peak_of(watched_step, device)
        box[0].close()
    finally:
        torch.set_num_threads(threads)
    return None if plain is None or added is None else added - plain


def measure(spec: Spec, device: str, repeats: int, target_s: float) -> dict:
    model, opt, loss_fn = spec.build(device)
    n_params = sum(p.numel() for p in model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    first = steps(model, opt, loss_fn, 1, device)  # warm-up: optimizer state, first calls
    per = steps(model, opt, loss_fn, 1, device) or first
    # a per-step cost needs blocks long enough that the first step after a fresh watch (its
    # layouts made once) weighs little: at least MIN_STEPS, but 2 for the biggest models
    floor = MIN_STEPS if spec.params_hint < 20e6 else 2
    n = max(floor, min(200, int(target_s / per)))
    watched(model, opt, loss_fn, 1, device)  # warm-up of the watched path
    plain_s, watch_s, cpu_ratios, once_s, watch = [], [], [], [], None
    for _ in range(repeats):  # interleaved: machine noise hits both alike
        plain_s.append(steps(model, opt, loss_fn, n, device) / n)
        plain_cpu = CPU_S[0]
        seconds, watch = watched(model, opt, loss_fn, n, device)
        watch_s.append(seconds / n)
        once_s.append(ONCE_S[0])
        cpu_ratios.append(CPU_S[0] / plain_cpu if plain_cpu else float("nan"))
    p, w = statistics.median(plain_s), statistics.median(watch_s)
    ratios = [b / a for a, b in zip(plain_s, watch_s)]  # each watched block vs the plain before it
    return {
        "model": spec.name,
        "params": n_params,
        "param_bytes": param_bytes,
        "device": device,
        "threads": torch.get_num_threads() if device == "cpu" else None,
        "steps_per_block": n,
        "repeats": repeats,
        "plain_s": p,
        "watched_s": w,
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "best": min(watch_s) / min(plain_s),
        "once_s": statistics.median(once_s),
        "cpu_ratio": statistics.median(cpu_ratios) if device == "cpu" else None,
        "kept_bytes": watch.describe()["kept_bytes"],
        "exact": (
            "estimated"
            if watch.plan.estimated
            else "exact (optimizer)"
            if watch.plan.formula is not None
            else "exact (copy)"
        ),
        "model_obj": (model, opt, loss_fn),
    }


def with_memory(row: dict) -> dict:
    model, opt, loss_fn = row.pop("model_obj")
    row["peak_added_bytes"] = peak_added(model, opt, loss_fn, row["device"])
    return row


# ---- the table ---------------------------------------------------------------------------


def fmt_bytes(n) -> str:
    if n is None:
        return "n/a"
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def table(rows: list[dict]) -> str:
    head = (
        f"{'model':11s} {'params':>7s} {'where':>6s} {'plain':>9s} {'watched':>9s} "
        f"{'ratio':>6s} {'best':>6s} {'once':>8s} {'cpu':>6s}  {'kept':>16s}  {'peak+':>16s}  norms"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        pct = lambda b: "n/a" if b is None else f"{fmt_bytes(b)} {100 * b / r['param_bytes']:4.1f}%"  # noqa: E731, B023 (used in this iteration)
        where = r["device"] if r["device"] != "cpu" else f"{r['threads']}thr"
        cpu = "-" if r.get("cpu_ratio") is None else f"{r['cpu_ratio']:.3f}"
        params = f"{r['params'] / 1e6:.1f}M" if r["params"] >= 1e6 else f"{r['params'] / 1e3:.0f}k"
        lines.append(
            f"{r['model']:11s} {params:>7s} {where:>6s} {r['plain_s'] * 1e3:7.2f}ms "
            f"{r['watched_s'] * 1e3:7.2f}ms {r['ratio']:6.3f} {r['best']:6.3f} {r['once_s'] * 1e3:6.1f}ms {cpu:>6s}  {pct(r['kept_bytes']):>16s}  "
            f"{pct(r.get('peak_added_bytes')):>16s}  {r['exact']}"
        )
    return "\n".join(lines)


def verdict(rows: list[dict]) -> list[str]:
    out = []
    worst = max(rows, key=lambda r: r["ratio"])
    out.append(
        f"time: worst ratio {worst['ratio']:.3f} ({worst['model']}, "
        f"{worst['device']} {worst['threads'] or ''}) -- bar <= 1.10: "
        f"{'met' if worst['ratio'] <= 1.10 else 'NOT met'}"
    )
    over = [
        f"{r['model']} {r['device']} {r['threads'] or ''}".rstrip()
        for r in rows
        if r["ratio"] > 1.10
    ]
    if over:
        out.append(f"      over 1.10: {', '.join(over)}")
    big = [r for r in rows if r["params"] > 10e6 and r.get("peak_added_bytes") is not None]
    if big:
        m = max(big, key=lambda r: r["peak_added_bytes"] / r["param_bytes"])
        share = m["peak_added_bytes"] / m["param_bytes"]
        out.append(
            f"memory: largest peak added above 10M params {100 * share:.1f}% "
            f"({m['model']}) -- bar <= 10%: {'met' if share <= 0.10 else 'NOT met'}"
        )
    return out


def run(specs, devices, repeats, target_s, log=print) -> list[dict]:
    rows = []
    default_threads = torch.get_num_threads()
    for device in devices:
        settings = [1, default_threads] if device == "cpu" else [None]
        for threads in dict.fromkeys(settings):
            if threads:
                torch.set_num_threads(threads)
            for spec in specs:
                reps = repeats if spec.params_hint < 20e6 else 3
                row = measure(spec, device, reps, target_s)
                if threads in (1, None):  # memory once per model and device
                    with_memory(row)
                else:
                    row.pop("model_obj")
                rows.append(row)
                log(
                    f"  {spec.name} on {device} {threads or ''}: ratio {row['ratio']:.3f}",
                    flush=True,
                )
        torch.set_num_threads(default_threads)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--target-s",
        type=float,
        default=0.4,
        help="seconds per timed block (the biggest models take 2 steps)",
    )
    parser.add_argument("--quick", action="store_true", help="small models only")
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    specs = [s for s in SPECS if not args.quick or s.name in QUICK]
    devices = ["cpu"] if args.device == "cpu" else []
    if args.device in ("cuda", "all") and torch.cuda.is_available():
        devices.append("cuda")
    elif args.device == "all":
        devices = ["cpu"]
    t0 = time.perf_counter()
    print(
        f"labkit.watch vs a plain loop; torch {torch.__version__}, "
        f"{torch.get_num_threads()} default threads",
        flush=True,
    )
    rows = run(specs, devices, args.repeats, args.target_s)
    print()
    print(table(rows))
    for line in verdict(rows):
        print(line)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
