"""Small helpers shared by the tests."""

import ast
import os
import re
import shutil

import pytest

# Runs that blow up or go non-finite. A blow-up amplifies the last bit of rounding, which
# depends on the CPU's vector path and thread count, so tests on these runs assert only facts
# that hold on every path (a NaN within a step range, growth past a factor), and `make test`
# runs them a second time on the portable path (tools/cpu_paths.py).
BLOWUPS = (
    "lr_too_high",
    "missing_zero_grad",
    "fp16_overflow",
    "nan_in_inputs",
    "all_masked_labels",
)


def chaotic_cases(names):
    """`names` for pytest.mark.parametrize, the blow-ups among them marked `chaotic`."""
    return [
        pytest.param(n, marks=pytest.mark.chaotic) if n.split(":")[0] in BLOWUPS else n
        for n in names
    ]


def one_sentence(message: str) -> bool:
    """A teaching message is one sentence: it ends with a period and has no second sentence."""
    return message.endswith(".") and not re.search(r"[.:;]\s+[A-Z]", message)


def run_solution(name: str, tmp_path, **parameters) -> str:
    """Execute solutions/NAME.ipynb with papermill parameters; return its printed text."""
    import nbformat
    import pytest
    from pathlib import Path

    papermill = pytest.importorskip("papermill")
    solutions = Path(__file__).resolve().parents[1] / "solutions"
    out = tmp_path / f"{name}_run.ipynb"
    papermill.execute_notebook(
        str(solutions / f"{name}.ipynb"),
        str(out),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(solutions),
        progress_bar=False,
    )
    return printed(nbformat.read(out, as_version=4))


def printed(nb) -> str:
    """What an executed notebook printed, one block per code cell.

    A cell's stream outputs are joined as they are, with no separator: the kernel sends stdout
    on a timer, so one `print` can arrive as two outputs ("refused:" and the rest of the
    sentence; seen in one of two papermill runs of Lab 15's mystery B), and a newline between
    them would split it."""
    return "\n".join(
        "".join(o.get("text", "") for o in c.get("outputs", []))
        for c in nb.cells
        if c.cell_type == "code"
    )


def labkit_cli(
    *args, stdin: str = "", home=None, process: bool = False, timeout: float = 300, cwd=None
):
    """`labkit ARGS < stdin`, as (returncode, stdout, stderr).

    In this process by default: the CLI's own `main`, with stdin, stdout and stderr swapped and
    $LABKIT_HOME set for the call (saves a Python start and a torch import, about 2 s a call).
    As a fresh `python -m labkit.cli` process where a test is about the process itself: exit
    codes as the shell sees them, no traceback on stderr, a kill, a cold start."""
    import contextlib
    import io
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if process:
        env = {
            **os.environ,
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
            **({"LABKIT_HOME": str(home)} if home is not None else {}),
        }
        done = subprocess.run(
            [sys.executable, "-m", "labkit.cli", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd or root,
            timeout=timeout,
        )
        return done.returncode, done.stdout, done.stderr
    from labkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = (sys.stdin, os.environ.get("LABKIT_HOME"), os.getcwd())
    if home is not None:
        os.environ["LABKIT_HOME"] = str(home)
    sys.stdin = io.StringIO(stdin)
    os.chdir(cwd or root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(list(args))
            except SystemExit as exc:  # argparse's own exits (--help, --version, usage errors)
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdin = saved[0]
        os.chdir(saved[2])
        if home is not None:
            if saved[1] is None:
                os.environ.pop("LABKIT_HOME", None)
            else:
                os.environ["LABKIT_HOME"] = saved[1]
    return rc, out.getvalue(), err.getvalue()


# What a `make` that runs the tests passes to the makes they start: `make -s check` puts `s` in
# MAKEFLAGS, and an inner `make -n` would then print nothing. A test that runs make clears them.
MAKE_VARS = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS")


def make_env(base=None, **extra) -> dict:
    """The environment for a `make` a test starts: `base` (os.environ) without the caller's
    make flags, plus `extra`."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in MAKE_VARS}
    env.update(extra)
    return env


# Debian's Chromium, as the browser tests (tests/browser/) and the docs site's test drive it
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium() -> str | None:
    """The Chromium binary: $LABKIT_CHROMIUM, else Debian's, else one on PATH; None if none."""
    for candidate in (
        os.environ.get("LABKIT_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def held_out(check: str) -> list[tuple[str, tuple, str]]:
    """(mark, structured claim, reason) of tests/data/held_out/CHECK.txt (see its README)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "held_out")
    out = []
    with open(os.path.join(path, f"{check}.txt")) as f:
        for line in f.read().splitlines():
            if line[:2] in ("+ ", "- "):
                claim, reason = line[2:].split(" | ", 1)
                out.append((line[0], ast.literal_eval(claim), reason))
    return out


def misjudged(check: str, call) -> list[str]:
    """The held-out answers of `check` that `call(claim, reason)` judges against their mark: a
    right claim must pass (whatever its reason's wording), a wrong one must be refused."""
    from labkit.check import CheckFailed

    wrong = []
    for mark, claim, reason in held_out(check):
        try:
            passed = call(claim, reason).startswith("ok")
        except CheckFailed:
            passed = False
        if passed != (mark == "+"):
            wrong.append(f"{mark} {claim} | {reason}")
    return wrong
