"""Documents that cannot drift from the code and the recorded files.

- The shipped models' figures in docs/benchmarks.md, data/README.md and
  instructor/TEACHING.md come from their records
  (minitx/data/checkpoints/minigpt_shakespeare*.md), which agree with the checkpoints
  themselves.
- instructor/TEACHING.md has a section for every notebook, 00 included, and says what
  notebook 08 trains with as the code does; README counts the kinds of exercise the registry
  has.
- The licence pyproject.toml declares is in a LICENSE file; the student install has no
  test tools, the developer install has everything the student install has.
- Tests that need the corpus skip, with the reason, when it is absent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minitx.data import SHIPPED_MODELS, shipped_model_path
from minitx.train.checkpoint import load_checkpoint

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 has no tomllib
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
PRESET = {"small": "cpu", "large": "large"}
NUMBER_WORDS = {3: "three", 4: "four", 5: "five", 6: "six"}
TEACHING = "instructor/TEACHING.md"  # the teacher's guide: model answers, off the learner's path
BENCHMARKS = "docs/benchmarks.md"  # the presets' table and the shipped models' sizes


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def record(which: str) -> dict[str, str]:
    """What a shipped model's notes record: its whole-split loss, the loss on the trainer's
    fixed batches, the file size and the weights' dtype."""
    notes = shipped_model_path(which).with_suffix(".md").read_text(encoding="utf-8")
    whole = re.findall(r"\*\*(\d\.\d{4})\*\* over the whole validation split", notes)
    batches = re.findall(r"(\d\.\d{4}) on the trainer's 20 fixed validation batches", notes)
    size = re.findall(r"\| file \| (\d+\.\d) MB; weights (?:stored )?in (\w+)", notes)
    assert len(whole) == len(batches) == len(size) == 1, (which, whole, batches, size)
    return {"whole": whole[0], "batches": batches[0], "mb": size[0][0], "dtype": size[0][1]}


@pytest.mark.parametrize("which", sorted(SHIPPED_MODELS))
def test_each_record_agrees_with_its_checkpoint(which):
    path = shipped_model_path(which)
    rec, ckpt = record(which), load_checkpoint(path)
    assert ckpt["preset"] == PRESET[which]
    assert ckpt["weights_dtype"] == rec["dtype"]
    assert f"{ckpt['trainer']['best_val_loss']:.4f}" == rec["batches"]
    assert f"{path.stat().st_size / 1e6:.1f}" == rec["mb"]


@pytest.mark.parametrize("which", sorted(SHIPPED_MODELS))
def test_data_readme_gives_the_recorded_figures(which):
    rec = record(which)
    bullet = next(b for b in read("data/README.md").split("\n- ")
                  if b.startswith(f"`{SHIPPED_MODELS[which]}`"))
    assert f"`{PRESET[which]}` preset" in bullet
    assert f"**{rec['whole']}** over the whole validation split" in bullet
    assert f"{rec['mb']} MB" in bullet and f"{rec['dtype']} weights" in bullet


def test_no_document_gives_another_loss_for_a_shipped_model():
    """Every loss the documents give next to a shipped model's name is a recorded one."""
    recorded = {v for which in SHIPPED_MODELS for k, v in record(which).items()
                if k in ("whole", "batches")}
    text = read("data/README.md")
    losses = set(re.findall(r"loss (?:of )?\**(\d\.\d{2,4})", text))
    assert losses and losses <= recorded, losses - recorded
    rows = {row.split("|")[1].strip(" `"): row for row in read(BENCHMARKS).splitlines()
            if row.startswith("| `")}
    for which, preset in PRESET.items():
        whole = record(which)["whole"]
        assert f"{whole} over the whole validation split" in rows[preset], rows[preset]
    size = record("large")
    assert f"{size['dtype']} weights, {size['mb']} MB" in read(BENCHMARKS)


def test_the_loss_check_catches_a_stale_figure(tmp_path):
    stale = "(validation loss 1.78), 3.2 MB"
    found = set(re.findall(r"loss (?:of )?\**(\d\.\d{2,4})", stale))
    recorded = {record(w)["whole"] for w in SHIPPED_MODELS}
    assert found == {"1.78"} and not found <= recorded


# ---- the teacher's guide and the README --------------------------------------------------


def _section(markdown: str, number: str) -> str:
    return markdown.split(f"\n## {number} ", 1)[1].split("\n## ", 1)[0]


def test_teaching_md_covers_every_notebook_00_included():
    teaching = read(TEACHING)
    for nb in sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"\n## {nb} " in teaching, f"{TEACHING} has no section for notebook {nb}"
    assert "Learning goals" in _section(teaching, "00")


def test_teaching_md_names_the_recipe_notebook_08_trains_with():
    """Notebook 08 trains with ladder_recipe() (the cpu preset's recipe): the guide must
    name its optimizer and schedule, and no other."""
    from minitx.course.ladder import ladder_recipe

    train = ladder_recipe().train
    words = {"muon": "Muon", "adamw": "AdamW", "wsd": "warmup-stable-decay",
             "cosine": "cosine"}
    goals = _section(read(TEACHING), "08").split("**Misconceptions", 1)[0]
    assert words[train.optimizer] in goals and words[train.schedule] in goals
    others = {"wsd": "cosine", "cosine": "warmup-stable-decay"}
    assert others[train.schedule] not in goals


def test_readme_counts_the_kinds_of_exercise():
    from minitx.course.exercises import KINDS

    text = read("README.md")
    assert f"exercises of {NUMBER_WORDS[len(KINDS)]} kinds" in text
    for kind in KINDS:
        assert f"**{kind}**" in text


# ---- licence and installs ----------------------------------------------------------------


def _pyproject() -> dict:
    return tomllib.loads(read("pyproject.toml"))


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[;\s]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_declared_licence_is_in_a_file():
    project = _pyproject()["project"]
    assert project["license"] == "MIT" and "LICENSE" in project["license-files"]
    text = read("LICENSE")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the minitx authors" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_students_install_no_test_tools_and_developers_get_everything():
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    notebooks = _names(extras["notebooks"])
    assert {"jupyterlab", "ipykernel", "ipywidgets", "matplotlib"} <= notebooks
    assert not notebooks & {"pytest", "pytest-timeout", "nbval", "ruff", "playwright"}
    assert notebooks <= _names(extras["dev"]) | _names(project["dependencies"])
    readme = read("README.md")
    learner = readme.split("\n## Take the course\n", 1)[1].split("\n## ", 1)[0]
    developer = readme.split("\n## Developing\n", 1)[1].split("\n## ", 1)[0]
    assert 'pip install "minitx[notebooks]"' in learner
    assert 'pip install ".[notebooks]"' in learner and '".[dev]"' not in learner
    assert 'pip install -e ".[dev]"' in developer


# ---- tests that need the corpus skip without it ------------------------------------------


@pytest.mark.needs_shakespeare
def test_probe_marked():
    """Run by the test below without the corpus: skipped by its marker."""
    from minitx.data import load_text

    assert len(load_text("tinyshakespeare", download=False)) == 1_115_394


def test_probe_unmarked():
    """Run by the test below without the corpus: not marked, skipped for the missing file."""
    from minitx.data import load_text

    assert load_text("tinyshakespeare", download=False).startswith("First Citizen")


@pytest.fixture
def corpus_text() -> str:
    from minitx.data import load_text

    return load_text("tinyshakespeare", download=False)


def test_probe_fixture(corpus_text):
    """Run by the test below without the corpus: its fixture stops, the test is skipped."""
    assert corpus_text.startswith("First Citizen")


def test_corpus_tests_skip_with_the_reason_when_it_is_absent(tmp_path):
    env = {**os.environ, "MINITX_DATA": str(tmp_path / "no-corpus"), "OMP_NUM_THREADS": "1",
           "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    # (No exercise checker reads the corpus any more: each checks against sealed answers.)
    probes = [f"tests/test_documents.py::test_probe_{p}" for p in ("marked", "unmarked",
                                                                   "fixture")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *probes, "-p", "no:cacheprovider", "-o", "addopts=",
         "-rs", "-q"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 skipped" in done.stdout and "passed" not in done.stdout, done.stdout
    reasons = re.findall(r"SKIPPED \[(\d+)\] .*: (needs the tiny Shakespeare corpus .*)",
                         done.stdout)  # pytest groups equal reasons: [count]
    assert sum(int(n) for n, _ in reasons) == 3, done.stdout
    assert all("python -m minitx.data download tinyshakespeare" in why for _, why in reasons)
