"""The hosted-CI workflow a teacher's fork runs: it parses, and its steps are the README's
(the learner's install, the developer's install and the test command) and docs/teaching.md's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "course.yml"
README = (REPO / "README.md").read_text(encoding="utf-8")
TEACHING = (REPO / "docs" / "teaching.md").read_text(encoding="utf-8")  # the teacher's path


def readme_block(heading: str) -> list[str]:
    """The command lines of the first ```bash block under ``heading`` in the README."""
    section = README.split(f"\n{heading}\n", 1)
    assert len(section) == 2, f"README has no heading {heading!r}"
    block = re.search(r"```bash\n(.*?)```", section[1], re.S)
    assert block is not None, f"no ```bash block under {heading!r}"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines()
            if line.split("#")[0].strip()]


@pytest.fixture(scope="module")
def workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict), "the workflow is not a YAML mapping"
    return data


@pytest.fixture(scope="module")
def steps(workflow: dict) -> list[dict]:
    job = workflow["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest"
    return job["steps"]


def test_the_student_edition_is_published_after_the_tests_pass_on_main(workflow: dict) -> None:
    job = workflow["jobs"]["student-edition"]
    assert job["needs"] == "test" and "refs/heads/main" in job["if"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "minitx edition student --out" in runs and "git push" in runs and " student" in runs
    assert set(workflow["jobs"]) == {"test", "student-edition"}


def run_lines(steps: list[dict]) -> list[str]:
    return [line.strip() for s in steps if "run" in s for line in s["run"].splitlines()
            if line.strip()]


def test_workflow_triggers_on_push_and_pull_request(workflow: dict) -> None:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert {"push", "pull_request"} <= set(on)


def test_python_is_set_up_with_a_pip_cache(steps: list[dict]) -> None:
    setup = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert len(setup) == 1
    assert setup[0]["with"]["python-version"] == "3.11"
    assert setup[0]["with"]["cache"] == "pip"
    assert steps[0]["uses"].startswith("actions/checkout@")


def test_steps_are_the_readme_commands_in_order(steps: list[dict]) -> None:
    lines = run_lines(steps)
    torch_cpu = next(i for i, line in enumerate(lines) if "torch" in line)
    assert "download.pytorch.org/whl/cpu" in lines[torch_cpu], lines[torch_cpu]
    install = lines.index('python -m pip install -e ".[dev]"')
    download = lines.index("python -m minitx.data download tinyshakespeare")
    assert torch_cpu < install < download < len(lines) - 1
    # The last step is the README's test command, exactly.
    assert [lines[-1]] == readme_block("### Tests in one command")
    assert "python -m minitx.data download tinyshakespeare" in README
    # The README's learner installs the same package (with the notebooks' extra, from the
    # checkout or the index), writes the course and opens it; its developer installs what
    # CI installs; the teachers' section (docs/teaching.md) names the file, and README too.
    assert readme_block("## Take the course") == [
        'python -m pip install "minitx[notebooks]"', "minitx course my-course",
        "jupyter lab my-course"]
    learner = README.split("\n## Take the course\n", 1)[1].split("\n## ", 1)[0]
    assert 'python -m pip install ".[notebooks]"' in learner  # from a checkout
    assert readme_block("## Developing") == ['python -m pip install -e ".[dev]"']  # what CI does
    assert ".github/workflows/course.yml" in README
    assert ".github/workflows/course.yml" in TEACHING
    assert 'python -m pip install -e ".[dev]"' in TEACHING.split(
        "\n## The course's CI in your fork\n", 1)[1]


def test_the_readme_torch_cpu_hint_matches_the_workflow(steps: list[dict]) -> None:
    (line,) = [line for line in run_lines(steps) if "torch" in line]
    index_url = line.split("--index-url", 1)[1].strip()
    assert index_url in README
