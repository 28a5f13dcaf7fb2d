"""labkit.watch on real loop shapes: clipping records the pre-clip norm without an extra line,
and a loop without torch.optim (word_language_model's ``p.data.add_``) is watched from its
parameters."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.utils.clip_grad as clip_grad

import labkit
from own_setups.shapes import WordLMSetup, repackage_hidden


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def _data(n=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [
        (10 * torch.randn(32, 8, generator=gen), torch.randint(0, 3, (32,), generator=gen))
        for _ in range(n)
    ]


def _clipped_loop(model, opt, data, clip=1.0):
    raw, norms = [], []
    for x, y in data:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        norms.append(
            float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
        )  # the pre-clip norm
        opt.step()
        raw.append(loss.item())
    return raw, norms


def test_clipping_records_the_norm_before_the_clip():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with labkit.watch(model, opt) as w:
        raw, pre = _clipped_loop(model, opt, _data())
        run = w.run(loss_raw=raw)
    recorded = run.table["grad_norm"]
    assert all(p > 1.5 for p in pre)  # every step clips: the clipped norm would read exactly 1.0
    assert recorded == pytest.approx(pre, rel=1e-5)
    assert torch.nn.utils.clip_grad_norm_ is clip_grad.clip_grad_norm_  # put back on close


@pytest.fixture
def no_other_watch():
    """This process as a fresh one sees it: no watch open (another test's watch whose model is
    still alive keeps the wrapper), put back afterwards."""
    from labkit.core.watch import clip as watch_clip

    saved = list(watch_clip._OPEN)
    watch_clip._OPEN.clear()
    watch_clip._restore_if_idle()
    yield
    for other in saved:
        watch_clip.register(other)


def test_the_clip_wrapper_is_gone_after_the_last_watch_closes_and_ignores_other_models(
    no_other_watch,
):
    original = clip_grad.clip_grad_norm_
    assert not getattr(original, "__labkit_clip__", False)
    model, other = _mlp(0), _mlp(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = labkit.watch(model, opt)
    assert torch.nn.utils.clip_grad_norm_ is not original
    x, y = _data(1)[0]
    nn.functional.cross_entropy(other(x), y).backward()
    torch.nn.utils.clip_grad_norm_(other.parameters(), 1.0)  # another model: nothing measured
    assert w._pending is None
    w.close()
    assert torch.nn.utils.clip_grad_norm_ is original and clip_grad.clip_grad_norm_ is original


def test_the_clip_wrapper_is_gone_when_the_last_watch_is_collected_unclosed(no_other_watch):
    import gc

    original = clip_grad.clip_grad_norm_
    model = _mlp(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = labkit.watch(model, opt)
    assert torch.nn.utils.clip_grad_norm_ is not original
    del w, model, opt  # never closed: dropped with its model
    gc.collect()
    assert torch.nn.utils.clip_grad_norm_ is original and clip_grad.clip_grad_norm_ is original


def test_a_watch_collected_inside_another_optimizers_step_leaves_that_step_alone():
    """A watch dropped unclosed is collected whenever the garbage collector runs: here inside
    another optimizer's step, while torch iterates its global step hooks. Removing the
    watch's own global hook then ("OrderedDict mutated during iteration") broke that step."""
    import gc

    from torch.optim.optimizer import register_optimizer_step_pre_hook

    def collect_now(*_):
        gc.collect()

    collect = register_optimizer_step_pre_hook(collect_now)
    try:
        model = _mlp(0)
        w = labkit.watch(model, torch.optim.SGD(model.parameters(), lr=0.01))
        del w  # in a cycle with its optimizer: only the collector frees it
        other = _mlp(1)
        opt = torch.optim.SGD(other.parameters(), lr=0.01)
        x, y = _data(1)[0]
        for _ in range(2):
            opt.zero_grad()
            nn.functional.cross_entropy(other(x), y).backward()
            opt.step()
    finally:
        collect.remove()
    follower = labkit.watch(other, opt)  # the dead watch's hook goes now
    follower.close()


def _word_lm_loop(setup, model, epochs=2, watch=None):
    raw, pre = [], []
    for _ in range(epochs):
        hidden = model.init_hidden(setup.batch_size)
        for data, targets in setup.batches(0):
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = setup.criterion(output, targets)
            loss.backward()
            pre.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), setup.clip)))
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-setup.lr)
            raw.append(loss.item())
    return raw, pre


def test_a_loop_without_an_optimizer_is_watched_from_its_parameters():
    setup = WordLMSetup()
    model = setup.make_model(0)
    w = labkit.watch(model)  # no optimizer
    first = [p.detach().clone() for p in model.parameters()]
    raw, pre = _word_lm_loop(setup, model)
    run = w.run(loss_raw=raw)
    w.close()
    n = len(raw)
    assert len(run) == n == 8
    assert run.table["grad_norm"] == pytest.approx(pre, rel=1e-5)  # before the clip
    updates = run.table["update_norm"]
    assert all(u > 0 for u in updates)
    # the update the loop made at each step: lr * the clipped gradient, whose norm is min(clip, pre)
    assert updates == pytest.approx([setup.lr * min(setup.clip, g) for g in pre], rel=1e-4)
    assert run.table["lr"] == pytest.approx([u / g for u, g in zip(updates, pre)], rel=1e-6)
    total = math.sqrt(
        sum(float((p.detach() - b).pow(2).sum()) for p, b in zip(model.parameters(), first))
    )
    assert total > 0


def test_gradient_accumulation_without_an_optimizer_is_one_step_per_update():
    model = _mlp()
    w = labkit.watch(model)
    data = _data(4)
    for i in range(0, 4, 2):  # two backward passes per update
        model.zero_grad()
        for x, y in data[i : i + 2]:
            nn.functional.cross_entropy(model(x), y).backward()
        expected = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters()))
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.1)
        model(data[0][0])  # the next forward reveals the step
        assert w.steps == i // 2 + 1
        assert w.columns()["grad_norm"][-1] == pytest.approx(expected, rel=1e-5)
    w.close()


def test_watch_without_an_optimizer_refuses_a_model_with_nothing_to_train():
    model = _mlp()
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameter"):
        labkit.watch(model)


def test_a_wrapper_put_back_by_another_wrapper_after_the_last_watch_is_taken_off(no_other_watch):
    """Another wrapper sees labkit's (a watch open), the watch closes, then the other puts
    back what it saw: the next watch to close leaves torch's own function in place."""
    original = clip_grad.clip_grad_norm_
    model = _mlp(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = labkit.watch(model, opt)
    seen = clip_grad.clip_grad_norm_  # what a replay or a monkeypatch saves
    clip_grad.clip_grad_norm_ = torch.nn.utils.clip_grad_norm_ = lambda *a, **k: seen(*a, **k)
    w.close()
    clip_grad.clip_grad_norm_ = torch.nn.utils.clip_grad_norm_ = seen  # put back: labkit's, stale
    with labkit.watch(model, opt):
        assert torch.nn.utils.clip_grad_norm_ is not seen  # a fresh wrapper, not the stale one
    assert torch.nn.utils.clip_grad_norm_ is original and clip_grad.clip_grad_norm_ is original
