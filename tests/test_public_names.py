"""Every public name keeps working after the regrouping; old flat paths warn and still work."""

import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

import labkit
from labkit import _moved

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_readme_library_in_one_screen_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## The library in one screen\s+```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(block, "README.md", "exec"), scope)  # the README's code, as a reader runs it
    assert scope["bad"].meta["bug"] == "detach"
    assert labkit.Run.from_json(str(tmp_path / "run.json")) == scope["run"]


@pytest.mark.parametrize("name", labkit.__all__)
def test_public_name_resolves(name):
    assert getattr(labkit, name) is not None


def test_unknown_name_gets_a_suggestion():
    with pytest.raises(AttributeError, match="Did you mean 'diagnose'"):
        labkit.diagnos  # noqa: B018


def test_short_names_are_the_same_modules():
    import labkit.check
    import labkit.check.ex_a
    import labkit.diagnosis.probes
    import labkit.learn.check.ex.a
    import labkit.probes

    assert labkit.probes is labkit.diagnosis.probes
    assert labkit.check.ex_a is labkit.learn.check.ex.a
    from labkit.probes import overfit_probe
    from labkit.diagnosis.probes.overfit import overfit_probe as same

    assert overfit_probe is same


@pytest.mark.parametrize("old", sorted(_moved.OLD))
def test_old_flat_path_warns_and_gives_the_new_module(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(_moved.OLD[old])):
        module = importlib.import_module(old)
    assert module is importlib.import_module(_moved.OLD[old])


def test_old_path_warning_points_at_the_importing_line():
    sys.modules.pop("labkit.triage", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from labkit.triage import TriageRecord  # noqa: F401
    assert caught and caught[0].filename == __file__


def test_train_and_diagnose_stay_functions_after_submodule_imports():
    import labkit.core.train  # noqa: F401
    import labkit.diagnosis.diagnose  # noqa: F401
    import labkit.diagnosis.zoo.explorer  # noqa: F401

    assert callable(labkit.train) and callable(labkit.diagnose)
    assert labkit.train.__module__ == "labkit.bugs.inject"
