"""``handrail demo`` in a subprocess on 127.0.0.1, for tests that need the real server: the
browser tests and the API fuzz test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from handrail.connections import new_secret_key

__all__ = ["TOKENS", "DemoServer", "free_port"]

#: The demo users' tokens.
TOKENS: Final = {"alice": "demo-alice", "bob": "demo-bob", "admin": "demo-admin"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class DemoServer:
    """``handrail demo`` running in a subprocess on 127.0.0.1 with a fresh SQLite folder."""

    url: str
    folder: Path
    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    @contextmanager
    def running(
        cls,
        folder: Path,
        *,
        env_extra: dict[str, str] | None = None,
        args_extra: list[str] | None = None,
    ) -> Iterator[DemoServer]:
        """Run it until the block ends; `args_extra` go to ``handrail demo`` (such as
        ``["--log-level", "info"]``, which writes uvicorn's access log to `log`)."""
        port = free_port()
        log = folder / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
        env.update(env_extra or {})
        env["HANDRAIL_SECRET_KEY"] = new_secret_key()  # connections may keep secrets
        args = [
            sys.executable,
            "-m",
            "handrail.cli",
            "demo",
            "--no-browser",
            "--port",
            str(port),
            "--database",
            str(folder / "handrail.db"),
            *(args_extra or []),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
            server = cls(url=f"http://127.0.0.1:{port}", folder=folder, process=process, log=log)
            try:
                server.wait_until_ready()
                yield server
            finally:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def wait_until_ready(self, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the demo server exited:\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(self.url + "/api/demo", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise RuntimeError(f"the demo server did not start:\n{self.log.read_text()}")

    @contextmanager
    def api(self, user: str) -> Iterator[httpx.Client]:
        """An HTTP client of the API speaking as `user`, for setting up and checking."""
        headers = {"Authorization": f"Bearer {TOKENS[user]}"}
        with httpx.Client(base_url=self.url + "/api", headers=headers, timeout=10) as client:
            yield client

    def ask(self, user: str, prompt: str) -> dict[str, Any]:
        """Start a conversation of `user` with `prompt` (headless) and return the turn result
        (``historyId``, ``pendingAsk``...)."""
        with self.api(user) as client:
            history = client.post("/histories", json={}).raise_for_status().json()["data"]
            result = client.post(f"/histories/{history['id']}/turn", json={"prompt": prompt})
            data: dict[str, Any] = result.raise_for_status().json()["data"]
            return data

    def reset_policy(self, user: str) -> None:
        """Forget `user`'s permission levels and revoke their grants."""
        with self.api(user) as client:
            for grant in client.get("/grants").raise_for_status().json()["data"]:
                client.delete(f"/grants/{grant['id']}")
            saved = client.get("/permissions").raise_for_status().json()["data"]["saved"]
            for level in saved:
                client.delete(f"/permissions/{level['connectionId']}")
