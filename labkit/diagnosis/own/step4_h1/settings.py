"""H1 in the optimizer's settings: one setting at a time, back to its default.

A reset that learns faster convicts only when the learner's own run fails by its own test
(`baseline.fails`: no descent, divergence, never settling); a run that learns, only slower,
is healthy, and the faster setting is advice in the record's notes.

When the learner's optimizer trains far worse than the reference optimizer on the same
model, data and loss, and no other H1 mechanism was measured, each setting of the
learner's optimizer that differs from its constructor's default (weight_decay, momentum,
betas, eps, maximize, ...; not the learning rate, which has rules of its own) is reset
alone, in a plain loop (arm ``default:<setting>``). A setting whose reset alone makes the
loop learn is the mechanism. One variable per arm, so the finding names one setting.
"""

from __future__ import annotations

import inspect
import math

import torch

from ..step1_capture import setup as proto, skips as own_skips
from ..baseline import advise, fails, learns
from ...finding import OwnFinding
from ..margins import above

SKIP = {
    "params",
    "lr",
    "initial_lr",
    "foreach",
    "fused",
    "capturable",
    "differentiable",
    "decoupled_weight_decay",
}


def defaults_of(optimizer) -> dict:
    """The constructor defaults of the optimizer's class, by setting name."""
    try:
        sig = inspect.signature(type(optimizer).__init__)
    except (TypeError, ValueError):
        return {}
    return {
        k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty
    }


def changed_settings(optimizer) -> dict:
    """{setting: (value, default)} for the settings of group 0 that differ from the default."""
    defaults, group = defaults_of(optimizer), optimizer.param_groups[0]
    out = {}
    for key, value in group.items():
        if (
            key == "lr"
            and isinstance(defaults.get(key), float)
            and isinstance(value, (int, float))
            and 0 < value < defaults[key] / 100
        ):  # orders of magnitude below: a typo's size
            out[key] = (value, defaults[key])
        if key in SKIP or key not in defaults or defaults[key] is None:
            continue
        default = defaults[key]
        if isinstance(default, (int, float, bool, tuple)) and value != default:
            out[key] = (value, default)
    return out


def reset_setting(optimizer, key: str):
    """The optimizer with `key` back to its default in every param group."""
    default = defaults_of(optimizer)[key]
    for g in optimizer.param_groups:
        g[key] = default
    return optimizer


def settings_rule(ev) -> OwnFinding | None:
    """A finding when resetting exactly one setting makes the plain loop learn."""
    torch.manual_seed(ev.seed)
    changed = changed_settings(proto.make_optimizer(ev.setup, proto.make_model(ev.setup, ev.seed)))
    if not changed:  # every setting at its default: nothing to reset, no arm to train
        return None
    own, ref = ev.arm("own"), ev.arm("ref")
    start = abs(own.losses[0]) if own.losses and math.isfinite(own.losses[0]) else None
    if start is None or not math.isfinite(ref.level()):
        return None
    if not above("settings.own_behind_ref", own.level(), ref.level() + 0.2 * start, seed=ev.seed):
        # yours trains about as well as the reference
        return None
    todo = [k for k in changed if f"default:{k}" not in ev._arms]
    if todo and not own_skips.affordable(
        f"the optimizer's settings reset one at a time ({', '.join(sorted(todo))})",
        len(todo) * ev.steps,
    ):
        return None
    best = None
    for key in sorted(changed):
        arm = ev.arm(f"default:{key}")
        gain = own.level() - arm.level()
        if (
            math.isfinite(arm.level())
            and above(
                f"settings.reset_gain:{key}", gain, 0.5 * (own.level() - ref.level()), seed=ev.seed
            )
            and (best is None or gain > best[1])
        ):
            best = (key, gain, arm.level())
    if best is None:
        return None
    key, _, level = best
    value, default = changed[key]
    why = fails(ev)
    if why is None:
        advise(
            ev,
            f"advice, not a defect: {learns(ev)}; in a plain loop (one step per batch) your "
            f"optimizer reaches {own.level():.3g}, and with {key} reset to its default ({default!r}) "
            f"{level:.3g}: faster, not a fix",
        )
        return None
    what = (
        f"the learning rate lr={value!r} is too low ({default / value:.0f}x below the default) and"
        if key == "lr"
        else f"the optimizer's {key}={value!r}"
    )
    return OwnFinding(
        "H1",
        f"setting:{key}",
        f"{what} stops learning ({why}): with "
        f"{key} reset to its default ({default!r}) and nothing else changed, the same plain "
        f"loop reaches {level:.3g} instead of {own.level():.3g} (a reference Adam(lr=1e-3) "
        f"reaches {ref.level():.3g})",
        arm=f"default:{key}",
        variable=(key, repr(value), repr(default)),
    )
