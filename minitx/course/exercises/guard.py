"""Is a submitted function the learner's own? An ``implement`` exercise refuses the
package's functions, which a notebook imports to use, and thin wrappers of them.

:func:`package_function` names the minitx function that an answer is (directly, through
``functools.partial`` or a decorator's ``__wrapped__``, or as a bound method);
:func:`wrapped_package_function` names the one an answer only calls: a ``lambda`` or a
``def`` whose whole body (a docstring and imports aside) returns one call of a minitx
function on its arguments and constants, such as
``lambda logits, p: top_p_filter(logits, p)``. It reads the answer's source with
:func:`inspect.getsource` (Jupyter keeps each cell's source for it); a function whose source
cannot be read is judged by what it is, not by its body.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import inspect
import linecache
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any


def _is_minitx(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "minitx" or module.startswith("minitx.")


def _unwrap(obj: Any) -> Any:
    """The function behind a partial, a bound method or a decorator's ``__wrapped__``."""
    for _ in range(10):  # a chain of wrappers, not a cycle
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, types.MethodType):
            obj = obj.__func__
        elif hasattr(obj, "__wrapped__") and not isinstance(obj, type):
            obj = obj.__wrapped__
        else:
            break
    return obj


def _trees(fn: types.FunctionType) -> list[tuple[ast.AST, bool]]:
    """Syntax trees that hold ``fn``'s source, each with whether its line numbers are the
    file's: the whole file (or Jupyter cell) it was defined in, then the lines
    :func:`inspect.getsource` gives."""
    trees = []
    with contextlib.suppress(SyntaxError, ValueError):
        lines = linecache.getlines(fn.__code__.co_filename, fn.__globals__)
        if lines:
            trees.append((ast.parse("".join(lines)), True))
    with contextlib.suppress(OSError, TypeError, SyntaxError):
        trees.append((ast.parse(textwrap.dedent(inspect.getsource(fn))), False))
    return trees


def _node_of(fn: types.FunctionType) -> ast.FunctionDef | ast.Lambda | None:
    """The syntax tree of ``fn`` (a ``def`` or a ``lambda``), or None if its source cannot
    be read or found."""
    code = fn.__code__
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    for tree, whole_file in _trees(fn):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if node.name == fn.__name__ and (not whole_file or first == code.co_firstlineno):
                    return node
            elif isinstance(node, ast.Lambda) and fn.__name__ == "<lambda>":
                args = node.args
                named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                if named == params and (not whole_file or node.lineno == code.co_firstlineno):
                    return node
    return None


def _imported(statements: list[ast.stmt]) -> dict[str, Any]:
    """The names that ``import`` statements at the top of a body bind (minitx's only)."""
    bound: dict[str, Any] = {}
    for node in statements:
        with contextlib.suppress(ImportError, AttributeError):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minitx"):
                module = importlib.import_module(node.module)
                bound |= {a.asname or a.name: getattr(module, a.name) for a in node.names}
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("minitx"):
                        module = importlib.import_module(a.name)
                        top = a.name.split(".")[0]
                        bound[a.asname or top] = module if a.asname else sys.modules[top]
    return bound


def _only_call(node: ast.FunctionDef | ast.Lambda) -> tuple[ast.Call, dict[str, Any]] | None:
    """The call that is the whole body of ``node`` (a docstring and imports aside), made on
    its arguments and constants, with the names those imports bind."""
    bound: dict[str, Any] = {}
    if isinstance(node, ast.Lambda):
        value = node.body
    else:
        body = list(node.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        imports = [s for s in body[:-1] if isinstance(s, ast.Import | ast.ImportFrom)]
        if len(imports) != len(body) - 1 or not isinstance(body[-1], ast.Return):
            return None
        bound, value = _imported(imports), body[-1].value
    if not isinstance(value, ast.Call):
        return None
    given = [*value.args, *(k.value for k in value.keywords)]
    if all(_plain(a.value if isinstance(a, ast.Starred) else a) for a in given):
        return value, bound
    return None


def _plain(arg: ast.expr) -> bool:
    """A name or a constant (``-1`` included): what a wrapper passes on."""
    if isinstance(arg, ast.UnaryOp):
        arg = arg.operand
    return isinstance(arg, ast.Name | ast.Constant)


def _resolve(expr: ast.expr, fn: types.FunctionType, bound: dict[str, Any]) -> Any:
    """What a name or dotted name in ``fn``'s body refers to, ``bound`` (names imported in
    the body) first; None if it cannot tell."""
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, fn, bound)
        return getattr(base, expr.attr, None) if base is not None else None
    if not isinstance(expr, ast.Name):
        return None
    if expr.id in bound:
        return bound[expr.id]
    with contextlib.suppress(ValueError):  # a free variable not yet bound
        closure = inspect.getclosurevars(fn).nonlocals
        if expr.id in closure:
            return closure[expr.id]
    if expr.id in fn.__globals__:
        return fn.__globals__[expr.id]
    return getattr(builtins, expr.id, None)


def package_function(answer: Any) -> str | None:
    """The name of the minitx function that ``answer`` is (through a partial, a bound method
    or ``__wrapped__`` included), else None."""
    fn = _unwrap(answer)
    return getattr(fn, "__name__", type(fn).__name__) if _is_minitx(fn) else None


def wrapped_package_function(answer: Any) -> str | None:
    """The name of the minitx function that ``answer``, a ``lambda`` or ``def``, only
    calls on its arguments and constants; None if it does more, or its source is unknown."""
    fn = _unwrap(answer)
    if not isinstance(fn, types.FunctionType) or _is_minitx(fn):
        return None
    node = _node_of(fn)
    found = _only_call(node) if node is not None else None
    target = _unwrap(_resolve(found[0].func, fn, found[1])) if found is not None else None
    if target is not None and callable(target) and _is_minitx(target):
        return getattr(target, "__name__", type(target).__name__)
    return None


def resolve_path(path: str) -> Any:
    """The object at a dotted ``path``: a module's attribute ("minitx.nn.rope.apply_rope",
    "torch.nn.LSTMCell") or a class's ("torch.nn.LSTMCell.forward")."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ValueError(f"expected a dotted path such as 'minitx.nn.rope.apply_rope', got {path!r}")


def patched(originals: dict[str, Any]) -> str | None:
    """The first dotted path of ``originals`` (path -> the object bound there when the
    exercise was registered) that now leads elsewhere: a patched module; None if none."""
    for path, original in originals.items():
        try:
            now = resolve_path(path)
        except (AttributeError, ValueError):
            return path
        if now is not original:
            return path
    return None


def _functions(paths: tuple[str, ...]) -> list[tuple[str, Any]]:
    """The functions at ``paths``, each with its last name (two may share one)."""
    return [(path.rpartition(".")[2], resolve_path(path)) for path in paths]


def forbidden_call(answer: Any, forbidden: tuple[str, ...]) -> str | None:
    """The first of ``forbidden`` (dotted paths of minitx functions, such as
    ``"minitx.nn.rope.apply_rope"``) that ``answer``'s code names anywhere: as a global,
    an attribute (``rope.apply_rope``) or an import, in nested functions too; None if none.
    A learner's own function of the same name, defined in the notebook, is not refused."""
    fn = _unwrap(answer)
    if not isinstance(fn, types.FunctionType):
        return None
    targets = _functions(forbidden)
    codes = [fn.__code__]
    while codes:
        code = codes.pop()
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            for target_name, target in targets:
                if name == target_name:
                    bound = fn.__globals__.get(name, target)
                    if _unwrap(bound) is _unwrap(target):
                        return name
    return None


def _targets(
    forbidden: tuple[str, ...],
) -> tuple[dict[Any, str], dict[int, str], dict[tuple[type, str], str]]:
    """What :func:`forbidding` watches for: code objects of Python functions (a class
    stands for its ``forward``, else its ``__init__``), C functions by identity (kept
    alive with the name, so that no id is reused), and C methods such as
    ``torch.Tensor.softmax`` by their class and name (each call binds a new method)."""
    codes: dict[Any, str] = {}
    builtin: dict[int, tuple[str, Any]] = {}
    methods: dict[tuple[type, str], str] = {}
    for name, found in _functions(forbidden):
        obj = _unwrap(found)
        if isinstance(obj, type):
            obj = getattr(obj, "forward", None) or obj.__init__
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            codes[code] = name
        elif isinstance(obj, types.BuiltinFunctionType):
            builtin[id(obj)] = (name, obj)
        elif isinstance(obj, types.MethodDescriptorType):
            methods[obj.__objclass__, obj.__name__] = name
        elif type(obj).__name__ in ("OpOverloadPacket", "OpOverload", "_OpNamespace"):
            continue  # torch.ops.*: refused by reading the answer's code (review.py)
        else:
            raise ValueError(f"cannot watch {name}: expected a function, a method or a class "
                             f"with a forward or __init__ in Python, got {type(obj).__name__}")
    return codes, builtin, methods


def forbidding(answer: Callable[..., Any], forbidden: tuple[str, ...],
               used: list[str]) -> Callable[..., Any]:
    """``answer``, run so that every call it makes to one of ``forbidden`` (dotted paths of
    the package's or PyTorch's functions, classes or methods) is recorded in ``used``,
    however it reaches it: an alias, a closure, ``getattr``, a patched module, a module
    (a class is watched through its ``forward``), or another function that calls it. It
    watches Python's profiling hook, which sees every call by the function it calls, not by
    the name it was reached under. Removing the hook counts as a use too."""
    codes, builtin, methods = _targets(forbidden)

    def hook(frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            used.append(codes[frame.f_code])
        elif event == "c_call" and id(arg) in builtin:
            used.append(builtin[id(arg)][0])
        elif event == "c_call" and methods:
            owner = getattr(arg, "__self__", None)
            for (cls, method), name in methods.items():
                if getattr(arg, "__name__", None) == method and isinstance(owner, cls):
                    used.append(name)

    @functools.wraps(answer)
    def run(*args: Any, **kwargs: Any) -> Any:
        previous = sys.getprofile()
        sys.setprofile(hook)
        try:
            return answer(*args, **kwargs)
        finally:
            if sys.getprofile() is not hook:
                used.append("sys.setprofile (the check's own watch)")
            sys.setprofile(previous)

    return run


def run_forbidding(checker: Callable[[Any], str | None], answer: Any,
                   forbidden: tuple[str, ...]) -> str | None:
    """``checker(answer)``, with the functions in ``forbidden`` disabled while ``answer``
    runs (:func:`forbidding`): the checker's hint, or a refusal if the answer used one."""
    if not forbidden or not callable(answer):
        return checker(answer)
    used: list[str] = []
    hint = checker(forbidding(answer, forbidden, used))
    return f"that uses {used[0]}, which already does this: write the steps without it" \
        if used else hint


__all__ = ["forbidden_call", "forbidding", "package_function", "patched", "resolve_path",
           "run_forbidding", "wrapped_package_function"]
