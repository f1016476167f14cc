"""The package's layout: folders that follow the course, imports that only go downward,
small modules, and a package map (docs/package.md) that matches the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "minitx"
SUBPACKAGES = ("data", "nn", "train", "viz", "course")
# what each subpackage may import, besides itself
ALLOWED = {
    "data": set(),
    "nn": {"data"},
    "train": {"nn", "data"},
    "viz": {"nn", "data"},
    "course": {"data", "nn", "train", "viz"},
}
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _subpackage(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None


def _minitx_imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every import of minitx in ``path``, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "minitx":
                found += [(node.lineno, f"minitx.{a.name}") for a in node.names]
            elif node.module.startswith("minitx."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("minitx")]
    return found


def import_violations(package: Path = PACKAGE) -> list[str]:
    """Every import in a subpackage of a subpackage it may not import, as 'file:line: name'."""
    bad = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if len(parts) < 2:
            continue  # cli.py and __init__.py may import anything
        here = parts[0]
        for line, name in _minitx_imports(path):
            target = name.split(".")[1] if name.count(".") else None
            if target is None or target == here or target == "__version__":
                continue
            if target not in ALLOWED[here]:  # another subpackage, or minitx.cli
                bad.append(f"{path.relative_to(package.parent)}:{line}: {here} imports {name}")
    return bad


def test_imports_only_go_downward():
    assert import_violations() == []


def test_the_import_check_catches_an_upward_import(tmp_path):
    """The walker itself: a data module that imports the Trainer is reported."""
    pkg = tmp_path / "minitx"
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / "bad.py").write_text("def f():\n    from minitx.train.trainer import Trainer\n")
    (pkg / "nn").mkdir()
    (pkg / "nn" / "ok.py").write_text("from minitx.data.bad import f\n")
    assert import_violations(pkg) == ["minitx/data/bad.py:2: data imports minitx.train.trainer"]


def test_subpackages_declare_all():
    for name in SUBPACKAGES:
        tree = ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8"))
        names = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)]
        assert "__all__" in names, f"minitx/{name}/__init__.py declares no __all__"


def test_at_most_three_files_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 3, top


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_longer_than_400_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines"


PRIVATE_TORCH = re.compile(
    r"(?<!minitx\.)\b(?:torch|nn|F|optim)(?:\.\w+)*\._[A-Za-z]\w*|_init_group\b|_DropoutNd"
)


def test_no_private_torch_api():
    """No torch name with a leading underscore: any release may change or remove it."""
    assert PRIVATE_TORCH.search("torch.optim.Optimizer._init_group")
    assert PRIVATE_TORCH.search("nn.modules.dropout._DropoutNd")
    assert not PRIVATE_TORCH.search("torch.nn.functional.scaled_dot_product_attention")
    assert not PRIVATE_TORCH.search("torch.__version__")
    assert not PRIVATE_TORCH.search("minitx.nn.attention._attend")  # the package's own
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in _modules()
             for m in PRIVATE_TORCH.finditer(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_gpt_forward_is_short():
    tree = ast.parse((PACKAGE / "nn" / "gpt.py").read_text(encoding="utf-8"))
    gpt = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GPT")
    forward = next(n for n in gpt.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    assert forward.end_lineno - forward.lineno + 1 <= 30


def test_one_ignore_index():
    """Targets the loss leaves out are marked with one value everywhere."""
    values = set()
    for path in _modules():
        for m in re.finditer(r"ignore_index\s*=\s*(-?\w+)", path.read_text(encoding="utf-8")):
            values.add(m.group(1))
    assert values <= {"IGNORE_INDEX", "ignore_index"}, values


def _readme_map() -> dict[str, str]:
    """The package map: docs/package.md's table, linked from README."""
    assert "(docs/package.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    text = (ROOT / "docs" / "package.md").read_text(encoding="utf-8")
    section = text.split("# The package", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(minitx\.[\w.]+)` \| ([^|]+) \|", section, flags=re.M))


def _tree_modules() -> set[str]:
    names = set()
    for path in _modules():
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts
        if parts[-1] in ("__init__", "__main__"):
            continue
        if len(parts) > 3:  # a module inside a sub-subpackage: the subpackage is the entry
            names.add(".".join(parts[:3]))
        else:
            names.add(".".join(parts))
    return names


def test_readme_package_map_matches_the_tree():
    listed = set(_readme_map())
    assert listed, "docs/package.md has no package map"
    tree = _tree_modules()
    assert listed == tree, (
        f"in the tree, not in docs/package.md: {sorted(tree - listed)}; "
        f"in docs/package.md, not in the tree: {sorted(listed - tree)}"
    )
