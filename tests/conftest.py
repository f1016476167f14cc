"""Shared pytest setup: deterministic torch and a few fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
    yield


@pytest.fixture
def machine_decides_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset $MINITX_DEVICE (the root conftest sets it to 'cpu'), for tests of how 'auto'
    chooses from the availability they pass in."""
    monkeypatch.delenv("MINITX_DEVICE", raising=False)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shakespeare_available() -> bool:
    from minitx import data

    try:
        data.corpus_path("tinyshakespeare", download=False)
    except (FileNotFoundError, ValueError):
        return False
    return True


def pytest_report_header(config):
    return f"minitx tests: torch {torch.__version__}, threads {torch.get_num_threads()}, " \
        f"MINITX_DATA={os.environ.get('MINITX_DATA', '(repo data/)')}"
