"""The attention explorer of notebook 04, driven in a real browser.

Starts JupyterLab (from this venv) on 127.0.0.1 with a free port, a token, no browser,
and its own temporary root, settings, config and runtime directories holding a copy of
``notebooks/04_self_attention.ipynb``; opens it in Debian's headless Chromium through
Playwright; clears the stored outputs and runs all cells; waits for the explorer's
image; moves the temperature slider with the keyboard; and checks that the picture in
the page changes: the slider's readout, a new ``<img>`` source whose bytes are exactly
the PNG the kernel drew (SHA-256 compared), the kernel's own value of the control, and
different pixels on screen. Screenshots, the server log and timings land in
``artifacts/browser/`` (git-ignored). The notebook must name its explorer ``explorer``
(the first ``minitx.viz.explorer`` widget on the page, from ``explore_self_attention``).

Run it alone with:

    python -m pytest tests/viz/test_browser.py -m browser

Needs ``/usr/bin/chromium`` (``apt-get install chromium``); Playwright never downloads
a browser here. Without Chromium the test is skipped, unless ``MINITX_REQUIRE_BROWSER=1``
(set by CI), in which case it fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "04_self_attention.ipynb"
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
]
REQUIRED = os.environ.get("MINITX_REQUIRE_BROWSER") == "1"

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (MINITX_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


class Lab:
    """A running JupyterLab server: ``url(path)`` gives an address with the token."""

    def __init__(self, port: int, token: str, root: Path, log: Path, proc: subprocess.Popen):
        self.port, self.token, self.root, self.log, self.proc = port, token, root, log, proc

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}?token={self.token}"

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install -e '.[dev]')")
    return CHROMIUM


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab serving a temp root with a copy of notebook 04; stopped afterwards."""
    if not NOTEBOOK.exists():
        pytest.fail(f"{NOTEBOOK.relative_to(REPO)} is missing")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    settings = tmp_path / "lab-settings"
    # No news or update checks (no network), and every cell kept in the DOM.
    lab_settings = settings / "@jupyterlab"
    _write_json(lab_settings / "apputils-extension" / "notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    _write_json(lab_settings / "notebook-extension" / "tracker.jupyterlab-settings",
                {"windowingMode": "none"})
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYTHONUNBUFFERED": "1",
    }
    port, token = _free_port(), secrets.token_hex(16)
    log = tmp_path / "jupyterlab.log"
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
        f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False", "--LabApp.expose_app_in_browser=True",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",  # no PyPI queries from the extension manager
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
        cmd.append("--allow-root")
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log_file,
                                stderr=subprocess.STDOUT, start_new_session=True)
    server = Lab(port, token, root, log, proc)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(server.url("api/status"), timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within 120 s:\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        _stop(proc)
        (ARTIFACTS).mkdir(parents=True, exist_ok=True)
        if log.exists():
            shutil.copy(log, ARTIFACTS / "jupyterlab.log")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM lets the server shut its kernels down; the session's group is killed after."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    # Kernels started by this server share its session (process group id = its pid).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# JavaScript run in the page (window.jupyterapp exists thanks to expose_app_in_browser).
NOTEBOOK_READY = """(name) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || !w.context.path.endsWith(name) || !w.sessionContext) return false;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(kernel && kernel.status === 'idle' && w.content.widgets.length > 0);
}"""
RUN_ALL = """async () => {
  const app = window.jupyterapp;
  await app.commands.execute('notebook:clear-all-cell-outputs');
  app.commands.execute('notebook:run-all-cells');  // not awaited: polled below
  return true;
}"""
RUN_STATE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const cells = w.content.model.cells;
  let code = 0, done = 0;
  const errors = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    code += 1;
    if (c.executionCount !== null && c.executionState !== 'running') done += 1;
    for (let j = 0; j < c.outputs.length; j++) {
      const o = c.outputs.get(j).toJSON();
      if (o.output_type === 'error') errors.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
    }
  }
  const kernel = w.sessionContext.session.kernel;
  return {code, done, errors, kernel: kernel ? kernel.status : 'none'};
}"""
KERNEL_EVAL = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  let text = '';
  const future = kernel.requestExecute({code, store_history: false});
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') text += msg.content.text;
    if (msg.header.msg_type === 'error') text += 'ERROR ' + msg.content.evalue;
  };
  await future.done;
  return text;
}"""


IMG_SHA256 = """async (el) => {
  const buf = await (await fetch(el.src)).arrayBuffer();
  const digest = await crypto.subtle.digest('SHA-256', buf);
  return Array.from(new Uint8Array(digest)).map(b => b.toString(16).padStart(2, '0')).join('');
}"""


# One render record, read in one statement: the control values it was drawn for, its PNG
# and whether the weights it shows are what the explorer computes for those values.
# (Reading ``controls[...].value`` and ``png`` separately races with the widget message
# that is still drawing: the value changes before the observers run, and ipykernel 7
# handles comm messages concurrently with execute requests. On a slow first run that
# race returned the PNG of 0.55 or 0.70 next to a slider value of 0.50.)
KERNEL_STATE = (
    "import hashlib, numpy; _r = explorer.rendered; "
    "print(round(_r.values['temperature'], 4), hashlib.sha256(_r.png).hexdigest(), "
    "bool(numpy.allclose(_r.weights, explorer.compute(**_r.values)[0], atol=1e-12)))"
)


def _wait_for_kernel_render(page, value: float, timeout: float = 60.0) -> list[str]:
    """The kernel's last render as ``[temperature, png-sha256, shows-its-weights]``, once
    that render was drawn for temperature == ``value`` (or whatever it is at the timeout).
    """
    deadline = time.monotonic() + timeout
    while True:
        words = page.evaluate(KERNEL_EVAL, KERNEL_STATE).split()
        if (len(words) == 3 and abs(float(words[0]) - value) < 1e-6) or (
            time.monotonic() > deadline
        ):
            return words
        page.wait_for_timeout(300)


PAINTED = """async (el) => {
  await el.decode();
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return el.naturalWidth;
}"""


def _wait_for_image_sha(page, img, sha: str, timeout: float = 30.0) -> str:
    """SHA-256 of the bytes behind the <img>, once it equals ``sha`` (or the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = page.evaluate(IMG_SHA256, img.element_handle())
        if shown == sha or time.monotonic() > deadline:
            return shown
        page.wait_for_timeout(200)


def _changed_fraction(png_a: bytes, png_b: bytes) -> float:
    """Fraction of pixels whose colour differs by more than 2% between two screenshots."""
    import matplotlib.image

    a, b = (matplotlib.image.imread(io.BytesIO(d), format="png") for d in (png_a, png_b))
    if a.shape != b.shape:
        return 1.0
    return float((np.abs(a - b).max(axis=-1) > 0.02).mean())


def test_explorer_redraws_in_jupyterlab(chromium: Path, lab: Lab, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    timings: dict[str, float] = {}
    t0 = time.monotonic()

    def lap(name: str) -> None:
        timings[name] = round(time.monotonic() - t0, 2)

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),  # a new, empty user-data-dir
            executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 1000},
        )
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(120_000)
        try:
            page.goto(lab.url(f"lab/tree/{NOTEBOOK.name}"), wait_until="domcontentloaded")
            page.wait_for_function(NOTEBOOK_READY, arg=NOTEBOOK.name, timeout=180_000)
            lap("notebook open, kernel idle")

            page.evaluate(RUN_ALL)
            page.wait_for_function(
                f"() => {{ const s = ({RUN_STATE})(); "
                "return s.errors.length > 0 || (s.done === s.code && s.kernel === 'idle'); }",
                timeout=600_000, polling=500,
            )
            state = page.evaluate(RUN_STATE)
            assert not state["errors"], f"cells raised: {state['errors']}"
            assert state["done"] == state["code"] > 0, state
            lap("all cells run")

            img = page.locator("img.minitx-explorer-image").first
            img.scroll_into_view_if_needed()
            img.wait_for(state="visible")
            page.wait_for_function("(el) => el.complete && el.naturalWidth > 0",
                                   arg=img.element_handle())
            page.evaluate(PAINTED, img.element_handle())  # decoded and on screen
            src_before = img.get_attribute("src")
            before = img.screenshot(path=str(ARTIFACTS / "explorer_before.png"))
            explorer = page.locator(".minitx-explorer").first
            explorer.screenshot(path=str(ARTIFACTS / "explorer_widget_before.png"))
            slider = explorer.locator(".minitx-control-temperature")
            readout_before = slider.locator(".widget-readout").inner_text()
            lap("explorer image shown")

            # Keyboard on the slider's handle: ten steps of 0.05 down.
            handle = slider.locator(".noUi-handle").first
            handle.focus()
            for _ in range(10):
                handle.press("ArrowLeft")
            page.wait_for_function(
                "([el, src]) => el.getAttribute('src') !== src && el.complete "
                "&& el.naturalWidth > 0",
                arg=[img.element_handle(), src_before],
            )
            # The widget front end sends one change at a time (the next after the kernel
            # has answered the last), so ask the kernel until it reports the slider's value.
            readout_after = slider.locator(".widget-readout").inner_text()
            seen = _wait_for_kernel_render(page, float(readout_after))
            assert len(seen) == 3, f"kernel reports: {seen!r}"
            kernel_png_sha = seen[1]
            shown_sha = _wait_for_image_sha(page, img, kernel_png_sha)
            page.evaluate(PAINTED, img.element_handle())
            src_after = img.get_attribute("src")
            # Headless Chromium can paint a decoded image a frame or two late: give the
            # page up to 5 s to show something other than the first picture.
            attempts = 0
            while True:
                attempts += 1
                after = img.screenshot(path=str(ARTIFACTS / "explorer_after.png"))
                if _changed_fraction(before, after) > 0.01 or attempts == 10:
                    break
                page.wait_for_timeout(500)
            timings["screenshot attempts"] = attempts
            explorer.screenshot(path=str(ARTIFACTS / "explorer_widget_after.png"))
            lap("slider moved, image redrawn")
            page.screenshot(path=str(ARTIFACTS / "page.png"))
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "failure_page.png"), full_page=True)
            raise
        finally:
            context.close()
    lap("total")
    (ARTIFACTS / "timings.json").write_text(json.dumps(timings, indent=1))
    print("browser test timings (s since start):", timings)

    # Ten steps left of 0.05 each (never below the slider's minimum, 0.05).
    expected = max(0.05, float(readout_before) - 0.5)
    assert abs(float(readout_after) - expected) < 1e-6, (readout_before, readout_after)
    kernel_value, _, shows_its_weights = seen
    assert abs(float(kernel_value) - expected) < 1e-6, f"kernel reports: {seen!r}"
    assert shows_its_weights == "True", f"kernel reports: {seen!r}"
    # The page shows exactly the PNG the kernel drew for the new temperature.
    assert shown_sha == kernel_png_sha, (shown_sha, kernel_png_sha)
    assert src_after != src_before
    changed = _changed_fraction(before, after)
    assert changed > 0.01, f"only {changed:.4%} of the explorer's pixels changed on screen"
