"""Every documented setup path works: conda's pip section, the Python claimed, Binder, the
license and the version, `python -m labkit`."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from helpers import make_env

ROOT = Path(__file__).resolve().parents[2]


def _pip_dry_run(lines: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """What conda does with a `pip:` section: write it to a requirements file and hand it to
    `pip install -r`, from the folder of environment.yml (so `.` is the project)."""
    req = tmp_path / "condaenv.requirements.txt"
    req.write_text("\n".join(lines) + "\n")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--quiet",
            "-r",
            str(req),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


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
    """The packaging checks (this file, tests/install/test_packaging.py) run on the interpreter the
    suite runs on; the claim may not go below it. 3.10 has no interpreter on these machines
    (apt has none, and tomllib, which the checks read pyproject.toml with, is 3.11+)."""
    lowest = _lowest_python()
    assert sys.version_info[:2] >= lowest
    assert lowest == (3, 11), "a lower claim needs a test run on that Python first"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    assert f"python>={lowest[0]}.{lowest[1]}" in env
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    versions = [
        c.rsplit(":: ", 1)[1]
        for c in meta["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
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
    needed = {
        re.match(r"[A-Za-z0-9_.\-]+", s).group(0).lower()
        for s in meta["dependencies"] + meta["optional-dependencies"]["lab"]
    }
    needed |= {"transformers", "tensorboard", "tensorboardx"}  # 17_llm_checklist, logs
    assert set(specs) - {"python"} == needed
    pins = _pins()
    for name in needed:
        major_minor = ".".join(pins[name].split(".")[:2])
        assert specs[name] == major_minor, (
            f"binder {name}={specs[name]}; tests/reference ran {pins[name]}"
        )


def test_license_file_matches_the_spdx_string():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert meta["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    requires = meta["build-system"]["requires"]
    assert any(
        re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in requires
    ), "the SPDX string form needs setuptools>=77"
    assert meta["project"]["authors"] and meta["project"]["urls"]["Source"]
    assert not [c for c in meta["project"]["classifiers"] if c.startswith("License ::")]


def test_version_and_python_m_labkit():
    import labkit
    from importlib.metadata import version

    assert version("labkit") == labkit.__version__  # one place: pyproject reads the attribute
    done = subprocess.run(
        [sys.executable, "-m", "labkit", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == f"labkit {labkit.__version__}"
    helped = subprocess.run(
        [sys.executable, "-m", "labkit", "--help"], capture_output=True, text=True, timeout=60
    )
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


# ---- tools/venv.sh: the Python that makes .venv ------------------------------------------


def _fake_python(folder: Path, name: str, version: str, venv: str = "exit 1") -> None:
    """An interpreter that answers venv.sh's questions as Python `version` would (pip present),
    and runs `venv` (a shell line; "$3" is the folder) for `-m venv`."""
    ok = 0 if tuple(map(int, version.split(".")[:2])) >= (3, 11) else 1
    script = folder / name
    script.write_text(f"""#!/bin/sh
case "$*" in
  *"sys.version_info < (3, 11)"*) exit {ok} ;;
  *"%d.%d.%d"*) echo {version}; exit 0 ;;
  *"%d.%d"*) echo {version.rsplit(".", 1)[0]}; exit 0 ;;
  *"import pip"*) exit 0 ;;
  "-m venv "*) {venv} ;;
esac
exit 1
""")
    script.chmod(0o755)


def _venv_sh(tmp_path: Path, python: str = "") -> subprocess.CompletedProcess:
    """tools/venv.sh with PATH holding only the fake interpreters and `rm`, `mkdir`, `ln`."""
    for tool in ("rm", "mkdir", "ln"):
        link = tmp_path / "bin" / tool
        if not link.exists():
            link.symlink_to(
                next(p for p in (Path("/bin") / tool, Path("/usr/bin") / tool) if p.exists())
            )
    return subprocess.run(
        ["/bin/sh", str(ROOT / "tools" / "venv.sh"), str(tmp_path / ".venv"), python],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path)},
    )


def test_venv_refuses_an_old_or_missing_python_in_one_line(tmp_path):
    (tmp_path / "bin").mkdir()
    _fake_python(tmp_path / "bin", "python3", "3.10.12")  # Ubuntu 22.04's
    done = _venv_sh(tmp_path)
    assert done.returncode == 2 and not (tmp_path / ".venv").exists()
    assert "needs Python 3.11 or newer, and none is on PATH (python3 is 3.10.12)" in done.stderr
    assert "make lab PYTHON=" in done.stderr and "Traceback" not in done.stderr
    old = _venv_sh(tmp_path, "python3")
    assert (
        old.returncode == 2
        and "PYTHON=python3 (from the make command line or your environment) "
        "is Python 3.10.12; labkit needs 3.11 or newer"
        in old.stderr
    )
    gone = _venv_sh(tmp_path, "python3.99")
    assert (
        gone.returncode == 2
        and "PYTHON=python3.99 (from the make command line or your "
        "environment) was not found, or did not run"
        in gone.stderr
    )


def test_venv_takes_a_newer_python_beside_an_old_python3_and_repairs_a_broken_venv(tmp_path):
    (tmp_path / "bin").mkdir()
    _fake_python(tmp_path / "bin", "python3", "3.10.12")
    python311 = tmp_path / "bin" / "python3.11"  # its venv's python is itself, with pip
    _fake_python(
        tmp_path / "bin",
        "python3.11",
        "3.11.9",
        venv=f'mkdir -p "$3/bin" && ln -s {python311} "$3/bin/python"; exit $?',
    )
    made = _venv_sh(tmp_path)
    assert made.returncode == 0, made.stderr
    assert (
        made.stdout == f"labkit: creating {tmp_path / '.venv'} with python3.11 (Python 3.11.9).\n"
    )
    again = _venv_sh(tmp_path)  # a working .venv is left alone, silently
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
    (tmp_path / ".venv" / "bin" / "python").unlink()  # its interpreter removed (a brew upgrade)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(tmp_path / "gone" / "python3.11")
    repaired = _venv_sh(tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stdout.splitlines() == [
        f"labkit: {tmp_path / '.venv'} has no working Python (its interpreter is missing): making it again.",
        f"labkit: creating {tmp_path / '.venv'} with python3.11 (Python 3.11.9).",
    ]
    assert (tmp_path / ".venv" / "bin" / "python").resolve() == python311.resolve()


def test_venv_without_ensurepip_is_removed_and_names_the_package(tmp_path):
    """Debian and Ubuntu ship `venv` without ensurepip: `python3 -m venv` stops half-way, leaving
    a .venv with no pip that every later `make` would trip over."""
    (tmp_path / "bin").mkdir()
    half = (
        'mkdir -p "$3/bin" && ln -s /bin/false "$3/bin/python"; '
        'echo "The virtual environment was not created successfully because ensurepip is not '
        'available." >&2; exit 1'
    )
    _fake_python(tmp_path / "bin", "python3", "3.12.3", venv=half)
    done = _venv_sh(tmp_path)
    assert done.returncode == 2 and not (tmp_path / ".venv").exists()
    assert "ensurepip is not available" in done.stderr  # venv's own message, then labkit's
    assert "apt-get install python3.12-venv, then run make again" in done.stderr


def test_make_makes_again_a_venv_whose_python_is_gone(tmp_path):
    """The stamps live in .venv, so without a check make would trust them and every recipe would
    fail on a .venv/bin/python that no longer runs."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    python = tmp_path / ".venv" / "bin" / "python"
    python.symlink_to(sys.executable)
    for stamp in (".labkit-lab", ".labkit-installed"):
        (tmp_path / ".venv" / stamp).touch()

    def dry_run() -> str:
        done = subprocess.run(
            ["make", "-n", "env"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env=make_env(),
        )
        return done.stdout + done.stderr

    assert "Nothing to be done" in dry_run()  # a working .venv: the stamps hold
    python.unlink()
    python.symlink_to(tmp_path / "gone" / "python3.11")
    assert "sh tools/venv.sh .venv" in dry_run()


def test_the_install_compiles_what_the_workers_import_and_refuses_a_wrong_word(tmp_path):
    """tools/warm_bytecode.py, which both install steps of the Makefile run after pip: the
    bytecode of what it imports is written (here under a cache prefix of the test's own), and
    an unknown group is a usage line and exit 2, not a traceback."""
    make = (ROOT / "Makefile").read_text()
    for group, after in (("lab", "-e '.[lab]'"), ("test", "test-requirements.txt\n")):
        assert make.index(f"tools/warm_bytecode.py {group}") > make.index(after)
    tool = [sys.executable, str(ROOT / "tools" / "warm_bytecode.py")]
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path)}
    done = subprocess.run(tool + ["test"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "compiled the 12 modules the test imports" in done.stdout, done
    written = {"/".join(p.parts[-3:-1] + (p.name.split(".")[0],)) for p in tmp_path.rglob("*.pyc")}
    wanted = {
        "site-packages/nbval/plugin",
        "site-packages/papermill/iorw",
        "playwright/sync_api/__init__",
        "site-packages/xdist/remote",
    }
    assert wanted <= written, sorted(wanted - written)
    wrong = subprocess.run(tool + ["tests"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "usage:" in wrong.stderr and "Traceback" not in wrong.stderr
