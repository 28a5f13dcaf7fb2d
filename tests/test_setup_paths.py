"""Every documented setup path works: conda's pip section, the Python claimed, Binder, the
license and the version, `python -m labkit`."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pip_dry_run(lines: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """What conda does with a `pip:` section: write it to a requirements file and hand it to
    `pip install -r`, from the folder of environment.yml (so `.` is the project)."""
    req = tmp_path / "condaenv.requirements.txt"
    req.write_text("\n".join(lines) + "\n")
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
                           "--quiet", "-r", str(req)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def _pip_section(path: Path) -> list[str]:
    deps = yaml.safe_load(path.read_text())["dependencies"]
    return next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)


def test_environment_yml_pip_section_is_valid_for_pip(tmp_path):
    lines = _pip_section(ROOT / "environment.yml")
    done = _pip_dry_run(lines, tmp_path)
    assert done.returncode == 0, done.stderr
    # the control: the section as it was (issue 23) is refused, so this test can fail
    refused = _pip_dry_run(["--no-deps", "-e ."], tmp_path)
    assert refused.returncode != 0 and "no such option: --no-deps" in refused.stderr


def _lowest_python() -> tuple[int, int]:
    claim = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=\s*3\.(\d+)", claim)
    assert m, f"requires-python={claim!r}: state one lower bound, >=3.N"
    return 3, int(m.group(1))


def test_the_python_claimed_is_the_python_tested():
    """The packaging checks (this file, tests/test_packaging.py) run on the interpreter the
    suite runs on; the claim may not go below it. 3.10 has no interpreter on these machines
    (apt has none, and tomllib, which the checks read pyproject.toml with, is 3.11+)."""
    lowest = _lowest_python()
    assert sys.version_info[:2] >= lowest
    assert lowest == (3, 11), "a lower claim needs a test run on that Python first"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    assert f"python>={lowest[0]}.{lowest[1]}" in env
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    versions = [c.rsplit(":: ", 1)[1] for c in meta["classifiers"]
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert min(versions, key=lambda v: int(v.split(".")[1])) == "3.11"
    assert "Python 3.11 or newer" in (ROOT / "README.md").read_text()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_binder_carries_what_the_notebooks_import_at_the_reference_versions():
    deps = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())["dependencies"]
    specs = dict(d.split("=", 1) for d in deps if isinstance(d, str) and "=" in d)
    specs["torch"] = specs.pop("pytorch-cpu")
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {re.match(r"[A-Za-z0-9_.\-]+", s).group(0).lower() for s in
              meta["dependencies"] + meta["optional-dependencies"]["lab"]}
    needed |= {"transformers", "tensorboard", "tensorboardx"}  # 17_llm_checklist, logs
    assert set(specs) - {"python"} == needed
    pins = _pins()
    for name in needed:
        major_minor = ".".join(pins[name].split(".")[:2])
        assert specs[name] == major_minor, f"binder {name}={specs[name]}; tests/reference ran {pins[name]}"


def test_license_file_matches_the_spdx_string():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert meta["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    requires = meta["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77
               for r in requires), "the SPDX string form needs setuptools>=77"
    assert meta["project"]["authors"] and meta["project"]["urls"]["Source"]
    assert not [c for c in meta["project"]["classifiers"] if c.startswith("License ::")]


def test_version_and_python_m_labkit():
    import labkit
    from importlib.metadata import version
    assert version("labkit") == labkit.__version__  # one place: pyproject reads the attribute
    done = subprocess.run([sys.executable, "-m", "labkit", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"labkit {labkit.__version__}"
    helped = subprocess.run([sys.executable, "-m", "labkit", "--help"], capture_output=True,
                            text=True, timeout=60)
    assert helped.returncode == 0 and "grade" in helped.stdout and "checklist" in helped.stdout
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {labkit.__version__}" in changelog


def test_every_extra_is_pinned_and_torch_stays_2_13():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    assert pins["torch"] == "2.13.0"
    for extra, specs in meta["optional-dependencies"].items():
        for spec in specs:
            name = re.match(r"[A-Za-z0-9_.\-]+", spec).group(0).lower().replace("_", "-")
            assert name in pins, f"extra {extra!r}: {name} has no pin in constraints.txt"
    # Lightning's own requirements, pinned with it, so `pip install -c constraints.txt
    # '.[lightning]'` resolves to tested versions and leaves torch alone
    for name in ("lightning", "pytorch-lightning", "torchmetrics", "lightning-utilities"):
        assert name in pins
