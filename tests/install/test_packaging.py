"""The package lists agree: pyproject.toml, environment.yml, binder/, constraints.txt."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_TO_PIP = {"pytorch-cpu": "torch", "pytorch": "torch"}


def _parse(spec: str) -> tuple[str, str | None]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:>=\s*([0-9][0-9.]*))?", spec)
    name = m.group(1).lower().replace("_", "-")
    return CONDA_TO_PIP.get(name, name), m.group(2)


def _pyproject():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = dict(_parse(s) for s in data["dependencies"])
    extras = {k: dict(_parse(s) for s in v) for k, v in data["optional-dependencies"].items()}
    return runtime, extras


def _conda(path):
    deps = yaml.safe_load(path.read_text())["dependencies"]
    specs = dict(_parse(d) for d in deps if isinstance(d, str))
    specs.pop("python"), specs.pop("pip")
    return specs


def test_environment_yml_matches_pyproject_names_and_lower_bounds():
    runtime, extras = _pyproject()
    assert _conda(ROOT / "environment.yml") == {**runtime, **extras["lab"], **extras["test"]}


def test_binder_is_cpu_only():
    # what binder/ carries, and at which versions: tests/install/test_setup_paths.py
    deps = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())["dependencies"]
    assert any(d.startswith("pytorch-cpu") for d in deps)
    assert not [d for d in deps if "cuda" in d.lower() or d.startswith("pytorch>")]
    assert "pip install --no-deps -e ." in (ROOT / "binder" / "postBuild").read_text()


def test_constraints_pin_torch_and_every_declared_package():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    assert pins["torch"] == "2.13.0"
    runtime, extras = _pyproject()
    for name, lower in {**runtime, **extras["lab"], **extras["test"]}.items():
        assert name in pins, f"{name} has no tested pin in constraints.txt"
        pinned = tuple(int(x) for x in re.findall(r"\d+", pins[name])[:3])
        bound = tuple(int(x) for x in lower.split("."))
        assert pinned[: len(bound)] >= bound, f"{name}: pin {pins[name]} is below >= {lower}"


def test_makefile_lab_is_loopback_with_token():
    make = (ROOT / "Makefile").read_text()
    assert "constraints.txt" in make and "tools/lab.py" in make
    import importlib.util

    spec = importlib.util.spec_from_file_location("lab", ROOT / "tools" / "lab.py")
    lab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab)
    cmd = lab.lab_command("nb.ipynb", port=9999, token="t" * 32, open_browser=False)
    assert "--ServerApp.ip=127.0.0.1" in cmd and f"--IdentityProvider.token={'t' * 32}" in cmd
    import os

    assert ("--allow-root" in cmd) == (os.getuid() == 0)
