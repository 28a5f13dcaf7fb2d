"""The layout a newcomer reads: families are packages, folders stay short, tests mirror labkit/.

- No folder of labkit/ holds more than 15 modules directly (its __init__ counted).
- No family of 3 or more modules told apart only by a file-name prefix (``watch_table``,
  ``watch_clip``, ``watch_guard``...) sits in a folder that is not named for it: a family is a
  package. The prefix is the name up to its first underscore.
- tests/ keeps at most 10 test files at its top level; the rest sit in folders.
"""

from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(
    p for p in (ROOT / "labkit").rglob("*") if p.is_dir() and (p / "__init__.py").exists()
)
MAX_MODULES = 15


def modules_in(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py"))


def prefix_families(names: list[str], folder_name: str) -> dict[str, list[str]]:
    """Families of 3 or more modules sharing the text before their first underscore (a module
    named as the bare prefix counts in its family), unless the folder is named for it."""

    def head(name):
        return name.lstrip("_").split("_", 1)[0]

    counts = Counter(head(n) for n in names if n != "__init__" and "_" in n.lstrip("_"))
    return {
        h: [n for n in names if head(n) == h]
        for h, c in counts.items()
        if len([n for n in names if head(n) == h]) >= 3 and h != folder_name
    }


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_folder_holds_more_than_15_modules(folder):
    names = modules_in(folder)
    assert len(names) <= MAX_MODULES, (
        f"{folder.relative_to(ROOT)} holds {len(names)} modules: {names}"
    )


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_prefix_family_outside_a_package(folder):
    assert prefix_families(modules_in(folder), folder.name) == {}


def test_the_family_finder_finds_a_planted_family():
    names = ["__init__", "run", "watch", "watch_clip", "watch_table", "train"]
    assert prefix_families(names, "core") == {"watch": ["watch", "watch_clip", "watch_table"]}
    assert prefix_families(names, "watch") == {}
    assert prefix_families(["a_b", "a_c", "run"], "core") == {}  # two are not a family yet


def test_tests_top_level_stays_short():
    top = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    assert len(top) <= 10, top


def test_test_folders_mirror_labkit():
    """A test folder named for a labkit package sits where that package sits: tests/core/watch/
    for labkit/core/watch/, tests/diagnosis/own/ for labkit/diagnosis/own/."""
    own = {
        "setups",
        "lab15",
        "faults",
        "notebooks",
        "browser",
        "install",
        "data",
        "reference",
        "own_setups",
        "__pycache__",
    }  # folders of their own, named by what they exercise
    for folder in (p for p in (ROOT / "tests").rglob("*") if p.is_dir()):
        rel = folder.relative_to(ROOT / "tests")
        if rel.parts[0] in own or not list(folder.glob("test_*.py")):
            continue
        assert (ROOT / "labkit" / rel / "__init__.py").exists(), (
            f"tests/{rel} mirrors no labkit/{rel}"
        )
