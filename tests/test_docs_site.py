"""The documentation site: a strict MkDocs build (warnings are errors, broken links and
anchors fail), an API page for every public name with its docstring, and the built site in
a real browser. One build serves every test of this file.

Needs the docs tools of the `test` extra (mkdocs, mkdocs-material, mkdocstrings-python); the
browser test needs Chromium (`apt-get install chromium`) and is skipped without it.
"""

import functools
import html
import importlib.util
import os
import re
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import CHROMIUM_ARGS, chromium

import labkit

ROOT = Path(__file__).resolve().parents[1]
# docs/hooks.py, the build's own hook: where each public name's page goes
_spec = importlib.util.spec_from_file_location("labkit_docs_hooks", ROOT / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once with `mkdocs build --strict` into a folder of its own."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    assert not re.search(r"^(WARNING|ERROR)", log, re.M), f"the build warned:\n{log}"
    return out


def text_of(page: Path) -> str:
    """What a reader sees of a built page: no markup, no scripts, one space between words."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", body))).strip()


def first_line(doc: str) -> str:
    """A docstring's first line as it reads once rendered: inline code marks dropped."""
    return re.sub(r"\s+", " ", doc.strip().splitlines()[0].replace("`", "")).strip()


def page_of(site: Path, name: str) -> Path:
    return site / (hooks.page_path(name, labkit.__all__).removesuffix(".md") + ".html")


def test_the_build_is_strict_and_clean(site):
    assert (site / "index.html").is_file() and (site / "api" / "index.html").is_file()
    assert not list(site.rglob("*.ipynb")), "the site renders no notebook"


def test_the_pages_come_from_the_public_names_as_the_package_declares_them():
    assert hooks.public_names() == labkit._PUBLIC  # read with ast, as the build reads it
    paths = [hooks.page_path(n, labkit.__all__).lower() for n in labkit.__all__]
    assert len(set(paths)) == len(paths), "two pages would share a file on a case-insensitive disk"


@pytest.mark.parametrize("name", labkit.__all__)
def test_every_public_name_has_a_page_with_its_docstring(site, name):
    doc = getattr(labkit, name).__doc__
    assert doc and not doc.startswith(f"{name}("), f"labkit.{name} has no docstring of its own"
    page = page_of(site, name)
    assert page.is_file(), f"no API page for labkit.{name}"
    shown = text_of(page)
    assert f"labkit.{name}" in shown and first_line(doc) in shown


def test_the_module_pages_show_every_name_of_their_all(site):
    import labkit.diagnosis.probes
    import labkit.learn.check

    for page, module in (("check", labkit.learn.check), ("probes", labkit.diagnosis.probes)):
        shown = text_of(site / "api" / f"{page}.html")
        missing = [n for n in module.__all__ if n not in shown]
        assert not missing, f"api/{page} does not show {missing}"


def test_the_study_path_page_is_the_study_path(site):
    from labkit.learn.study_path import HOURS

    shown = text_of(site / "learner" / "study-path.html")
    for _hour, goal, _ in HOURS:
        assert first_line(goal) in shown


def test_the_readme_links_resolve_and_its_image_is_small():
    readme = (ROOT / "README.md").read_text()
    targets = [
        t.split("#")[0]
        for t in re.findall(r"\]\(([^)\s]+)\)", readme)
        if not t.startswith(("http://", "https://"))
    ]
    assert targets and not [t for t in targets if not (ROOT / t).exists()]
    for image in re.findall(r"!\[[^\]]*\]\(([^)\s:]+)\)", readme):  # local images
        assert (ROOT / image).stat().st_size < 150_000


LOAD = 60_000  # ms for a page to show: a loaded CI machine once took over the 5 s default


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per request in the test's output
        pass


def follow(page, title: str) -> None:
    """Follow the navigation's link named `title` (a DOM click: from disk, Material's sidebar
    can leave the entry outside the viewport, where a mouse click cannot reach it)."""
    page.locator("nav").get_by_text(title, exact=True).first.evaluate("e => e.closest('a').click()")


@pytest.mark.browser
@pytest.mark.parametrize("opened", ["from disk", "served"])
def test_the_built_site_in_a_browser(site, opened):
    """As the README says (open site/index.html, from disk) and served over HTTP: the start
    page shows, and a link in the navigation opens its page, not a folder listing."""
    exe = chromium()
    if exe is None:
        pytest.skip(
            "no Chromium binary found (looked for $LABKIT_CHROMIUM, /usr/bin/chromium, "
            "chromium on PATH); install it with `apt-get install chromium`"
        )
    from playwright.sync_api import expect, sync_playwright

    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietFiles, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = (
        (site / "index.html").as_uri()
        if opened == "from disk"
        else f"http://127.0.0.1:{server.server_address[1]}/"
    )
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page()
                errors = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(start)
                expect(page).to_have_title(re.compile(r"^labkit"), timeout=LOAD)
                expect(page.locator("article h1")).to_have_text(
                    re.compile(r"^labkit"), timeout=LOAD
                )
                expect(page.locator("article")).to_contain_text(
                    "debugging training runs in PyTorch", timeout=LOAD
                )
                expect(page.locator("article img")).to_be_visible(timeout=LOAD)  # the sketch widget
                follow(page, "labkit.Watch")
                expect(page).to_have_title(re.compile(r"^labkit\.Watch"), timeout=LOAD)
                expect(page.locator("article h1")).to_have_text(
                    re.compile(r"^labkit\.Watch"), timeout=LOAD
                )
                expect(page.locator("article")).to_contain_text(
                    first_line(labkit.Watch.__doc__), timeout=LOAD
                )
                follow(page, "Setup")
                page.wait_for_url(re.compile(r"setup(/|\.html)"), timeout=LOAD)
                expect(page.locator("article h1")).to_have_text(re.compile(r"^Setup"), timeout=LOAD)
                assert page.url.endswith(".html"), page.url  # a page, never a bare folder
                if opened == "from disk":  # search needs a server, as the README says
                    errors = [e for e in errors if "/search/" not in e]
                assert not errors, errors
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
