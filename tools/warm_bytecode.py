"""Compile, once, at install, the modules that the lab (`lab`) or the tests (`test`) import.

    .venv/bin/python tools/warm_bytecode.py lab     # after the lab's pip install (make lab)
    .venv/bin/python tools/warm_bytecode.py test    # after the test tools' (make test)

The Makefile installs with `pip --no-compile`: compiling all 1.4 GB took longer than it saved,
since no process ever imports most of it. Without a step like this one, the first process that
imports torch, JupyterLab or transformers compiles what it imports, and in `make test` the
three workers, and the kernels they start, compile the same modules at the same moment, each.
Importing a module here writes its bytecode (`__pycache__`) the way any import does, so only
what the lab and the tests use is compiled, and once. Measured on a 2-core machine, cold
against warm: `import torch` 3.1 s against 1.3 s, transformers' GPT-2 8.3 s against 3.9 s,
matplotlib.pyplot 1.4 s against 0.5 s, the JupyterLab server's modules 1.8 s against 0.8 s.
Only modules that several processes import are listed: one compile then saves several.

A module that does not import (an optional extra that is not installed) is skipped: this step
only saves time, and never fails an install.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

# What a JupyterLab session imports: the server and its extensions, a kernel, the widgets,
# torch and every labkit module.
LAB = [
    "torch",
    "torch.optim",
    "torch.nn.functional",
    "matplotlib.pyplot",
    "jupyterlab.labapp",
    "jupyter_server.serverapp",
    "jupyter_lsp",
    "jupyter_server_terminals",
    "notebook_shim",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython",
    "IPython.display",
    "matplotlib_inline.backend_inline",
    "ipywidgets",
    "anywidget",
]
# What every test worker imports on top: the runners, notebook execution, the browser driver.
# Not transformers or TensorBoard: one process each imports them, so compiling them here
# would only move their cost (8 s for GPT-2) into the install.
TEST = [
    "pytest",
    "xdist",
    "xdist.remote",
    "execnet",
    "nbval.plugin",
    "nbval.kernel",
    "papermill",
    "papermill.parameterize",
    "papermill.iorw",
    "nbclient",
    "nbformat",
    "playwright.sync_api",
]


def labkit_modules() -> list[str]:
    import labkit

    return ["labkit"] + [
        m.name
        for m in pkgutil.walk_packages(labkit.__path__, "labkit.")
        if not m.name.endswith("__main__")
    ]


def warm(names: list[str]) -> tuple[int, list[str]]:
    """Import each of `names`; (how many imported, the names that did not)."""
    done, skipped = 0, []
    for name in names:
        try:
            importlib.import_module(name)
            done += 1
        except Exception:  # noqa: BLE001 an optional extra, or a module that needs what is not here
            skipped.append(name)
    return done, skipped


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("lab", "test"):
        print(
            "usage: python tools/warm_bytecode.py lab|test  (which install's modules to compile)",
            file=sys.stderr,
        )
        return 2
    sys.dont_write_bytecode = False
    started = time.perf_counter()
    names = LAB + labkit_modules() if argv[0] == "lab" else TEST
    done, skipped = warm(names)
    print(
        f"labkit: compiled the {done} modules the {argv[0]} imports, and what they import, "
        f"in {time.perf_counter() - started:.0f} s"
        + (
            f"; skipped, as they need what is not installed: {', '.join(skipped)}"
            if skipped
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
