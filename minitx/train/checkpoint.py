"""Checkpoints: save a training run, load it back safely, resume it exactly, export it small.

A checkpoint is one ``torch.save`` file holding a plain dict::

    {
      "format": "minitx-checkpoint", "version": 1,
      "model_config": {...},          # GPTConfig fields (a plain dict)
      "model": {name: tensor},        # the weights (state_dict)
      "tokenizer": {...},             # CharTokenizer or BPETokenizer .to_dict()
      "preset": "cpu" | None,         # minitx.train.presets name the run started from
      "trainer": {...} | None,        # Trainer.state_dict(): step, optimizer, RNG states,
                                      # best/last val loss, history, train config
      "weights_dtype": "float32",
      "meta": {"minitx": ..., "torch": ...},
    }

Only tensors, dicts, lists, str, int, float, bool and None are stored, so loading uses
``torch.load(weights_only=True)``: a checkpoint cannot run code when it is opened.
An *exported* checkpoint (``strip_checkpoint`` / ``export_checkpoint``) keeps the weights,
vocabulary, config, step and history, but not the optimizer state or RNG states: it can be
sampled from and evaluated, not resumed.

Anything wrong with a file (missing, empty, truncated, not a PyTorch file, a PyTorch file
that is not a minitx checkpoint) raises ``CheckpointError`` (a ``ValueError``) naming it.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import warnings
import zipfile
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from minitx.data.encoded import Tokenizer
    from minitx.nn.gpt import GPT
    from minitx.train.trainer import Trainer

FORMAT = "minitx-checkpoint"
VERSION = 1
REQUIRED_KEYS = ("format", "version", "model_config", "model", "tokenizer")
_WEIGHT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class CheckpointError(ValueError):
    """A checkpoint file cannot be used; the message says which file and why."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """There is no file at the checkpoint path."""


# ---------------------------------------------------------------- building and saving
def make_checkpoint(
    model: nn.Module,
    model_config: dict | Any,
    tokenizer: dict | Any,
    trainer: Trainer | None = None,
    preset: str | None = None,
) -> dict:
    """Assemble the checkpoint dict of a model (and, to allow resuming, its trainer).

    ``model_config`` and ``tokenizer`` may be a dataclass / an object with ``to_dict()``
    or already a dict. Weights are copied to the CPU.
    """
    if is_dataclass(model_config) and not isinstance(model_config, type):
        model_config = asdict(model_config)
    if hasattr(tokenizer, "to_dict"):
        tokenizer = tokenizer.to_dict()
    if not isinstance(model_config, dict) or not isinstance(tokenizer, dict):
        raise TypeError(
            "model_config and tokenizer must be dicts (or a dataclass / an object with "
            f"to_dict()), got {type(model_config).__name__} and {type(tokenizer).__name__}"
        )
    if preset is not None and not isinstance(preset, str):
        raise TypeError(f"preset must be a str or None, got {type(preset).__name__}")
    from minitx import __version__

    return {
        "format": FORMAT,
        "version": VERSION,
        "model_config": dict(model_config),
        "model": _convert_shared(model.state_dict(), None),
        "tokenizer": dict(tokenizer),
        "preset": preset,
        "trainer": None if trainer is None else trainer.state_dict(),
        "weights_dtype": "float32",
        "meta": {"minitx": str(__version__), "torch": str(torch.__version__)},
    }


def _convert_shared(state: dict[str, Tensor], dtype: torch.dtype | None) -> dict[str, Tensor]:
    """Detached CPU copies of ``state`` (floating tensors cast to ``dtype`` if given).

    Tensors that are views of the same memory (a tied embedding and output head) stay
    one tensor, so the file stores them once and they load tied.
    """
    done: dict[tuple, Tensor] = {}
    out = {}
    for name, t in state.items():
        key = (t.device, t.data_ptr(), t.dtype, tuple(t.shape), tuple(t.stride()))
        if key not in done:
            c = t.detach().cpu()
            if dtype is not None and c.is_floating_point():
                c = c.to(dtype)
            done[key] = c
        out[name] = done[key]
    return out


_PLAIN = (str, int, float, bool, type(None), Tensor, torch.Size)


def _check_plain(obj: Any, where: str = "checkpoint") -> None:
    """Raise TypeError unless ``obj`` holds only what ``weights_only`` loading accepts."""
    if type(obj) in (dict,):
        for k, v in obj.items():
            if type(k) not in (str, int):
                raise TypeError(f"{where}: key {k!r} is a {type(k).__name__}, expected str or int")
            _check_plain(v, f"{where}[{k!r}]")
    elif type(obj) in (list, tuple):
        for i, v in enumerate(obj):
            _check_plain(v, f"{where}[{i}]")
    elif type(obj) not in _PLAIN and not isinstance(obj, Tensor):
        raise TypeError(
            f"{where} is a {type(obj).__module__}.{type(obj).__name__}; a checkpoint holds only "
            "tensors, dicts, lists, str, int, float, bool and None"
        )


def save_checkpoint(ckpt: dict, path: str | os.PathLike) -> Path:
    """Write ``ckpt`` to ``path`` atomically: a temporary file in the same folder, flushed
    to disk, then ``os.replace``, so an interrupted save never leaves a half-written
    checkpoint behind and the file it replaces stays whole until then. Its permissions follow
    the umask, as ``open()``'s do (``-rw-r--r--`` under umask 022). Returns the path.

    Raises ``TypeError`` if ``ckpt`` holds anything but tensors and plain Python values
    (it could not be loaded back with ``weights_only=True``).
    """
    from minitx.data.corpus import new_file_mode

    _check_structure(ckpt, "the checkpoint to save")
    _check_plain(ckpt)
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; a checkpoint is written to a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(ckpt, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, new_file_mode())  # mkstemp made it 0o600: follow the umask, as open() does
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


# ---------------------------------------------------------------- loading
def _describe_start(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(24)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    first = text.splitlines()[0] if text.strip() else ""
    if first and first.isprintable():
        return f"the text {first!r}"
    return f"the bytes {head[:8]!r}"


def _zip_is_complete(path: Path) -> bool:
    """True when ``path`` is a zip archive whose directory and every member's CRC read."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None
    except (zipfile.BadZipFile, EOFError, OSError):
        return False


def _load_error(path: Path, err: BaseException) -> CheckpointError:
    """Say what is wrong with a file ``torch.load`` refused, from the file itself (its
    signature and archive) and the kind of error, never from torch's wording."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        magic = f.read(4)
    is_zip = magic == b"PK\x03\x04"  # torch.save writes a zip archive
    is_pickle = magic[:1] == b"\x80"  # a bare pickle (protocol >= 2, legacy torch.save)
    if not is_zip and not is_pickle:
        return CheckpointError(
            f"{path} is not a PyTorch checkpoint (a torch.save file is a zip archive; this "
            f"one starts with {_describe_start(path)})"
        )
    if is_zip and not _zip_is_complete(path):
        return CheckpointError(
            f"{path} is truncated or corrupt: its zip archive cannot be read ({size:,} bytes)"
        )
    if isinstance(err, pickle.UnpicklingError):
        return CheckpointError(
            f"{path} is not a minitx checkpoint: the safe loader (weights_only=True) refuses "
            "its contents, which hold Python objects other than tensors and plain values "
            f"({type(err).__name__})"
        )
    return CheckpointError(
        f"{path} is truncated or corrupt: torch.load stopped with {type(err).__name__} "
        f"({size:,} bytes)"
    )


def _check_structure(ckpt: Any, where: str) -> None:
    if not isinstance(ckpt, dict):
        raise CheckpointError(
            f"{where} is not a minitx checkpoint: it holds a {type(ckpt).__name__}, "
            f"expected a dict with format {FORMAT!r}"
        )
    if ckpt.get("format") != FORMAT:
        keys = sorted(map(str, ckpt))[:8]
        raise CheckpointError(
            f"{where} is not a minitx checkpoint: no format {FORMAT!r} marker "
            f"(it is a dict with keys {keys})"
        )
    version = ckpt.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CheckpointError(
            f"{where} has checkpoint format version {version!r}; this minitx reads up to "
            f"version {VERSION} (upgrade minitx)"
        )
    missing = [k for k in REQUIRED_KEYS if k not in ckpt]
    if missing:
        raise CheckpointError(f"{where} is incomplete: missing {missing}")
    for key in ("model_config", "model", "tokenizer"):
        if not isinstance(ckpt[key], dict):
            raise CheckpointError(
                f"{where}: '{key}' should be a dict, got {type(ckpt[key]).__name__}"
            )
    bad = [k for k, v in ckpt["model"].items() if not isinstance(v, Tensor)]
    if bad:
        raise CheckpointError(f"{where}: weights {bad[:5]} are not tensors")
    trainer = ckpt.get("trainer")
    if trainer is not None and not isinstance(trainer, dict):
        raise CheckpointError(
            f"{where}: 'trainer' should be a dict or None, got {type(trainer).__name__}"
        )


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Read and validate a checkpoint with ``torch.load(weights_only=True)``.

    Raises ``CheckpointNotFoundError`` if there is no file, ``CheckpointError`` if the
    file is empty, truncated, not a PyTorch file, refused by the safe loader, or not a
    minitx checkpoint.
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointNotFoundError(f"no checkpoint at {path}")
    if not path.is_file():
        raise CheckpointError(f"{path} is not a file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path} is empty (0 bytes)")
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols of foreign files
            warnings.filterwarnings("ignore", message=".*pickle protocol.*")
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile, OSError) as err:
        raise _load_error(path, err) from err
    _check_structure(ckpt, str(path))
    return ckpt


def is_resumable(ckpt: dict) -> bool:
    """True when ``ckpt`` carries optimizer and RNG states (it was not exported)."""
    trainer = ckpt.get("trainer")
    return isinstance(trainer, dict) and "optimizer" in trainer and "rng" in trainer


# ---------------------------------------------------------------- resuming
def restore_trainer(trainer: Trainer, ckpt: dict, where: str = "checkpoint") -> None:
    """Load weights and trainer state from ``ckpt`` into ``trainer`` (and its model).

    After this, ``trainer.train(n)`` continues as if the run had never stopped.
    """
    if not is_resumable(ckpt):
        raise CheckpointError(
            f"{where} cannot be resumed: it has no optimizer/RNG state (an exported checkpoint)"
        )
    _load_weights(trainer.model, ckpt, where)
    try:
        trainer.load_state_dict(ckpt["trainer"])
    except (ValueError, KeyError, RuntimeError) as err:
        raise CheckpointError(f"{where}: trainer state does not fit this run ({err})") from err


def _load_weights(model: nn.Module, ckpt: dict, where: str) -> None:
    """Copy the checkpoint's weights into ``model`` after checking names and shapes."""
    expected = model.state_dict()
    stored = ckpt["model"]
    missing = [k for k in expected if k not in stored]
    unexpected = [k for k in stored if k not in expected]
    wrong_shape = [
        f"{k} {tuple(stored[k].shape)} in the file, {tuple(v.shape)} in the model"
        for k, v in expected.items()
        if k in stored and stored[k].shape != v.shape
    ]
    problems = [
        f"{what}: {', '.join(items[:4])}{f' and {len(items) - 4} more' if len(items) > 4 else ''}"
        for what, items in (("missing", missing), ("unexpected", unexpected),
                            ("shape", wrong_shape))
        if items
    ]
    if problems:
        raise CheckpointError(f"{where}: weights do not fit the model ({'; '.join(problems)})")
    model.load_state_dict(stored)


# ---------------------------------------------------------------- exporting
def strip_checkpoint(ckpt: dict, dtype: str = "float32") -> dict:
    """A copy of ``ckpt`` for sharing: no optimizer or RNG states, weights in ``dtype``
    ('float32', 'float16' or 'bfloat16'; the half precisions halve the file, and loading
    restores float32). Step, history, best/last val loss and configs stay."""
    _check_structure(ckpt, "the checkpoint to strip")
    if dtype not in _WEIGHT_DTYPES:
        raise ValueError(f"dtype must be one of {list(_WEIGHT_DTYPES)}, got {dtype!r}")
    out = dict(ckpt)
    out["model"] = _convert_shared(ckpt["model"], _WEIGHT_DTYPES[dtype])
    out["weights_dtype"] = dtype
    trainer = ckpt.get("trainer")
    if trainer is not None:
        dropped = ("optimizer", "rng", "loss_window")
        out["trainer"] = {k: v for k, v in trainer.items() if k not in dropped}
    return out


def export_checkpoint(src: str | os.PathLike, dst: str | os.PathLike, dtype: str = "float32",
                      *, overwrite: bool = False) -> Path:
    """Load ``src``, strip it (``strip_checkpoint``) and save it to ``dst``. Returns ``dst``.

    ``dst`` may not be ``src`` (exporting in place would replace a resumable run with a copy
    that cannot resume), and an existing ``dst`` is replaced only with ``overwrite=True``;
    either is a ``FileExistsError``, raised before anything is read."""
    src, dst = Path(src), Path(dst)
    same = dst.exists() and src.exists() and os.path.samefile(src, dst)  # a link counts too
    if same or dst.resolve() == src.resolve():
        raise FileExistsError(f"{dst} is the checkpoint being exported: exporting in place "
                              "would replace a resumable run; write the copy to another file")
    if dst.exists() and not overwrite:
        raise FileExistsError(f"{dst} already exists; --force (overwrite=True) replaces it")
    return save_checkpoint(strip_checkpoint(load_checkpoint(src), dtype), dst)


# ---------------------------------------------------------------- convenience for GPT
def load_gpt(
    path_or_ckpt: str | os.PathLike | dict, device: str | torch.device = "cpu"
) -> tuple[GPT, Tokenizer, dict]:
    """Rebuild the ``GPT`` (in eval mode on ``device``) and tokenizer of a checkpoint.

    Returns ``(model, tokenizer, ckpt)``; weights are float32 whatever was stored.
    """
    from minitx.data.encoded import tokenizer_from_dict
    from minitx.nn.gpt import GPT, GPTConfig

    if isinstance(path_or_ckpt, dict):
        ckpt, where = path_or_ckpt, "checkpoint"
        _check_structure(ckpt, where)
    else:
        ckpt, where = load_checkpoint(path_or_ckpt), str(path_or_ckpt)
    try:
        config = GPTConfig(**ckpt["model_config"])
        tokenizer = tokenizer_from_dict(ckpt["tokenizer"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{where}: bad model config or vocabulary ({err})") from err
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{where}: the vocabulary has {tokenizer.vocab_size} symbols but "
                              f"the model expects {config.vocab_size}")
    model = GPT(config)
    _load_weights(model, ckpt, where)
    return model.to(device).eval(), tokenizer, ckpt


__all__ = [
    "CheckpointError",
    "CheckpointNotFoundError",
    "export_checkpoint",
    "is_resumable",
    "load_checkpoint",
    "load_gpt",
    "make_checkpoint",
    "restore_trainer",
    "save_checkpoint",
    "strip_checkpoint",
]
