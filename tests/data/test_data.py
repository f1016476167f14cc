"""minitx.data.corpus: registry, verified atomic download, cache, split, CLI.

Downloads go to a local HTTP server on 127.0.0.1 (ephemeral port) serving a fixture made
here; the registry's URL is monkeypatched, so no test touches the network.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import socket
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import torch

from minitx.data import corpus as data

BODY = "".join(random.Random(0).choices("abcdefghij klmnop\nQRSTU,.;", k=200_000)).encode()
SHA = hashlib.sha256(BODY).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []  # shared on purpose: the tests count requests

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        if self.path == "/good.txt":
            self._send(BODY, len(BODY))
        elif self.path == "/truncated.txt":
            # announce the full length, send half, then close the connection
            self._send(BODY[: len(BODY) // 2], len(BODY))
        else:
            self.send_error(404, "no such fixture")

    def _send(self, payload: bytes, announced: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(announced))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args) -> None:  # keep pytest's output clean
        return None


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture
def fixture_corpus(server, tmp_path, monkeypatch):
    """The registry's 'tinyshakespeare' entry pointed at the local fixture, data in tmp_path."""
    monkeypatch.setenv("MINITX_DATA", str(tmp_path))
    entry = dataclasses.replace(
        data.CORPORA["tinyshakespeare"], url=f"{server}/good.txt", sha256=SHA, size=len(BODY)
    )
    monkeypatch.setitem(data.CORPORA, "tinyshakespeare", entry)
    _Handler.requests.clear()
    return entry


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- download() ---------------------------------------------------------------------------


def test_download_good_checksum_puts_file_in_place(server, tmp_path):
    dest = tmp_path / "sub" / "corpus.txt"
    out = data.download(f"{server}/good.txt", dest, SHA, len(BODY), progress=False)
    assert out == dest
    assert dest.read_bytes() == BODY
    assert _files(dest.parent) == ["corpus.txt"]  # no temporary file left over


@pytest.mark.parametrize("mask, mode", [(0o022, "-rw-r--r--"), (0o077, "-rw-------")])
def test_a_download_follows_the_umask(server, tmp_path, mask, mode):
    """The temporary file mkstemp makes is -rw-------; the corpus in place is what open()
    would have made under the umask."""
    old = os.umask(mask)
    try:
        dest = data.download(f"{server}/good.txt", tmp_path / "c.txt", SHA, len(BODY),
                             progress=False)
        assert stat.filemode(dest.stat().st_mode) == mode
        assert data.new_file_mode() == 0o666 & ~mask
        assert os.umask(mask) == mask  # read, not changed
    finally:
        os.umask(old)


def test_new_file_mode_without_proc_sets_and_restores_the_umask(monkeypatch):
    def no_proc(*args, **kwargs):
        raise FileNotFoundError("no /proc here")

    monkeypatch.setattr(data, "open", no_proc, raising=False)  # as on macOS or Windows
    old = os.umask(0o027)
    try:
        assert data.new_file_mode() == 0o640
        assert os.umask(0o027) == 0o027  # restored
    finally:
        os.umask(old)


def test_download_bad_checksum_leaves_nothing(server, tmp_path):
    dest = tmp_path / "corpus.txt"
    wrong = "0" * 64
    with pytest.raises(data.DownloadError) as info:
        data.download(f"{server}/good.txt", dest, wrong, len(BODY), progress=False)
    message = str(info.value)
    assert wrong in message and SHA in message  # expected and found
    assert f"{len(BODY):,}" in message
    assert _files(tmp_path) == []


def test_download_wrong_size_leaves_nothing(server, tmp_path):
    dest = tmp_path / "corpus.txt"
    with pytest.raises(data.DownloadError, match="expected"):
        data.download(f"{server}/good.txt", dest, SHA, len(BODY) + 1, progress=False)
    assert _files(tmp_path) == []


def test_interrupted_transfer_leaves_no_partial_file(server, tmp_path):
    dest = tmp_path / "corpus.txt"
    with pytest.raises(data.DownloadError, match="interrupted"):
        data.download(f"{server}/truncated.txt", dest, SHA, len(BODY), progress=False)
    assert _files(tmp_path) == []


def test_http_error_leaves_nothing(server, tmp_path):
    dest = tmp_path / "corpus.txt"
    with pytest.raises(data.DownloadError, match="404"):
        data.download(f"{server}/missing.txt", dest, SHA, len(BODY), progress=False)
    assert _files(tmp_path) == []


def test_ctrl_c_at_the_last_moment_leaves_nothing(server, tmp_path, monkeypatch):
    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(data.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.download(f"{server}/good.txt", tmp_path / "corpus.txt", SHA, len(BODY),
                      progress=False)
    monkeypatch.undo()
    assert _files(tmp_path) == []


def test_existing_file_is_replaced_only_by_a_good_download(server, tmp_path):
    dest = tmp_path / "corpus.txt"
    dest.write_bytes(b"old")
    with pytest.raises(data.DownloadError):
        data.download(f"{server}/truncated.txt", dest, SHA, len(BODY), progress=False)
    assert dest.read_bytes() == b"old"
    data.download(f"{server}/good.txt", dest, SHA, len(BODY), progress=False)
    assert dest.read_bytes() == BODY


# --- corpus_path() / load_text() ----------------------------------------------------------


def test_corpus_path_downloads_once_then_uses_the_cache(fixture_corpus, tmp_path):
    path = data.corpus_path("tinyshakespeare")
    assert path == tmp_path / fixture_corpus.filename
    assert path.read_bytes() == BODY
    assert data.load_text("tinyshakespeare") == BODY.decode()
    assert _Handler.requests == ["/good.txt"]  # the second call did not download again


def test_corrupt_cached_file_is_never_used(fixture_corpus, tmp_path):
    path = tmp_path / fixture_corpus.filename
    bad = BODY[:-10] + b"0123456789"  # same size, different content
    path.write_bytes(bad)
    with pytest.raises(data.CorpusError) as info:
        data.corpus_path("tinyshakespeare")
    message = str(info.value)
    assert "expected" in message and "found" in message
    assert SHA in message and hashlib.sha256(bad).hexdigest() in message
    assert str(path) in message and "Delete" in message and "download" in message
    assert isinstance(info.value, ValueError)
    assert path.read_bytes() == bad  # left alone for the user to inspect
    assert _Handler.requests == []  # and not silently replaced


def test_corrupt_cached_file_of_wrong_size_names_both_sizes(fixture_corpus, tmp_path):
    (tmp_path / fixture_corpus.filename).write_bytes(b"short")
    with pytest.raises(data.CorpusError, match=f"{len(BODY):,} bytes") as info:
        data.load_text("tinyshakespeare", download=False)
    assert "5 bytes" in str(info.value)


def test_missing_file_without_download_names_the_path(fixture_corpus, tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        data.corpus_path("tinyshakespeare", download=False)
    message = str(info.value)
    assert str(tmp_path / fixture_corpus.filename) in message
    assert fixture_corpus.url in message
    assert _Handler.requests == []


def test_no_network_and_no_file_names_path_and_url(fixture_corpus, tmp_path, monkeypatch):
    with socket.socket() as s:  # a port on which nothing listens
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/input.txt"
    monkeypatch.setitem(
        data.CORPORA, "tinyshakespeare", dataclasses.replace(fixture_corpus, url=dead)
    )
    with pytest.raises(data.DownloadError) as info:
        data.corpus_path("tinyshakespeare")
    message = str(info.value)
    assert str(tmp_path / fixture_corpus.filename) in message and dead in message
    assert _files(tmp_path) == []


def test_unknown_corpus_lists_the_known_ones():
    with pytest.raises(ValueError, match="tinyshakespeare"):
        data.corpus_path("no-such-corpus", download=False)


# --- data_dir() ---------------------------------------------------------------------------


def test_minitx_data_override_is_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITX_DATA", str(tmp_path / "elsewhere"))
    assert data.data_dir() == tmp_path / "elsewhere"
    with pytest.raises(FileNotFoundError, match="elsewhere"):
        data.corpus_path("tinyshakespeare", download=False)


def test_data_dir_is_the_checkout_data_folder(repo_root, monkeypatch):
    monkeypatch.delenv("MINITX_DATA", raising=False)
    assert data.data_dir() == repo_root / "data"


def test_data_dir_outside_a_checkout_is_a_user_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("MINITX_DATA", raising=False)
    monkeypatch.setattr(data, "_repo_root", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "linux")
    assert data.data_dir() == tmp_path / "minitx" / "data"


# --- verify_file(), train_val_split() -----------------------------------------------------


def test_verify_file(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(BODY)
    data.verify_file(path, SHA, len(BODY))
    with pytest.raises(data.CorpusError, match="expected"):
        data.verify_file(path, SHA, len(BODY) - 1)
    with pytest.raises(FileNotFoundError):
        data.verify_file(tmp_path / "absent.txt", SHA, len(BODY))


def test_train_val_split_is_a_prefix_split():
    train, val = data.train_val_split("abcdefghij", 0.9)
    assert (train, val) == ("abcdefghi", "j")
    train, val = data.train_val_split(list(range(7)), 0.5)
    assert train == [0, 1, 2] and val == [3, 4, 5, 6]
    t_train, t_val = data.train_val_split(torch.arange(10), 0.8)
    assert torch.equal(torch.cat([t_train, t_val]), torch.arange(10)) and len(t_val) == 2


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_train_val_split_rejects_bad_fractions(fraction):
    with pytest.raises(ValueError, match="between 0 and 1"):
        data.train_val_split("abc", fraction)


def test_train_val_split_rejects_unsized_input():
    with pytest.raises(TypeError, match="sized"):
        data.train_val_split(iter("abc"))


# --- command line -------------------------------------------------------------------------


def test_cli_verify_and_download(fixture_corpus, capsys):
    assert data.main(["verify", "tinyshakespeare"]) == 1
    assert "not at" in capsys.readouterr().err
    assert data.main(["download", "tinyshakespeare"]) == 0
    assert data.main(["verify", "tinyshakespeare"]) == 0
    out = capsys.readouterr().out
    assert f"{len(BODY):,} bytes" in out and SHA in out and "OK" in out


def test_cli_verify_rejects_a_corrupt_file(fixture_corpus, tmp_path, capsys):
    (tmp_path / fixture_corpus.filename).write_bytes(b"not shakespeare")
    assert data.main(["verify", "tinyshakespeare"]) == 1
    err = capsys.readouterr().err
    assert "expected" in err and "found" in err


def test_cli_subprocess_missing_file_exits_1(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "minitx.data", "verify", "tinyshakespeare"],
        capture_output=True, text=True, timeout=120,
        env={**_clean_env(), "MINITX_DATA": str(tmp_path)},
    )
    assert result.returncode == 1
    assert str(tmp_path / "tinyshakespeare.txt") in result.stderr


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MINITX_DATA"}


# --- the real corpus, when it is there ----------------------------------------------------


def test_real_corpus_is_verified_and_splits_90_10(shakespeare_available):
    if not shakespeare_available:
        pytest.skip("tiny Shakespeare is not in the data folder")
    text = data.load_text("tinyshakespeare", download=False)
    assert len(text) == 1_115_394
    train, val = data.train_val_split(text)
    assert (len(train), len(val)) == (1_003_854, 111_540)
    assert train + val == text
    result = subprocess.run(
        [sys.executable, "-m", "minitx.data", "verify", "tinyshakespeare"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "1,115,394 bytes" in result.stdout and data.CORPORA["tinyshakespeare"].sha256 in (
        result.stdout
    )
