"""environment.yml and pyproject.toml must list the same packages; the console script works.

conda-forge and PyPI name some packages differently; the mapping below is the only place
where that is allowed. A pyproject dependency that conda-forge lacks must be listed in
PIP_ONLY (the environment's ``- -e .[dev]`` pip line installs it).
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import minitx

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 has no tomllib
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parent.parent

CONDA_TO_PYPI = {"pytorch": "torch", "pyyaml": "pyyaml", "playwright-python": "playwright"}
CONDA_ONLY = {"python", "pip"}  # the interpreter and the installer, not requirements
PIP_ONLY: set[str] = set()  # pyproject packages that conda-forge lacks (none today)
PIP_LINE = "-e .[dev]"

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*?)\s*$")


def normalize(name: str) -> str:
    """PEP 503 normalised package name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(spec: str) -> tuple[str, str | None]:
    """``'numpy>=1.24'`` -> ``('numpy', '1.24')``: the name and the ``>=`` lower bound."""
    match = _REQ.match(spec)
    if match is None:
        raise ValueError(f"cannot parse requirement {spec!r}")
    name, rest = match.groups()
    lower = re.search(r">=\s*([\w.]+)", rest)
    return normalize(name), lower.group(1) if lower else None


def load_env() -> dict:
    return yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))


def load_pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def conda_packages(env: dict) -> dict[str, str | None]:
    """PyPI name -> lower bound of every conda dependency except CONDA_ONLY."""
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            continue
        name, lower = parse(dep)
        if name in CONDA_ONLY:
            continue
        out[normalize(CONDA_TO_PYPI.get(name, name))] = lower
    return out


def pip_lines(env: dict) -> list[str]:
    lines = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    return [line for block in lines for line in block]


def pyproject_packages(project: dict) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """(runtime, dev): PyPI name -> lower bound."""
    runtime = dict(parse(r) for r in project["project"]["dependencies"])
    dev = dict(parse(r) for r in project["project"]["optional-dependencies"]["dev"])
    return runtime, dev


def disagreements(env: dict, project: dict) -> list[str]:
    """Everything on which environment.yml and pyproject.toml disagree (empty if none)."""
    problems = []
    conda = conda_packages(env)
    runtime, dev = pyproject_packages(project)
    if env.get("channels") != ["conda-forge"]:
        problems.append(f"channels should be ['conda-forge'], got {env.get('channels')!r}")
    if PIP_LINE not in pip_lines(env):
        problems.append(f"the pip section must contain {PIP_LINE!r}")
    for name, lower in {**dev, **runtime}.items():
        if name in PIP_ONLY:
            if name in conda:
                problems.append(f"{name} is in PIP_ONLY but environment.yml lists it too")
            if name in runtime:
                problems.append(f"runtime dependency {name} must come from conda-forge")
            continue
        if name not in conda:
            problems.append(f"{name} (pyproject) is missing from environment.yml")
        elif conda[name] != lower:
            problems.append(
                f"{name}: lower bound {conda[name]!r} in environment.yml, {lower!r} in pyproject"
            )
    for name in conda:
        if name not in runtime and name not in dev:
            problems.append(f"{name} (environment.yml) is not a pyproject dependency")
    return problems


def test_environment_yml_agrees_with_pyproject():
    assert disagreements(load_env(), load_pyproject()) == []


def test_environment_python_satisfies_requires_python():
    env, project = load_env(), load_pyproject()
    pythons = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert len(pythons) == 1
    version = tuple(int(x) for x in re.findall(r"\d+", pythons[0]))
    minimum = tuple(int(x) for x in re.findall(r"\d+", project["project"]["requires-python"]))
    assert version >= minimum, (pythons[0], project["project"]["requires-python"])
    assert env["name"] == "minitx"


def test_every_mapping_entry_is_used():
    names = {parse(d)[0] for d in load_env()["dependencies"] if isinstance(d, str)}
    assert set(CONDA_TO_PYPI) <= names
    runtime, dev = pyproject_packages(load_pyproject())
    assert {normalize(n) for n in CONDA_TO_PYPI.values()} <= set(runtime) | set(dev)
    assert set(PIP_ONLY) <= set(runtime) | set(dev)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda env, pp: env["dependencies"].remove("numpy>=1.24"), "numpy (pyproject)"),
        (lambda env, pp: env["dependencies"].append("scipy"), "scipy (environment.yml)"),
        (lambda env, pp: pp["project"]["dependencies"].append("pandas>=2"), "pandas"),
        (lambda env, pp: pp["project"]["dependencies"].remove("torch>=2.9")
         or pp["project"]["dependencies"].append("torch>=2.10"), "torch: lower bound"),
        (lambda env, pp: env["dependencies"].pop(), "pip section"),
        (lambda env, pp: env.update(channels=["defaults"]), "channels"),
    ],
    ids=["missing", "extra", "new-dep", "bound", "no-pip-line", "channel"],
)
def test_the_comparison_can_fail(change, expected):
    env, project = copy.deepcopy(load_env()), copy.deepcopy(load_pyproject())
    change(env, project)
    problems = disagreements(env, project)
    assert any(expected in p for p in problems), problems


def _console_script() -> str:
    here = Path(sys.executable).parent
    for candidate in (here / "minitx", here / "minitx.exe", here / "Scripts" / "minitx.exe"):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("minitx")
    assert found, "the minitx console script is not installed (pip install -e .)"
    return found


def test_console_script_version():
    result = subprocess.run(
        [_console_script(), "--version"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"minitx {minitx.__version__}"


def test_console_script_help():
    result = subprocess.run(
        [_console_script(), "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: minitx")
    assert "--version" in result.stdout
