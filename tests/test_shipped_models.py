"""The trained models in data/: each file matches its notes (command, sha256, size), and
its recorded validation loss is measured again here on a fixed subset of the split."""

from __future__ import annotations

import hashlib
import re

import pytest
import torch

from minitx.data import SHIPPED_MODELS, load_text, shipped_model_path, train_val_split
from minitx.data.tokenizer import CharTokenizer
from minitx.train.checkpoint import load_gpt
from minitx.train.evaluate import split_loss

SUBSET = 20_000  # the first tokens of the validation split
# The targets the presets were built for: cpu <= 1.70 (issue 15), large <= 1.55.
TARGET = {"small": 1.70, "large": 1.55}
PRESET = {"small": "cpu", "large": "large"}
MAX_BYTES = 12_000_000


def notes_of(which: str) -> str:
    return shipped_model_path(which).with_suffix(".md").read_text()


def recorded(notes: str, what: str) -> float:
    found = re.findall(rf"\*\*(\d\.\d{{4}})\*\* {what}", notes)
    assert len(found) == 1, (what, found)
    return float(found[0])


@pytest.fixture(scope="module")
def val_tokens() -> torch.Tensor:
    text = load_text("tinyshakespeare", download=False)
    tok = CharTokenizer.from_text(text)
    _, val = train_val_split(torch.tensor(tok.encode(text), dtype=torch.long), 0.9)
    return val


@pytest.mark.parametrize("which", sorted(SHIPPED_MODELS))
def test_file_matches_its_notes(which):
    path, notes = shipped_model_path(which), notes_of(which)
    assert path.stat().st_size <= MAX_BYTES
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert f"`{digest}`" in notes, "the sha256 in the notes is not the file's"
    assert re.search(rf"minitx train --preset {PRESET[which]} ", notes)
    model, _, ckpt = load_gpt(path)
    assert ckpt["preset"] == PRESET[which]
    assert next(model.parameters()).dtype == torch.float32  # restored, whatever was stored
    assert f"{model.num_parameters():,} parameters" in notes
    assert f"step {ckpt['trainer']['step']}" in notes or f"{ckpt['trainer']['step']} steps" in notes


@pytest.mark.parametrize("which", sorted(SHIPPED_MODELS))
def test_recorded_loss_is_measured_again(which, val_tokens):
    notes = notes_of(which)
    whole = recorded(notes, "over the whole validation split")
    subset = recorded(notes, f"on its first {SUBSET:,} tokens")
    assert whole <= TARGET[which]
    model, _, _ = load_gpt(shipped_model_path(which))
    measured = split_loss(model, val_tokens, model.config.block_size, max_tokens=SUBSET)
    assert measured == pytest.approx(subset, abs=2e-3)


def test_the_large_model_is_the_better_one(val_tokens):
    losses = {}
    for which in SHIPPED_MODELS:
        model, _, _ = load_gpt(shipped_model_path(which))
        losses[which] = split_loss(model, val_tokens, model.config.block_size, max_tokens=SUBSET)
    assert losses["large"] < losses["small"] - 0.1
