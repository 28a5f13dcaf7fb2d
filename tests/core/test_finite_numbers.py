"""inf and NaN are refused wherever a user passes a number, with the same kind of sentence."""

import math

import pytest
import torch

import labkit
from labkit import probes
from labkit.errors import check_number

from helpers import labkit_cli

BAD = [math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("value", BAD, ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize(
    "name", ["lr", "weight_decay", "momentum", "dropout", "gamma", "clip_grad_norm", "input_scale"]
)
def test_config_refuses_non_finite(name, value):
    with pytest.raises(
        ValueError,
        match=rf"^{name}=(inf|-inf|nan) is not allowed; it must be a "
        "finite number .*, not NaN or infinity\\.$",
    ):
        labkit.Config(**{name: value})


def test_check_number_still_takes_finite_values_and_names_the_range():
    check_number("x", 1e300, minimum=0)
    with pytest.raises(ValueError, match=r"\(at least 0 and at most 1\)"):
        check_number("x", math.inf, minimum=0, maximum=1)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--lr"])
@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_cli_refuses_non_finite_with_exit_2_and_no_traceback(flag, value):
    rc, _, err = labkit_cli("run", "--steps", "2", f"{flag}={value}", process=value == "inf")
    assert rc == 2  # one value as a shell sees it, the others in this process
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0 and "not NaN or infinity" in err


def _tiny():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    batch = {"x": torch.randn(8, 4), "y": torch.randint(0, 3, (8,))}
    return model, batch


@pytest.mark.parametrize(
    "call",
    [
        lambda m, b: probes.overfit_probe(m, b, steps=2, lr=math.inf),
        lambda m, b: probes.label_shuffle_control(m, b, steps=2, tolerance=math.nan),
        lambda m, b: probes.lr_sweep(m, [b], lr=math.nan),
        lambda m, b: probes.lr_sweep(m, [b], lr=0.1, factors=(1.0, math.inf)),
        lambda m, b: probes.loss_at_init(m, b, tolerance=math.inf),
        lambda m, b: probes.raw_vs_reported(
            raw=[1.0], reported=[1.0], batch_id=[0], tolerance=math.nan
        ),
    ],
    ids=[
        "overfit lr",
        "shuffle tolerance",
        "sweep lr",
        "sweep factor",
        "init tolerance",
        "reported tolerance",
    ],
)
def test_probes_refuse_non_finite(call):
    model, batch = _tiny()
    with pytest.raises(ValueError, match="not NaN or infinity"):
        call(model, batch)
