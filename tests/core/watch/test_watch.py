"""labkit.watch on a learner's own loop: exact where it fits, honest estimates above, and
every number checked against a full copy of the parameters computed here by hand."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit
from labkit.core.watch.ring import MAX_ROWS, RING_BYTES
from labkit.probes import raw_vs_reported
from labkit.core.record import group_name
from labkit.diagnosis.record.triage import Prediction, TriageRecord


def net(seed=0, hidden=16):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3)
    )


def batches(n, seed=1, rows=12):
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(rows, 8, generator=gen), torch.randint(0, 3, (rows,), generator=gen))
        for _ in range(n)
    ]


def reference(model, opt, data):
    """Plain loop with a full copy of every parameter: per-group grad and update norms."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    rows = []
    for x, y in data:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        g, u = {}, {}
        for n, p in model.named_parameters():
            if n not in names:
                continue
            k = group_name(n)
            sq = None if p.grad is None else float(p.grad.double().pow(2).sum())
            g[k] = sq if g.get(k) is None else g[k] + (sq or 0.0)
            u[k] = u.get(k, 0.0) + float((p.detach() - before[n]).double().pow(2).sum())
        rows.append(
            (
                {k: None if v is None else math.sqrt(v) for k, v in g.items()},
                {k: math.sqrt(v) for k, v in u.items()},
            )
        )
    return rows


def own_loop(model, opt, data):
    raw = []
    for x, y in data:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        raw.append(loss.item())
    return raw


def test_exact_norms_equal_a_full_copy_reference_and_lr_per_group():
    data = batches(6)
    ref_model = net()
    ref_opt = torch.optim.Adam(
        [
            {"params": ref_model[0].parameters(), "lr": 1e-2},
            {"params": list(ref_model[2:].parameters()), "lr": 3e-3},
        ]
    )
    expected = reference(ref_model, ref_opt, data)
    model = net()
    opt = torch.optim.Adam(
        [
            {"params": model[0].parameters(), "lr": 1e-2},
            {"params": list(model[2:].parameters()), "lr": 3e-3},
        ]
    )
    watch = labkit.watch(model, opt)
    raw = own_loop(model, opt, data)
    run = watch.run(loss_raw=raw, seed=0)
    watch.close()
    assert isinstance(run, labkit.Run) and len(run) == 6
    assert run.groups == ["0", "2", "4"] and run.meta["watch"]["exact"] is True
    for step, (g, u) in enumerate(expected):
        for k in g:
            assert run.table[f"grad_norm/{k}"][step] == pytest.approx(g[k], rel=1e-6)
            assert run.table[f"update_norm/{k}"][step] == pytest.approx(u[k], rel=1e-5)
        assert run.table["update_norm"][step] == pytest.approx(
            math.sqrt(sum(v * v for v in u.values())), rel=1e-5
        )
    assert run.table["lr"] == run.table["lr/0"] == [1e-2] * 6 and run.table["lr/1"] == [3e-3] * 6
    assert run.table["loss_raw"] == raw and run.table["loss_reported"] == raw


def test_labkit_train_records_with_the_same_watch():
    trainer = labkit.Trainer(steps=3)
    assert isinstance(trainer.watch, labkit.Watch)
    run = trainer.run()
    assert run.meta["watch"]["exact"] is True and run.meta["findings"] == []
    # a small model keeps its last MAX_ROWS steps' gradients and updates (watch/ring.py)
    info = run.meta["watch"]
    rows = min(MAX_ROWS, RING_BYTES // (2 * info["param_bytes"]))
    assert info["kept_bytes"] == 2 * rows * info["param_bytes"] <= RING_BYTES and rows >= 4
    broken = labkit.train(bug="missing_optimizer_params", steps=3)
    assert "head.weight, head.bias" in broken.meta["findings"][0]
    assert broken.table["update_norm/head"] == [0.0] * 3


@pytest.mark.parametrize("mix", ["ring", "mixed"])
def test_steps_fold_into_blocks_in_order_without_changing_values(mix):
    """A small model's steps are kept MAX_ROWS at a time and normed together (watch/ring.py).
    Steps the ring does not take (a layer's gradients set to None, gradients measured before a
    clip) and a read of the table mid-run fall between them: each in its place, every step
    against a float64 copy made here."""
    model, data = net(), batches(300, rows=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    watch, truth, mid = labkit.watch(model, opt), [], None
    for i, (x, y) in enumerate(data):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        if mix == "mixed" and i % 7 == 3:
            for p in model[2].parameters():
                p.grad = None
        grads = [p.grad.double() for p in model.parameters() if p.grad is not None]
        if mix == "mixed" and i % 11 == 5:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        before = [p.detach().double() for p in model.parameters()]
        opt.step()
        moved = [p.detach().double() - b for p, b in zip(model.parameters(), before)]
        truth.append([math.sqrt(sum(float(t.pow(2).sum()) for t in ts)) for ts in (grads, moved)])
        if mix == "mixed" and i == 40:
            mid = watch.columns()
    assert watch._ring is not None and watch._ring.rows == MAX_ROWS
    assert sum(b.shape[0] for b in watch._blocks) + len(watch._rows) + watch._ring.n == 300
    cols = watch.columns()
    watch.close()
    assert cols["grad_norm"] == pytest.approx([g for g, _ in truth], rel=1e-5)
    assert cols["update_norm"] == pytest.approx([u for _, u in truth], rel=1e-5)
    if mix == "mixed":
        assert mid["update_norm"] == cols["update_norm"][:41]
        assert [v is None for v in cols["grad_norm/2"]] == [i % 7 == 3 for i in range(300)]
        assert all(cols["update_norm/2"][i] == 0.0 for i in range(3, 300, 7))


# ---- above the budget: an honest estimate -------------------------------------------------


class MyAdagrad(torch.optim.Adagrad):
    """Adagrad's step under another class: the watch cannot know its step, so it samples."""


class ToyLM(nn.Module):
    """Embedding, residual MLP blocks and an LM head: sparse rows at both ends."""

    def __init__(self, vocab=32768, d=512, blocks=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            for _ in range(blocks)
        )
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):  # (B, T) -> (B, T, vocab)
        x = self.wte(ids)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


@pytest.mark.parametrize(
    "make_opt",
    [lambda p: torch.optim.AdamW(p, lr=1e-3), lambda p: MyAdagrad(p, lr=0.5)],
    ids=["adamw-from-the-optimizer", "adagrad-sampled"],
)
@pytest.mark.slow
def test_a_50M_model_is_exact_from_adamw_and_bounded_under_adagrad(make_opt):
    torch.manual_seed(0)
    model = ToyLM()
    n = sum(p.numel() for p in model.parameters())
    assert 45e6 < n < 55e6
    opt = make_opt(model.parameters())
    watch = labkit.watch(model, opt)
    ids = torch.randint(0, 32768, (2, 33), generator=torch.Generator().manual_seed(0))
    exact = []
    for _ in range(2):
        before = [p.detach().clone() for p in model.parameters()]
        opt.zero_grad()
        F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()).backward()
        grad = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters()))
        opt.step()
        exact.append(
            (
                grad,
                math.sqrt(
                    sum(
                        float((p.detach() - b).double().pow(2).sum())
                        for p, b in zip(model.parameters(), before)
                    )
                ),
            )
        )
        del before
    cols, info = watch.columns(), watch.describe()
    watch.close()
    sampled = isinstance(opt, MyAdagrad)
    for step, (grad, update) in enumerate(exact):
        assert cols["grad_norm"][step] == pytest.approx(grad, rel=1e-5)  # gradients: exact
        if sampled:  # inside the band the table states
            assert abs(cols["update_norm"][step] - update) <= cols["update_norm_bound"][step]
            assert cols["update_norm_bound"][step] < 0.2 * update
        else:  # exact, but for the decay of rows no batch touched: far below the weights'
            # own rounding, so shown with that bound
            bound = cols.get("update_norm_bound", [0.0] * 2)[step]
            assert abs(cols["update_norm"][step] - update) <= max(bound, 1e-5 * update)
            assert bound < 1e-3 * update
    assert info["exact"] is not sampled
    assert ("head" in info["estimated"] and "wte" in info["estimated"]) is sampled
    assert bool(info["from_optimizer"]) is not sampled
    assert info["kept_bytes"] <= 0.06 * info["param_bytes"]  # the 5% budget, and bounded


SPARSE = {
    "sgd": torch.optim.SGD,
    "sparse_adam": torch.optim.SparseAdam,
    "adagrad": torch.optim.Adagrad,
    "my_adagrad": MyAdagrad,
}


@pytest.mark.parametrize("kind", list(SPARSE))
def test_sparse_embedding_rows_touched_by_a_step_are_not_missed(kind):
    torch.manual_seed(0)
    emb = nn.Embedding(200_000, 64, sparse=kind in ("sparse_adam", "adagrad"))  # 51 MB
    opt = SPARSE[kind](emb.parameters(), lr=1.0 if kind != "sparse_adam" else 1e-2)
    watch = labkit.watch(emb, opt)
    assert not watch.plan.all_exact
    exact = []
    for seed in range(3):
        ids = torch.randint(0, 200_000, (40,), generator=torch.Generator().manual_seed(seed))
        before = emb.weight.detach().clone()
        opt.zero_grad()
        emb(ids).pow(2).sum().backward()
        opt.step()
        exact.append(float((emb.weight.detach() - before).double().norm()))
    run = watch.run(loss_raw=[0.0] * 3)
    watch.close()
    # 40 touched rows among 200,000: a uniform 5% sample would see about 2 of them. SGD's
    # update is read from the gradient; Adagrad's is sampled, and its top blocks are the rows
    for got, want in zip(run.table["update_norm"], exact):
        assert got == pytest.approx(want, rel=1e-5)
    if kind == "my_adagrad":
        assert "largest predicted update" in run.meta["watch"]["estimated"]["weight"]
    else:
        name = {"sgd": "SGD", "sparse_adam": "SparseAdam", "adagrad": "Adagrad"}[kind]
        assert name in run.meta["watch"]["from_optimizer"]["weight"]


@pytest.mark.parametrize("budget", [None, 0], ids=["exact", "sampled"])
def test_frozen_layer_missing_param_and_lr_zero_read_exactly_zero(budget):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 4),
    )
    model[0].requires_grad_(False)  # frozen after the optimizer was built: still in it
    opt = torch.optim.Adam(
        [
            {"params": list(model[0].parameters()) + list(model[2].parameters())},
            {"params": model[6].parameters(), "lr": 0.0},
        ],
        lr=1e-2,
    )
    # model[4] requires grad but is in no param group
    watch = labkit.watch(model, opt, budget=budget)
    assert watch.plan.all_exact is (budget is None)
    x, y = torch.randn(16, 64), torch.randint(0, 4, (16,))
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    run = watch.run(loss_raw=[1.0, 1.0, 1.0])
    watch.close()
    assert run.table["grad_norm/0"] == [None] * 3  # frozen: no gradient, recorded as null
    assert run.table["update_norm/0"] == [0.0] * 3
    assert run.table["update_norm/4"] == [0.0] * 3 and all(v > 0 for v in run.table["grad_norm/4"])
    assert run.table["update_norm/6"] == [0.0] * 3 and run.table["lr/1"] == [0.0] * 3
    assert all(v > 0 for v in run.table["update_norm/2"])
    assert run.meta["findings"] == [watch.findings[0]]
    assert watch.findings[0].startswith("2 parameter(s) require grad but are not in the optimizer")
    assert "4.weight, 4.bias" in watch.findings[0]


@pytest.mark.parametrize(
    "make_opt, budget",
    [
        (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), None),  # the ring's copies
        (lambda ps: torch.optim.Adam(ps, lr=1e-2), 0),  # from the optimizer's state
        (lambda ps: MyAdagrad(ps, lr=0.1), 0),  # sampled: a step the watch cannot read
    ],
    ids=["ring", "from-adam", "sampled"],
)
def test_a_tensor_given_new_storage_mid_run_is_read_where_it_lives_now(make_opt, budget):
    """``p.data = ...`` between steps (a re-init, a cast) keeps the Parameter and the optimizer,
    and moves the values: each step's update is still the step's own (it read 0 for that
    tensor from then on, the old storage no step touched)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 3))
    opt = make_opt(model.parameters())
    watch = labkit.watch(model, opt, budget=budget)
    data, expected = batches(9, rows=16), []
    for step, (x, y) in enumerate(data):
        x = torch.cat([x] * 8, 1)
        if step == 3:  # a re-init by hand, new storage for the same Parameter
            model[0].weight.data = 0.05 * torch.randn(128, 64)
        if step == 6:
            model[2].bias.data = model[2].bias.data.clone()
        before = [p.detach().double().clone() for p in model.parameters()]
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        expected.append(
            math.sqrt(
                sum(
                    float((p.detach().double() - b).pow(2).sum())
                    for p, b in zip(model.parameters(), before)
                )
            )
        )
    cols = watch.columns()
    watch.close()
    bound = cols.get("update_norm_bound", [0.0] * len(data))
    for step, want in enumerate(expected):
        assert abs(cols["update_norm"][step] - want) <= max(bound[step], 1e-5 * want), step


def test_parameters_another_optimizer_steps_are_not_said_to_never_move():
    """PyTorch's sparse-embedding recipe: SparseAdam on the embedding, Adam on the rest, and
    the watch on the Adam. The embedding is outside the watched optimizer but moves; a
    parameter left out of every optimizer keeps the finding that no step moves it."""
    torch.manual_seed(0)
    emb, other, head = nn.Embedding(50, 8, sparse=True), nn.Linear(8, 8), nn.Linear(8, 3)
    model = nn.ModuleDict({"emb": emb, "other": other, "head": head})
    sparse = torch.optim.SparseAdam(emb.parameters(), lr=1e-2)
    dense = torch.optim.Adam(head.parameters(), lr=1e-2)  # `other` is in neither
    watch = labkit.watch(model, dense)
    assert watch.findings == [
        (
            "3 parameter(s) require grad but are not in the optimizer, so no step will move "
            "them: emb.weight, other.weight, other.bias."
        )
    ]
    ids, y = torch.randint(0, 50, (16, 4)), torch.randint(0, 3, (16,))
    for _ in range(3):
        sparse.zero_grad()
        dense.zero_grad()
        F.cross_entropy(head(other(emb(ids).mean(1))), y).backward()
        sparse.step()
        dense.step()
    watch.close()
    assert watch.findings[0] == (
        "2 parameter(s) require grad but are not in the optimizer, so no step will move "
        "them: other.weight, other.bias."
    )
    assert watch.findings[1].startswith(
        "1 parameter(s) are not in this optimizer and moved between its steps (another "
        "optimizer, or an update by hand): emb.weight."
    )
    assert len(watch.findings) == 2 and watch.optimizer is dense  # SparseAdam: not a rebuild


def test_an_optimizer_made_again_mid_run_is_followed():
    """Unfreeze the first layer and make the optimizer again over every parameter, the watch
    still hooked on the first optimizer: the watch follows the new one (it saw 3 of 8 steps,
    and 8 losses then read as 2 or so micro-batches a step)."""
    torch.manual_seed(0)
    model = net()
    model[0].requires_grad_(False)
    opt = torch.optim.Adam(list(model[2].parameters()) + list(model[4].parameters()), lr=1e-2)
    watch = labkit.watch(model, opt)
    first, raw, expected = opt, [], []
    for step, (x, y) in enumerate(batches(8)):
        if step == 3:
            model[0].requires_grad_(True)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        before = [p.detach().double().clone() for p in model.parameters()]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        raw.append(loss.item())
        expected.append(
            math.sqrt(
                sum(
                    float((p.detach().double() - b).pow(2).sum())
                    for p, b in zip(model.parameters(), before)
                )
            )
        )
    run = watch.run(loss_raw=raw)
    watch.close()
    assert watch.optimizer is opt is not first and len(run) == 8
    assert run.table["update_norm"] == pytest.approx(expected, rel=1e-5)
    assert run.table["grad_norm/0"][:3] == [None] * 3 and run.table["grad_norm/0"][3] > 0
    assert run.table["lr"] == [1e-2] * 3 + [1e-3] * 5


def test_a_compiled_model_keeps_its_layer_names():
    """torch.compile wraps the model (`_orig_mod.0.weight`); its groups are the model's own.
    Nothing is compiled here: the wrapper compiles at its first call."""
    model = net()
    watch = labkit.watch(torch.compile(model), torch.optim.SGD(model.parameters(), lr=0.1))
    watch.close()
    assert list(watch.groups) == ["0", "2", "4"] and watch.names[0] == "0.weight"


def test_a_replaced_layer_is_named_as_a_finding():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[4] = nn.Linear(16, 3)
    watch = labkit.watch(model, opt)
    assert len(watch.findings) == 2 and "tensor(s) that are not in this model" in watch.findings[1]
    assert "finding:" in repr(watch)
    watch.close()


# ---- GradScaler, accumulation, hooks -------------------------------------------------------


def test_a_step_the_grad_scaler_skips_is_marked_with_its_scale():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    watch = labkit.watch(model, opt, scaler=scaler)
    raw = []
    for step, (x, y) in enumerate(batches(4)):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if step == 1:
            model[2].weight.grad[0, 0] = math.inf  # an overflow, as fp16 would produce
        scaler.step(opt)
        scaler.update()
        raw.append(loss.item())
    run = watch.run(loss_raw=raw)
    watch.close()
    assert run.table["skipped"] == [False, True, False, False]
    assert run.table["amp_scale"] == [65536.0, 65536.0, 32768.0, 32768.0]
    assert run.table["update_norm"][1] == 0.0 and run.table["update_norm"][2] > 0
    assert math.isinf(run.table["grad_norm/2"][1]) and math.isfinite(run.table["grad_norm/0"][1])
    assert run.meta["watch"]["skipped_steps"] == 1
    assert "step" not in scaler.__dict__  # close() unwrapped the scaler


def test_without_scaler_a_skipped_step_leaves_counts_that_do_not_divide():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    watch = labkit.watch(model, opt)
    for step, (x, y) in enumerate(batches(3)):
        opt.zero_grad()
        scaler.scale(F.cross_entropy(model(x), y)).backward()
        if step == 0:
            model[0].bias.grad[0] = math.nan
        scaler.step(opt)
        scaler.update()
    with pytest.raises(ValueError, match=r"loss_raw has 3 values for 2 optimizer steps.*scaler="):
        watch.run(loss_raw=[1.0, 1.0, 1.0])
    watch.close()


def test_gradient_accumulation_lines_losses_up_per_step():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with labkit.watch(model, opt) as watch:
        raw = []
        for i, (x, y) in enumerate(batches(12)):
            loss = F.cross_entropy(model(x), y) / 4
            loss.backward()
            raw.append(loss.item() * 4)
            if i % 4 == 3:
                opt.step()
                opt.zero_grad()
    mean = watch.run(loss_raw=raw)
    last = watch.run(loss_raw=raw, per_step="last", loss_reported=raw)
    assert len(mean) == 3 and mean.meta["watch"]["losses_per_step"] == 4
    assert mean.table["loss_raw"][1] == pytest.approx(sum(raw[4:8]) / 4)
    assert last.table["loss_raw"] == [raw[3], raw[7], raw[11]] == last.table["loss_reported"]
    with pytest.raises(ValueError, match="loss_raw has 10 values for 3 optimizer steps"):
        watch.run(loss_raw=raw[:10])


def test_close_removes_the_hooks_and_keeps_the_rows():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    watch = labkit.watch(model, opt)
    own_loop(model, opt, batches(2))
    watch.close()
    watch.close()  # twice is fine
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    own_loop(model, opt, batches(3))
    assert watch.steps == 2 and len(watch.run(loss_raw=[1.0, 2.0])) == 2
    assert "closed" in repr(watch)


def test_mark_step_records_a_loop_iteration_without_an_optimizer_step():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    watch = labkit.watch(model, opt)
    for i, (x, y) in enumerate(batches(3)):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        if i != 1:
            opt.step()
        watch.mark_step()
    cols = watch.columns()
    watch.close()
    assert len(cols["grad_norm"]) == 3 and cols["grad_norm"][1] > 0
    assert cols["update_norm"][1] == 0.0 and cols["update_norm"][2] > 0


def test_watching_does_not_change_training():
    def losses(watched):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 256), nn.Dropout(0.5), nn.Linear(256, 3))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        watch = labkit.watch(model, opt, budget=0) if watched else None
        out = own_loop(
            model, opt, [(torch.randn(8, 64), torch.randint(0, 3, (8,))) for _ in range(5)]
        )
        if watch:
            watch.close()
        return out

    assert losses(True) == losses(False)  # the sampler uses its own generator


def test_a_watched_run_is_read_by_the_probes_and_the_record():
    forecast = Prediction("loss < 5 by step 9").seal()
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    watch = labkit.watch(model, opt)
    raw = own_loop(model, opt, batches(10))
    reported = [sum(raw[: i + 1]) / (i + 1) for i in range(10)]
    run = watch.run(
        loss_raw=raw, loss_reported=reported, batch_id=list(range(10)), seed=3, config={"lr": 0.1}
    )
    watch.close()
    assert raw_vs_reported(run).details["agree"]
    assert forecast.check(run)[0]
    record = TriageRecord("own loop")
    record.record_baseline(run)
    assert "grad_norm" in record.rows["baseline"]["text"]
    back = labkit.Run.from_json(run.to_json())
    assert back == run and back.meta["watch"]["exact"] and back.meta["seed"] == 3


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda m, o: labkit.watch("model", o),
            TypeError,
            "model must be a torch.nn.Module; got str",
        ),
        (lambda m, o: labkit.watch(m, m), TypeError, "optimizer must be a torch.optim.Optimizer"),
        (  # a GAN's two: one watch each, over the part each optimizer steps
            lambda m, o: labkit.watch(m, [o, o]),
            TypeError,
            "got a list of 2 optimizers; one watch follows one optimizer: make one per optimizer",
        ),
        (
            lambda m, o: labkit.watch(m, torch.optim.SGD(net().parameters(), lr=0.1)),
            ValueError,
            "holds none of the trainable parameters",
        ),
        (lambda m, o: labkit.watch(m, o, budget=-1), ValueError, "budget=-1 is not allowed"),
        (
            lambda m, o: labkit.watch(m, o, scaler=3),
            TypeError,
            "scaler must be a torch.amp.GradScaler",
        ),
        (
            lambda m, o: labkit.watch(m, o).run(loss_raw=[1.0]),
            ValueError,
            "the watch saw no optimizer step while 1 losses were logged",
        ),
    ],
)
def test_bad_input_gets_a_sentence(call, error, message):
    model = net()
    with pytest.raises(error, match=message):
        call(model, torch.optim.SGD(model.parameters(), lr=0.1))


def test_bad_run_arguments_get_a_sentence():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with labkit.watch(model, opt) as watch:
        own_loop(model, opt, batches(2))
    with pytest.raises(TypeError, match="loss_raw must be a list of numbers"):
        watch.run(loss_raw=["a", "b"])
    with pytest.raises(ValueError, match="Did you mean 'mean'"):
        watch.run(loss_raw=[1.0, 2.0], per_step="meen")
    with pytest.raises(ValueError, match="batch_id has 1 values; give one per optimizer step"):
        watch.run(loss_raw=[1.0, 2.0], batch_id=[0])
    with pytest.raises(ValueError, match="loss_reported has 3 values"):
        watch.run(loss_raw=[1.0, 2.0], loss_reported=[1.0, 2.0, 3.0])


# ---- CUDA -----------------------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@cuda
@pytest.mark.parametrize("budget", [None, 0], ids=["exact", "sampled"])
def test_watch_on_cuda_matches_the_reference_and_makes_no_host_sync(budget):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 3)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 64, device="cuda"), torch.randint(0, 3, (16,), device="cuda")
    watch = labkit.watch(model, opt, budget=budget)
    expected = []
    for _ in range(3):
        before = [p.detach().clone() for p in model.parameters()]
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        torch.cuda.set_sync_debug_mode("error")
        try:
            opt.step()  # the watch's hooks run here: nothing may wait for the device
        finally:
            torch.cuda.set_sync_debug_mode(0)
        expected.append(
            math.sqrt(
                sum(
                    float((p.detach() - b).double().pow(2).sum())
                    for p, b in zip(model.parameters(), before)
                )
            )
        )
    run = watch.run(loss_raw=[1.0] * 3)
    watch.close()
    for got, want in zip(run.table["update_norm"], expected):
        assert got == pytest.approx(want, rel=1e-5 if budget is None else 0.05)


@cuda
def test_labkit_train_runs_on_cuda():
    run = labkit.train(labkit.Config(device="cuda", steps=20))
    assert len(run) == 20 and all(v > 0 for v in run.table["update_norm"])
    assert run.table["loss_raw"][-1] < run.table["loss_raw"][0]


@cuda
def test_the_probes_take_a_cuda_model():
    from labkit.probes import (
        first_nonfinite,
        gradient_audit,
        loss_at_init,
        overfit_probe,
        update_probe,
    )

    torch.manual_seed(0)
    model = labkit.MLP(in_dim=2, hidden=32, n_classes=10).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = (torch.randn(64, 2, device="cuda"), torch.randint(0, 10, (64,), device="cuda"))
    assert loss_at_init(model, batch).verdict.startswith("ok")
    loss = F.cross_entropy(model(batch[0]), batch[1])
    loss.backward()
    assert gradient_audit(model, opt, loss).verdict.startswith("ok")
    with update_probe(model) as probe:
        opt.step()
    assert probe.result.verdict.startswith("ok")
    assert overfit_probe(model, batch, steps=30).details["steps"] == 30
    assert first_nonfinite(model, batch).verdict == "all finite"
