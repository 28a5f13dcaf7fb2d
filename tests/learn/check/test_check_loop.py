"""The "write the loop from memory" check names exactly what a draft of train_step misses,
from what the draft does, not from its source text."""

import pytest
import torch
import torch.nn.functional as F

from helpers import one_sentence
from labkit import check


def right(model, optimizer, batch):
    x, y = batch
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def model_zero_grad(model, optimizer, batch):  # clearing through the model is just as good
    model.zero_grad()
    loss = F.cross_entropy(model(batch[0]), batch[1])
    loss.backward()
    optimizer.step()


def no_zero_grad(model, optimizer, batch):
    F.cross_entropy(model(batch[0]), batch[1]).backward()
    optimizer.step()


def no_step(model, optimizer, batch):
    optimizer.zero_grad()
    F.cross_entropy(model(batch[0]), batch[1]).backward()


def item_loss(model, optimizer, batch):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(batch[0]), batch[1]).item()
    loss.backward()
    optimizer.step()


def rebuilt_from_item(model, optimizer, batch):
    optimizer.zero_grad()
    loss = torch.tensor(F.cross_entropy(model(batch[0]), batch[1]).item(), requires_grad=True)
    loss.backward()
    optimizer.step()


def step_before_backward(model, optimizer, batch):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(batch[0]), batch[1])
    optimizer.step()
    loss.backward()


def step_then_zero_then_backward(model, optimizer, batch):
    loss = F.cross_entropy(model(batch[0]), batch[1])
    optimizer.step()
    optimizer.zero_grad()
    loss.backward()


def two_steps(model, optimizer, batch):
    right(model, optimizer, batch)
    optimizer.step()


@pytest.mark.parametrize("draft", [right, model_zero_grad])
def test_a_correct_step_passes(draft):
    assert check.loop_train_step(draft).startswith("ok")


@pytest.mark.parametrize(
    "draft, words",
    [
        (no_zero_grad, "zero_grad() is missing"),
        (no_step, "optimizer.step() never ran"),
        (item_loss, ".item() turns the loss into a plain number"),
        (rebuilt_from_item, "backward() never reached the weights"),
        (step_before_backward, "ran before loss.backward()"),
        (step_then_zero_then_backward, "changed the weights before loss.backward() ran"),
        (two_steps, "ran 2 times"),
        (lambda model, optimizer, batch: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_each_mistake_is_named(draft, words):
    with pytest.raises(check.CheckFailed) as info:
        check.loop_train_step(draft)
    assert words in str(info.value)
    assert one_sentence(str(info.value))


def test_not_a_function_is_refused():
    with pytest.raises(check.CheckFailed, match="Pass your function"):
        check.loop_train_step("optimizer.step()")
