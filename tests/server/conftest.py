"""Fixtures of the web app's tests: the app behind an HTTP test client, a live server started as a
user starts it (``tabverify serve`` in a subprocess), and a real browser (Debian's Chromium driven by
Playwright, pointed at the Debian binary; skipped without it, which CI turns into a failure)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tabverify.server import ServerSettings, create_app

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
EXAMPLES = ROOT / "src" / "tabverify" / "examples"


@contextmanager
def app_client(settings: ServerSettings | None = None) -> Iterator[TestClient]:
    """The app for ``settings`` behind an HTTP test client, with its worker pool running."""
    settings = settings or ServerSettings(workers=1, time_limit_s=30)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    """One app with default settings (one worker) per test module."""
    with app_client() as test_client:
        yield test_client


class LiveServer:
    """``tabverify serve`` running in a subprocess; ``url`` is its base address."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        """Start ``tabverify serve --port 0 ARGS...`` (``env``: extra environment variables)."""
        command = [sys.executable, "-m", "tabverify.cli", "serve", "--port", "0", *args]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )  # fmt: skip
        self.url = self._wait_for_address()

    def _wait_for_address(self, timeout_s: float = 60.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        lines: list[str] = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"serving on (http://\S+?)/? ", line)
            if found:
                return found.group(1).rstrip("/")
        self.stop()
        raise RuntimeError("tabverify serve did not start:\n" + "".join(lines))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture(scope="session")
def start_server() -> Iterator[Callable[..., LiveServer]]:
    """Start ``tabverify serve ARGS...`` servers; all are stopped at the end of the session."""
    started: list[LiveServer] = []

    def start(*args: str) -> LiveServer:
        server = LiveServer(list(args))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def live_server(start_server: Callable[..., LiveServer]) -> LiveServer:
    """One server with default settings for the whole session."""
    return start_server("--workers", "1")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium under Playwright (never Playwright's own browser download)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium on this machine (`apt-get install chromium`; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def browser_page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own context: no cookies or cache shared between tests); a script error on
    the page fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda message: errors.append(message.text) if _script_error(message) else None)
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the page logged errors: {errors}"


def watch_dialogs(page: Any) -> list[str]:
    """Record (and dismiss) every dialog the page opens: an injected script that ran would open one,
    so a test of hostile input asserts the list stays empty."""
    dialogs: list[str] = []

    def record(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return dialogs


def _script_error(message: Any) -> bool:
    """A console error from a script - not Chromium's note that a request got a 4xx/5xx answer,
    which tests of error pages cause on purpose (their status is asserted where it matters)."""
    return message.type == "error" and not message.text.startswith(
        "Failed to load resource: the server responded"
    )


def screenshot(page: Any, name: str) -> Path:
    """Save the page as docs/screenshots/NAME.png (the README and docs show these)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
