"""The two date models the package ships for notebook 10 (minitx/data/checkpoints/date_models.pt):
made by benchmarks/bench_date_models.py --record, recorded in benchmarks/results/date_models.json,
small, in the wheel, and loaded as what the record says they are."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path

import pytest
import tomllib
import torch

from minitx.course.date_translation import (
    DATE_MODELS,
    SHIPPED_DATE_MODELS,
    build_date_model,
    load_date_models,
)
from minitx.data import dates
from minitx.nn.encoder_decoder import DateTransformer
from minitx.nn.seq2seq import Seq2Seq, translate

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "benchmarks" / "results" / "date_models.json").read_text())


def test_the_checkpoint_is_the_recorded_one_small_and_in_the_wheel() -> None:
    data = SHIPPED_DATE_MODELS.read_bytes()
    assert len(data) < 1_000_000 and len(data) == RECORD["checkpoint"]["bytes"]
    assert hashlib.sha256(data).hexdigest() == RECORD["checkpoint"]["sha256"]
    assert ROOT / RECORD["checkpoint"]["path"] == SHIPPED_DATE_MODELS
    card = SHIPPED_DATE_MODELS.with_suffix(".md").read_text()
    assert RECORD["checkpoint"]["sha256"] in card
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["minitx.data"]
    relative = SHIPPED_DATE_MODELS.relative_to(ROOT / "minitx" / "data").as_posix()
    assert any(fnmatch.fnmatch(relative, p) for p in patterns), patterns


def test_the_checkpoint_carries_the_records_summary() -> None:
    ckpt = torch.load(SHIPPED_DATE_MODELS, weights_only=True)
    assert json.loads(json.dumps(ckpt["summary"])) == RECORD["summary"]
    for name, summary in RECORD["summary"].items():
        assert ckpt["models"][name]["lr"] == summary["lr"]
        row = next(r for r in RECORD["rows"] if r["final"] and r["model"] == name
                   and r["seed"] == 0)
        assert ckpt["seed0"][name]["test_acc_by_format"] == row["test_acc_by_format"]


def test_load_date_models_gives_the_seed_0_models_of_the_record() -> None:
    models = load_date_models()
    assert list(models) == ["Bahdanau (GRU)", "transformer"] and set(models) <= set(DATE_MODELS)
    assert isinstance(models["Bahdanau (GRU)"], Seq2Seq)
    assert isinstance(models["transformer"], DateTransformer)
    test = dates.generate(1000, seed=3, n_dates=1)[:300]  # notebook 10's test inputs
    for name, model in models.items():
        assert not model.training
        assert sum(p.numel() for p in model.parameters()) == RECORD["summary"][name]["parameters"]
        outputs = translate(model, [e.source for e in test])
        acc = sum(o == e.target for (o, _), e in zip(outputs, test, strict=True)) / len(test)
        assert acc >= 0.9, (name, acc)  # trained: the record's full-set figure is checked below


def test_the_record_summaries_follow_from_its_rows() -> None:
    for name, summary in RECORD["summary"].items():
        final = [r for r in RECORD["rows"] if r["model"] == name and r["final"]]
        assert [r["seed"] for r in final] == [0, 1, 2] and {r["lr"] for r in final} == {
            summary["lr"]}
        assert summary["lr"] in RECORD["recipe"]["lrs_swept"][name]
        swept = [r for r in RECORD["rows"] if r["model"] == name and r["seed"] == 0]
        assert sorted(r["lr"] for r in swept) == sorted(RECORD["recipe"]["lrs_swept"][name])
        reached = [r for r in swept if r["steps_to_99"] is not None]
        assert min(reached, key=lambda r: r["steps_to_99"])["lr"] == summary["lr"]
        accs = [r["test_acc"] for r in final]
        assert summary["test_acc"]["all"]["mean"] == pytest.approx(sum(accs) / 3, abs=1e-4)
        assert summary["steps_to_95"] == [r["steps_to_95"] for r in final]


def test_bad_names_and_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        build_date_model("lstm")
    with pytest.raises(FileNotFoundError, match="date models"):
        load_date_models(tmp_path / "missing.pt")
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a date-models checkpoint"):
        load_date_models(tmp_path / "other.pt")
