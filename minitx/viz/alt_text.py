"""Alt text for a figure: a sentence that says what it shows, built from the figure itself.

Every figure a notebook draws carries it in its output's metadata (``image/png`` ->
``alt``), so a screen reader, nbconvert's HTML and the course site can describe it. A
figure may set its own sentence with :func:`set_alt_text`; otherwise the sentence is made
from what the figure holds: its title, each panel's kind of plot, axis labels and legend.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

_ALT = "_minitx_alt_text"


def set_alt_text(fig: Figure, text: str) -> Figure:
    """Give ``fig`` the alt text ``text`` (one or two sentences); returns ``fig``."""
    if not isinstance(fig, Figure):
        raise TypeError(f"set_alt_text expects a matplotlib Figure, got {type(fig).__name__}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"alt text must be a non-empty sentence, got {text!r}")
    setattr(fig, _ALT, text.strip())
    return fig


def _kind(ax: Axes) -> str:
    if ax.images:
        return "heatmap"
    if ax.patches and not ax.lines:
        return "bar chart"
    if ax.collections and not ax.lines:
        return "scatter plot"
    if ax.lines:
        return "line plot"
    return "panel"


def _describe_axes(ax: Axes) -> str:
    parts = [_kind(ax)]
    title = ax.get_title().strip()
    if title:
        parts[0] += f" titled '{title}'"
    x, y = ax.get_xlabel().strip(), ax.get_ylabel().strip()
    if x:
        parts.append(f"x axis: {x}")
    if y:
        parts.append(f"y axis: {y}")
    legend = ax.get_legend()
    if legend is not None:
        labels = [t.get_text() for t in legend.get_texts() if t.get_text().strip()]
        if labels:
            parts.append("legend: " + ", ".join(labels))
    return "; ".join(parts)


def figure_alt_text(fig: Figure) -> str:
    """The alt text of ``fig``: the one set with :func:`set_alt_text`, else a description
    of its panels (kind of plot, title, axis labels, legend)."""
    own = getattr(fig, _ALT, None)
    if own:
        return own
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    head = fig._suptitle.get_text().strip() if fig._suptitle is not None else ""
    if not panels:
        return f"Figure: {head}." if head else "An empty figure."
    described = [_describe_axes(ax) for ax in panels]
    if len(described) == 1:
        body = described[0][0].upper() + described[0][1:]
    else:
        body = f"{len(described)} panels. " + " ".join(
            f"Panel {i}: {d}." for i, d in enumerate(described, 1)
        )
    body = body if body.endswith(".") else body + "."
    return f"{head}. {body}" if head else body


__all__ = ["figure_alt_text", "set_alt_text"]
