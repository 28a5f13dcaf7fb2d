"""Lab 15's mystery setups: one defect each, in the instrumentation, the data or the optimizer.

Four mysteries, "A" to "D", each with variants (another defect of the same kind, another
setup or seed). ``draw(seed)`` picks one mystery and variant at random and names it
``"random-<seed>"``, so the lab can be done again without remembering the answer. Which
defect a mystery hides is kept here only as salted hashes: `labkit.check` compares your
conviction with them, and nothing in this module prints it.

The single variables an intervention may change: ``fix=`` puts one part back to the
reference ("logger", "data", "scheduler", "scaler" for a GradScaler, or the precision
"bf16" / "fp32"), and ``lr_factor=`` multiplies the learning rate.
"""

from __future__ import annotations

import hashlib
import random
import re

import torch

from ..bugs import BUGS, get_bug
from ..core.config import Config
from ..core.seams import Seams, make_batch
from ..core.train import Trainer
from ..errors import check_choice, check_number
from . import lab15_amp

LETTERS = ("A", "B", "C", "D")
FIXES = {
    "logger": "log",
    "data": "data",
    "scheduler": "step",
    "scaler": None,
    "bf16": None,
    "fp32": None,
}
# variant: (Config settings, (seed, second seed)); its defect and answer are hashed below
_SPECS = {
    "A1": ({"batch_size": 32}, (3, 4)),
    "A2": ({}, (5, 6)),
    "B1": ({}, (0, 1)),
    "B2": ({"hidden": 48}, (2, 3)),
    "C1": ({}, (0, 1)),
    "C2": ({"batch_size": 32}, (2, 3)),
    "D1": ({"optimizer": "adam", "precision": "fp16"}, (5, 4)),
    "D2": ({"optimizer": "adam", "precision": "fp16"}, (1, 5)),
}
_DEFECT = {  # _digest(variant, defect): a zoo bug's name, or "amp" (lab15_amp)
    "A1": "23308052969c3cc5",
    "A2": "cbce0df1fd38688e",
    "B1": "b04b54628e53419c",
    "B2": "e457e05f1f5af69f",
    "C1": "81742c837b9bd431",
    "C2": "404202ff6824bd9a",
    "D1": "05adf433fee267bd",
    "D2": "55bb6dcfc0de87c6",
}
_SYSTEM = {  # _digest(variant, system)
    "A1": "bbc481bfca2bebe7",
    "A2": "7279a35155deff6f",
    "B1": "6f9497954971aaea",
    "B2": "3163b05da6bb6987",
    "C1": "4e6f8bf27a236b78",
    "C2": "1b2c6a7067355c25",
    "D1": "5ae1056e3b413d4e",
    "D2": "46314384b34af108",
}
_TERMS = {  # variant: groups of _digest(variant, word), space-separated; a mechanism
    # line must name one word of every group
    "A1": (
        (
            "1dff348bc452f454 35e2befd8374b078 36addf5dd7e4a014 452e290744918c34 5e52f952276bf7ba "
            "808791ef13ec1998 bd9fbed17b988800 cdae328261b2d4c8 cf32a402d199a0bc ddc0d86442cd28a2 "
            "e6ac8db3a35bc6e9"
        ),
        (
            "02138049e0fe2547 049dc0719977f83c 1004b8d221bde934 1c6a09d4e7f3ebc8 24883ade4a66d240 "
            "90f6f81ac4ef3a2a 93395c87fc5c1b25 a86571b41b00bed6 bb5107c8423d6324 bca1537fc9e45551 "
            "c7704178741f01fb d4cd931843461ce7"
        ),
    ),
    "A2": (
        (
            "13f35f941f21f157 1aa344264ac0e608 1e339f7d52b6c4c2 3e16f5942e9cfc9d 68ef0c2df2c2fcf7 "
            "6afb7dbca9e3c9db 7d44ed27d8a17af0 9e354ad8993a84aa bd8fbd5984387458 ed01991e896183b1"
        ),
        (
            "09a5f88141c2175d 0cff2f3ad7e7a108 34d71cc4d29b3ceb 3891328470796bcd 44c1c791bf07801d "
            "4905c97cbc45b5fe 654a76ee63ed54d0 c31d9e1a00ce608f c589fbaf5a265de9 cc05ac5ffd56509c "
            "d7097dd00567ed5d df3798696b260aa9"
        ),
    ),
    "B1": (
        "1e61ca549593ce0c 245a4a06bd96173f 475e467cf341bc66 69da86506cce65c4 92cfe150de7aa2d3",
        (
            "115e0944c9ac31c8 179a89c0ba4f8631 21752205dc788030 641b1c48e25ca3dc 7d417b5151eefce8 "
            "886d3500d9401aef 8b781e213495adbc 916004587a9ccb74 9375047fef81f63a ac95d840a7f4d09e "
            "bcce1f96d3bab6e2 c9dda322c9c8b46f ea37cb4f46bd2f78"
        ),
    ),
    "B2": (
        (
            "6ab47cfab001bb3a 81d8fbe994ab32da 92bb0e55d74993b7 bccd73829350c8b1 e8ad93415aad4ff6 "
            "ffb5dff01ba8418a"
        ),
        (
            "0d85b554299fc9fa 0e9693a2eaf347f1 2ab7116badf818bb 5628459d2f8af0ab 6cf4aba41076b1dc "
            "6db7d9153ede6fd2 c924c7d895ace0e1 ce8a25852635f336 e340aa5d305123b9 ef3d8cb3cf2d996d"
        ),
    ),
    "C1": (
        (
            "11facaf85ded2214 1ef60b09b1305a54 a59bef0efcecc836 ae548830fa7dcaf7 d395b6603d94b684 "
            "e4f4319c943926d0"
        ),
        (
            "313a2c6d117c8c54 3bee3424597434f6 4aaf3e60aeb57830 4c954120ec1890c0 57e32a8f09c01d41 "
            "79b008adeb0d60c1 ac44d847e7856a01 da38da6f9f28eb03 dae7c1c7434f1c2c"
        ),
    ),
    "C2": (
        (
            "0cf256ea5563da68 0fcc341740bd3402 2101dde30319c605 2b2b0394afa246bf 59a88c19d9005826 "
            "9e7e76503c0dbd7f"
        ),
        (
            "01dea2b77c04ef98 0a33aa94573d5a3a 3e5462f113bc7e09 40dcfbe53cf2bb62 c0d8e2e68b3f163a "
            "cdb8170119c70b75 e4e5936de20d4b87 f132230d13b2591f f7e84ddff1de43a3"
        ),
    ),
    "D1": (
        (
            "00409d1d9a2ad552 03d4eb6e81b7f160 05adf433fee267bd 06246d7ca3d75601 0b1cbfb7eb226c1d "
            "19b81d4106f4ecf0 50e2e3662adf9daa 64387e57a11cc001 72c1673e50bad379 74e2810a984ca0ff "
            "8298f250a0693300 8bf84063e23298e7 cf1de3b3b4564555 f63a45b21ef27cec"
        ),
        (
            "13471c708ca86b12 6aa5355410f412cc 979a537081d7e37a d0157b4e2837792a dd6a8a9cce2f2606 "
            "e483d324b68b41d0"
        ),
    ),
    "D2": (
        (
            "2ab934c9148288f0 55bb6dcfc0de87c6 58a173b5ddb5a468 6e73019487227791 70c6a70369aa7032 "
            "817c4d46b38c80c4 8992d68754284a20 8b7848a5ce01b9b8 945ec7fc619a8aef b6ae2282a3375508 "
            "cb0336902c190816 cc97f374a839f265 f2ba6a8493eb3e32 fcfc504b03f382d7"
        ),
        (
            "2c44382bb2a1ddde 4ef1f663cbfb5f50 77211e2154944858 8e9665474b140797 cd7956ae5d80b901 "
            "fc59cf0fe405b0ac"
        ),
    ),
}


def _digest(variant: str, text: str) -> str:
    return hashlib.sha256(f"labkit-lab15|{variant}|{text}".encode()).hexdigest()[:16]


def draw(seed: int) -> str:
    """A random mystery and variant, named only by the seed: ``"random-<seed>"``."""
    check_number("seed", seed, minimum=0, integer=True)
    return f"random-{seed}"


def _variant(mystery: str) -> str:
    if isinstance(mystery, str) and re.fullmatch(r"random-\d+", mystery):
        return random.Random(int(mystery.split("-")[1])).choice(sorted(_SPECS))
    check_choice("mystery", mystery, (*LETTERS, "random-<seed>"))
    return f"{mystery}1"


def _defect(variant: str) -> str:
    names = ["amp", *BUGS, *(f"{n}:{v}" for n, b in BUGS.items() for v in b.variants)]
    return next(n for n in names if _digest(variant, n) == _DEFECT[variant])


def seeds(mystery: str) -> tuple[int, int]:
    """The mystery's seed (baseline, probes, intervention) and its second seed (confirmation)."""
    return _SPECS[_variant(mystery)][1]


def config(mystery: str, *, seed: int | None = None, steps: int = 50) -> Config:
    """The Config the mystery's runs carry in run.meta (what a sketch is sealed for)."""
    settings, (first, _) = _SPECS[_variant(mystery)]
    return Config.make(**settings).replace(seed=first if seed is None else seed, steps=steps)


def setup(mystery: str, *, fix: str | None = None, lr_factor: float = 1.0) -> dict:
    """The setup as the record compares it: which mystery, which fix, which LR factor."""
    _variant(mystery)
    if fix is not None:
        check_choice("fix", fix, FIXES)
    check_number("lr_factor", lr_factor, minimum=0.0, strict_min=True)
    return {"mystery": mystery, "fix": fix, "lr_factor": float(lr_factor)}


def _trainer(mystery, seed, steps, fix, lr_factor) -> Trainer:
    declared = setup(mystery, fix=fix, lr_factor=lr_factor)
    variant = _variant(mystery)
    cfg = config(mystery, seed=seed, steps=steps)
    cfg = cfg.replace(lr=cfg.lr * declared["lr_factor"])
    if fix == "fp32":
        cfg = cfg.replace(precision="fp32")
    defect = _defect(variant)
    seams = Seams()
    if defect == "amp":
        if fix != "scaler":
            seams = seams.replace(backward=lab15_amp.backward_fixed_scale)
    else:
        seams = get_bug(defect).patch(seams)
    if FIXES.get(fix):
        seams = seams.replace(**{FIXES[fix]: getattr(Seams(), FIXES[fix])})
    trainer = Trainer(cfg, seams=seams)
    if defect == "amp" and fix not in ("scaler", "fp32"):
        lab15_amp.without_grad_scaler(trainer, torch.bfloat16 if fix == "bf16" else torch.float16)
    elif fix == "bf16":
        trainer._amp = torch.autocast(cfg.device.split(":")[0], dtype=torch.bfloat16)
    return trainer


def run_mystery(
    mystery: str,
    *,
    seed: int | None = None,
    steps: int = 50,
    fix: str | None = None,
    lr_factor: float = 1.0,
):
    """Train the mystery (default: its first seed); `fix` and `lr_factor` change one thing.
    The run's meta["setup"] says which, for the record to compare with what was declared."""
    first = seeds(mystery)[0]
    run = _trainer(mystery, first if seed is None else seed, steps, fix, lr_factor).run()
    run.meta["setup"] = setup(mystery, fix=fix, lr_factor=lr_factor)
    return run


def pipeline(mystery: str, *, seed: int | None = None):
    """(model at init, a fixed 64-sample batch, forward, loss_fn) of the mystery's own code,
    ready for `labkit.probes.overfit_probe` and `label_shuffle_control` (they run in fp32)."""
    t = _trainer(mystery, seeds(mystery)[0] if seed is None else seed, 1, None, 1.0)
    forward, loss_fn = t.pipeline()
    return (
        t.ctx.model,
        make_batch(t.ctx.data.train, torch.arange(64), t.config, 0),
        forward,
        loss_fn,
    )


# ---- for labkit.check: compare, never reveal ----------------------------------------
def system_matches(mystery: str, system: str) -> bool:
    variant = _variant(mystery)
    return _digest(variant, str(system)) == _SYSTEM[variant]


def defect_matches(mystery: str, defect: str) -> bool:
    """Whether `defect` (a zoo bug's name, or "amp") is the mystery's, or its bug's variant."""
    variant = _variant(mystery)
    names = (defect, *(f"{defect}:{v}" for v in getattr(BUGS.get(defect), "variants", ())))
    return any(_digest(variant, str(n)) == _DEFECT[variant] for n in names)


def mechanism_terms(mystery: str, mechanism: str) -> tuple[int, int]:
    """(groups of key terms the mechanism line names, groups it must name)."""
    variant = _variant(mystery)
    words = set(re.findall(r"[a-z0-9]+", str(mechanism).lower()))
    groups = [set(group.split()) for group in _TERMS[variant]]
    found = sum(any(_digest(variant, w) in group for w in words) for group in groups)
    return found, len(_TERMS[variant])


# ---- figures with neutral titles: a mystery's plot never names its defect ----------------
def _name(run) -> str:
    return f"mystery {run.meta['setup']['mystery']}, seed {run.meta['seed']}"


def plot_symptom(run, ax=None):
    """What the team's dashboard showed: the logged loss only."""
    from ..core import plots

    ax = plots._ax(ax, f"{_name(run)}: the logged loss, as the dashboard shows it")
    x, y = plots._finite(run.table["step"], run.table["loss_reported"])
    ax.plot(x, y, "-", lw=1.2, label="loss_reported")
    plots._mark_nonfinite(ax, run, "loss_reported")
    ax.set(xlabel="step", ylabel="loss")
    ax.legend(fontsize=7)
    return ax


def plot_run(run):
    """Raw and reported loss, and the total gradient norm (log axis), side by side."""
    import matplotlib.pyplot as plt
    from ..core import plots

    _, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    plots.plot_loss(run, ax=left, label=_name(run))
    x, y = plots._finite(run.table["step"], run.table["grad_norm"])
    right.plot(x, y, ".", ms=3, label="grad_norm (each step)")
    plots._mark_nonfinite(right, run, "grad_norm")
    right.set(
        title=f"{_name(run)}: gradient norm", xlabel="step", ylabel="gradient norm", yscale="log"
    )
    right.legend(fontsize=7)
    return left, right
