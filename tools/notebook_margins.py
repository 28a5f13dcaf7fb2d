"""The margins of the numbers the notebooks' checked cells print, across CPU paths.

nbval compares each decimal number a checked cell prints by its first two significant digits
(tests/nbval_sanitize.cfg). Per number, this module measures two things on the executed copies
of the notebooks, one copy per CPU path:
- room: how far the printed value can move before those two digits change (1.213 may move
  down to 1.200 and up to 1.299: room 0.013);
- spread: how far it moved between the paths (one printed digit when every path printed the
  same, the most the paths can tell apart).
A number whose room is smaller than its spread could print other digits on a CPU none of the
paths stands for: its cell must print it differently (fewer digits, a ratio, a verdict).

    python tools/notebook_margins.py execute OUTDIR [NAME ...]   # under the path's environment
    python tools/notebook_margins.py compare DIR_A DIR_B ...
"""

from __future__ import annotations

import json
import math
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "tests" / "reference").glob("*.ipynb")) + sorted(
    (ROOT / "solutions").glob("*.ipynb")
)
NUMBER = re.compile(r"(?<![\d.])-?\d+\.\d+")


def checked_texts(nb: dict) -> dict[int, str]:
    """Cell index -> the stream text of each cell nbval checks (tag or comment)."""
    out = {}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        if (
            "nbval-check-output" in cell.get("metadata", {}).get("tags", [])
            or "NBVAL_CHECK_OUTPUT" in src
        ):
            out[i] = "".join(
                "".join(o.get("text", ""))
                for o in cell.get("outputs", [])
                if o.get("output_type") == "stream"
            )
    return out


def execute(outdir: str, names=()) -> int:
    import nbformat
    from nbclient import NotebookClient

    target = Path(outdir)
    target.mkdir(parents=True, exist_ok=True)

    def one(path: Path) -> str:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
        try:
            NotebookClient(
                nb,
                timeout=300,
                kernel_name="python3",
                allow_errors=True,
                resources={"metadata": {"path": str(path.parent)}},
            ).execute()
        except Exception as exc:  # noqa: BLE001 a notebook that cannot run is named, the others go on
            return f"{path.name}: {type(exc).__name__}: {exc}"
        nbformat.write(nb, target / f"{path.parent.name}__{path.name}")
        return f"{path.name}: executed"

    # As make test's workers do: torch threads per kernel times kernels at once = the cores (two
    # kernels on two threads each on two cores ran a training cell past 300 s).
    import os

    cores = os.cpu_count() or 1
    threads = int(os.environ.get("OMP_NUM_THREADS") or 0)
    if not threads:
        threads = max(1, cores // 2)
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    with ThreadPoolExecutor(max(1, cores // threads)) as pool:
        for line in pool.map(one, [p for p in NOTEBOOKS if not names or p.name in names]):
            print(line, flush=True)
    return 0


def significant(text: str) -> int:
    """How many significant digits a printed decimal number shows."""
    return len(text.lstrip("-").replace(".", "").lstrip("0"))


def _room(text: str) -> tuple[float, float]:
    """(room before the first two significant digits change, one printed digit) of a number
    the sanitizer cuts (three significant digits or more)."""
    decimals = len(text.split(".")[1])
    ulp = 10.0**-decimals
    value = abs(float(text))
    grid = 1.0 if value >= 10 else 10.0 ** (math.floor(math.log10(value)) - 1)
    low = math.floor(round(value / grid, 9)) * grid
    return round(min(value - low, low + grid - ulp - value), decimals + 2), ulp


def compare(dirs: list[str]) -> dict:
    """Every checked decimal number of every notebook, matched across the executed copies."""
    copies = {
        Path(d).name: {p.name: json.loads(p.read_text()) for p in Path(d).glob("*.ipynb")}
        for d in dirs
    }
    names = sorted(set.intersection(*(set(c) for c in copies.values())))
    numbers, worded, whole = [], [], []
    for name in names:
        texts = {path: checked_texts(c[name]) for path, c in copies.items()}
        for cell in sorted(set.intersection(*(set(t) for t in texts.values()))):
            per_path = {path: t[cell] for path, t in texts.items()}
            words = {NUMBER.sub("#", t) for t in per_path.values()}
            if len(words) > 1:
                worded.append({"notebook": name, "cell": cell, "texts": per_path})
                continue
            found = {path: NUMBER.findall(t) for path, t in per_path.items()}
            for k in range(len(next(iter(found.values())))):
                printed = {path: nums[k] for path, nums in found.items()}
                if (
                    min(significant(t) for t in printed.values()) <= 2
                    and float(next(iter(printed.values()))) < 10
                ):
                    # compared as printed (the sanitizer keeps it whole): its own rounding is its
                    # margin, which the print cannot show; it counts only if the paths differ
                    whole.append(
                        {
                            "notebook": name,
                            "cell": cell,
                            "index": k,
                            "printed": printed,
                            "differs": len(set(printed.values())) > 1,
                        }
                    )
                    continue
                rooms = [_room(t) for t in printed.values()]
                values = [float(t) for t in printed.values()]
                ulp = max(u for _, u in rooms)
                spread = max(max(values) - min(values), ulp)
                room = min(r for r, _ in rooms)
                numbers.append(
                    {
                        "notebook": name,
                        "cell": cell,
                        "index": k,
                        "printed": printed,
                        "room": room,
                        "spread": spread,
                        "differs": len(set(printed.values())) > 1,
                        "ratio": room / spread,
                    }
                )
    return {"numbers": sorted(numbers, key=lambda n: n["ratio"]), "worded": worded, "whole": whole}


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "execute":
        return execute(argv[1], argv[2:])
    if len(argv) >= 3 and argv[0] == "compare":
        found = compare(argv[1:])
        nums = found["numbers"]
        # moved between the paths, further than its room: the digits nbval compares can change
        risky = [n for n in nums if n["ratio"] < 1 and n["differs"]]
        # the same on every path, but on the edge of its compared digits (1.00, 0.100: most are
        # exact inputs or constants); a trained one of them could change on another CPU
        edge = [n for n in nums if n["ratio"] < 1 and not n["differs"]]
        whole = found["whole"]
        print(
            f"{len(nums)} checked decimal numbers cut to two digits: {sum(n['differs'] for n in nums)} printed "
            f"differently between paths, {len(risky)} moved further than their room, {len(edge)} the same on "
            f"every path but on the edge of their two digits; {len(whole)} compared "
            f"whole (two digits or fewer): {sum(n['differs'] for n in whole)} differ; "
            f"{len(found['worded'])} cells whose words differ"
        )
        for n in whole:
            if n["differs"]:
                print(
                    f"  whole number differs: {n['notebook']} cell {n['cell']} #{n['index']}: {n['printed']}"
                )
        for n in risky + [n for n in nums if n["ratio"] >= 1][:5]:
            print(
                f"  {n['notebook']} cell {n['cell']} #{n['index']}: room {n['room']:.3g}, spread "
                f"{n['spread']:.3g} (x{n['ratio']:.2g}): {n['printed']}"
            )
        for w in found["worded"]:
            print(f"  words differ: {w['notebook']} cell {w['cell']}: {w['texts']}")
        return (
            0 if not risky and not found["worded"] and not any(n["differs"] for n in whole) else 1
        )
    print("notebook_margins.py: use 'execute OUTDIR' or 'compare DIR DIR ...'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
