"""A stdio MCP server's stderr, logged to ``handrail.connections`` one line at a time with
every secret value masked."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import threading
from collections.abc import Sequence

from .secrets import mask

__all__ = ["StderrLog"]

log = logging.getLogger("handrail.connections")


class StderrLog:
    """A pipe whose write end a stdio server writes its stderr to; a thread logs each line
    with the secrets masked."""

    def __init__(self, name: str, secrets: Sequence[str]) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: io.TextIOWrapper = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._name = name
        self._secrets = list(secrets)
        self._thread = threading.Thread(
            target=self._pump, name=f"handrail-mcp-stderr-{name}", daemon=True
        )
        self._thread.start()

    def _pump(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for raw in self._reader:
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    log.info("MCP server %s: %s", self._name, mask(line, self._secrets))
        with contextlib.suppress(OSError):
            self._reader.close()

    def spawned(self) -> None:
        """The child has its copy of the write end: drop ours, so the pipe ends with it."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def close(self) -> None:
        self.spawned()
