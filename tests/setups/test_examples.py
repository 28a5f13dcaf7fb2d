"""The examples/ scripts are triaged correctly: each bug convicted, each fixed script acquitted."""

import importlib.util
from pathlib import Path

import pytest

import labkit
from own_setups import mechanism_right

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CASES = {  # file, class, expected system, key terms of the mechanism
    "dataloader_classifier": (
        "DataLoaderClassifier",
        "H1",
        [("cleared", "zeroed"), ("between backward",)],
    ),
    "cnn_synthetic_images": ("CnnImages", "H3", [("divided by 640",), ("20 batches",)]),
    "gpt2_finetune": ("Gpt2FineTune", "H2", [("label",), ("decorrelated",)]),
}


def _setup(name, **kwargs):
    if name == "gpt2_finetune":
        pytest.importorskip("transformers", reason="the GPT-2 example needs transformers")
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, CASES[name][0])(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_the_bug_is_convicted_with_its_mechanism(name):
    _, system, terms = CASES[name]
    verdict = labkit.diagnose(_setup(name), seeds=(0, 1)).verdict()
    assert verdict.startswith(f"CONVICTION: {system} — ") and mechanism_right(verdict, terms), (
        verdict
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_the_fixed_script_is_acquitted(name):
    verdict = labkit.diagnose(_setup(name, fixed=True), seeds=(0, 1)).verdict()
    assert verdict.startswith("CONVICTION: NONE — "), verdict
