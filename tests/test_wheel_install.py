"""The course outside its repository (issue 30).

The wheel is built from a copy of what it is made of (pyproject.toml, README.md, LICENSE,
minitx/), so that nothing else in the checkout can leak in. Then:

* the wheel holds the shipped checkpoints and the student edition of every notebook, and no
  solution and no model answer: every answer text of the instructor's key
  (``instructor/solutions/``) is searched for in every file of the wheel, in the text of
  every notebook cell too;
* it is installed into a fresh virtual environment (``torch==2.13.0``, as ``.ci/run``
  installs it: these machines hold a local CPU build), and from an empty folder, with no
  checkout on the path, minitx imports from that environment, finds its checkpoints and
  says that solutions ship only with the instructor's checkout;
* the learner's path: in an empty folder, the environment's ``minitx course`` writes every
  student notebook, and 00 and 04 (``$MINITX_WHEEL_NOTEBOOKS``: CI adds 08, the Mini-GPT)
  run top to bottom from there, in a kernel of that environment, with the corpus given only
  through ``MINITX_DATA``.

A fresh environment takes about a minute to install on the course's 2-core machine; the
notebooks take about 20 s more. The environment is made once for the module.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from minitx.course import handout
from minitx.course.exercises import answers, get, names
from minitx.course.teacher import solution_text

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "tinyshakespeare.txt"
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WHEEL_PARTS = ("pyproject.toml", "README.md", "LICENSE", "minitx")
TORCH = "torch==2.13.0"  # what .ci/run installs
# 00 and 04 in the suite; CI adds the Mini-GPT notebook (.ci/run sets the variable)
STUDENT_NOTEBOOKS = tuple(os.environ.get("MINITX_WHEEL_NOTEBOOKS", "00 04").split())
KERNEL = "minitx-wheel"
PIP_TIMEOUT_S = 900


def _run(cmd: list[str], timeout: float = PIP_TIMEOUT_S, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{said}"
    return done


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a process that must not see the checkout or the answer key."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", answers.ENV, "MINITX_DATA", "VIRTUAL_ENV")}
    return {**env, "MINITX_DEVICE": "cpu", **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of its sources."""
    src = tmp_path_factory.mktemp("src")
    for part in WHEEL_PARTS:
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, src / part,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / part, src / part)
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
          "-w", str(out), "-q"])
    (built,) = out.glob("minitx-*.whl")
    return built


@pytest.fixture(scope="module")
def env_python(wheel, tmp_path_factory) -> Path:
    """The Python of a fresh virtual environment that holds the wheel and a kernel."""
    folder = tmp_path_factory.mktemp("venv")
    venv.create(folder, with_pip=True)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    start = time.perf_counter()
    _run([str(python), "-m", "pip", "install", "-q", TORCH, str(wheel), "ipykernel"],
         env=_clean_env(), cwd=folder)
    print(f"\nfresh environment installed in {time.perf_counter() - start:.0f} s")
    return python


# ---- no answer in the wheel --------------------------------------------------------------


def secrets() -> dict[str, str]:
    """Every answer text of the instructor's key: the body of each solution that is code
    (its first line, a def's signature, left out), and each model answer. (A prediction's
    solution is the outcome of the package's own experiment, not text: not searched.)"""
    found = {}
    for name in names():
        if get(name).kind == "predict":
            continue
        text = solution_text(name)
        lines = text.splitlines()
        if text.startswith("def ") and len(lines) > 1:
            found[name] = "\n".join(lines[1:])
        elif get(name).kind == "think":
            found[name] = text
    return found


def _haystacks(path: str, data: bytes) -> list[bytes]:
    """What a file is searched in: its bytes; for Python source, its string constants (a
    model answer written as several literals side by side is one constant); for a notebook,
    the text of each cell's source and outputs (JSON stores it as escaped lines)."""
    found = [data]
    if path.endswith(".py"):
        tree = ast.parse(data)
        strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                   and isinstance(n.value, str)]
        found.append("\n".join(strings).encode())
    if path.endswith(".ipynb"):
        def text(value: str | list[str]) -> str:
            return value if isinstance(value, str) else "".join(value)

        for cell in json.loads(data)["cells"]:
            found.append(text(cell["source"]).encode())
            for out in cell.get("outputs", []):
                texts = [out.get("text", ""), *out.get("data", {}).values()]
                found += [text(t).encode() for t in texts if isinstance(t, str | list)]
    return found


def leaked(secret_texts: dict[str, str], files: dict[str, bytes]) -> list[str]:
    """'exercise in file' for each secret found in a file, compared as UTF-8 bytes."""
    hay = {path: _haystacks(path, data) for path, data in files.items()}
    return [f"{name} in {path}" for name, secret in secret_texts.items()
            for path, texts in hay.items() if any(secret.encode() in h for h in texts)]


def _files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as z:
        return {info.filename: z.read(info) for info in z.infolist() if not info.is_dir()}


def test_the_search_finds_a_planted_solution_and_model_answer():
    planted = {
        "minitx/x.py": b"def f(Q, K, V):\n    return Q @ K.T\n",
        "minitx/y.py": b'ANSWER = (\n    "No: once trained, "\n    "the scores grow."\n)\n',
        "minitx/z.md": b"nothing here\n",
    }
    found = leaked({"04.attention": "    return Q @ K.T"}, planted)
    assert found == ["04.attention in minitx/x.py"]
    cell = {"cell_type": "code", "source": ["def f(Q, K, V):\n", "    A = Q @ K.T\n",
                                            "    return A @ V"], "outputs": []}
    notebook = {"minitx/course/student/04_x.ipynb": json.dumps({"cells": [cell]}).encode()}
    assert leaked({"04.attention": "    A = Q @ K.T\n    return A @ V"}, notebook) == [
        "04.attention in minitx/course/student/04_x.ipynb"]  # found across the JSON's lines
    assert leaked({"04.why_scale": "No: once trained, the scores grow."}, planted) == [
        "04.why_scale in minitx/y.py"]
    assert leaked({"04.attention": "    return A @ V, A"}, planted) == []


@pytest.mark.skipif(not answers.available(), reason="the instructor's answer key is not here")
def test_the_wheel_holds_no_solution_and_no_model_answer(wheel):
    files = _files(wheel)
    texts = secrets()
    implement = [n for n in names() if get(n).kind == "implement"]
    think = [n for n in names() if get(n).kind == "think"]
    assert set(implement) | set(think) <= set(texts)  # every code body and model answer
    assert leaked(texts, files) == []
    assert not [p for p in files if p.startswith("instructor")]


def test_the_wheel_holds_the_student_edition_of_every_notebook(wheel):
    """What ``minitx course`` writes out: the packaged copy (which
    tests/course/test_handout.py keeps equal to a fresh build of notebooks/)."""
    files = _files(wheel)
    student = {p[len("minitx/course/student/"):]: data for p, data in files.items()
               if p.startswith("minitx/course/student/")}
    assert sorted(student) == [p.name for p in SOURCES]
    assert all(data == (handout.PACKAGED / name).read_bytes() for name, data in student.items())
    assert not [p for p in files if p.endswith(".ipynb") and not p.startswith(
        "minitx/course/student/")]


def test_the_wheel_holds_the_shipped_checkpoints_and_their_cards(wheel):
    from minitx.data import SHIPPED_MODELS, shipped_model_path

    files = _files(wheel)
    for which, filename in SHIPPED_MODELS.items():
        shipped = shipped_model_path(which)
        assert files[f"minitx/data/checkpoints/{filename}"] == shipped.read_bytes()
        card = f"minitx/data/checkpoints/{Path(filename).with_suffix('.md')}"
        assert files[card] == shipped.with_suffix(".md").read_bytes()


# ---- the installed wheel, away from the checkout ----------------------------------------


def test_the_installed_package_runs_from_its_environment_not_the_checkout(env_python, tmp_path):
    script = (
        "import json, minitx\n"
        "from minitx.data import shipped_model_path\n"
        "from minitx.course.exercises import answers\n"
        "print(json.dumps({'package': minitx.__file__, 'version': minitx.__version__,\n"
        "    'large': str(shipped_model_path('large')), 'key': answers.available()}))\n"
    )
    done = _run([str(env_python), "-c", script], timeout=120, cwd=tmp_path, env=_clean_env())
    seen = json.loads(done.stdout)
    prefix = str(env_python.parent.parent)
    assert seen["package"].startswith(prefix) and not seen["package"].startswith(str(ROOT))
    assert seen["large"].startswith(prefix) and Path(seen["large"]).is_file()
    assert seen["key"] is False
    import minitx

    assert seen["version"] == minitx.__version__


def test_the_installed_package_says_where_the_solutions_are(env_python, tmp_path):
    done = subprocess.run(
        [str(env_python), "-m", "minitx.course.exercises", "solutions", "04"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_clean_env(),
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "ship only with the instructor's checkout" in done.stderr


_TRUTH_HUNT = """
import importlib, inspect, json, pkgutil, types
import minitx.course.exercises as ex
from minitx.course.exercises import check, get, names

def no_arguments(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params)

offered, accepted, modules = 0, [], []
for info in pkgutil.iter_modules(ex.__path__):
    if info.name == "__main__":
        continue  # the command line, not a module to import
    module = importlib.import_module(f"{ex.__name__}.{info.name}")
    modules.append(info.name)
    own = info.name[2:] if info.name.startswith("nb") else None  # else shared by all
    candidates = []
    for key, value in vars(module).items():
        if key.startswith("__") or isinstance(value, types.ModuleType):
            continue
        candidates.append(value)
        if callable(value) and no_arguments(value):
            try:
                candidates.append(value())
            except Exception:  # a callable that raises hands the student nothing
                pass
    for name in names():
        if get(name).kind not in ("predict", "compute") or own not in (None, name[:2]):
            continue
        for value in candidates:
            if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
                continue  # a prediction's choices: every choice, not one answer
            offered += 1
            if check(name, value, quiet=True).ok:
                accepted.append(f"{info.name}.{name}: {value!r}"[:120])
print(json.dumps({"offered": offered, "accepted": accepted, "modules": modules}))
"""


def test_no_function_or_value_of_the_installed_exercises_is_an_answer(env_python, tmp_path):
    """Every exercise module of the wheel imported, every callable of it that takes no
    argument called (private ones too), and every module-level value and result offered to
    every predict and compute exercise: the checker accepts none."""
    done = _run([str(env_python), "-c", _TRUTH_HUNT], timeout=600, cwd=tmp_path,
                env=_clean_env())
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"nb01", "nb04", "nb11", "checks", "seal"} <= set(seen["modules"])
    assert seen["offered"] > 500
    assert seen["accepted"] == []


def _write_course(python: Path, cwd: Path) -> list[Path]:
    """The learner's step: the environment's ``minitx course course``, run in the empty
    folder ``cwd``; the notebooks it wrote into ``cwd/course``."""
    assert not list(cwd.iterdir())
    command = python.parent / ("minitx.exe" if os.name == "nt" else "minitx")
    done = _run([str(command), "course", "course"], timeout=120, cwd=cwd, env=_clean_env())
    course = cwd / "course"
    assert done.stdout.splitlines()[0] == f"wrote the course, {len(SOURCES)} notebooks, to course"
    assert "jupyter lab course" in done.stdout and done.stderr == ""
    assert sorted(p.name for p in cwd.iterdir()) == ["course"]
    return sorted(course.iterdir())


# Run after each notebook, in its kernel: where minitx and the corpus came from, and the
# check of a wrapper of the package's function, written in a cell as a learner would.
AFTER = """\
import minitx, minitx.data
from minitx.course.exercises import check
from minitx.nn.attention import scaled_dot_product_attention
print(minitx.__file__)
print(minitx.data.data_dir())
wrapper = lambda Q, K, V: scaled_dot_product_attention(Q, K, V)
print(check("04.attention", wrapper, quiet=True).message)
"""


def _kernel(python: Path, jupyter_dir: Path) -> None:
    spec = jupyter_dir / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "minitx from the wheel", "language": "python",
    }), encoding="utf-8")


def test_the_course_command_writes_the_notebooks_that_run_from_an_empty_folder(
        env_python, tmp_path, monkeypatch, capsys):
    empty, data, jupyter = tmp_path / "empty", tmp_path / "data", tmp_path / "jupyter"
    empty.mkdir()
    written = _write_course(env_python, empty)
    course = empty / "course"
    assert [p.name for p in written] == [p.name for p in SOURCES]  # the notebooks alone
    if not CORPUS.is_file():
        pytest.skip(f"no corpus at {CORPUS} to hand the notebooks")
    data.mkdir()
    shutil.copy2(CORPUS, data / CORPUS.name)  # the offline copy, handed over by MINITX_DATA
    _kernel(env_python, jupyter)
    for key, value in _clean_env(MINITX_DATA=str(data), JUPYTER_PATH=str(jupyter)).items():
        monkeypatch.setenv(key, value)
    for key in ("PYTHONPATH", answers.ENV):
        monkeypatch.delenv(key, raising=False)
    paths = [p for p in written if p.name[:2] in STUDENT_NOTEBOOKS]
    assert sorted(p.name[:2] for p in paths) == sorted(STUDENT_NOTEBOOKS)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(AFTER))
        start = time.perf_counter()
        NotebookClient(nb, kernel_name=KERNEL, timeout=600,
                       resources={"metadata": {"path": str(course)}}).execute()
        with capsys.disabled():
            print(f"\n{path.name}: ran in {time.perf_counter() - start:.1f} s from the wheel")
        where, data_dir, wrapper = nb.cells[-1].outputs[0]["text"].splitlines()
        assert where.startswith(str(env_python.parent.parent)), where
        assert Path(data_dir) == data
        assert "only calls the package's own scaled_dot_product_attention" in wrapper
