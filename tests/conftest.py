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


@pytest.fixture(autouse=True)
def _shards_untimed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with row shards uses them on every step, so that what else the machine does
    while the tests run cannot change a run's float path (tests of the timed trials set
    ``TIME_SHARDS`` back themselves)."""
    monkeypatch.setattr("minitx.train.cpu_policy.TIME_SHARDS", False)


@pytest.fixture
def machine_decides_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset $MINITX_DEVICE (the root conftest sets it to 'cpu'), for tests of how 'auto'
    chooses from the availability they pass in."""
    monkeypatch.delenv("MINITX_DEVICE", raising=False)


@pytest.fixture
def repo_root() -> Path:
    return REPO


def shakespeare_missing() -> str | None:
    """Why the tiny Shakespeare corpus cannot be read without a download, or None if it can."""
    from minitx import data

    try:
        data.corpus_path("tinyshakespeare", download=False)
    except (FileNotFoundError, ValueError) as err:
        first = str(err).splitlines()[0].split(". ")[0]
        return (f"needs the tiny Shakespeare corpus ({first}); get it with "
                "`python -m minitx.data download tinyshakespeare`")
    return None


@pytest.fixture
def shakespeare_available() -> bool:
    return shakespeare_missing() is None


@pytest.fixture
def shakespeare() -> Path:
    """The verified corpus file; the test is skipped, with the reason, when it is absent."""
    why = shakespeare_missing()
    if why:
        pytest.skip(why)
    from minitx import data

    return data.corpus_path("tinyshakespeare", download=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs_shakespeare: skipped, with the reason, when the corpus is absent"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_shakespeare") and (why := shakespeare_missing()):
        pytest.skip(why)


_MISSING_DATA = ("'tinyshakespeare' is not at", "Could not get corpus 'tinyshakespeare'",
                 "cannot check this now")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that is not marked but stops, in a fixture or in its body, because the corpus
    is absent (a missing file, a failed download, a checker that cannot check) is reported
    skipped, with the reason, not failed."""
    outcome = yield
    report = outcome.get_result()
    error = call.excinfo.value if call.excinfo is not None else None
    if call.when not in ("setup", "call") or not report.failed or not isinstance(
        error, (OSError, ValueError, AssertionError)
    ):
        return
    why = shakespeare_missing()
    if why and any(text in str(error) for text in _MISSING_DATA):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {why}")


def pytest_report_header(config):
    return f"minitx tests: torch {torch.__version__}, threads {torch.get_num_threads()}, " \
        f"MINITX_DATA={os.environ.get('MINITX_DATA', '(repo data/)')}"
