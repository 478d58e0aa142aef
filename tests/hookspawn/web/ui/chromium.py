"""Headless Chromium (Debian's `chromium`) for the explorer's tests, never off 127.0.0.1.

`Chromium` runs one browser per call (a page's DOM, its console, a screenshot); `Browser` keeps
one running and drives it over its DevTools pipe, so a test that reads many pages starts one
browser, not one per page (each start is seconds of CPU on a two-core machine).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests import tool_marks

#: how long one page (or the browser's start and stop) may take on a busy machine
PAGE_TIMEOUT = 90.0


def chromium_path() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
    )
    if found is None:  # the tests are marked needs("chromium"): skipped, or failed in .ci/run
        tool_marks.require("chromium")
        raise AssertionError("Chromium is not on PATH")
    return found


class Chromium:
    """Runs one headless Chromium per call, with its own profile."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.binary, self.profile = binary, profile

    def command(self, *args: str) -> list[str]:
        """Chromium's argv: headless, this profile, every name but 127.0.0.1 unresolvable."""
        return [
            self.binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--user-data-dir={self.profile}",
            *args,
        ]

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            self.command(*args), capture_output=True, text=True, timeout=PAGE_TIMEOUT
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    def dom(self, url: str) -> str:
        return self._run("--dump-dom", url)

    def visit(self, url: str, *, milliseconds: int) -> str:
        """Load `url` and let its scripts and the navigations they start run for that long
        (virtual time: Chromium exits once nothing is pending); the DOM at the end."""
        return self._run(f"--virtual-time-budget={milliseconds}", "--dump-dom", url)

    def screenshot(self, url: str, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        self._run(f"--screenshot={path}", "--window-size=1280,900", "--hide-scrollbars", url)
        return checked_png(path)


def checked_png(path: Path) -> Path:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert path.stat().st_size > 10_000, f"{path} looks empty"
    return path


class Browser:
    """One headless Chromium for many pages, over its DevTools pipe: Chromium reads commands
    on its fd 3 and writes answers and events on its fd 4, each a JSON message ending in NUL.
    Each page opens in a tab of its own, read once its load event fired, then closed."""

    def __init__(self, chromium: Chromium, log: Path) -> None:
        commands, answers = os.pipe(), os.pipe()
        # Chromium takes the pipe on fds 3 and 4: bash puts the two ends there (dash cannot
        # name an fd past 9)
        shell = f'exec "$0" "$@" 3<&{commands[0]} 4>&{answers[1]}'
        argv = chromium.command("--remote-debugging-pipe", "about:blank")
        with log.open("wb") as handle:
            self.proc = subprocess.Popen(
                ["bash", "-c", shell, *argv],
                pass_fds=(commands[0], answers[1]),
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
        os.close(commands[0])
        os.close(answers[1])
        self._send_fd, self._receive_fd, self.log = commands[1], answers[0], log
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError, AssertionError):
            self.call("Browser.close")
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self._send_fd, self._receive_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send one command and wait for its answer (events read meanwhile are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + PAGE_TIMEOUT
        while True:
            answer = self._read(deadline, what=method)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self._events.append(answer)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + PAGE_TIMEOUT
        while True:
            for event in self._events:
                if event["method"] == method and event.get("sessionId") == session:
                    self._events.remove(event)
                    return event
            event = self._read(deadline, what=method)
            if "method" in event:
                self._events.append(event)

    def _read(self, deadline: float, *, what: str) -> dict[str, Any]:
        fd = self._receive_fd
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"Chromium did not answer {what}:\n{self._log_tail()}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                assert chunk, f"Chromium closed its pipe ({what}):\n{self._log_tail()}"
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        loaded: dict[str, Any] = json.loads(message)
        return loaded

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    @contextlib.contextmanager
    def _page(self, url: str, *, width: int = 1280, height: int = 900) -> Iterator[str]:
        """A tab of its own showing `url`, loaded: its DevTools session; closed after."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        try:
            self.call("Page.enable", session=session)
            metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
            self.call("Emulation.setDeviceMetricsOverride", metrics, session)
            self.call("Emulation.setScrollbarsHidden", {"hidden": True}, session)
            navigated = self.call("Page.navigate", {"url": url}, session)
            assert "errorText" not in navigated, f"{url}: {navigated['errorText']}"
            self.wait_event("Page.loadEventFired", session)
            yield session
        finally:
            self.call("Target.closeTarget", {"targetId": target})

    def dom(self, url: str) -> str:
        """The page's DOM once loaded, as `chromium --dump-dom` prints it."""
        with self._page(url) as session:
            found = self.call(
                "Runtime.evaluate",
                {"expression": "document.documentElement.outerHTML", "returnByValue": True},
                session,
            )
        html: str = found["result"]["value"]
        return html

    def screenshot(self, url: str, path: Path) -> Path:
        """The page at 1280x900 as a PNG at `path`."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        with self._page(url) as session:
            shot = self.call("Page.captureScreenshot", {"format": "png"}, session)
        path.write_bytes(base64.b64decode(shot["data"]))
        return checked_png(path)
