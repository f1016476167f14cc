"""The first cell of every notebook: seeds, determinism, print options, figure defaults
(readable on a projector, with alt text)."""

from __future__ import annotations

import inspect
import os
import platform
import random
import textwrap
from typing import Any

import numpy as np
import torch

from minitx.train.runtime import select_device


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, numpy's and torch's random generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


# Figures must read from the back of a classroom and in a PDF: rendered at FIGURE_DPI, no
# text under MIN_FONT_PT (9 pt is 12.5 px at 100 dpi), and no wider than MAX_WIDTH_IN, so
# that a notebook column never shrinks them.
FIGURE_DPI = 100
MIN_FONT_PT = 9.0
MAX_WIDTH_IN = 10.0
FIGURE_RULE_WARNING = "minitx: figure too small to read"


def figure_rule_violations(fig) -> list[str]:
    """What in ``fig`` breaks the course's figure rule (empty if nothing)."""
    from matplotlib.text import Text

    problems = []
    width = fig.get_figwidth()
    if width > MAX_WIDTH_IN + 1e-9:
        problems.append(f"{width:g} in wide (at most {MAX_WIDTH_IN:g})")
    if fig.dpi < FIGURE_DPI - 1e-6:
        problems.append(f"rendered at {fig.dpi:g} dpi (at least {FIGURE_DPI})")
    small = sorted(
        {round(t.get_fontsize(), 1) for t in fig.findobj(Text)
         if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT}
    )
    if small:
        problems.append(f"text at {', '.join(map(str, small))} pt (at least {MIN_FONT_PT:g})")
    return problems


def check_figure_on_draw(fig) -> None:
    """A ``figure.hooks`` entry: whenever ``fig`` is drawn, say on stderr if it breaks the
    figure rule (the message then stands in the notebook's outputs, where a test finds it)."""
    import sys

    def on_draw(event) -> None:
        problems = figure_rule_violations(fig)
        if problems:
            print(f"{FIGURE_RULE_WARNING}: {'; '.join(problems)}", file=sys.stderr)

    fig.canvas.mpl_connect("draw_event", on_draw)


def setup_notebook(
    seed: int = 0, *, threads: int | None = None, quiet: bool = False
) -> torch.device:
    """Make a notebook reproducible and readable; return the device to use.

    Seeds every generator, asks torch for deterministic CPU kernels, sets short
    numpy/torch print options and the course's figure defaults, then prints one line
    with the versions and the device (nbval's sanitize file normalises the version
    numbers, so the line compares equal across installs).

    ``threads`` caps torch's CPU threads: the tiny models of the course train faster on
    one thread than on cores that other programs are also using.
    """
    from minitx import __version__

    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    seed_everything(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    np.set_printoptions(precision=3, suppress=True, linewidth=100)
    torch.set_printoptions(precision=3, sci_mode=False, linewidth=100)

    import matplotlib

    _inline_figures()
    matplotlib.rcParams.update(
        {
            "figure.figsize": (6.0, 4.0),
            "figure.dpi": FIGURE_DPI,
            "font.size": 11,
            "axes.grid": False,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "xtick.labelsize": 10,
            "ytick.labelsize": 10,
            "legend.fontsize": 10,
            "image.cmap": "viridis",
            "svg.hashsalt": "minitx",
            "figure.hooks": ["minitx.course.notebook:check_figure_on_draw"],
        }
    )
    device = select_device("auto")
    if not quiet:
        print(
            f"minitx {__version__} | python {platform.python_version()} | "
            f"torch {torch.__version__} | numpy {np.__version__} | device: {device.type} | "
            f"seed {seed}"
        )
    return device


def _inline_figures() -> None:
    """Inside a Jupyter kernel, draw figures inline even if $MPLBACKEND names another
    backend (a non-interactive one such as Agg would show nothing)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and getattr(shell, "kernel", None) is not None:
        shell.run_line_magic("matplotlib", "inline")
        _figures_with_alt_text(shell)


def _figures_with_alt_text(shell) -> None:
    """Every figure's PNG output carries alt text in its metadata (``image/png`` -> ``alt``),
    which nbconvert and the course site turn into the image's alt attribute."""
    from matplotlib.figure import Figure

    from minitx.viz.alt_text import figure_alt_text

    png = shell.display_formatter.formatters["image/png"]
    render = png.lookup_by_type(Figure)
    if getattr(render, "adds_alt_text", False):
        return

    def render_with_alt(fig: Figure) -> tuple[object, dict[str, str]]:
        return render(fig), {"alt": figure_alt_text(fig)}

    render_with_alt.adds_alt_text = True
    png.for_type(Figure, render_with_alt)


def show_source(obj: object) -> None:
    """Display the package's own code of ``obj`` (a function, class or method) as a
    Markdown code block, so a notebook shows the real implementation, not a copy."""
    from IPython.display import Markdown, display

    display(Markdown(f"```python\n{inspect.getsource(obj)}```"))


def excerpt(obj: Any, first: str, last: str) -> str:
    """The lines of ``obj``'s own source from the first that contains ``first`` to the next
    that contains ``last``, dedented: the teaching lines of a function, without its
    docstring and input checks. A ``ValueError`` if either marker is missing."""
    lines = inspect.getsource(obj).splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if first in line)
        end = next(i for i in range(start, len(lines)) if last in lines[i])
    except StopIteration:
        raise ValueError(f"{getattr(obj, '__qualname__', obj)}: no lines from {first!r} to "
                         f"{last!r}") from None
    return textwrap.dedent("\n".join(lines[start : end + 1]))


def show_excerpt(obj: Any, first: str, last: str) -> None:
    """Display :func:`excerpt` as a Python code block: the teaching lines of the package's
    own code, without its docstring and input checks."""
    from IPython.display import Markdown, display

    display(Markdown(f"```python\n{excerpt(obj, first, last)}\n```"))


