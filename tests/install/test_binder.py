"""binder/ as repo2docker reads it, and the Binder link the README gives.

repo2docker uses binder/ in place of the repository root when it exists: there it reads
environment.yml (a conda environment) and runs postBuild (an executable script) in the
repository root after the environment is built. So: the files it reads are there and
usable, postBuild installs labkit (with its widget's front-end files), and the page the
badge opens exists.
"""

import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
# The files repo2docker acts on in a binder/ folder (its buildpacks' names).
REPO2DOCKER_FILES = {
    "environment.yml",
    "requirements.txt",
    "Project.toml",
    "REQUIRE",
    "install.R",
    "apt.txt",
    "DESCRIPTION",
    "postBuild",
    "start",
    "runtime.txt",
    "default.nix",
    "Dockerfile",
    "setup.py",
    "Pipfile",
}


def _binder_link():
    spec = importlib.util.spec_from_file_location("binder_link", ROOT / "tools" / "binder_link.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_binder_holds_only_files_repo2docker_reads_and_they_are_usable():
    files = {p.name for p in BINDER.iterdir()}
    assert files <= REPO2DOCKER_FILES, files - REPO2DOCKER_FILES
    assert {"environment.yml", "postBuild"} <= files
    env = yaml.safe_load((BINDER / "environment.yml").read_text())
    assert "conda-forge" in env["channels"] and env["dependencies"]
    assert not (
        BINDER / "Dockerfile"
    ).exists()  # a Dockerfile would make repo2docker ignore the rest
    post = BINDER / "postBuild"
    assert os.access(post, os.X_OK), "repo2docker runs postBuild only when it is executable"
    assert post.read_text().startswith("#!/usr/bin/env bash")
    out = subprocess.run(
        ["git", "ls-files", "-s", "binder/postBuild"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    if out:  # as committed, so a clone keeps the bit
        assert out.startswith("100755"), out


@pytest.mark.slow
def test_postbuild_installs_labkit_with_its_widget_files(tmp_path):
    """postBuild's `pip install --no-deps -e .`, built here as the wheel pip would install."""
    assert "python -m pip install --no-deps -e ." in (BINDER / "postBuild").read_text()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("labkit-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "labkit/__init__.py",
        "labkit/widgets/sketch/sketch.js",
        "labkit/widgets/sketch/sketch.css",
        "labkit/widgets/prediction_form.js",
    ):
        assert needed in names, f"{needed} is not installed"
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "labkit = labkit.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_badge_opens_a_page_that_exists_and_the_link_follows_the_remote():
    readme = (ROOT / "README.md").read_text()
    badge = re.search(
        r"https://mybinder\.org/v2/gh/([\w.-]+)/([\w.-]+)/(\w+)\?urlpath=lab/tree/"
        r"(\S+?)\)",
        readme,
    )
    assert badge, "no Binder badge in the README"
    owner, name, ref, start = badge.groups()
    assert (ROOT / start).is_file(), f"the badge opens {start}, which does not exist"
    assert f"{owner}/{name}" in readme.split(badge.group(0))[1][:600]  # said plainly below it
    tool = _binder_link()
    assert badge.group(0) == tool.link(owner, name, ref, start) + ")"
    assert tool.from_remote("git@github.com:someone/labkit.git") == tool.link("someone", "labkit")
    assert tool.from_remote("https://github.com/someone/my-lab") == tool.link("someone", "my-lab")
    assert tool.from_remote("https://gitlab.com/someone/labkit") is None
    assert tool.START == start
