"""Lab 15's mysteries: mystery D under real fp16 autocast, random draws and their variants,
and figures and runs that give nothing away."""

import math

import matplotlib
import pytest

import labkit
from labkit.diagnosis import lab15
from labkit.diagnosis.record.prediction import Prediction

matplotlib.use("Agg")
pytestmark = pytest.mark.lab15

# The single change that fixes each kind of mystery, and a FORECAST the broken baseline misses.
ANSWERS = {
    "A1": ("logger", "loss_reported > 0.5 by step 45"),
    "A2": ("logger", "loss_reported < 2.0 by step 45"),
    "B": ("data", "loss < 2.0 by step 45"),
    "C": ("scheduler", "loss < 2.0 by step 45"),
    "D": ("scaler", "loss < 1.0 by step 45"),
}


def judged(forecast: str, run) -> bool:
    p = Prediction(forecast)
    return p.judge(run.table["step"], run.column(p.parse()["column"]))[0]


def draw_of(variant: str) -> str:
    return next(f"random-{i}" for i in range(500) if lab15._variant(f"random-{i}") == variant)


@pytest.mark.slow
@pytest.mark.chaotic
@pytest.mark.parametrize("mystery", ["D", draw_of("D2")])
def test_mystery_d_nans_only_in_fp16_and_only_the_chapters_fix_works(mystery):
    first, second = lab15.seeds(mystery)
    base = lab15.run_mystery(mystery)
    assert base.config["precision"] == "fp16"
    nan = base.first_nonfinite_step()
    assert nan is not None and 3 <= nan < 30
    before = [g for g in base.table["grad_norm"][:nan] if math.isfinite(g)]
    assert min(before) > 1e4  # large ...
    assert max(before) / min(before) < 3  # ... but not running away, unlike an LR blow-up
    assert lab15.run_mystery(mystery, fix="fp32").first_nonfinite_step() is None
    _, forecast = ANSWERS["D"]
    assert not judged(forecast, base)
    for seed in (first, second):  # the chapter's fix, both ways, on both seeds
        assert judged(forecast, lab15.run_mystery(mystery, seed=seed, fix="scaler"))
        assert judged(forecast, lab15.run_mystery(mystery, seed=seed, fix="bf16"))
    lr_cut = lab15.run_mystery(mystery, lr_factor=0.1)  # the wrong single variable
    assert lr_cut.first_nonfinite_step() is not None and not judged(forecast, lr_cut)


@pytest.mark.parametrize("variant", ["A1", "A2", "B1", "B2", "C1", "C2"])
def test_every_variant_is_fixed_by_its_one_change_on_both_seeds(variant):
    mystery = draw_of(variant)
    fix, forecast = ANSWERS.get(variant) or ANSWERS[variant[0]]
    first, second = lab15.seeds(mystery)
    assert not judged(forecast, lab15.run_mystery(mystery))  # doing nothing misses it
    for seed in (first, second):
        assert judged(forecast, lab15.run_mystery(mystery, seed=seed, fix=fix))


def test_random_draws_are_repeatable_and_reach_every_variant():
    assert lab15.draw(7) == "random-7"
    assert lab15.seeds("random-7") == lab15.seeds(lab15.draw(7))
    reached = {lab15._variant(lab15.draw(seed)) for seed in range(60)}
    assert reached == set(lab15._SPECS)
    with pytest.raises(ValueError, match="mystery='E' is not allowed"):
        lab15.run_mystery("E")
    with pytest.raises(ValueError, match="Did you mean 'logger'"):
        lab15.run_mystery("A", fix="loger")


def test_mystery_a_is_not_the_triage_explorers_worked_example():
    """03_triage_explorer triages wrong_logging_divisor on seeds 0 and 1 with the defaults."""
    worked = labkit.train(bug="wrong_logging_divisor", seed=0, steps=50)
    mine = lab15.run_mystery("A")
    assert lab15.seeds("A") != (0, 1)
    assert mine.meta["data_hash"] != worked.meta["data_hash"]
    assert mine.table["loss_raw"][:5] != worked.table["loss_raw"][:5]


def test_nothing_in_a_run_or_a_figure_names_the_defect():
    run = lab15.run_mystery("A")
    assert run.meta["bug"] is None and run.meta["setup"] == lab15.setup("A")
    assert not hasattr(lab15, "truth")
    left, right = lab15.plot_run(run)
    ax = lab15.plot_symptom(run)
    titles = [left.get_title(), right.get_title(), ax.get_title()]
    assert all("mystery A, seed 3" in t for t in titles), titles
    assert not any("healthy" in t or "divisor" in t for t in titles), titles


def test_answers_are_compared_not_revealed():
    assert [s for s in ("H1", "H2", "H3") if lab15.system_matches("D", s)] == ["H1"]
    assert lab15.mechanism_terms("D", "a fixed loss scale overflows float16") == (2, 2)
    assert lab15.mechanism_terms("D", "the learning rate is too high") == (0, 2)
    assert lab15.mechanism_terms("A", "reported loss divided by 500") == (2, 2)
