"""What a learner's saved notebook does, read from its code without running it.

The teacher's grading (:mod:`minitx.course.exercises.grading`) runs the learner's code in
a separate process and trusts nothing that process says. Before any of it counts, this
module reads the notebook's JSON itself and refuses:

* :func:`tampering`, anywhere in the notebook: a patched module (an assignment to an
  attribute of anything imported, or of an alias of it), ``setattr``/``delattr``,
  ``exec``/``eval``/``compile``/``__import__``, ``importlib.import_module``, ``sys.modules``,
  ``sys.setprofile``/``settrace``, ``builtins``, ``gc``, ``ctypes``, a function's
  ``__globals__``/``__code__``/``__closure__``, a module's ``__dict__``, and any import of
  the exercise machinery other than ``check``, ``prompt`` and 03's ``iso_sources``;
* :func:`answer_refusal`, in the code an answer is made of (the expression given to
  ``check``, and every function, class and assignment of the notebook it reaches): a
  forbidden function (the package's reference, its siblings, PyTorch's equivalents), an
  import of minitx inside the answer, a look-up by name at run time (``getattr``,
  ``globals``, ``vars``), and anything from ``minitx.course``.

It also compares plain data (:func:`same`), what the grading process judges answers by.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
from collections.abc import Iterable
from typing import Any

import numpy as np

from minitx.course.exercises.guard import _unwrap, resolve_path

_RUNTIME_CALLS = {"setattr", "delattr", "exec", "eval", "compile", "__import__", "breakpoint"}
_LOOKUPS = {"getattr", "globals", "vars", "locals", *_RUNTIME_CALLS}
_SYS = {"modules", "setprofile", "settrace", "_getframe", "meta_path", "path_hooks", "argv"}
_IMPORTLIB = {"import_module", "reload", "__import__"}
_MODULES = {"builtins", "gc", "ctypes", "marshal"}
_DUNDERS = {"__globals__", "__code__", "__closure__", "__dict__", "__builtins__",
            "__subclasses__", "__defaults__", "__kwdefaults__"}
_EXERCISE_NAMES = {"check", "prompt", "iso_sources"}  # what the notebooks import of them
_RESOLVABLE = ("minitx", "torch", "numpy")


def parse(source: str) -> ast.Module | None:
    """A code cell as a syntax tree (IPython's magics and shell lines left out), or None."""
    magic = ("%", "!")
    code = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(magic))
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None if it is not a plain dotted name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _root(node: ast.expr) -> str | None:
    """The name at the root of an attribute or subscript target (``a`` of ``a.b[0].c``)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def imports(trees: Iterable[ast.Module]) -> tuple[dict[str, str], list[str]]:
    """The names imports bind anywhere in ``trees``, each with the dotted path it stands
    for (``F`` -> ``torch.nn.functional``), and the modules star-imported."""
    bound: dict[str, str] = {}
    stars: list[str] = []
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                        a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name == "*":
                        stars.append(node.module)
                    else:
                        bound[a.asname or a.name] = f"{node.module}.{a.name}"
    return bound, stars


def tampering(sources: list[str]) -> str | None:
    """Why the notebook's code (all its code cells) cannot be trusted (every reason, joined
    by "; "), or None."""
    trees = [t for t in map(parse, sources) if t is not None]
    bound, _ = imports(trees)
    tainted = set(bound)
    for tree in trees:  # aliases of what was imported: m = attn; m.f = ...
        for node in tree.body:
            if isinstance(node, ast.Assign) and _root(node.value) in tainted:
                tainted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = [why for tree in trees for node in ast.walk(tree)
             if (why := _tampers(node, bound, tainted))]
    return "; ".join(dict.fromkeys(found)) or None


def _tampers(node: ast.AST, bound: dict[str, str], tainted: set[str]) -> str | None:
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute | ast.Subscript) and _root(t) in tainted:
                    what = ast.unparse(t)
                    return f"it patches a module: `{what} = ...` changes what was imported"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in _RUNTIME_CALLS:
        return f"it calls {node.func.id}(), which can rewrite code or modules at run time"
    if isinstance(node, ast.Attribute):
        chain = _chain(node)
        path = bound.get(chain[0], chain[0]).split(".") + chain[1:] if chain else []
        if path[:1] == ["sys"] and len(path) > 1 and path[1] in _SYS:
            return f"it uses sys.{path[1]}, which can tamper with the grading"
        if path[:1] == ["importlib"] and len(path) > 1 and path[1] in _IMPORTLIB:
            return f"it imports modules by name (importlib.{path[1]})"
        if node.attr in _DUNDERS:
            return f"it reaches into {node.attr}"
    if isinstance(node, ast.Import | ast.ImportFrom):
        module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        names = [a.name for a in node.names]
        every = [module] if module else names
        if isinstance(node, ast.ImportFrom) and module == "importlib" and \
                set(names) & _IMPORTLIB:
            return "it imports modules by name (importlib)"
        if isinstance(node, ast.ImportFrom) and module == "sys" and set(names) & _SYS:
            return f"it imports {', '.join(sorted(set(names) & _SYS))} from sys"
        for m in every:
            if m.split(".")[0] in _MODULES:
                return f"it imports {m}, which can tamper with the grading"
            if m.startswith("minitx.course.exercises") and (
                    not isinstance(node, ast.ImportFrom) or set(names) - _EXERCISE_NAMES):
                return "it imports the exercise machinery itself (only check and prompt are " \
                       "for learners)"
            if m == "minitx.course" and "exercises" in names:
                return "it imports the exercise machinery itself"
    return None


_SETUP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    return [n.id for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _bindings(before: list[ast.Module], cell: ast.Module, line: int) -> dict[str, ast.stmt]:
    """What each name is bound to when the check call on ``line`` of ``cell`` runs again:
    the last statement binding it, of the imports, functions and classes of the cells
    ``before`` (all that the grading process runs of them) and every statement of ``cell``
    above that line."""
    found: dict[str, ast.stmt] = {}
    statements = [n for t in before for n in t.body if isinstance(n, _SETUP)]
    statements += [n for n in cell.body if n.lineno < line or isinstance(n, _SETUP)]
    for node in statements:
        for name in _bound_names(node):
            found[name] = node
    return found


def answer_node(tree: ast.Module, name: str) -> ast.expr | None:
    """The answer expression of the last ``check(name, answer)`` call in ``tree``."""
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "check" and node.args and \
                isinstance(node.args[0], ast.Constant) and node.args[0].value == name:
            given = node.args[1:2] or [k.value for k in node.keywords if k.arg == "answer"]
            found = given[0] if given else None
    return found


def forbidden_objects(paths: Iterable[str]) -> dict[str, Any]:
    """The objects at ``paths`` (dotted), by path; a path that does not resolve is left out."""
    found = {}
    for path in paths:
        with contextlib.suppress(ValueError, AttributeError, ImportError):
            found[path] = _unwrap(resolve_path(path))
    return found


def answer_refusal(sources: list[str], cell: int, name: str,
                   forbid: dict[str, Any]) -> str | None:
    """Why the answer that code cell ``cell`` of ``sources`` gives exercise ``name`` is
    refused, read from its code; None if nothing in it is refused. ``forbid``: dotted path
    -> object (:func:`forbidden_objects`)."""
    before = [t for t in map(parse, sources[:cell]) if t is not None]
    last = parse(sources[cell])
    start = answer_node(last, name) if last is not None else None
    if start is None:
        return f"the cell's check({name!r}, ...) gives no answer that can be read"
    binding = _bindings(before, last, start.lineno)
    todo: list[ast.AST] = [start]
    closure: list[ast.AST] = []
    while todo:  # the answer's code: what it names, and what those name, in the notebook
        node = todo.pop()
        if any(node is c for c in closure):
            continue
        closure.append(node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and \
                    sub.id in binding and not isinstance(binding[sub.id], ast.Import |
                                                         ast.ImportFrom):
                todo.append(binding[sub.id])
    tops = [n for n in binding.values() if isinstance(n, ast.Import | ast.ImportFrom)]
    bound, stars = imports([ast.Module(body=tops, type_ignores=[]), *closure])
    for node in closure:
        for sub in ast.walk(node):
            why = _refused_here(sub, bound, stars, forbid)
            if why:
                return why
    return None


def _refused_here(node: ast.AST, bound: dict[str, str], stars: list[str],
                  forbid: dict[str, Any]) -> str | None:
    if isinstance(node, ast.Import | ast.ImportFrom):
        module = getattr(node, "module", None) or ""
        if any(m.startswith("minitx") for m in [module, *(a.name for a in node.names)]):
            return "the answer imports minitx itself"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in _LOOKUPS:
        return f"the answer looks names up at run time ({node.func.id})"
    path = None
    if isinstance(node, ast.Attribute | ast.Name):
        chain = _chain(node)
        if chain and chain[0] in bound:
            path = ".".join([bound[chain[0]], *chain[1:]])
        elif chain and isinstance(node, ast.Name):
            path = next((f"{m}.{chain[0]}" for m in stars
                         if m.split(".")[0] in _RESOLVABLE and _has(m, chain[0])), None)
    if path is None:
        return None
    if path.startswith(("minitx.course", "instructor", "_minitx_")) and \
            path.rpartition(".")[2] not in _EXERCISE_NAMES:
        return f"the answer reads {path}, part of the exercise machinery"
    for bad in forbid:
        if path == bad or path.startswith(bad + "."):
            return f"the answer uses {_owner(bad)}'s own {bad.rpartition('.')[2]}"
    if path.split(".")[0] in _RESOLVABLE:
        obj = _resolved(path)
        for bad, target in forbid.items():
            if obj is not None and (obj is target or (inspect.isclass(obj) and
                                    inspect.isclass(target) and issubclass(obj, target))):
                return f"the answer uses {_owner(bad)}'s own {bad.rpartition('.')[2]}"
    return None


def _owner(path: str) -> str:
    return "PyTorch" if path.startswith("torch") else "the package"


def _has(module: str, name: str) -> bool:
    return _resolved(f"{module}.{name}") is not None


def _resolved(path: str) -> Any:
    try:
        return _unwrap(resolve_path(path))
    except (ValueError, AttributeError, ImportError, TypeError):
        return None


# ---- plain data compared -----------------------------------------------------------------


def _array(p: Any) -> np.ndarray | None:
    """Plain data that is numbers (a tensor's dict, a number, nested lists) as an array."""
    if isinstance(p, dict) and set(p) == {"shape", "dtype", "data"}:
        return np.asarray(p["data"], dtype=float).reshape(p["shape"])
    if type(p) in (int, float):
        return np.asarray(float(p))
    if type(p) is list:
        parts = [_array(v) for v in p]
        if parts and all(a is not None for a in parts) and len({a.shape for a in parts}) == 1:
            return np.stack(parts)
        return np.zeros(0) if not p else None
    return None


def same(got: Any, want: Any, atol: float) -> bool:
    """Whether the plain data ``got`` is ``want``: numbers within ``atol`` and of the same
    shape (a tensor, an array, a list or a number alike; NaN where NaN is), strings and
    dict keys equal."""
    w = _array(want)
    if w is not None:
        g = _array(got)
        return g is not None and g.shape == w.shape and bool(
            np.allclose(g, w, atol=atol, rtol=0, equal_nan=True))
    if type(want) is dict:
        return type(got) is dict and set(got) == set(want) and all(
            same(got[k], want[k], atol) for k in want)
    if type(want) is list:
        return type(got) is list and len(got) == len(want) and all(
            same(g, w, atol) for g, w in zip(got, want, strict=True))
    return type(got) is type(want) and got == want


def unreadable(p: Any) -> str | None:
    """The type named by the first ``{"unreadable": type}`` in plain data, or None."""
    if type(p) is dict:
        if set(p) == {"unreadable"}:
            return str(p["unreadable"])
        return next((u for u in map(unreadable, p.values()) if u), None)
    if type(p) is list:
        return next((u for u in map(unreadable, p) if u), None)
    return None


def loosen(value: Any, depth: int = 0) -> Any:
    """A torch.Size as a tuple, in lists, tuples and dicts too (an honest shape answer); a
    set as a list, in its own order (an honest answer whose order is not the point)."""
    import torch

    if depth > 6:
        return value
    if type(value) is torch.Size:
        return tuple(int(d) for d in value)
    if type(value) in (set, frozenset):
        return [loosen(v, depth + 1) for v in value]
    if type(value) in (list, tuple):
        return type(value)(loosen(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: loosen(v, depth + 1) for k, v in value.items()}
    return value


__all__ = ["answer_node", "answer_refusal", "forbidden_objects", "imports", "loosen", "parse",
           "same", "tampering", "unreadable"]
