"""GPU check for labkit.watch, labkit.train and the probes: one script, under 5 minutes.

    python benchmarks/gpu_check.py            # prints a compact table, exit 1 on a FAIL

1. no host sync: a watched optimizer step (exact, and sampled) runs under
   ``torch.cuda.set_sync_debug_mode("error")``, after the same plain step passes there;
2. the sampled estimate on a GPT-2-small-shaped model (d768, 12 layers, 124M parameters)
   is within 5% of a full-copy update norm;
3. ``labkit.train(Config(device="cuda"))``: classify fp32, classify fp16 (GradScaler),
   LM; the probes on a CUDA model;
4. the bench's CUDA rows (time ratio, kept bytes, peak added memory) incl. GPT-2 small.

On a machine without CUDA it says so and exits 0. ``--dry-run-cpu`` runs the same checks
on the CPU with small models (no sync check), to test this script where there is no GPU.
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

import labkit  # noqa: E402
from bench_watch import GPT2_SMALL, SPECS, Spec, run, table, verdict  # noqa: E402

RESULTS: list[tuple[str, bool, str]] = []
DEVICE = "cuda"


def check(name):
    def wrap(fn):
        t0 = time.perf_counter()
        try:
            detail = fn() or ""
            RESULTS.append((name, True, f"{detail} ({time.perf_counter() - t0:.1f} s)"))
        except Exception as exc:  # noqa: BLE001 -- report every check, then fail at the end
            traceback.print_exc()
            RESULTS.append((name, False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"))
        print(f"[{'PASS' if RESULTS[-1][1] else 'FAIL'}] {name}: {RESULTS[-1][2]}", flush=True)
        return fn

    return wrap


def one_step(model, opt, loss_fn, guarded: bool):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn()
    loss.backward()
    if guarded and DEVICE == "cuda":
        torch.cuda.set_sync_debug_mode("error")
    try:
        opt.step()
    finally:
        if DEVICE == "cuda":
            torch.cuda.set_sync_debug_mode(0)
    return loss


def main(argv=None) -> int:
    global DEVICE
    dry = "--dry-run-cpu" in (sys.argv[1:] if argv is None else argv)
    if dry:
        DEVICE = "cpu"
    elif not torch.cuda.is_available():
        print("no CUDA: nothing to check on this machine (torch", torch.__version__ + ")")
        return 0
    t_start = time.perf_counter()
    print(
        f"{torch.cuda.get_device_name() if not dry else 'dry run on the CPU'}, "
        f"torch {torch.__version__}",
        flush=True,
    )
    big = GPT2_SMALL if not dry else Spec("gpt-tiny", "gpt", (64, 2, 2, 512, 32, 2, 16))

    @check("no host sync in a watched step (exact and sampled)")
    def _sync():
        out = []
        for spec in (SPECS[0], Spec("gpt-10M", "gpt", (256, 10, 4, 8192, 128, 4, 64))):
            model, opt, loss_fn = spec.build(DEVICE)
            one_step(model, opt, loss_fn, guarded=False)  # optimizer state
            try:
                one_step(model, opt, loss_fn, guarded=True)  # the plain step must pass first
            except RuntimeError:  # the optimizer itself syncs: test the watch on one that does not
                out.append(f"plain {type(opt).__name__} step syncs, watched SGD instead")
                opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
                one_step(model, opt, loss_fn, guarded=False)
                one_step(model, opt, loss_fn, guarded=True)
            watch = labkit.watch(model, opt)  # mlp-10k: exact; gpt-10M: sampled
            for _ in range(3):
                one_step(model, opt, loss_fn, guarded=True)
            cols = watch.columns()
            watch.close()
            assert all(math.isfinite(v) and v > 0 for v in cols["update_norm"]), cols["update_norm"]
            out.append(f"{spec.name} {'sampled' if watch.plan.estimated else 'exact'}")
        return ", ".join(out)

    @check("estimate within 5% of a full copy, GPT-2 small shape (AdamW, 2 steps)")
    def _estimate():
        model, opt, loss_fn = big.build(DEVICE)
        watch = labkit.watch(model, opt)
        exact = []
        for _ in range(2):
            before = [p.detach().clone() for p in model.parameters()]
            one_step(model, opt, loss_fn, guarded=False)
            exact.append(
                math.sqrt(
                    sum(
                        float((p.detach() - b).double().pow(2).sum())
                        for p, b in zip(model.parameters(), before)
                    )
                )
            )
            del before
        got = watch.columns()["update_norm"]
        info = watch.describe()
        watch.close()
        ratios = [g / e for g, e in zip(got, exact)]
        assert all(abs(r - 1) <= 0.05 for r in ratios), ratios
        return (
            f"ratios {', '.join(f'{r:.4f}' for r in ratios)}; kept "
            f"{100 * info['kept_bytes'] / info['param_bytes']:.1f}% of parameter bytes"
        )

    @check("labkit.train on cuda: classify fp32, fp16 + GradScaler, LM")
    def _train():
        out = []
        for settings in ({}, {"precision": "fp16"}, {"task": "lm"}):
            cfg = labkit.Config(device=DEVICE, steps=60).replace(**settings)
            r = labkit.train(cfg)
            ref = labkit.train(cfg.replace(device="cpu"))
            assert len(r) == 60 and all(v is not None and v > 0 for v in r.table["grad_norm"])
            gap = abs(r.table["loss_raw"][-1] - ref.table["loss_raw"][-1])
            assert gap < 0.15, f"{settings}: cuda vs cpu final loss differ by {gap:.3f}"
            extra = f" skipped {sum(r.table['skipped'])}" if "skipped" in r.table else ""
            out.append(
                f"{settings or 'fp32'}: loss {r.table['loss_raw'][-1]:.3f}"
                f" (cpu {ref.table['loss_raw'][-1]:.3f}){extra}"
            )
        return "; ".join(out)

    @check("probes on a CUDA model")
    def _probes():
        from labkit.probes import (
            first_nonfinite,
            gradient_audit,
            loss_at_init,
            overfit_probe,
            raw_vs_reported,
            update_probe,
        )

        torch.manual_seed(0)
        model = labkit.MLP(in_dim=2, hidden=64, n_classes=10).to(DEVICE)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(64, 2, device=DEVICE), torch.randint(0, 10, (64,), device=DEVICE)
        batch = (x, y)
        loss_at_init(model, batch)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        gradient_audit(model, opt, loss)
        with update_probe(model) as probe:
            opt.step()
        fit = overfit_probe(model, batch, steps=60)
        first_nonfinite(model, batch)
        watch = labkit.watch(model, opt)
        raw = [
            one_step(model, opt, lambda: F.cross_entropy(model(x), y), False).item()
            for _ in range(5)
        ]
        watch.close()
        raw_vs_reported(watch.run(loss_raw=raw))
        return f"update probe: {probe.result.verdict[:40]}...; overfit: {fit.verdict[:30]}..."

    rows = []

    @check("bench CUDA rows")
    def _bench():
        specs = SPECS + [GPT2_SMALL] if not dry else SPECS[:1]
        rows.extend(run(specs, [DEVICE], repeats=3, target_s=0.3, log=lambda *a, **k: None))
        return f"{len(rows)} rows"

    print()
    if rows:
        print(table(rows))
        for line in verdict(rows):
            print(line)
    print()
    width = max(len(n) for n, _, _ in RESULTS)
    for name, ok, detail in RESULTS:
        print(f"{'PASS' if ok else 'FAIL'}  {name:{width}s}  {detail}")
    print(f"({time.perf_counter() - t_start:.0f} s)")
    return 0 if all(ok for _, ok, _ in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
