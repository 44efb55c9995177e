"""The one error root of handrail, and the errors that carry an HTTP problem.

`HandrailError` is the root of every error handrail raises on purpose. `ProblemError` and its
subclasses are errors meant to be shown to a client: each carries the status, the spec's
``title``, an optional ``code`` and ``fields``, and the server turns it into problem JSON as it
is. Control-flow signals raised by tool code live in the runtime, apart from these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class HandrailError(Exception):
    """The root of every error handrail raises on purpose."""


class ConfigError(HandrailError):
    """A configuration that cannot work: the message names the field and the way forward."""


class ProblemError(HandrailError):
    """An error shown to the client as problem JSON: ``{status, title, detail, code?, fields?}``."""

    status: int = 400

    def __init__(
        self,
        title: str,
        detail: str | None = None,
        *,
        status: int | None = None,
        code: str | None = None,
        fields: Sequence[dict[str, Any]] | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(title if detail is None else f"{title}: {detail}")
        if status is not None:
            self.status = status
        self.title = title
        self.detail = detail if detail is not None else title
        self.code = code
        self.fields = fields

    def to_problem(self) -> dict[str, Any]:
        """The problem JSON body, without ``requestId`` (the server adds it)."""
        body: dict[str, Any] = {"status": self.status, "title": self.title, "detail": self.detail}
        if self.code is not None:
            body["code"] = self.code
        if self.fields is not None:
            body["fields"] = self.fields
        return body


class BadRequest(ProblemError):
    status = 400


class Unauthorized(ProblemError):
    status = 401


class Forbidden(ProblemError):
    status = 403


class NotFound(ProblemError):
    status = 404


class Conflict(ProblemError):
    status = 409


class PayloadTooLarge(ProblemError):
    status = 413
