"""The course site: the student edition's notebooks, stored outputs included, as HTML pages.

``build_site(out)`` builds the student edition into a temporary folder (or takes a folder
of notebooks), renders each notebook to ``NN_name.html`` with nbconvert's ``lab`` template,
and writes ``index.html`` listing the notebooks in order with their titles (each
notebook's first markdown heading). Every page links back to the index and to the
previous and next notebook. From a shell::

    python -m minitx.course.site --out site

Why nbconvert, not Jupyter Book or Sphinx with myst-nb:

- no extra dependency: nbconvert is already installed with Jupyter, so the site builds
  in the environment the course already has;
- the stored outputs are rendered as they are: nothing is executed, so the pages show
  exactly what the student edition holds (a site build cannot change an output, and it
  takes seconds, not a run of the course);
- it works offline: no theme, extension or package is fetched at build time, and the
  pages are plain files that any static server (or the file system) can serve.

Figures: every PNG output carries its alt text in the output's metadata (``image/png`` ->
``alt``, written by :mod:`minitx.viz.alt_text`). nbconvert's own template drops it, so the
template here writes it into the ``<img>``; a PNG output without alt text stops the build.

Widgets: the notebooks store their widgets' saved state, and the pages embed it (it costs
nothing), so a reader who is online sees the saved controls drawn by the widget manager,
loaded from a CDN. Offline, or with the CDN blocked, nothing draws them, so each widget
output also gets a visible note in plain HTML, with no JavaScript: the sliders move when
you run the notebook, and here they show their saved state, with each control's saved
value (or, for a widget with no controls such as a progress bar, its saved text). The
note is always there, because a page cannot know in advance whether the CDN will load.
Formulas (MathJax) come from a CDN too: offline they show as LaTeX source.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# nbformat, jinja2 and nbconvert come with Jupyter, not with minitx: _render imports them, so
# that the `minitx` command (course, train ...) works where only the package is installed.
if TYPE_CHECKING:
    import nbformat

__all__ = ["SiteError", "add_command", "build_site", "main", "run"]

MARKER = ".minitx-site"  # marks a folder this module wrote, so a rebuild may clear it
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_NOTE = "The sliders move when you run the notebook"

# The lab template with three changes: alt text on PNG figures, a note on each widget
# output, and a navigation bar above and below the notebook.
_TEMPLATE = r"""
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}
{%- if 'widgets' in nb.metadata %}{{ super() }}{% endif -%}
{%- endblock html_head_js_requirejs -%}
{%- block extra_css -%}
<style>
nav.minitx-nav { display: flex; gap: 1.5em; flex-wrap: wrap; padding: 0.6em 1em;
  font-family: var(--jp-ui-font-family); border-bottom: 1px solid #ccc; }
nav.minitx-nav.bottom { border-top: 1px solid #ccc; border-bottom: none; }
p.minitx-widget-note { border-left: 4px solid #1e88e5; background: #eef5fc;
  padding: 0.4em 0.8em; margin: 0.3em 0; font-family: var(--jp-ui-font-family); }
</style>
{%- endblock extra_css -%}
{%- macro site_nav(where) -%}
<nav class="minitx-nav {{ where }}" aria-label="course navigation">
<a href="index.html" rel="index">Course index</a>
{%- for rel, item in resources.minitx_nav %}
<a href="{{ item.href | escape_html }}" rel="{{ rel }}">
{{- 'Previous' if rel == 'prev' else 'Next' }}: {{ item.title | escape_html }}</a>
{%- endfor %}
</nav>
{%- endmacro -%}
{%- block body_header -%}
{{ super() }}
{{ site_nav('top') }}
{%- endblock body_header -%}
{% block body_footer %}
{{ site_nav('bottom') }}
{{ super() }}
{% endblock body_footer %}
{%- block data_widget_view scoped %}
{% set div_id = uuid4() %}
{% set datatype = (output.data | filter_data_type)[0] %}
<div id="{{ div_id }}" class="jupyter-widgets jp-OutputArea-output {{ extra_class }}">
{%- set note = output.metadata.minitx_widget_note %}
<p class="minitx-widget-note" role="note"><strong>{{ note.label | escape_html }}</strong>
{{ note.text | escape_html }}</p>
<script type="text/javascript">
var element = document.getElementById('{{ div_id }}');
</script>
<script type="{{ datatype }}">
{{ output.data[datatype] | json_dumps | escape_html_script }}
</script>
</div>
{%- endblock data_widget_view -%}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
 alt="{{ output | get_metadata('alt', 'image/png') | escape_html }}"
{%- set width = output | get_metadata('width', 'image/png') -%}
{%- if width is not none %} width={{ width | escape_html }}{% endif -%}
{%- set height = output | get_metadata('height', 'image/png') -%}
{%- if height is not none %} height={{ height | escape_html }}{% endif %}
>
</div>
{%- endblock data_png %}
"""


class SiteError(ValueError):
    """A notebook cannot become a page: no title, a figure without alt text, a bad folder."""


@dataclass(frozen=True)
class _Page:
    source: Path
    href: str
    title: str


def _title(nb: nbformat.NotebookNode, path: Path) -> str:
    """The text of the notebook's first markdown heading (``# 04 — Self-attention``)."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            match = re.match(r"\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", line)
            if match:
                return re.sub(r"[`*]", "", match.group(1)).strip()
    raise SiteError(f"{path.name}: no markdown heading to use as the page title")


def _saved_state(state: dict[str, Any], model_id: str) -> tuple[list[str], list[str]]:
    """The widget ``model_id`` and its children as saved: ('description = value' of each
    control, the text of each HTML or Label model, e.g. a progress bar's)."""
    controls, texts, seen, queue = [], [], set(), [model_id]
    while queue:
        mid = queue.pop(0)
        if mid in seen or mid not in state:
            continue
        seen.add(mid)
        s = state[mid].get("state", {})
        desc = str(s.get("description") or "").strip()
        labels, index, value = s.get("_options_labels"), s.get("index"), s.get("value")
        if desc and isinstance(labels, list) and isinstance(index, int) and index < len(labels):
            controls.append(f"{desc} = {labels[index]}")
        elif desc and "value" in s:
            controls.append(f"{desc} = {value!r}" if isinstance(value, str) else
                            f"{desc} = {value}")
        elif state[mid].get("model_name") in ("HTMLModel", "LabelModel") and value:
            text = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", str(value))).split())
            if text:
                texts.append(text)
        queue += [str(child).removeprefix("IPY_MODEL_") for child in s.get("children", [])]
    return controls, texts


def _widget_note(state: dict[str, Any], model_id: str) -> dict[str, str]:
    """The note shown for a widget output: a label and a sentence with its saved state."""
    controls, texts = _saved_state(state, model_id)
    online = " With an internet connection the saved widget is drawn below."
    if controls:
        return {"label": "Interactive widget.", "text": WIDGET_NOTE
                + "; here they show their saved state: " + "; ".join(controls) + "." + online}
    if texts:
        return {"label": "Widget.", "text": "Drawn when you run the notebook; its saved "
                "state reads: " + " ".join(texts).rstrip(".") + "." + online}
    return {"label": "Widget.", "text": "Drawn when you run the notebook; this page holds "
            "no saved state for it."}


def _prepare(nb: nbformat.NotebookNode, path: Path, title: str) -> None:
    """Check every figure's alt text and write each widget output's note, in place."""
    nb.metadata["title"] = title
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                alt = output.get("metadata", {}).get("image/png", {}).get("alt")
                if not isinstance(alt, str) or not alt.strip():
                    raise SiteError(
                        f"{path.name}, cell {i}: a PNG output has no alt text "
                        "(output metadata image/png -> alt; see minitx.viz.alt_text)")
            if WIDGET_VIEW in data:
                note = _widget_note(state, str(data[WIDGET_VIEW].get("model_id", "")))
                output.setdefault("metadata", {})["minitx_widget_note"] = note


def _link_notebooks(body: str, hrefs: dict[str, str]) -> str:
    """Point links at ``NN_name.ipynb`` (a notebook of the site) to its page."""
    def swap(m: re.Match[str]) -> str:
        name = m.group(2).rsplit("/", 1)[-1]
        return f'{m.group(1)}{hrefs[name]}{m.group(3) or ""}"' if name in hrefs else m.group(0)
    return re.sub(r'(href=")([^":#?]+\.ipynb)(#[^"]*)?"', swap, body)


def _index_html(pages: Sequence[_Page]) -> str:
    items = "\n".join(
        f'<li><a href="{html.escape(p.href)}">{html.escape(p.title)}</a></li>' for p in pages)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>minitx: the course</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 46em; margin: 2em auto;
  padding: 0 1em; line-height: 1.5; }}
li {{ margin: 0.3em 0; }}
</style>
</head>
<body>
<main>
<h1>minitx: from RNNs to a transformer, one notebook at a time</h1>
<p>The student edition of the course with its stored outputs, to read before installing
anything. The widgets do not move here: run the notebooks (Jupyter, JupyterHub or Colab)
to use them. Formulas and the saved widgets are drawn by scripts from a CDN, so offline
the pages show the formulas as LaTeX source and each widget as a note of its saved
values.</p>
<ol>
{items}
</ol>
</main>
</body>
</html>
"""


def _prepare_out(out: Path) -> None:
    """Create ``out``, or clear the pages of a site built there before; never other files."""
    if out.exists() and not out.is_dir():
        raise SiteError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise SiteError(f"{out} is not empty and holds no site built by minitx: "
                            "give an empty or new folder")
        for old in out.glob("*.html"):
            old.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by minitx.course.site; its *.html are rebuilt\n")


def _render(sources: Sequence[Path], out: Path) -> Path:
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    if not sources:
        raise SiteError("no notebooks to render")
    notebooks = [nbformat.read(path, as_version=4) for path in sources]
    pages = [_Page(path, path.stem + ".html", _title(nb, path))
             for path, nb in zip(sources, notebooks, strict=True)]
    hrefs = {p.source.name: p.href for p in pages}
    for page, nb in zip(pages, notebooks, strict=True):
        _prepare(nb, page.source, page.title)  # every check before ``out`` is touched
    _prepare_out(out)
    # ipywidgets 8 state (version_major 2) needs the 1.x widget manager; nbconvert asks the
    # CDN for any version ("*"), which a future major release could break.
    exporter = HTMLExporter(template_name="lab", html_manager_semver_range="^1.0",
                            extra_loaders=[DictLoader({"minitx_site.html.j2": _TEMPLATE})],
                            template_file="minitx_site.html.j2")
    for i, (page, nb) in enumerate(zip(pages, notebooks, strict=True)):
        nav = [(rel, {"href": p.href, "title": p.title}) for rel, p in
               (("prev", pages[i - 1] if i > 0 else None),
                ("next", pages[i + 1] if i + 1 < len(pages) else None)) if p is not None]
        body, _ = exporter.from_notebook_node(nb, resources={"minitx_nav": nav})
        (out / page.href).write_text(_link_notebooks(body, hrefs), encoding="utf-8")
    index = out / "index.html"
    index.write_text(_index_html(pages), encoding="utf-8")
    return index


def build_site(out: str | Path, notebooks_dir: str | Path | None = None) -> Path:
    """Build the course site into ``out`` and return the path of its ``index.html``.

    ``notebooks_dir`` holds the notebooks to render (``NN_*.ipynb``, in name order);
    without it the student edition is built into a temporary folder and rendered.
    ``out`` must be new, empty, or a site built here before (its pages are replaced).
    Raises :class:`SiteError` for a notebook without a heading, a figure without alt
    text, or a non-empty ``out`` that is not a site.
    """
    out = Path(out)
    if notebooks_dir is not None:
        folder = Path(notebooks_dir)
        if not folder.is_dir():
            raise SiteError(f"notebooks folder {folder} does not exist")
        return _render(sorted(folder.glob("[0-9][0-9]_*.ipynb")), out)
    from minitx.course.editions import build_edition

    with tempfile.TemporaryDirectory(prefix="minitx-student-") as tmp:
        written = build_edition("student", Path(tmp))
        return _render(sorted(Path(p) for p in written if str(p).endswith(".ipynb")), out)


HELP = "render the student edition of the course to HTML pages with an index"


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="folder for the site")
    parser.add_argument("--notebooks", type=Path, default=None, metavar="DIR",
                        help="render the notebooks in DIR instead of building the student "
                        "edition")


def add_command(sub: Any) -> None:
    """Add the ``site`` subcommand to ``sub`` (what ``ArgumentParser.add_subparsers``
    returns), for ``minitx site --out DIR``; :func:`run` runs it."""
    _add_arguments(sub.add_parser("site", help=HELP, description=HELP[0].upper() + HELP[1:]
                                  + ", from the stored outputs (nothing is run)."))


def run(args: argparse.Namespace) -> int:
    """Build the site that ``args`` (``out``, ``notebooks``) describe; 0, or 2 with a one-line
    error on stderr."""
    try:
        index = build_site(args.out, args.notebooks)
    except (ValueError, OSError) as err:  # SiteError, and build_edition's errors
        print(f"error: {err}", file=sys.stderr)
        return 2
    pages = len(list(index.parent.glob("[0-9][0-9]_*.html")))
    print(f"wrote {pages} notebook page{'s' * (pages != 1)} and {index}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m minitx.course.site --out DIR [--notebooks DIR]``; returns an exit code."""
    parser = argparse.ArgumentParser(prog="python -m minitx.course.site",
                                     description=HELP[0].upper() + HELP[1:] + ".")
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
