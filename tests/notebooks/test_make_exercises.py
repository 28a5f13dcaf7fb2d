import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "make_exercises", ROOT / "tools" / "make_exercises.py"
)
mx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mx)


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _code(src, tags=()):
    c = nbformat.v4.new_code_cell(src)
    if tags:
        c.metadata["tags"] = list(tags)
    c.outputs = [nbformat.v4.new_output("stream", text="secret output\n")]
    c.execution_count = 1
    return c


def test_solution_regions_tagged_cells_and_answers_are_stubbed(tmp_path):
    md = nbformat.v4.new_markdown_cell("The head still learns because ...")
    md.metadata["tags"] = ["solution"]
    nb = _nb(
        _code("x = 1\n# BEGIN SOLUTION\nanswer = 42\n# END SOLUTION\nprint(x)"),
        _code("from labkit import check  # keep\nsecret = 'grad is None'", tags=["solution"]),
        md,
    )
    out = mx.make_exercise(nb, tmp_path / "s.ipynb")
    assert out.cells[0].source == "x = 1\n" + mx.STUB + "\nprint(x)"
    # the kept line stays without its marker, then one line that reads as an instruction
    assert out.cells[1].source == "from labkit import check\n" + mx.STUB
    assert "secret" not in out.cells[1].source
    assert out.cells[2].source == mx.ANSWER_STUB
    assert all(c.get("outputs", []) == [] for c in out.cells)


def test_a_solution_region_in_a_parameters_cell_is_dropped_not_stubbed(tmp_path):
    src = (
        "seed = 0\nforecast_points = None  # headless runs pass points here\n"
        "# BEGIN SOLUTION\nforecast_points = {'loss': [[0, 2.3]]}\n# END SOLUTION"
    )
    out = mx.make_exercise(_nb(_code(src, tags=["parameters"])), tmp_path / "s.ipynb")
    assert (
        out.cells[0].source == "seed = 0\nforecast_points = None  # headless runs pass points here"
    )
    assert out.cells[0].metadata["tags"] == ["parameters"]


def test_the_stub_stops_the_cell_with_a_sentence_that_says_what_to_do():
    with pytest.raises(
        NotImplementedError,
        match=r"^Replace this line with your answer, then run "
        r"the cell\.$",
    ):
        exec(mx.STUB, {})


@pytest.mark.parametrize(
    "src, words",
    [
        ("# x = ...  # Keep\nx = 1", "not exactly '# keep'"),
        ("# x = ...  #keep\nx = 1", "not exactly '# keep'"),
    ],
)
def test_a_mistyped_keep_marker_stops_the_generator(tmp_path, src, words):
    with pytest.raises(mx.MarkerError, match=words):
        mx.make_exercise(_nb(_code(src, tags=["solution"])), tmp_path / "s.ipynb")


def test_keep_outside_a_solution_cell_is_refused(tmp_path):
    with pytest.raises(mx.MarkerError, match="outside a cell tagged 'solution'"):
        mx.make_exercise(_nb(_code("x = 1  # keep")), tmp_path / "s.ipynb")


@pytest.mark.parametrize(
    "src, words",
    [
        ("# BEGIN SOLUTON\nx = 1\n# END SOLUTION", "unknown marker '# BEGIN SOLUTON'"),
        ("# begin solution\nx = 1", "Did you mean '# BEGIN SOLUTION'"),
        ("# BEGIN SOLUTION\nx = 1", "never closed"),
        ("x = 1\n# END SOLUTION", "without its partner"),
    ],
)
def test_typoed_or_unbalanced_markers_stop_the_generator(tmp_path, src, words):
    with pytest.raises(mx.MarkerError, match=words):
        mx.make_exercise(_nb(_code(src)), tmp_path / "s.ipynb")


def test_unknown_tag_is_refused_with_a_suggestion(tmp_path):
    with pytest.raises(mx.MarkerError, match="unknown cell tag 'soluton'.*Did you mean 'solution'"):
        mx.make_exercise(_nb(_code("x = 1", tags=["soluton"])), tmp_path / "s.ipynb")


def test_generate_writes_checks_and_removes_orphans(tmp_path):
    src, dst = tmp_path / "solutions", tmp_path / "exercises"
    src.mkdir()
    nbformat.write(_nb(_code("# BEGIN SOLUTION\ny = 2\n# END SOLUTION")), src / "ex.ipynb")
    (dst).mkdir()
    (dst / "orphan.ipynb").write_text("{}")
    assert mx.generate(src, dst) == ["ex.ipynb", "orphan.ipynb"]
    assert mx.generate(src, dst, check=True) == []
    assert not (dst / "orphan.ipynb").exists()


def test_committed_exercises_show_no_generator_or_test_markers():
    jargon = ("# keep", "YOUR CODE HERE", "BEGIN SOLUTION", "END SOLUTION", "NBVAL")
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for word in jargon:
                assert word not in cell.source, f"{path.name}, cell {i} shows {word!r} to learners"


def test_committed_exercises_are_in_sync_and_leak_nothing():
    assert mx.generate(check=True) == [], "run `make exercises`"
    for sol in sorted((ROOT / "solutions").glob("*.ipynb")):
        ex = nbformat.read(ROOT / "exercises" / sol.name, as_version=4)
        ex_lines = {ln.strip() for c in ex.cells for ln in c.source.splitlines()}
        for cell in nbformat.read(sol, as_version=4).cells:
            hidden = []
            if "solution" in cell.metadata.get("tags", []):
                hidden = [
                    ln for ln in cell.source.splitlines() if not ln.rstrip().endswith("# keep")
                ]
            elif mx.BEGIN in cell.source:
                body = cell.source.split(mx.BEGIN, 1)[1].split(mx.END, 1)[0]
                hidden = body.splitlines()
            for line in hidden:
                if len(line.strip()) > 12:
                    assert line.strip() not in ex_lines, f"{sol.name} leaks: {line.strip()}"
