"""The instructor's workflow: its grading step, run here as GitHub Actions would run it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # papermill's dependency

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / "instructor" / "grade.yml"


def steps():
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["grade"]["steps"]


def test_workflow_installs_with_the_projects_constraints_and_uploads_the_table():
    install = next(s["run"] for s in steps() if "pip install" in s.get("run", ""))
    assert "-c constraints.txt" in install and ".[lab,test]" in install
    upload = next(s for s in steps() if s.get("uses", "").startswith("actions/upload-artifact"))
    assert "submission/grades.json" in upload["with"]["path"].split() and upload["if"] == "always()"


@pytest.mark.slow
@pytest.mark.parametrize(
    "which, expected_rc, statuses",
    [
        ("exercises", 1, {"not yet answered"}),
        ("solutions", 0, {"passed"}),
    ],
)
def test_grading_step_on_a_blank_and_a_solved_fork(tmp_path, which, expected_rc, statuses):
    fork = tmp_path / "fork"
    (fork / "exercises").mkdir(parents=True)
    name = "ex_b_optimizer_membership.ipynb"  # a solved fork has its solution in exercises/
    (fork / "exercises" / name).write_text((ROOT / which / name).read_text())
    script = next(s["run"] for s in steps() if "labkit grade" in s.get("run", ""))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", "-e", "-c", script], cwd=fork, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == expected_rc, out.stdout + out.stderr
    grades = json.loads((fork / "grades.json").read_text())
    assert {r["status"] for r in grades["rows"]} == statuses
    import nbformat
    from labkit.learn.grade import check_names, checks_in

    nb = nbformat.read(fork / "exercises" / name, as_version=4)
    calls = [
        n for c in nb.cells if c.cell_type == "code" for n in checks_in(c.source, check_names())
    ]
    assert len(grades["rows"]) == len(calls) >= 4
    assert "Traceback" not in out.stdout + out.stderr
