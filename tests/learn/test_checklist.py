"""The executable LLM checklist: the healthy LM batch passes every item, each of the three
masking bugs fails its own, different item, the CLI's exit codes, and a GPT-2 batch."""

import pytest
import torch

import labkit
from labkit.learn import checklist
from labkit.learn.checklist import ITEMS, audit
from labkit.learn.lessons import gpt2

from helpers import labkit_cli

OWN_ITEM = {
    "double_shift": "shift_once",
    "padding_in_loss": "padding_excluded",
    "all_masked_labels": "supervised_tokens",
}


@pytest.mark.parametrize("seed", [0, 1])
def test_healthy_lm_batch_passes_every_item(seed):
    result = audit(seed=seed)
    assert result.status() == {key: "PASS" for key, *_ in ITEMS}, str(result)
    assert result.passed and result.failed == []


@pytest.mark.parametrize("bug, item", OWN_ITEM.items())
def test_each_masking_bug_fails_its_own_item_and_only_that(bug, item):
    result = audit(bug=bug)
    assert result.failed == [item], str(result)
    assert "PASS" in result.status().values()


def test_the_three_bugs_fail_three_different_items():
    assert len({tuple(audit(bug=b).failed) for b in OWN_ITEM}) == 3


def test_an_item_that_builds_on_a_failed_one_says_not_judged():
    result = audit(bug="double_shift").status()
    assert result["prompt_intent"] == "N/A" and result["eos_boundary"] == "N/A"


def test_lines_carry_status_key_and_evidence():
    text = str(audit(bug="padding_in_loss"))
    lines = text.splitlines()
    assert lines[0].startswith("checklist: labkit TinyCausalLM") and len(lines) == len(ITEMS) + 2
    assert any(
        line.startswith("FAIL  padding_excluded") and "padding positions carry a label" in line
        for line in lines
    )
    assert lines[-1] == f"{len(ITEMS)} items: {len(ITEMS) - 1} PASS, 1 FAIL, 0 N/A"


def test_short_name_is_the_same_module():
    import labkit.checklist as short

    assert short is checklist and labkit.checklist.audit is audit


def test_bad_input_is_refused_with_a_sentence():
    with pytest.raises(ValueError, match="task must be 'lm'"):
        audit(task="classify")
    with pytest.raises(ValueError, match="Give both model and batch"):
        audit(model=torch.nn.Linear(2, 2))
    model = labkit.TinyCausalLM()
    with pytest.raises(ValueError, match="missing \\['labels'\\]"):
        audit(
            model,
            {
                "input_ids": torch.zeros(1, 3, dtype=torch.long),
                "attention_mask": torch.ones(1, 3, dtype=torch.long),
            },
        )


def test_own_model_and_batch_without_extras_marks_what_it_cannot_judge():
    kw = gpt2.token_batches()
    torch.manual_seed(0)
    model = labkit.TinyCausalLM(max_len=kw["batch"]["input_ids"].shape[1])
    result = audit(model, kw["batch"]).status()
    assert result["shift_once"] == "PASS" and result["causal_mask"] == "PASS"
    assert result["same_template"] == "N/A" and result["split_by_group"] == "N/A"


def test_a_model_that_sees_the_future_fails_the_causal_item():
    class Peeking(torch.nn.Module):  # each position's logits include the next token's embedding
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(50, 50)

        def forward(self, input_ids, attention_mask=None, labels=None):
            h = self.emb(input_ids)
            logits = h + torch.roll(h, -1, dims=1)
            from labkit.core.models import shifted_lm_loss

            return labkit.LMOutput(
                shifted_lm_loss(logits, labels) if labels is not None else None, logits
            )

    kw = gpt2.token_batches()
    assert audit(Peeking(), kw["batch"]).status()["causal_mask"] == "FAIL"


def run_cli(*args, process=False):
    return labkit_cli("checklist", *args, process=process, timeout=120)


@pytest.mark.slow
def test_cli_exit_codes(capsys):
    """Exit 0 on a healthy batch and 1 on a planted bug (in this process: the checklist's own
    work is what is tested, and a fresh interpreter per run cost 3-5 s each); exit 2 with one
    line and no traceback on bad input, once through a real `python -m labkit.cli` process."""
    from labkit.cli import main

    assert main(["checklist"]) == 0
    assert capsys.readouterr().out.count("\nPASS  ") == len(ITEMS)
    for bug, item in OWN_ITEM.items():
        assert main(["checklist", "--bug", bug, "--seed", "1"]) == 1
        out = capsys.readouterr().out
        assert f"FAIL  {item}" in out and out.count("\nFAIL  ") == 1
    for args, words in (
        (["--bug", "dubble_shift"], "did you mean 'double_shift'"),
        (["--bug", "detach"], "planted in the classifier"),
        (["--task", "classify"], "task must be 'lm'"),
        (["--seed", "x"], "invalid int value"),
    ):
        rc, out, err = run_cli(*args, process=args[0] == "--seed")
        assert rc == 2 and words in err and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err


@pytest.mark.skipif(not gpt2.available(), reason="transformers is not installed")
def test_gpt2_batch_passes_and_a_hand_shift_fails():
    model = gpt2.tiny_gpt2()
    kw = gpt2.token_batches()
    assert audit(model, **kw).passed
    kw["batch"] = gpt2.shifted_by_hand(kw["batch"])
    assert audit(model, **kw).failed == ["shift_once"]
