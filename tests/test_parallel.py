"""The suite runs in parallel (pytest-xdist, `make test`): each worker keeps its own state and
threads, and the work units keep what must run together on one worker (conftest.py)."""

import os

import torch

import conftest


def test_each_worker_has_its_own_learner_home_and_jupyter_folders():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    for var in ("LABKIT_HOME", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "IPYTHONDIR"):
        path = os.environ[var]
        assert os.path.isdir(path), var
        assert f"labkit-test-{worker}-" in path, (var, path)  # one folder per worker process


def test_torch_threads_are_cores_over_workers_unless_the_caller_set_them():
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if not workers:  # a serial run keeps torch's default, or the caller's OMP_NUM_THREADS
        expected = int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads()))
    else:  # conftest sets it, unless the caller did (make test's second pass: 1)
        expected = int(os.environ["OMP_NUM_THREADS"])
        assert expected >= 1
        assert expected == 1 or expected == max(1, conftest._cores() // workers)
    assert torch.get_num_threads() == expected


def test_a_notebook_and_the_browser_tests_are_each_one_unit_and_the_long_files_are_split():
    nb = "tests/reference/00_start_here.ipynb"
    assert conftest.work_unit(f"{nb}::Cell 0") == conftest.work_unit(f"{nb}::Cell 9") == nb
    assert (
        conftest.work_unit("tests/browser/test_browser.py::test_x")
        == conftest.work_unit("tests/browser/test_exercises_browser.py::test_y")
        == "browser"
    )
    assert (
        conftest.work_unit("tests/learn/grade/test_grade.py::test_a")
        == conftest.work_unit("tests/learn/grade/test_grade.py::test_b")
        == "tests/learn/grade/test_grade.py"
    )
    split = "tests/diagnosis/test_diagnose.py::test_d[detach]"
    assert conftest.work_unit(split) == split
    assert conftest.work_unit(
        "tests/diagnosis/test_diagnose.py::test_d[zero_lr]"
    ) != conftest.work_unit(split)
    sig = "tests/bugs/test_bugs.py::test_bug_reproduces_its_signature[{}]"  # one seed's signatures: one unit
    assert (
        conftest.work_unit(sig.format("double_shift-0"))
        == conftest.work_unit(sig.format("zero_lr:per_batch_scheduler-0"))
        != conftest.work_unit(sig.format("double_shift-1"))
    )
    eighth = "tests/setups/test_own_eighth.py::test_eighth_setups_stay_right[{}]"  # 71 s as one unit: split
    assert (
        conftest.work_unit(eighth.format("a"))
        == eighth.format("a")
        != conftest.work_unit(eighth.format("b"))
    )
    gpt2 = "tests/setups/test_examples.py::test_{}[gpt2_finetune]"  # one example's tests: one unit
    assert (
        conftest.work_unit(gpt2.format("bug"))
        == conftest.work_unit(gpt2.format("fixed"))
        != conftest.work_unit("tests/setups/test_examples.py::test_bug[cnn_synthetic_images]")
    )


def test_the_split_files_units_and_the_long_files_are_handed_out_round_robin_over_the_files():
    from pathlib import Path
    from types import SimpleNamespace

    def item(nodeid):
        return SimpleNamespace(nodeid=nodeid, path=Path(nodeid.split("::")[0]))

    ids = [
        "tests/test_reference.py::t",  # a whole file: after the split ones
        "tests/notebooks/test_exercise_gate.py::t[a]",
        "tests/notebooks/test_exercise_gate.py::t[b]",
        "tests/notebooks/test_exercise_gate.py::t[c]",
        "tests/setups/test_own_eighth.py::t[x]",
        "tests/setups/test_own_eighth.py::t[y]",
        "tests/reference/00_start_here.ipynb::Cell 0",
        "tests/reference/00_start_here.ipynb::Cell 1",
        "tests/browser/test_browser.py::t",
    ]
    sig = "tests/bugs/test_bugs.py::test_bug_reproduces_its_signature[{}]"
    ids += [sig.format("detach-0"), sig.format("zero_lr-0"), sig.format("detach-1")]  # two units
    ids += [
        "tests/learn/grade/test_grade_limits.py::a",
        "tests/learn/grade/test_grade_limits.py::b",
    ]  # a long whole file
    items = [item(i) for i in ids]
    order = [i.nodeid for i in sorted(items, key=conftest._order(items))]
    assert order == [
        "tests/browser/test_browser.py::t",
        "tests/reference/00_start_here.ipynb::Cell 0",
        "tests/reference/00_start_here.ipynb::Cell 1",
        "tests/notebooks/test_exercise_gate.py::t[a]",
        "tests/setups/test_own_eighth.py::t[x]",
        sig.format("detach-0"),
        sig.format("zero_lr-0"),  # one unit, kept together
        "tests/learn/grade/test_grade_limits.py::a",
        "tests/learn/grade/test_grade_limits.py::b",
        "tests/notebooks/test_exercise_gate.py::t[b]",
        "tests/setups/test_own_eighth.py::t[y]",
        sig.format("detach-1"),
        "tests/notebooks/test_exercise_gate.py::t[c]",
        "tests/test_reference.py::t",
    ]


def test_a_fix_is_signed_in_the_unit_that_triaged_its_setup():
    """test_own_sign signs a copy of the triage that its setup's batch test kept: they must run
    on one worker, as one unit (each fix's setup triaged by exactly one such test)."""
    from own_setups.fixed import FIXED

    # the two batch files, from the folder they sit in (conftest._load: tests/ is no package)
    test_own_triage = conftest._load("tests/setups", "test_own_triage")
    test_own_held_out = conftest._load("tests/setups", "test_own_held_out")

    units: dict = {}
    for module in (test_own_triage, test_own_held_out):
        path = f"tests/setups/{module.__name__}.py"
        for fname, fn in vars(module).items():
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == "parametrize" and mark.args[0] == "name":
                    for name in mark.args[1]:
                        units.setdefault(name, []).append(
                            conftest.work_unit(f"{path}::{fname}[{name}]")
                        )
    assert len(units) > 60  # 81 today: the first to seventh batches
    for name in FIXED:
        sign = conftest.work_unit(f"tests/setups/test_own_sign.py::test_each_fix_signs[{name}]")
        assert units[name] == [sign], name
    assert len({u for us in units.values() for u in us}) == sum(map(len, units.values()))


def test_make_test_starts_a_worker_per_core_and_one_more_within_the_memory(monkeypatch):
    import subprocess
    import sys
    from pathlib import Path

    tools = Path(__file__).resolve().parents[1] / "tools"
    import workers  # tools/workers.py, which conftest loads for its own core count

    monkeypatch.setattr(workers, "cores", lambda: 16)
    monkeypatch.setattr(workers, "available", lambda: None)  # macOS: no MemAvailable, no cap
    assert workers.workers() == 17
    monkeypatch.setattr(workers, "available", lambda: 64 * 2**30)
    assert workers.workers() == 17
    monkeypatch.setattr(workers, "available", lambda: 12 * 2**30)  # 16 cores, 12 GB free
    assert workers.workers() == 8
    monkeypatch.setattr(workers, "available", lambda: 2**29)
    assert workers.workers() == 1  # never none
    # the Makefile's own call: the count this machine gets
    done = subprocess.run(
        [sys.executable, str(tools / "workers.py")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and 1 <= int(done.stdout) <= conftest._cores() + 1, done
    # pass 2 (no browser, no time-out to wait on): one worker per core, within the memory too
    monkeypatch.setattr(workers, "available", lambda: None)
    assert workers.workers(0) == 16
    monkeypatch.setattr(workers, "available", lambda: 12 * 2**30)
    assert workers.workers(0) == 8
    second = subprocess.run(
        [sys.executable, str(tools / "workers.py"), "--no-spare"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 0 and int(second.stdout) == min(int(done.stdout), conftest._cores())
