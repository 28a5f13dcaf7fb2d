"""MkDocs hook: pages made at build time from labkit's own source, never copied by hand.

- One API page per public name of `labkit`: the names and their defining modules are read
  from `labkit._PUBLIC` in `labkit/__init__.py`, so a public name added there gets its page
  (and its place in the navigation) on the next build.
- The study-path table, from `HOURS` in `labkit/learn/study_path.py`, where the README's
  table also comes from.

Both are read with `ast`, so the build imports neither labkit nor torch.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
STUDY_PATH = ROOT / "labkit" / "learn" / "study_path.py"
API = "api"
# Pages written by hand beside the generated ones, after them in the navigation.
MODULE_PAGES = [
    ("Answer checks (labkit.check)", f"{API}/check.md"),
    ("Probes (labkit.probes)", f"{API}/probes.md"),
]


def literal(path: Path, name: str):
    """The value of the module-level assignment `name = <literal>` in `path`."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return ast.literal_eval(node.value)
    raise ValueError(f"{path} assigns no literal {name}; the documentation is made from it")


def public_names(init: Path = ROOT / "labkit" / "__init__.py") -> dict[str, str]:
    """`labkit._PUBLIC` as written: public name -> defining module, relative to `labkit`."""
    return literal(init, "_PUBLIC")


def study_path_table() -> str:
    """The study path as the README writes it: one row per entry of `HOURS`."""
    rows = [f"| {' | '.join(hour)} |" for hour in literal(STUDY_PATH, "HOURS")]
    return "\n".join(["| hour | goal | notebooks and exercises |", "|---|---|---|", *rows])


def api_index() -> str:
    """A table of every public name, its page and its defining module."""
    names = public_names()
    rows = [
        f"| [`labkit.{n}`]({page_path(n, names).removeprefix(API + '/')}) | `labkit.{m}` |"
        for n, m in sorted(names.items(), key=lambda item: item[0].lower())
    ]
    return "\n".join(["| name | defined in |", "|---|---|", *rows])


def page_path(name: str, names) -> str:
    """Where the page of `name` goes. `Watch` and `watch` would share a file on a
    case-insensitive disk, so the lower-case one of such a pair takes a suffix."""
    clash = any(other != name and other.lower() == name.lower() for other in names)
    return f"{API}/{name}{'-function' if clash and name[0].islower() else ''}.md"


def page_text(name: str, module: str) -> str:
    return (
        f"# labkit.{name}\n\n"
        f"`import labkit` then `labkit.{name}`; defined in `labkit.{module}`.\n\n"
        f"::: labkit.{module}.{name}\n"
        f"    options:\n"
        f"      show_root_heading: true\n"
        f"      show_root_full_path: false\n"
    )


def on_config(config):
    names = public_names()
    pages = [{f"labkit.{n}": page_path(n, names)} for n in sorted(names, key=str.lower)]
    api = [{"Overview": f"{API}/index.md"}, *pages, *({t: p} for t, p in MODULE_PAGES)]
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and "API reference" in entry:
            entry["API reference"] = api
            return config
    raise ValueError("mkdocs.yml's nav has no 'API reference' entry for the generated pages")


def on_files(files, config):
    names = public_names()
    for name, module in names.items():
        files.append(
            File.generated(config, page_path(name, names), content=page_text(name, module))
        )
    return files


PLACEHOLDERS = {
    "<!-- labkit:study-path -->": study_path_table,
    "<!-- labkit:api-index -->": api_index,
}


def on_page_markdown(markdown, page, config, files):
    for marker, make in PLACEHOLDERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
