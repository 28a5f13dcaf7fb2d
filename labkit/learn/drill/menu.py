"""The probe menu: what each probe costs and what it shows.

Prices mirror what the probe would cost on a large run: reading logs and comparing
raw with reported costs nothing but attention (1 credit), an overfit run or a
label-shuffle control is a small side job (3), and an LR sweep or a rerun on a
second seed means more full runs (8).
"""

from __future__ import annotations

from dataclasses import dataclass

from .front.text import wrap
from .words import OUTCOMES

TIERS = {1: "cheap", 3: "moderate", 8: "expensive"}


@dataclass(frozen=True)
class Probe:
    name: str
    price: int
    shows: str


MENU = {
    p.name: p
    for p in (
        Probe(
            "raw_vs_reported",
            1,
            "the raw per-batch loss beside the reported curve: does an honest "
            "logger give what was reported? (H3)",
        ),
        Probe(
            "gradient_audit",
            1,
            "one step of your loop, audited: each parameter in the optimizer? "
            "its gradient None, zero or finite? does .grad double on a second backward?",
        ),
        Probe(
            "update_probe",
            1,
            "the logged learning rate and the update norm of each layer group over the 50 steps",
        ),
        Probe(
            "first_nonfinite",
            1,
            "the first NaN or inf of the run, located: inputs, labels, each "
            "module, the loss, the gradients",
        ),
        Probe(
            "label_audit",
            1,
            "one batch end to end: LM labels vs inputs, padding and masks; for a "
            "classifier, input statistics, label counts and the model's outputs",
        ),
        Probe(
            "overfit",
            3,
            "plain SGD on 64 fixed training rows for 200 steps (LM: Adam, 100 steps): "
            "can the pipeline memorise them?",
        ),
        Probe(
            "label_shuffle",
            3,
            "the same overfit run with the 64 labels shuffled: does it behave "
            "like the real labels?",
        ),
        Probe(
            "lr_sweep",
            8,
            "your loop again from the same init with the LR /10 and x10, 50 steps "
            "each, beside the baseline",
        ),
        Probe("second_seed", 8, "the whole run again on another seed: its first 50 reported steps"),
    )
}
CURVE_PROBES = ("raw_vs_reported", "overfit", "second_seed")  # forecast by drawing a curve


def menu_lines(left: int | None = None, *, menu=None, outcomes=None) -> list[str]:
    """The menu as text: name, price, what it shows, and the words a forecast may use
    (`menu`, `outcomes`: another mystery kind's, e.g. the distributed drill's)."""
    menu, outcomes = menu or MENU, outcomes or OUTCOMES
    head = "probe             price       what it shows"
    out = [head + (f"  ({left} credits left)" if left is not None else "")]
    for p in menu.values():
        out.append(f"  {p.name:<16} {p.price} ({TIERS[p.price]})")
        out += wrap(p.shows, "      ")
        out.append(f"      forecast words: {' | '.join(outcomes[p.name])}")
    return out


HELP = [
    "commands (one per line):",
    "  probes                    the probe menu: prices, what each shows, forecast words",
    "  hypothesis SYSTEM TEXT    your current hypothesis: H1, H2, H3 or NONE, and a mechanism",
    "  forecast TEXT             what the next probe will show, e.g. `forecast raw falls, disagree`",
    "  probe NAME                spend credits on a probe",
    "  convict SYSTEM TEXT       end the drill: a system and a mechanism line",
    "  symptom | help | quit     show the symptom again | this list | give up and see the answer",
]
