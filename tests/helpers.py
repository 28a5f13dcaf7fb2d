"""Small helpers shared by the tests."""

import re

import pytest

# Runs that blow up or go non-finite. A blow-up amplifies the last bit of rounding, which
# depends on the CPU's vector path and thread count, so tests on these runs assert only facts
# that hold on every path (a NaN within a step range, growth past a factor), and `make test`
# runs them a second time under ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1.
BLOWUPS = ("lr_too_high", "missing_zero_grad", "fp16_overflow", "nan_in_inputs",
           "all_masked_labels")


def chaotic_cases(names):
    """`names` for pytest.mark.parametrize, the blow-ups among them marked `chaotic`."""
    return [pytest.param(n, marks=pytest.mark.chaotic) if n.split(":")[0] in BLOWUPS else n
            for n in names]


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
    papermill.execute_notebook(str(solutions / f"{name}.ipynb"), str(out), parameters=parameters,
                               kernel_name="python3", cwd=str(solutions), progress_bar=False)
    nb = nbformat.read(out, as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
