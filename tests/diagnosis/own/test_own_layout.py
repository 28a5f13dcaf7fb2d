"""The own-code triage reads as its protocol: a module of step N imports from step N or an
earlier step, or from the two shared modules beside the steps (`margins`, `baseline`).

The exceptions are few and named, each a piece a step borrows from a later one:
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OWN = ROOT / "labkit" / "diagnosis" / "own"
# (module, the later step's module it borrows from): why
ALLOWED = {
    (
        "step1_capture.loops",
        "step4_h1.settings",
    ): "a comparison loop resets a setting the way H1 does",
    ("step4_h1.lossrange", "step5_sign.refloss"): "the range check reads the reference loss",
    (
        "step5_sign.intervene",
        "step6_decide.evidence",
    ): "an intervention runs as many epochs as the evidence",
    ("step5_sign.onechange", "step6_decide.evidence"): "a fix is compared evidence to evidence",
}


def later_imports() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(OWN.glob("step*/*.py")):
        step, name = path.parent.name, path.stem
        package = ["labkit", "diagnosis", "own", step]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = package[: len(package) - node.level + 1] + (
                    node.module.split(".") if node.module else []
                )
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "labkit.diagnosis.own."
            ):
                parts = node.module.split(".")
            else:
                continue
            if len(parts) < 4 or not parts[3].startswith("step") or parts[3] <= step:
                continue
            targets = (
                [".".join(parts[3:])]
                if len(parts) > 4
                else [f"{parts[3]}.{a.name}" for a in node.names]
            )
            found |= {(f"{step}.{name}", t) for t in targets}
    return found


def test_steps_import_only_their_own_or_earlier_steps():
    assert later_imports() <= set(ALLOWED), sorted(later_imports() - set(ALLOWED))


def test_every_exception_is_still_needed():
    assert set(ALLOWED) <= later_imports(), sorted(set(ALLOWED) - later_imports())


def test_the_steps_list_in_protocol_order():
    steps = sorted(p.name for p in OWN.glob("step*") if p.is_dir())
    assert steps == [
        "step1_capture",
        "step2_h3",
        "step3_h2",
        "step4_h1",
        "step5_sign",
        "step6_decide",
    ]
