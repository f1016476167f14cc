"""Corpora: a registry of named text files, a checksum-verified download, and a cache.

    >>> from minitx.data import load_text
    >>> text = load_text("tinyshakespeare")   # downloads once, verifies size and sha256
    >>> len(text)
    1115394

Where files live (``data_dir()``): the ``MINITX_DATA`` environment variable if set, else the
repository's ``data/`` folder when minitx runs from a checkout, else a per-user cache folder.
A file is used only after its size and sha256 match the registry; a bad copy is never
silently replaced or used. The trained models the course loads are not corpora: they are
package data (``shipped_model_path``).

Command line::

    python -m minitx.data list
    python -m minitx.data verify tinyshakespeare
    python -m minitx.data download tinyshakespeare
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

_CHUNK = 1 << 16
_TIMEOUT_S = 30.0

_S = TypeVar("_S")


def new_file_mode() -> int:
    """The permission bits a new file gets here, ``0o666 & ~umask``: what ``open()`` would
    give, and what a download or a checkpoint written through a private temporary file (which
    ``tempfile.mkstemp`` makes ``0o600``) is set to before it is renamed into place. Under
    umask 022 that is ``0o644`` (others can read it: a teacher can share it on a hub), under
    077 ``0o600``.

    The umask is read from ``/proc/self/status`` where Linux gives it; elsewhere it is set and
    restored at once, which another thread creating a file at that instant could see.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next((x for x in status if x.startswith("Umask:")), None)
        if line is not None:
            return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class CorpusError(ValueError):
    """A corpus file is missing its expected content (wrong size or checksum), or its
    download failed."""


class DownloadError(CorpusError):
    """A download did not deliver the expected file (network error, interrupted
    transfer, wrong content). No partial file is left behind."""


@dataclass(frozen=True)
class Corpus:
    """One entry of the registry: where to fetch a file and what it must contain."""

    name: str
    url: str
    sha256: str
    size: int  # bytes
    filename: str
    description: str = ""


CORPORA: dict[str, Corpus] = {
    "tinyshakespeare": Corpus(
        name="tinyshakespeare",
        url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
        sha256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        size=1_115_394,
        filename="tinyshakespeare.txt",
        description="40,000 lines of Shakespeare plays, the char-rnn 'tiny shakespeare' file",
    ),
}


def get_corpus(name: str) -> Corpus:
    """The registry entry for ``name``; ``ValueError`` listing the known names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"corpus name must be a str, got {type(name).__name__}")
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; known corpora: {', '.join(sorted(CORPORA))}")
    return CORPORA[name]


def _repo_root() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def _user_cache_dir() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "minitx" / "data"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "minitx" / "data"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "minitx" / "data"


def data_dir() -> Path:
    """The folder that holds the corpora (not created here).

    ``$MINITX_DATA`` if set; else ``<repo>/data`` when running from a checkout (the package's
    parent folder has a ``pyproject.toml``); else a per-user cache folder.
    """
    override = os.environ.get("MINITX_DATA")
    if override:
        return Path(override).expanduser()
    root = _repo_root()
    if root is not None:
        return root / "data"
    return _user_cache_dir()


SHIPPED_MODELS = {
    "large": "minigpt_shakespeare_large.pt",  # the `large` preset: the best model shipped
    "small": "minigpt_shakespeare.pt",  # the `cpu` preset: what notebook 08 trains, finished
}


_CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"


def shipped_model_path(which: str = "large") -> Path:
    """Path of a trained GPT shipped with the package ('large' or 'small'), with its model
    card beside it (the same name, ``.md``).

    The checkpoints are package data (``minitx/data/checkpoints/``): a checkout and an
    installed wheel both have them, and ``$MINITX_DATA``, which moves the corpora, does
    not move them.
    """
    if which not in SHIPPED_MODELS:
        raise ValueError(f"which must be one of {sorted(SHIPPED_MODELS)}, got {which!r}")
    path = _CHECKPOINTS / SHIPPED_MODELS[which]
    if not path.is_file():
        raise FileNotFoundError(
            f"the shipped model {SHIPPED_MODELS[which]} should come with the minitx package "
            f"but is not at {path}: reinstall minitx, or pass a checkpoint path instead"
        )
    return path


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: str | os.PathLike, sha256: str, size: int, *, fix_hint: str = "") -> None:
    """Check that ``path`` has exactly ``size`` bytes and the given ``sha256`` (hex).

    Raises ``FileNotFoundError`` if there is no file, ``CorpusError`` naming the expected
    and the found size and checksum if it differs. ``fix_hint`` is appended to the message.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no file at {path}")
    found_size = path.stat().st_size
    found_sha = _sha256_of(path)
    if found_size != size or found_sha != sha256.lower():
        hint = fix_hint or f"Delete {path} and fetch a good copy."
        raise CorpusError(
            f"{path} is not the expected file.\n"
            f"  expected: {size:,} bytes, sha256 {sha256.lower()}\n"
            f"  found:    {found_size:,} bytes, sha256 {found_sha}\n"
            f"{hint}"
        )


def download(
    url: str,
    dest: str | os.PathLike,
    sha256: str,
    size: int,
    progress: bool = True,
) -> Path:
    """Download ``url`` to ``dest``, verified, atomically.

    The bytes go to a temporary ``*.part`` file in ``dest``'s folder (with a tqdm progress
    bar), are checked against ``size`` and ``sha256``, and only then moved into place with
    ``os.replace``. Any failure (network error, a transfer cut short, wrong content,
    Ctrl-C) removes the temporary file and raises; ``DownloadError`` for the first three.
    Returns ``dest`` as a ``Path``.
    """
    from tqdm.auto import tqdm

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f"{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    received = 0
    done = False
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                response = urllib.request.urlopen(url, timeout=_TIMEOUT_S)
            except OSError as err:  # URLError, HTTPError, timeouts are all OSErrors
                raise DownloadError(f"could not download {url}: {err}") from err
            with response:
                announced = response.headers.get("Content-Length")
                announced = int(announced) if announced is not None else None
                bar = tqdm(
                    total=announced or size,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    desc=dest.name,
                    disable=not progress,
                    leave=False,
                )
                with bar:
                    while True:
                        try:
                            chunk = response.read(_CHUNK)
                        except OSError as err:  # includes http.client.IncompleteRead
                            raise DownloadError(
                                f"download of {url} was interrupted after {received:,} "
                                f"bytes: {err}"
                            ) from err
                        if not chunk:
                            break
                        out.write(chunk)
                        digest.update(chunk)
                        received += len(chunk)
                        bar.update(len(chunk))
            if announced is not None and received != announced:
                raise DownloadError(
                    f"download of {url} was interrupted: the server announced {announced:,} "
                    f"bytes but sent {received:,}"
                )
        found_sha = digest.hexdigest()
        if received != size or found_sha != sha256.lower():
            raise DownloadError(
                f"downloaded {url} but it is not the expected file.\n"
                f"  expected: {size:,} bytes, sha256 {sha256.lower()}\n"
                f"  found:    {received:,} bytes, sha256 {found_sha}\n"
                "Nothing was saved. The file at that address may have changed; check the URL."
            )
        os.chmod(tmp, new_file_mode())  # mkstemp made it 0o600: follow the umask
        os.replace(tmp, dest)
        done = True
    finally:
        if not done:
            tmp.unlink(missing_ok=True)
    return dest


_fetch = download  # corpus_path's argument ``download`` shadows the function's name


def _fix_hint(corpus: Corpus, path: Path) -> str:
    return (
        f"Delete it and run `python -m minitx.data download {corpus.name}` to download a fresh "
        f"copy from {corpus.url}, or put a good copy at {path}."
    )


def corpus_path(name: str = "tinyshakespeare", download: bool = True) -> Path:
    """Path to the verified file of corpus ``name``, downloading it first if it is missing
    and ``download`` is true.

    Raises ``FileNotFoundError`` (missing and ``download=False``), ``CorpusError`` (a file
    is there but its size or sha256 is wrong: it is never used), ``DownloadError`` (missing
    and the download failed). Each message names the path to put the file at and the URL.
    """
    corpus = get_corpus(name)
    path = data_dir() / corpus.filename
    if path.exists():
        verify_file(path, corpus.sha256, corpus.size, fix_hint=_fix_hint(corpus, path))
        return path
    where = (
        f"To provide it by hand, save {corpus.url} as {path} (expected: {corpus.size:,} "
        f"bytes, sha256 {corpus.sha256}), or set MINITX_DATA to a folder that holds "
        f"{corpus.filename}."
    )
    if not download:
        raise FileNotFoundError(
            f"corpus {name!r} is not at {path}. Run `python -m minitx.data download {name}` "
            f"to download it. {where}"
        )
    try:
        _fetch(corpus.url, path, corpus.sha256, corpus.size, progress=True)
    except DownloadError as err:
        raise DownloadError(f"{err}\nCould not get corpus {name!r}. {where}") from err
    return path


def load_text(name: str = "tinyshakespeare", download: bool = True) -> str:
    """The verified corpus ``name`` as a string (UTF-8)."""
    return corpus_path(name, download=download).read_text(encoding="utf-8")


def train_val_split(seq: Sequence[_S] | _S, train_fraction: float = 0.9) -> tuple[_S, _S]:
    """Split a sequence (str, list, 1-D tensor ...) into a prefix for training and the rest
    for validation: ``n = int(train_fraction * len(seq))``.

    For tiny Shakespeare (1,115,394 characters) this gives 1,003,854 / 111,540.
    """
    if isinstance(train_fraction, bool) or not isinstance(train_fraction, (int, float)):
        raise TypeError(f"train_fraction must be a float, got {type(train_fraction).__name__}")
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be strictly between 0 and 1, got {train_fraction}")
    try:
        length = len(seq)
    except TypeError as err:
        raise TypeError(
            f"train_val_split needs a sized sequence, got {type(seq).__name__}"
        ) from err
    n = int(train_fraction * length)
    return seq[:n], seq[n:]


def main(argv: list[str] | None = None) -> int:
    """``python -m minitx.data {list,verify,download} [NAME]``; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m minitx.data", description="List, verify or download the course's corpora."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="list the known corpora and where they go")
    for command, text in (("verify", "check size and sha256"), ("download", "fetch if missing")):
        p = sub.add_parser(command, help=text)
        p.add_argument("name", help=f"one of: {', '.join(sorted(CORPORA))}")
    args = parser.parse_args(argv)

    if args.command == "list":
        for corpus in CORPORA.values():
            print(f"{corpus.name}: {corpus.size:,} bytes -> {data_dir() / corpus.filename}")
        return 0
    try:
        path = corpus_path(args.name, download=args.command == "download")
    except (FileNotFoundError, ValueError) as err:  # CorpusError is a ValueError
        print(f"error: {err}", file=sys.stderr)
        return 1
    corpus = get_corpus(args.name)
    print(f"{corpus.name}: {path} OK ({corpus.size:,} bytes, sha256 {corpus.sha256})")
    return 0

