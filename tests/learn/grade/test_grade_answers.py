"""Answers as data: the hand-over writes what the checks take, the grader reads it back
strictly, refuses anything else with a sentence, and call sites are rewritten in place."""

import json
import math

import pytest
import torch

from labkit.learn.grade import handover as grade_handover
from labkit.learn.grade.answers import AnswerUnreadable, decode, read_answer
from labkit.learn.grade.sites import hand_over, occurrence
from labkit.learn.grade.run import ANSWER_MIME, Execution
from labkit.learn.grade.verdict import verdict


class Shell:
    """What the hand-over takes from the kernel's IPython: its namespace, and a display
    publisher whose messages the grader holds (`Execution.hold`), as the kernel would send."""

    def __init__(self, cell: int, planned):
        self.user_ns, self.run, self.cell, self.planned = {}, Execution(None), cell, planned
        self.display_pub = self

    def publish(self, data, metadata=None):
        self.run.hold(self.cell, data[ANSWER_MIME], self.planned)


def handed_text(*args, **kwargs) -> str:
    """Hand `args` over as the kernel would: the text the grader holds."""
    shell = Shell(3, {(3, "ex_a_mechanism")})
    grade_handover.install(shell)
    shell.user_ns["__labkit_answer__"](3, "ex_a_mechanism", 0, None)(*args, **kwargs)
    return shell.run.answers[(3, "ex_a_mechanism", 0)]


def handed(tmp_path, *args, **kwargs):
    """Hand `args` over as the kernel would, and read them back as the grader does."""
    return read_answer(handed_text(*args, **kwargs))


def test_what_the_checks_take_comes_back_equal(tmp_path):
    import labkit
    from labkit.diagnosis.probes._common import ProbeResult

    run = labkit.Run.from_log(
        {"step": [0, 1], "loss_raw": [2.0, float("nan")], "grad_norm/head": [None, 1.5]},
        seed=0,
        started_at=1.0,
    )
    record = labkit.TriageRecord("a subject")
    values = [
        run,
        {("train", "no_grad"): {"dropout active": True}},
        {0.1: "slow"},
        (1, "x"),
        {"a", "b"},
        ...,
        float("-inf"),
        torch.tensor([[1, 2], [3, 4]]),
        "é ☃",
        ProbeResult("lr_sweep", "ok", {"arms": {10.0: {"drop": -1.0}}}),
        None,
    ]
    args, kwargs = handed(tmp_path, *values, record=record)
    assert args[0] == run and args[0].timing == run.timing
    assert math.isnan(args[0].table["loss_raw"][1])
    assert args[1:7] == values[1:7] and torch.equal(args[7], values[7]) and args[8:] == values[8:]
    assert kwargs["record"].to_dict() == record.to_dict()


def test_a_quiz_is_handed_over_as_its_seed_and_redrawn_without_training(tmp_path):
    from labkit.learn.curves import quiz as curve_quiz

    quiz = curve_quiz.draw(12, train=False)
    (got,), _ = handed(tmp_path, quiz)
    assert got.seed == 12 and got.answer_key() == quiz.answer_key()
    assert all(item.run is None for item in got.items)


def test_the_hand_over_keeps_what_it_took_before_the_learner_patched_json(tmp_path, monkeypatch):
    import json.encoder

    shell = Shell(0, {(0, "ex_a_mechanism")})
    grade_handover.install(shell)
    monkeypatch.setattr(json.encoder, "encode_basestring_ascii", lambda s: '"passed"')
    monkeypatch.setattr(json, "dumps", lambda *a, **k: "[]")
    shell.user_ns["__labkit_answer__"](0, "ex_a_mechanism", 0, None)("detach")
    shell.user_ns["__labkit_answer__"](0, "ex_a_mechanism", 0, None)("a second call")
    shell.run.hold(0, 'ex_a_mechanism\n0\n{"args": ["forged"], "kwargs": {}}', shell.planned)
    shell.run.hold(5, 'ex_a_mechanism\n0\n{"args": ["elsewhere"], "kwargs": {}}', shell.planned)
    monkeypatch.undo()  # the first answer per call site wins; another cell's is not planned
    assert shell.run.answers == {
        (0, "ex_a_mechanism", 0): '{"args":["detach"],"kwargs":{"$":"dict","items":[]}}'
    }


def test_an_object_that_is_not_data_is_written_as_unreadable_and_never_passes(tmp_path):
    class Mine:
        pass

    with pytest.raises(AnswerUnreadable, match=r"it holds a .*Mine, which cannot be handed over"):
        handed(tmp_path, Mine())


@pytest.mark.parametrize(
    "text, says",
    [
        (
            '{"args": [{"$": "pickle", "data": "gAR9lC4="}], "kwargs": {"$": "dict", "items": []}}',
            "it holds an object tagged 'pickle', and the tags are",
        ),
        (
            '{"args": [NaN], "kwargs": {"$": "dict", "items": []}}',
            "it is not JSON as the hand-over",
        ),
        (
            '{"args": [], "kwargs": {"$": "dict", "items": []}, "verdict": "passed"}',
            "exactly 'args' and 'kwargs'",
        ),
        (
            (
                '{"args": [{"$": "tensor", "dtype": "object", "shape": [1], "data": [1]}], '
                '"kwargs": {"$": "dict", "items": []}}'
            ),
            "a tensor's dtype is one of bool",
        ),
        (
            (
                '{"args": [{"$": "tensor", "dtype": "int64", "shape": [3], "data": [1]}], '
                '"kwargs": {"$": "dict", "items": []}}'
            ),
            "one per element of its shape",
        ),
        (
            '{"args": [{"$": "float", "value": "1e999", "x": 1}], "kwargs": {"$": "dict", "items": []}}',
            "its 'float' object has the fields ['value', 'x'], and one has exactly ['value']",
        ),
        ('{"args": [], "kwargs": []}', "'args' must be a list and 'kwargs' a dict"),
        (
            (
                '{"args": [{"$": "run", "table": {"$": "dict", "items": []}, "evals": {"$": "dict", '
                '"items": []}, "meta": null, "timing": null}], "kwargs": {"$": "dict", "items": []}}'
            ),
            "a run's table and evals each have a 'step' column",
        ),
    ],
)
def test_an_answer_that_is_not_valid_data_says_what_is_wrong(text, says):
    with pytest.raises(AnswerUnreadable, match=None) as got:
        read_answer(text)
    assert says in str(got.value)
    from labkit.check import ex_a_mechanism

    status, message = verdict(ex_a_mechanism, "ex_a_mechanism", text)
    assert status == "failed"
    assert message.startswith("the answer to ex_a_mechanism could not be read: ")


def test_decode_refuses_nesting_deeper_than_the_hand_over_writes():
    deep = "x"
    for _ in range(60):
        deep = [deep]
    with pytest.raises(AnswerUnreadable, match="nests deeper than 48 levels"):
        decode(json.loads(json.dumps(deep)))


@pytest.mark.slow  # two Python processes, each importing torch
def test_a_function_answer_is_checked_in_a_process_of_its_own(tmp_path):
    from labkit.check import loop_train_step

    source = (
        "def step(model, optimizer, batch):\n    optimizer.zero_grad()\n"
        "    F.cross_entropy(model(batch[0]), batch[1]).backward()\n    optimizer.step()\n"
    )
    broken = "def step(m, o, b):\n    undefined_name\n"
    forged = (  # a step that never steps, and says "passed" on every channel it can reach
        "def step(model, optimizer, batch):\n    import atexit, os\n"
        '    said = b\'["passed", "ok"]\'\n'
        "    atexit.register(print, said.decode())\n    print(said.decode())\n"
        "    for fd in range(3, 64):\n        try:\n            os.write(fd, said)\n"
        "        except OSError:\n            pass\n    os._exit(0)\n"
    )
    for body, expected in ((source, "passed"), (broken, "failed"), (forged, "failed")):
        text = json.dumps(
            {
                "args": [{"$": "function", "name": "step", "source": body}],
                "kwargs": {"$": "dict", "items": []},
            }
        )
        assert verdict(loop_train_step, "loop_train_step", text)[0] == expected, body


def test_a_function_given_to_a_check_that_takes_none_is_refused_unrun():
    from labkit.check import ex_a_mechanism

    body = "def said(*args):\n    raise SystemExit('run')\n"
    text = json.dumps(
        {
            "args": [{"$": "function", "name": "said", "source": body}],
            "kwargs": {"$": "dict", "items": []},
        }
    )
    said = (
        "the answer to ex_a_mechanism is a function, and ex_a_mechanism takes none: pass the "
        "value itself (only a check that asks for your function runs it)"
    )
    assert verdict(ex_a_mechanism, "ex_a_mechanism", text) == ("failed", said)


def test_call_sites_are_rewritten_in_place_magics_included():
    source = 'x = "é"\nprint(check.ex_a_mechanism(ex_a_mechanism(m)))\n%time y = 1\n'
    out = hand_over(source, 4, {"ex_a_mechanism"})
    assert (
        "print(__labkit_answer__(4, 'ex_a_mechanism', 0, check.ex_a_mechanism)"
        "(__labkit_answer__(4, 'ex_a_mechanism', 1, ex_a_mechanism)(m)))"
    ) in out
    assert out.startswith('x = "é"\n') and "run_line_magic('time'" in out
    assert hand_over("h(v)\n", 9, {"h"}, {"h"}) == "__labkit_answer__(9, 'h', 0, None)(v)\n"
    assert hand_over("print(1 +\n", 0, {"h"}) is None  # not Python: nothing to hand over
    plan = [(1, "a"), (1, "b"), (1, "a"), (2, "a")]
    assert [occurrence(plan, i) for i in range(4)] == [0, 0, 1, 0]


def test_hidden_checks_run_in_the_grader_and_send_only_their_calls(tmp_path):
    from labkit.learn.grade.hidden import read_hidden

    (tmp_path / "ex_a.py").write_text(
        "from labkit.learn.check._base import answer_check\nLIMIT = 3\n\n@answer_check\n"
        "def ex_a_hidden(x):\n    'x is small'\n    return x < LIMIT\n\n"
        "print(ex_a_hidden(steps))\n"
    )
    hidden = read_hidden(tmp_path / "ex_a.py")
    hidden.define()
    assert hidden.cells_for(["ex_a_predict"]) == ["ex_a_hidden(steps)\n"]
    assert hidden.checks["ex_a_hidden"].__wrapped__(2) is True
    (tmp_path / "ex_a.py").write_text(
        "from labkit.learn.check._base import answer_check\nLIMIT = len(steps)\n\n@answer_check\n"
        "def ex_a_hidden(x):\n    'x'\n\nex_a_hidden(steps)\n"
    )
    with pytest.raises(
        ValueError,
        match=r"hidden checks ex_a.py do not run in the grader "
        r"\(NameError: name 'steps' is not defined\)",
    ):
        read_hidden(tmp_path / "ex_a.py").define()


def test_the_learners_kernel_never_sees_the_graders_secrets(tmp_path, monkeypatch):
    import nbformat

    from labkit.learn.grade.run import _kernel_env

    for name in (
        "GITHUB_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "GRADER_PASSWORD",
        "OPENAI_API_KEY",
        "SSH_PRIVATE_KEY",
        "HF_AUTH",
    ):
        monkeypatch.setenv(name, "do-not-leak")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # a setting, not a secret
    for sandbox in ("none", "bwrap"):
        work = tmp_path / sandbox
        work.mkdir()
        env = _kernel_env(nbformat.v4.new_notebook(), str(work), sandbox)
        assert "do-not-leak" not in env.values()
        assert env["OMP_NUM_THREADS"] == "1" and "PATH" in env and env["LABKIT_HOME"]
        assert ("TOKENIZERS_PARALLELISM" in env) == (sandbox == "none")  # bwrap: an allow-list


@pytest.mark.parametrize(
    "value, says",
    [
        ({"$": "float", "value": "nan"}, "holds nan"),
        ([1.0, {"$": "float", "value": "-inf"}], "holds -inf"),
        ({"$": "dict", "items": [["growth", {"$": "float", "value": "inf"}]]}, "holds inf"),
        (
            {
                "$": "tensor",
                "dtype": "float32",
                "shape": [2],
                "data": [1.0, {"$": "float", "value": "nan"}],
            },
            "holds a tensor with NaN or infinity",
        ),
    ],
)
def test_a_number_that_is_not_finite_fails_before_any_comparison(value, says):
    """NaN slips past `abs(answer - truth) > tol`: the grader refuses it before the check."""
    from labkit.learn.check._base import answer_check

    seen = []

    @answer_check
    def ex_a_close(x):
        """x is within 0.01 of 2."""
        seen.append(x)
        return "ok"  # a check that compares as `not abs(x - 2) > 0.01` would pass NaN

    text = json.dumps({"args": [value], "kwargs": {"$": "dict", "items": []}})
    status, message = verdict(ex_a_close, "ex_a_close", text)
    assert status == "failed" and seen == []
    assert message == f"the answer to ex_a_close {says}, and a number must be finite to be compared"


def test_a_run_whose_loss_is_nan_is_still_an_answer():
    import labkit

    run = labkit.Run.from_log(
        {"step": [0, 1], "loss_raw": [2.0, float("nan")]}, seed=0, started_at=1.0
    )
    from labkit.learn.grade.verdict import not_finite

    assert not_finite([run, 3], {}) is None


def test_a_made_up_run_is_refused_and_a_real_one_is_judged_on_the_graders_own():
    """Issue 53's kind 6: a check that works its truth out of the run handed over. The
    grader trains the run again (`grade.truth`); a run changed to fit a wrong answer, or one
    labkit never trained, fails with where it differs, and never passes."""
    import copy

    import labkit
    from labkit.check import ex_d_first_gap
    from labkit.learn.check.ex.d import three_at

    control = labkit.train(steps=3, eval_every=16)  # Exercise D's control, for three steps
    first = three_at(control, 0)
    right, wrong = first["online"] - first["train_eval"], 0.5
    made_up = copy.deepcopy(control)  # what a wrapped labkit.train returns: the wrong answer fits
    made_up.table["loss_reported"][2] = wrong + first["train_eval"]
    logged = labkit.Run.from_log(
        {"step": [0, 1, 2], "loss_raw": [2.3, 2.1, 2.0]}, seed=0, started_at=1.0
    )
    huge = copy.deepcopy(made_up)  # a config the grader would train for hours: refused unrun
    huge.meta["config"] = {**huge.meta["config"], "hidden": 10**6}
    judged = {
        what: verdict(ex_d_first_gap, "ex_d_first_gap", handed_text(value, run))
        for what, value, run in (
            ("real", right, control),
            ("made up", wrong, made_up),
            ("logged", wrong, logged),
            ("huge", wrong, huge),
        )
    }
    assert judged["real"][0] == "passed", judged["real"]
    said = (
        "the answer to ex_d_first_gap could not be checked: the run given as argument 2 is not "
        "the run its config trains: its table['loss_reported'][2] is "
        f"{wrong + first['train_eval']!r}, and the grader's run has {first['online']!r}; pass "
        "the run labkit.train returned, unchanged"
    )
    assert judged["made up"] == ("failed", said)
    assert judged["logged"][0] == "failed"
    assert "was not trained by labkit.train (its task is 'own loop')" in judged["logged"][1]
    too_big = (
        "the answer to ex_d_first_gap could not be checked: the run given as argument 2 has "
        "hidden=1000000, more than the grader trains again (at most 1024); the exercise's own "
        "runs are far smaller"
    )
    assert judged["huge"] == ("failed", too_big)


def test_data_beside_a_run_is_made_again_and_a_placeholder_stays_unanswered():
    """Data a check reads beside the runs (Exercise D's four-way table, E's first batches, F's
    exact-match givens) is made again by the grader (`grade.truth.given`): a turned-over table,
    swapped batches and changed givens fail with what differs; a placeholder answer is not yet
    answered, whatever its data."""
    import labkit
    from labkit.check import ex_d_first_gap, ex_d_review, ex_e_review, ex_f_exact_match

    base = labkit.Config(task="lm", steps=2)
    bugs = ("double_shift", "padding_in_loss", "all_masked_labels")  # Exercise E's five runs
    setups = {"correct": (base, None), **{bug: (base, bug) for bug in bugs}}
    setups["prompt_in_loss"] = (base.replace(response_only=False), None)
    runs = {name: labkit.train(cfg, bug=bug) for name, (cfg, bug) in setups.items()}
    batches = {name: labkit.Trainer(cfg, bug=bug).batch(0) for name, (cfg, bug) in setups.items()}
    swapped = {**batches, "correct": batches["double_shift"], "double_shift": batches["correct"]}
    said = verdict(ex_e_review, "ex_e_review", handed_text({}, runs, swapped))
    assert said[0] == "failed" and said[1].startswith(
        "the answer to ex_e_review could not be checked: batches (given as argument 3) is not "
        "batch 0 of each run's own setup, by the run's name, as the exercise's cell makes it "
        "from seed 0: its part ['correct']['labels']"
    ), said
    kept = verdict(ex_e_review, "ex_e_review", handed_text({}, runs, batches))
    assert "could not be checked" not in kept[1], kept  # the real batches reach the check
    exact = {
        (p, n, v): verdict(ex_f_exact_match, "ex_f_exact_match", handed_text(p, n, v))
        for p, n, v in ((0.95, 10, 0.95**10), (1.0, 1, 1.0), (0.95, 10, ...))
    }
    assert exact[0.95, 10, 0.95**10][0] == "passed"
    changed = (
        "the answer to ex_f_exact_match could not be checked: p_token (given as argument 1) is "
        "not the exercise's per-token accuracy, as the exercise's cell makes it from seed 0: it "
        "is 1.0, and the grader's is 0.95; pass what that cell made, unchanged"
    )
    assert exact[1.0, 1, 1.0] == ("failed", changed)
    assert exact[0.95, 10, ...][0] == "not yet answered"
    dropout = labkit.train(dropout=0.5, eval_every=16, steps=2)  # Exercise D's runs, and its
    control = labkit.train(eval_every=16, steps=2)  # table with its facts turned over
    seen = {
        (mode, grad): {"dropout active": mode == "train", "graph recorded": grad == "grad on"}
        for mode in ("train", "eval")
        for grad in ("grad on", "no_grad")
    }
    said = verdict(ex_d_review, "ex_d_review", handed_text({}, dropout, control, seen))
    assert "could not be checked" not in said[1], said  # what PyTorch does: the grader's too
    said = verdict(ex_d_first_gap, "ex_d_first_gap", handed_text(0.1, dropout))
    other = (  # a real run, but not the one the check names: its gap is another's
        "the answer to ex_d_first_gap could not be checked: control (given as argument 2) is "
        "not the dropout=0 control: it was trained with dropout=0.5, not 0.0; pass what the "
        "exercise's cell made, unchanged"
    )
    assert said == ("failed", other)
    seen["train", "no_grad"] = {"dropout active": False, "graph recorded": False}
    said = verdict(ex_d_review, "ex_d_review", handed_text({}, dropout, control, seen))
    assert said[1].startswith(
        "the answer to ex_d_review could not be checked: seen (given as argument 4) is not the "
        "four-way table of the dropout run's model"
    ), said


def test_the_seed_and_the_parameters_are_read_from_the_parameters_cells_only():
    import nbformat

    from labkit.learn.check.ex.made import Notebook
    from labkit.learn.grade import parameters_of, seed_of

    def nb(*cells):
        out = nbformat.v4.new_notebook()
        out.cells = [nbformat.v4.new_code_cell(s, metadata={"tags": t}) for s, t in cells]
        return out

    assert seed_of(nb(("seed = 3", []))) == 0  # not a parameters cell
    assert seed_of(nb(("seed = 3\nx = 1", ["parameters"]))) == 3
    assert seed_of(nb(("seed = 3", ["parameters"]), ("seed = 7", ["injected-parameters"]))) == 7
    for odd in ("seed = 2.5", "seed = -1", "seed = int('4')", "seed = True", "seed ="):
        assert seed_of(nb((odd, ["parameters"]))) == 0, odd
    lab = nb(('mystery = "random"\ndraw_seed = 7\ndropout = 0.3', ["parameters"]))
    assert parameters_of(lab) == Notebook(seed=0, dropout=0.3, mystery="random-7")
    assert parameters_of(nb(("dropout = 1.5", ["parameters"]))) == Notebook()  # not a dropout


def test_every_argument_the_grader_makes_again_is_one_its_check_takes():
    """A check's parameter renamed would leave its data unchecked: each name in
    `labkit.learn.check.ex.made.GIVEN` is a parameter of that check."""
    import inspect

    from labkit.learn import check
    from labkit.learn.check.ex.made import GIVEN

    for name, makers in GIVEN.items():
        fn = getattr(getattr(check, name), "__wrapped__", getattr(check, name))
        assert set(makers) <= set(inspect.signature(fn).parameters), name


def test_a_lab15_record_is_measured_again_row_by_row():
    """Lab 15's record (`check.ex.mystery`): the grader trains its runs again, so an edited
    raw-vs-reported or label-shuffle verdict, hashes row, overfit verdict or list of seeds
    fails with both values, and a FORECAST judged
    too far on is refused untrained; the record as the lab filled it reaches the check."""
    import copy

    from labkit.check import lab15_conviction
    from labkit.diagnosis.record.prediction import Prediction
    from labkit.diagnosis.record.triage import TriageRecord

    import forgery_lab15

    record = forgery_lab15.filled({"fix": "logger"})
    defect = "logger divides by the wrong count"
    said = verdict(lab15_conviction, "lab15_conviction", handed_text("A", record, defect))
    assert said[0] == "passed", said
    far = Prediction("loss < 2 by step 99999", sealed_at=1.0)  # a run the grader would train
    far.content_hash = far._digest()  # for hours: refused untrained
    prefix = (
        "the answer to lab15_conviction could not be checked: record (given as argument 2) is "
        "not the record of mystery A's runs: "
    )
    rows = record.to_dict()["rows"]
    agree, same = rows["raw_vs_reported"]["data"]["agree"], rows["label_shuffle"]["data"]["same"]
    flip_text = rows["raw_vs_reported"]["text"].replace("agree", "disagree", 1)
    if not agree:
        flip_text = rows["raw_vs_reported"]["text"].replace("disagree", "agree", 1)
    for (row, key, value), says in (
        (
            ("raw_vs_reported", "agree", not agree),
            f"its raw_vs_reported row's agree is {not agree}",
        ),
        (("raw_vs_reported", "text", flip_text), "its raw_vs_reported row's verdict is"),
        (("label_shuffle", "same", not same), f"its label_shuffle row's same is {not same}"),
        (("hashes", "seed", 4), "its hashes row's seed is 4, and the grader's run has 3"),
        (("overfit", "reached", False), "its overfit row's reached is False, and the grader's"),
        (("seeds", None, [3, 5]), "its seeds are [3, 5], and its runs' are [3, 4]"),
        (("forecast", None, far.__dict__), "its FORECAST 'loss < 2 by step 99999' is judged"),
    ):
        edited = copy.deepcopy(record.to_dict())
        if key is None:
            edited[row] = value
        elif key == "text":
            edited["rows"][row]["text"] = value
        else:
            edited["rows"][row]["data"][key] = value
        edited = TriageRecord.from_dict(edited)
        said = verdict(lab15_conviction, "lab15_conviction", handed_text("A", edited, defect))
        assert said[0] == "failed" and said[1].startswith(prefix + says), said


def test_data_the_grader_cannot_make_again_is_a_row_never_a_traceback(monkeypatch):
    """Whatever made-up data makes a maker raise (here torch's RuntimeError) is the row's
    sentence; it never stops the grading of the class."""
    from labkit.check import ex_f_exact_match
    from labkit.learn.check.ex import made

    def breaks(value, nb, arguments):
        raise RuntimeError("shape '[3]' is invalid for input of size 2")

    monkeypatch.setitem(made.GIVEN, "ex_f_exact_match", {"p_token": breaks})
    said = verdict(ex_f_exact_match, "ex_f_exact_match", handed_text(0.95, 10, 0.6))
    assert said == (
        "failed",
        (
            "the answer to ex_f_exact_match could not be checked: the grader could not make "
            "p_token (given as argument 1) again to compare (RuntimeError: shape '[3]' is invalid "
            "for input of size 2); pass what the exercise's cell made"
        ),
    )
