"""minitx.train.checkpoint: round trip, safe loading, clear errors, export."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import pytest
import torch

from minitx.data.batches import BlockBatches
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.checkpoint import (
    VERSION,
    CheckpointError,
    CheckpointNotFoundError,
    export_checkpoint,
    is_resumable,
    load_checkpoint,
    load_gpt,
    make_checkpoint,
    restore_trainer,
    save_checkpoint,
    strip_checkpoint,
)
from minitx.train.runtime import plan_runtime
from minitx.train.trainer import TrainConfig, Trainer

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"


def build(steps: int = 3):
    tok = CharTokenizer.from_text(TEXT)
    data = torch.tensor(tok.encode(TEXT * 20), dtype=torch.long)
    cfg = GPTConfig(tok.vocab_size, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=0.1)
    torch.manual_seed(0)
    model = GPT(cfg)
    tcfg = TrainConfig(max_steps=steps, batch_size=4, eval_interval=2, eval_steps=1)
    trainer = Trainer(model, tcfg, BlockBatches(data[:1000], data[1000:], 8, 4),
                      runtime=plan_runtime("cpu"), progress=False)
    trainer.train()
    return model, cfg, tok, trainer


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint after 3 steps, shared by the tests (they only read it)."""
    folder = tmp_path_factory.mktemp("ckpt")
    model, cfg, tok, trainer = build()
    path = save_checkpoint(
        make_checkpoint(model, cfg, tok, trainer, preset="tiny"), folder / "c.pt"
    )
    return path, model, tok, trainer


def test_round_trip_restores_model_tokenizer_and_state(saved):
    path, model, tok, trainer = saved
    ckpt = load_checkpoint(path)
    assert ckpt["preset"] == "tiny" and ckpt["version"] == VERSION
    assert ckpt["trainer"]["step"] == 3
    assert ckpt["trainer"]["history"] == trainer.history
    assert is_resumable(ckpt)
    model2, tok2, _ = load_gpt(path)
    assert tok2 == tok
    assert not model2.training
    x = torch.tensor([tok.encode("To be")])
    model.eval()
    assert torch.equal(model(x)[0], model2(x)[0])
    assert model2.lm_head.weight is model2.tok_emb.weight  # still tied


def test_files_hold_only_plain_data_and_tied_weights_once(saved):
    path, *_ = saved
    ckpt = torch.load(path, weights_only=True)  # would raise on any pickled object
    assert ckpt["model"]["lm_head.weight"].data_ptr() == ckpt["model"]["tok_emb.weight"].data_ptr()


def test_save_refuses_objects_a_safe_load_could_not_read(saved, tmp_path):
    path, *_ = saved
    ckpt = load_checkpoint(path)
    ckpt["preset"] = Path("tiny")
    with pytest.raises(TypeError, match=r"PosixPath|WindowsPath"):
        save_checkpoint(ckpt, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()
    assert not list(tmp_path.glob("*.tmp"))


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint at") as info:
        load_checkpoint(tmp_path / "nope.pt")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        load_checkpoint(tmp_path / "empty.pt")
    with pytest.raises(CheckpointError, match="not a file"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.99])
def test_truncated_file(saved, tmp_path, fraction):
    path, *_ = saved
    data = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(CheckpointError, match="truncated or corrupt") as info:
        load_checkpoint(cut)
    assert str(cut) in str(info.value)


def test_text_file(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n")
    with pytest.raises(CheckpointError, match=r"not a PyTorch checkpoint.*First Citizen"):
        load_checkpoint(text)


def test_foreign_torch_files(tmp_path):
    state = tmp_path / "state_dict.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), state)
    with pytest.raises(CheckpointError, match=r"not a minitx checkpoint.*weight"):
        load_checkpoint(state)
    tensor = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), tensor)
    with pytest.raises(CheckpointError, match="holds a Tensor"):
        load_checkpoint(tensor)


class _Payload:
    """Unpickling this would create a file: a stand-in for code hidden in a checkpoint."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (Path.touch, (Path(self.target),))


def test_pickled_code_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save({"format": "minitx-checkpoint", "payload": _Payload(str(marker))}, evil)
    assert not marker.exists()
    with pytest.raises(CheckpointError, match="refuses"):
        load_checkpoint(evil)
    assert not marker.exists()


def test_newer_format_and_incomplete_checkpoint(saved, tmp_path):
    path, *_ = saved
    ckpt = load_checkpoint(path)
    torch.save({**ckpt, "version": VERSION + 1}, tmp_path / "new.pt")
    with pytest.raises(CheckpointError, match="version"):
        load_checkpoint(tmp_path / "new.pt")
    del ckpt["tokenizer"]
    torch.save(ckpt, tmp_path / "part.pt")
    with pytest.raises(CheckpointError, match="missing \\['tokenizer'\\]"):
        load_checkpoint(tmp_path / "part.pt")


def test_weights_that_do_not_fit_the_config(saved, tmp_path):
    path, *_ = saved
    ckpt = load_checkpoint(path)
    ckpt["model_config"]["n_embd"] = 32
    with pytest.raises(CheckpointError, match="do not fit"):
        load_gpt(ckpt)


def test_weights_with_missing_or_extra_names_are_listed(saved):
    path, *_ = saved
    ckpt = load_checkpoint(path)
    ckpt["model"]["extra.weight"] = ckpt["model"].pop("ln_f.weight")
    with pytest.raises(CheckpointError, match=r"missing: ln_f\.weight; unexpected: extra\.weight"):
        load_gpt(ckpt)


def test_strip_and_export(saved, tmp_path):
    path, model, _, trainer = saved
    small = export_checkpoint(path, tmp_path / "small.pt")
    assert small.stat().st_size < path.stat().st_size
    ckpt = load_checkpoint(small)
    assert not is_resumable(ckpt)
    assert ckpt["trainer"]["step"] == 3 and ckpt["trainer"]["history"] == trainer.history
    model2, _, _ = load_gpt(small)
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters(), strict=True)
    )

    for name, dtype, rtol in (("bfloat16", torch.bfloat16, 1e-2), ("float16", torch.float16, 1e-3)):
        half = strip_checkpoint(load_checkpoint(path), name)
        assert half["weights_dtype"] == name
        assert half["model"]["tok_emb.weight"].dtype == dtype
        model3, _, _ = load_gpt(half)
        assert model3.tok_emb.weight.dtype == torch.float32
        assert model3.lm_head.weight is model3.tok_emb.weight  # still tied after the cast
        torch.testing.assert_close(model3.tok_emb.weight, model.tok_emb.weight, rtol=rtol,
                                   atol=1e-4)
    with pytest.raises(ValueError, match="dtype"):
        strip_checkpoint(load_checkpoint(path), "float8")


def test_restore_trainer(saved, tmp_path):
    path, model, _, trainer = saved
    model2, _, _, trainer2 = build(steps=1)
    restore_trainer(trainer2, load_checkpoint(path))
    assert trainer2.step == 3
    assert trainer2.history == trainer.history
    assert trainer2.best_val_loss == trainer.best_val_loss
    assert torch.equal(trainer2.generator.get_state(), trainer.generator.get_state())
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters(), strict=True)
    )
    exported = strip_checkpoint(load_checkpoint(path))
    with pytest.raises(CheckpointError, match="cannot be resumed"):
        restore_trainer(trainer2, exported)
    assert math.isfinite(trainer2.last_val_loss)


def test_make_checkpoint_checks_its_arguments(saved):
    _, model, tok, _ = saved
    with pytest.raises(TypeError, match="model_config"):
        make_checkpoint(model, "config", tok)
    with pytest.raises(TypeError, match="preset"):
        make_checkpoint(model, model.config, tok, preset=3)


# ---------------------------------------------------------------- nothing lost
def test_a_failed_save_leaves_the_old_file_whole_and_no_temporary_file(saved, tmp_path,
                                                                        monkeypatch):
    """Writes go to a temporary file in the same folder, then ``os.replace``: a save that
    dies half way (a full disk, a kill) leaves the previous checkpoint as it was."""
    path, model, tok, trainer = saved
    target = tmp_path / "ckpt.pt"
    target.write_bytes(path.read_bytes())
    before = target.read_bytes()
    ckpt = make_checkpoint(model, model.config, tok, trainer)
    real_save = torch.save

    def dies_half_way(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a file")
        raise OSError("No space left on device")

    monkeypatch.setattr(torch, "save", dies_half_way)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(ckpt, target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]
    monkeypatch.setattr(torch, "save", real_save)
    save_checkpoint(ckpt, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]
    assert load_checkpoint(target)["trainer"]["step"] == 3
    with pytest.raises(IsADirectoryError, match="is a folder"):
        save_checkpoint(ckpt, tmp_path)


def test_export_refuses_to_overwrite_and_never_replaces_its_source(saved, tmp_path,
                                                                   monkeypatch):
    path, *_ = saved
    run = tmp_path / "run"
    run.mkdir()
    src = run / "ckpt.pt"
    src.write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.pt").symlink_to(src)
    os.link(src, tmp_path / "hard.pt")
    for dst in (src, Path("run/ckpt.pt"), Path("run/../run/ckpt.pt"), Path("link.pt"),
                Path("hard.pt")):
        for overwrite in (False, True):
            with pytest.raises(FileExistsError, match="is the checkpoint being exported"):
                export_checkpoint(src, dst, overwrite=overwrite)
    assert is_resumable(load_checkpoint(src))
    other = tmp_path / "other.pt"
    other.write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="already exists"):
        export_checkpoint(src, other)
    assert other.read_bytes() == b"keep me"
    assert not is_resumable(load_checkpoint(export_checkpoint(src, other, overwrite=True)))


@pytest.fixture(params=[(0o022, "-rw-r--r--"), (0o077, "-rw-------")], ids=["022", "077"])
def umask(request):
    """The process's umask set to 022 or 077 for one test, and the mode a new file gets."""
    mask, mode = request.param
    old = os.umask(mask)
    try:
        yield mask, mode
    finally:
        os.umask(old)


def test_saved_and_exported_checkpoints_follow_the_umask(saved, tmp_path, umask):
    """A teacher shares a checkpoint on a hub: under umask 022 others can read it, as a file
    from open() would be, and under 077 they cannot (mkstemp alone would give -rw-------)."""
    _, model, tok, trainer = saved
    mask, mode = umask
    ckpt = save_checkpoint(make_checkpoint(model, model.config, tok, trainer), tmp_path / "c.pt")
    exported = export_checkpoint(ckpt, tmp_path / "small.pt")
    for written in (ckpt, exported):
        assert stat.filemode(written.stat().st_mode) == mode, written
    old = tmp_path / "replaced.pt"
    old.write_bytes(b"old")
    old.chmod(0o600 if mask == 0o022 else 0o644)  # a file replaced takes the umask's mode too
    export_checkpoint(ckpt, old, overwrite=True)
    assert stat.filemode(old.stat().st_mode) == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt", "replaced.pt", "small.pt"]
