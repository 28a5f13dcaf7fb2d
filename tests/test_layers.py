"""labkit's import structure: no circles, and no import from a higher group into a lower one.

The groups, lowest first. A module may import from its own group or from a group of a
lower rank; groups of the same rank may not import each other. Every import counts,
also one inside a function, since a lazy import still ties the two modules together.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "labkit"
RANKS = {
    "errors": 0,
    "_moved": 0,
    "store": 1,
    "core": 2,
    "bugs": 3,
    "diagnosis": 4,
    "forecast": 4,
    "learn": 5,
    "widgets": 6,
    "cli": 7,
    "__main__": 8,  # `python -m labkit`: the command, nothing else
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def group(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def imports(path: Path) -> set[str]:
    """Absolute names of the labkit modules that `path` imports, anywhere in its body."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("labkit")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("labkit"):
                continue
            for alias in node.names:  # `from . import data` imports the module labkit.x.data
                sub = f"{target}.{alias.name}"
                found.add(sub if _is_module(sub) else target)
    return {m for m in found if m != "labkit"}  # the package root holds only __version__


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


MODULES = {module_name(p): p for p in PKG.rglob("*.py") if p != PKG / "__init__.py"}
GRAPH = {name: imports(path) for name, path in MODULES.items()}


def test_every_group_has_a_rank():
    assert {group(m) for m in MODULES} <= set(RANKS), sorted(
        {group(m) for m in MODULES} - set(RANKS)
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_its_own_group_or_lower(module):
    mine = group(module)
    for target in GRAPH[module]:
        theirs = group(target)
        if theirs == mine:
            continue
        assert RANKS[theirs] < RANKS[mine], (
            f"{module} (group {mine}, rank {RANKS[mine]}) imports {target} (group {theirs}, "
            f"rank {RANKS[theirs]}): move the shared piece down to a group both may import"
        )


# Inside diagnosis/, by family, lowest first: the floor both triages stand on, the record,
# the two triages (peers: zoo/ and own/ never import each other) and, above them both,
# the entry `diagnose()` that chooses between them.
DIAGNOSIS_RANKS = {
    "probes": 0,
    "finding": 0,
    "cache": 0,
    "stepwise": 0,
    "record": 1,
    "lab15_amp": 1,
    "lab15": 2,
    "zoo": 3,
    "own": 3,
    "diagnose": 4,
}


def family(module: str) -> str | None:
    """The family of a module inside diagnosis/ (its first name there), else None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "diagnosis" else None


def _family_breaks(graph) -> list[str]:
    out = []
    for module in sorted(m for m in graph if family(m)):
        mine = family(module)
        for target in sorted(graph[module]):
            theirs = family(target)
            if theirs is None or theirs == mine:
                continue
            if DIAGNOSIS_RANKS[theirs] >= DIAGNOSIS_RANKS[mine]:
                out.append(
                    f"{module} ({mine}, rank {DIAGNOSIS_RANKS[mine]}) imports {target} "
                    f"({theirs}, rank {DIAGNOSIS_RANKS[theirs]})"
                )
    return out


def test_every_diagnosis_family_has_a_rank():
    families = {family(m) for m in MODULES} - {None}
    assert families <= set(DIAGNOSIS_RANKS), sorted(families - set(DIAGNOSIS_RANKS))
    assert {"zoo", "own", "record", "diagnose"} <= families


def test_diagnosis_families_import_only_lower_floors():
    """zoo/ and own/ never import each other; only `diagnose` stands above both."""
    assert _family_breaks(GRAPH) == []


def test_an_import_between_zoo_and_own_is_refused():
    planted = {
        **GRAPH,
        "labkit.diagnosis.zoo.rules": GRAPH["labkit.diagnosis.zoo.rules"]
        | {"labkit.diagnosis.own.step6_decide.evidence"},
    }
    assert _family_breaks(planted) == [
        "labkit.diagnosis.zoo.rules (zoo, rank 3) imports labkit.diagnosis.own.step6_decide.evidence (own, rank 3)"
    ]


def _circles() -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), plus self-imports."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, ()):
            if w not in GRAPH:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in GRAPH.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert _circles() == []


def test_the_circle_finder_finds_a_planted_circle():
    GRAPH["labkit.core.config"].add("labkit.core.seams")  # seams imports config already
    try:
        assert ["labkit.core.config", "labkit.core.seams"] in _circles()
    finally:
        GRAPH["labkit.core.config"].discard("labkit.core.seams")


# Lines as `ruff format` lays them out (one argument a line once a call is too long for one):
# the hand-wrapped ceiling of 260 lines grew by about a quarter when the code was formatted
# (labkit/ went from 24,142 to 30,368 lines), and the largest module is 373 lines of data.
MAX_LINES = 380


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_small(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by job"


def _heavy_modules_after(code: str) -> list[str]:
    """The heavy top-level packages loaded by `code`, run in a fresh interpreter."""
    heavy = (
        "torch",
        "matplotlib",
        "ipywidgets",
        "anywidget",
        "transformers",
        "tensorboard",
        "sqlite3",
    )
    probe = f"{code}\nimport sys; print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(heavy)!r}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip())  # a printed list of names


def test_import_labkit_is_cheap():
    """`import labkit` loads no torch, matplotlib, widgets, transformers or sqlite."""
    assert _heavy_modules_after("import labkit") == []


@pytest.mark.slow
def test_training_does_not_load_matplotlib_or_widgets():
    loaded = _heavy_modules_after("import labkit; labkit.train(steps=3); labkit.diagnose")
    assert set(loaded) <= {"torch"} and "torch" in loaded
