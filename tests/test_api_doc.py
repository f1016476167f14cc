"""docs/API.md lists exactly the package's public names, module by module (regenerate it
with ``python docs/make_api.py``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import minitx

API = (Path(__file__).resolve().parent.parent / "docs" / "API.md").read_text(encoding="utf-8")


def public_names(module: ModuleType) -> list[str]:
    """``__all__`` where a module has one, else the functions, classes and constants it
    defines itself (not what it imports), without a leading underscore."""
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        defined_here = getattr(obj, "__module__", module.__name__) == module.__name__
        is_code = inspect.isfunction(obj) or inspect.isclass(obj)
        if (is_code and defined_here) or name.isupper():  # a constant is public too
            names.append(name)
    return sorted(names)


def modules() -> list[str]:
    found = [m.name for m in pkgutil.walk_packages(minitx.__path__, "minitx.")]
    # the five subpackages' __init__ only gather names their modules define
    gathering = {f"minitx.{p}" for p in ("data", "nn", "train", "viz", "course")}
    return sorted(m for m in found if not m.startswith("minitx.course.exercises.nb")
                  and m not in gathering and not m.endswith("__main__"))


def documented() -> dict[str, list[str]]:
    """{module: [names]} as the page lists them."""
    out: dict[str, list[str]] = {}
    current = None
    for line in API.splitlines():
        if m := re.fullmatch(r"### `(minitx[\w.]*)`", line):
            current = m.group(1)
            out[current] = []
        elif current and (m := re.match(r"- `(\w+)`", line)):
            out[current].append(m.group(1))
    return out


def test_every_module_is_on_the_page():
    assert sorted(documented()) == modules()


def test_every_public_name_is_listed_once_and_nothing_else():
    page = documented()
    for name in modules():
        module = importlib.import_module(name)
        assert sorted(page[name]) == public_names(module), name
        assert len(page[name]) == len(set(page[name])), name
