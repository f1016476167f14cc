"""The course site (``minitx.course.site``): pages, links, alt text, widget notes, and the
site served over HTTP and loaded in headless Chromium.

The unit tests build a site from the student edition of notebooks 00, 04 and 07 (a
widget page, a figure-heavy page, and a page without widgets); the browser test builds
the whole site. Run the browser test alone with:

    python -m pytest tests/course/test_site.py -m browser -s

Like ``tests/viz/test_browser.py`` it needs Debian's ``/usr/bin/chromium`` and the
``playwright`` package; without them it is skipped, unless ``MINITX_REQUIRE_BROWSER=1``
(set by CI), in which case it fails. Requests that leave 127.0.0.1 (the CDN scripts:
MathJax, require.js, the widget manager) are aborted, so the test runs the same with or
without a network, and reads as an offline reader's visit.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shutil
import sys
import threading
import time
import types
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from minitx.course import site
from minitx.course.site import SiteError, build_site

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
REQUIRED = os.environ.get("MINITX_REQUIRE_BROWSER") == "1"
UNIT_NOTEBOOKS = ["00", "04", "07"]


def _student_edition(out: Path, notebooks: list[str] | None) -> list[Path]:
    """The student edition of ``notebooks`` (all when None), written into ``out``."""
    from minitx.course.editions import build_edition

    return build_edition("student", out, notebooks)


class _Page(HTMLParser):
    """The links, image attributes and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "a" and a.get("name"):
            self.ids.add(str(a["name"]))
        for key in ("href", "src"):
            if a.get(key) is not None and not (tag == "img" and key == "src"):
                self.links.append(str(a[key]))
        if tag == "img":
            self.images.append(a)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _png_outputs(notebook: Path) -> int:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return sum("image/png" in o.get("data", {})
               for c in nb["cells"] for o in c.get("outputs", []))


def _widget_outputs(notebook: Path) -> int:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for c in nb["cells"] for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """(site folder, the student notebooks it was built from) for UNIT_NOTEBOOKS."""
    root = tmp_path_factory.mktemp("site")
    sources = _student_edition(root / "student", UNIT_NOTEBOOKS)
    assert [p.name[:2] for p in sorted(sources)] == UNIT_NOTEBOOKS
    build_site(root / "site", notebooks_dir=root / "student")
    return root / "site", sorted(sources)


def test_every_notebook_has_a_page_listed_in_order(built: tuple[Path, list[Path]]) -> None:
    out, sources = built
    pages = sorted(p.name for p in out.glob("*.html"))
    assert pages == sorted(["index.html"] + [p.stem + ".html" for p in sources])
    index = _parse(out / "index.html")
    assert index.links == [p.stem + ".html" for p in sources]
    text = (out / "index.html").read_text(encoding="utf-8")
    assert "00 — Start here" in text and "04 — Self-attention" in text
    assert text.index("00 — Start here") < text.index("04 — Self-attention")


def test_every_local_link_resolves(built: tuple[Path, list[Path]]) -> None:
    out, _ = built
    broken, checked = [], 0
    parsed = {p.name: _parse(p) for p in out.glob("*.html")}
    for name, page in parsed.items():
        for link in page.links:
            url = urlsplit(link)
            if url.scheme or link.startswith("//"):
                continue  # external: a CDN script or a link to the web
            target = (out / name).parent / unquote(url.path) if url.path else out / name
            checked += 1
            if not target.is_file():
                broken.append(f"{name}: {link} (no file)")
            elif url.fragment and target.suffix == ".html":
                ids = parsed[target.name].ids  # a browser tries the raw, then the decoded
                if url.fragment not in ids and unquote(url.fragment) not in ids:
                    broken.append(f"{name}: {link} (no element with that id)")
    assert checked > 3 * len(parsed), f"only {checked} local links found"
    assert not broken, "broken local links:\n" + "\n".join(broken)


def test_every_image_has_alt_text(built: tuple[Path, list[Path]]) -> None:
    out, sources = built
    for source in sources:
        images = _parse(out / (source.stem + ".html")).images
        assert len(images) == _png_outputs(source), source.name
        no_alt = [str(i.get("src"))[:40] for i in images if not (i.get("alt") or "").strip()]
        assert not no_alt, f"{source.name}: images without alt text: {no_alt}"


def test_pages_link_to_index_and_neighbours(built: tuple[Path, list[Path]]) -> None:
    out, sources = built
    hrefs = [p.stem + ".html" for p in sources]
    for i, href in enumerate(hrefs):
        links = _parse(out / href).links
        assert links.count("index.html") == 2, href  # navigation above and below
        if i > 0:
            assert links.count(hrefs[i - 1]) == 2, href
        if i + 1 < len(hrefs):
            assert links.count(hrefs[i + 1]) == 2, href
    assert hrefs[-1] not in _parse(out / hrefs[0]).links


def test_widget_pages_carry_the_note_and_saved_state(built: tuple[Path, list[Path]]) -> None:
    out, sources = built
    widgets = [_widget_outputs(s) for s in sources]
    assert any(widgets) and not all(widgets)
    for source, count in zip(sources, widgets, strict=True):
        text = (out / (source.stem + ".html")).read_text(encoding="utf-8")
        assert text.count('class="minitx-widget-note"') == count, source.name
        assert ("application/vnd.jupyter.widget-state+json" in text) == (count > 0)
    page04 = (out / "04_self_attention.html").read_text(encoding="utf-8")
    assert "temperature = " in page04  # the slider's saved value, readable without JS


def test_widget_note_reads_controls_text_or_nothing() -> None:
    state = {
        "box": {"model_name": "HBoxModel",
                "state": {"children": ["IPY_MODEL_bar", "IPY_MODEL_label"]}},
        "bar": {"model_name": "FloatProgressModel", "state": {"description": "", "value": 8}},
        "label": {"model_name": "HTMLModel", "state": {"value": "<b>8/8</b> loss&lt;2"}},
        "slider": {"model_name": "FloatSliderModel",
                   "state": {"description": "temperature", "value": 0.5}},
    }
    assert "saved state: temperature = 0.5." in site._widget_note(state, "slider")["text"]
    progress = site._widget_note(state, "box")
    assert progress["label"] == "Widget." and "reads: 8/8 loss<2." in progress["text"]
    assert "no saved state" in site._widget_note(state, "missing")["text"]


def test_links_to_notebooks_point_to_their_pages() -> None:
    hrefs = {"04_self_attention.ipynb": "04_self_attention.html"}
    body = ('<a href="04_self_attention.ipynb#5.-Why">x</a> <a href="../notebooks/'
            '04_self_attention.ipynb">y</a> <a href="99_other.ipynb">z</a>')
    assert site._link_notebooks(body, hrefs) == (
        '<a href="04_self_attention.html#5.-Why">x</a> <a href="04_self_attention.html">y</a>'
        ' <a href="99_other.ipynb">z</a>')


def test_a_figure_without_alt_text_stops_the_build(tmp_path: Path) -> None:
    nb = json.loads((NOTEBOOKS / "00_start_here.ipynb").read_text(encoding="utf-8"))
    stripped = 0
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            if "image/png" in output.get("metadata", {}):
                output["metadata"]["image/png"].pop("alt", None)
                stripped += 1
    assert stripped, "notebook 00 has no figure with alt text to strip"
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "00_start_here.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(SiteError, match="no alt text"):
        build_site(tmp_path / "site", notebooks_dir=tmp_path / "nb")
    assert not (tmp_path / "site").exists()  # checked before anything is written


def test_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "nb").mkdir()
    shutil.copy(NOTEBOOKS / "00_start_here.ipynb", tmp_path / "nb")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(SiteError, match="not empty"):
        build_site(tmp_path / "mine", notebooks_dir=tmp_path / "nb")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    # a site built before is rebuilt in place, its stale pages gone
    build_site(tmp_path / "site", notebooks_dir=tmp_path / "nb")
    (tmp_path / "site" / "99_stale.html").write_text("old")
    build_site(tmp_path / "site", notebooks_dir=tmp_path / "nb")
    assert sorted(p.name for p in (tmp_path / "site").glob("*.html")) == [
        "00_start_here.html", "index.html"]


def test_default_source_is_the_student_edition(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``notebooks_dir``, build_site renders what build_edition('student') wrote
    (a recording fake here, so this checks the wiring, not the edition)."""
    calls = []

    def fake_build_edition(edition: str, out: Path, notebooks: list[str] | None = None,
                           **kw: object) -> list[Path]:
        calls.append(edition)
        out.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copy(NOTEBOOKS / "00_start_here.ipynb", out))]

    fake = types.ModuleType("minitx.course.editions")
    fake.build_edition = fake_build_edition  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "minitx.course.editions", fake)
    index = build_site(tmp_path / "site")
    assert calls == ["student"]
    assert _parse(index).links == ["00_start_here.html"]


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert site.main(["--out", str(tmp_path / "x"), "--notebooks", str(tmp_path / "no")]) == 2
    assert "does not exist" in capsys.readouterr().err
    # the subcommand that minitx/cli.py can add: ``minitx site --out DIR``
    (tmp_path / "nb").mkdir()
    shutil.copy(NOTEBOOKS / "00_start_here.ipynb", tmp_path / "nb")
    parser = argparse.ArgumentParser(prog="minitx")
    site.add_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["site", "--out", str(tmp_path / "s"), "--notebooks",
                              str(tmp_path / "nb")])
    assert site.run(args) == 0
    assert "wrote 1 notebook page and" in capsys.readouterr().out
    assert (tmp_path / "s" / "00_start_here.html").is_file()


# ---- the site in headless Chromium ------------------------------------------------------

def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (MINITX_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(reason)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The whole site, built by ``build_site`` and served on 127.0.0.1: (base URL, folder)."""
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install -e '.[dev]')")
    t0 = time.monotonic()
    out = tmp_path / "site"
    build_site(out)  # the one command: student edition of every notebook, then the pages
    print(f"\nsite built in {time.monotonic() - t0:.1f} s")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", out
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_site_loads_in_chromium(served: tuple[str, Path], tmp_path: Path) -> None:
    from playwright.sync_api import ConsoleMessage, Request, Route, sync_playwright

    base, out = served
    pages = ["index.html", *sorted(p.name for p in out.glob("[0-9][0-9]_*.html"))]
    assert len(pages) == 1 + len(list(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
    blocked: set[str] = set()
    problems: list[str] = []
    allowed: list[str] = []  # console errors that only report a blocked CDN request
    shown = 0  # images checked
    t0 = time.monotonic()

    def route(r: Route, request: Request) -> None:
        if request.url.startswith(base) or request.url.startswith("data:"):
            r.continue_()
        else:
            blocked.add(request.url)
            r.abort("internetdisconnected")

    def local(url: str) -> bool:
        return url.startswith(base) or url.startswith("data:")

    def on_console(message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        if message.location.get("url") in blocked:  # "Failed to load resource" of a CDN
            allowed.append(message.text)
        else:
            problems.append(f"{name}: console error {message.text}")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.route("**/*", route)
            name = "?"
            page.on("requestfailed", lambda r: problems.append(
                f"{name}: request failed {r.url[:100]} ({r.failure})") if local(r.url) else None)
            page.on("response", lambda r: problems.append(
                f"{name}: HTTP {r.status} for {r.url}") if r.status >= 400 else None)
            page.on("pageerror", lambda e: problems.append(f"{name}: uncaught {e}"))
            page.on("console", on_console)
            for name in pages:
                response = page.goto(base + name, wait_until="load", timeout=60_000)
                assert response is not None and response.ok, f"{name}: {response}"
                images = page.evaluate("""() => Array.from(document.images).map(
                    i => [i.complete && i.naturalWidth > 0, (i.alt || '').trim().length > 0])""")
                bad = [i for i, (drawn, alt) in enumerate(images) if not (drawn and alt)]
                if bad:
                    problems.append(f"{name}: images {bad} of {len(images)} broken or no alt")
                shown += len(images)
                if name != "index.html":
                    nav = page.locator("nav.minitx-nav a[rel=index]")
                    assert nav.count() == 2 and nav.first.is_visible(), name
        finally:
            browser.close()
    elapsed = time.monotonic() - t0
    print(f"{len(pages)} pages loaded in {elapsed:.1f} s; blocked external: {sorted(blocked)}; "
          f"{len(allowed)} console errors for them: {sorted(set(allowed))}")
    assert not problems, "\n".join(problems)
    assert shown >= len(pages), f"only {shown} images on {len(pages)} pages"
