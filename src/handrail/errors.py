"""The one error root of handrail: domain errors, and the problem errors of the web edge.

`HandrailError` is the root of every error handrail raises on purpose.

Domain errors (`DomainError` and its subclasses) say what went wrong in the domain's own words:
a history that is not there (`NotFound`), one that belongs to someone else (`Forbidden`), an
ask that is no longer pending (`NotPending`), an answer that fails validation
(`InvalidAnswer`, with its ``fields``), a change that lost a compare-and-set (`Conflict`). The
runtime and the store raise only these. Each carries a ``detail`` written for the person who
reads it, and may carry a ``code`` and ``fields``; none knows an HTTP status. The server maps
each type to its status and the spec's title in one table (`handrail.server.problems`).

`ProblemError` (with `BadRequest`, `Unauthorized` and `PayloadTooLarge`) is the web edge's own
error: a problem JSON body with a status and a title, raised only by `handrail.server` for what
only HTTP knows (a body, a header, a token). Control-flow signals raised by tool code live in
the runtime, apart from both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "AlreadyApproved",
    "AnswerIdMissing",
    "AnswerNotObject",
    "BadRequest",
    "ConfigError",
    "ConfirmationExpired",
    "Conflict",
    "DatabaseUnavailable",
    "DomainError",
    "FileNotFound",
    "Forbidden",
    "HandrailError",
    "HistoryNotFound",
    "InvalidAnswer",
    "InvalidRequest",
    "NotApprover",
    "NotFound",
    "NotOwner",
    "NotPending",
    "PayloadTooLarge",
    "ProblemError",
    "PromptRequired",
    "Unauthorized",
    "UnknownAgent",
    "UnknownButton",
    "UnknownSurface",
]

Fields = Sequence[dict[str, Any]] | dict[str, Any]


class HandrailError(Exception):
    """The root of every error handrail raises on purpose."""


class ConfigError(HandrailError):
    """A configuration that cannot work: the message names the field and the way forward."""


class DatabaseUnavailable(ConfigError):
    """The database cannot be opened (not reachable, not there, not a database) or is not one
    this handrail can use (a newer handrail's schema): the message says why and the way
    forward, with the URL's password hidden."""


# --- domain errors ---------------------------------------------------------------------------


class DomainError(HandrailError):
    """A request the runtime or the store cannot carry out. `detail` says why and what to do;
    `code` and `fields` are machine-readable extras. The type decides how the server shows it."""

    def __init__(
        self, detail: str, *, code: str | None = None, fields: Fields | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.fields = fields


class InvalidRequest(DomainError):
    """A value the caller sent cannot be used."""


class PromptRequired(InvalidRequest):
    """A turn was started without a prompt."""


class UnknownSurface(InvalidRequest):
    """``surface`` is not one of the surfaces."""


class UnknownAgent(InvalidRequest):
    """No agent has the name the caller gave."""


class AnswerNotObject(InvalidRequest):
    """An answer (``askResponse``) that is not a JSON object."""


class AnswerIdMissing(InvalidRequest):
    """An answer that does not name the ask's ``toolCallId``."""


class UnknownButton(InvalidRequest):
    """A ``buttonId`` that is not on the pending ask's card. ``fields`` holds the error."""


class InvalidAnswer(InvalidRequest):
    """An answer that fails the ask's rules. ``fields`` lists every error; the ask stays
    pending."""


class NotFound(DomainError):
    """What the caller named does not exist (or was deleted)."""


class HistoryNotFound(NotFound):
    """No live history has that id."""


class FileNotFound(NotFound):
    """No uploaded file has that id, or its bytes are gone."""


class Forbidden(DomainError):
    """The caller may not do this."""


class NotOwner(Forbidden):
    """The history belongs to another user."""


class NotApprover(Forbidden):
    """The approval of this call is for its named approvers: the caller is not one of them
    (the owner of the conversation may still deny it)."""


class Conflict(DomainError):
    """The state moved on: a compare-and-set lost, or the thing is no longer in a state the
    change starts from. Nothing was written."""


class NotPending(Conflict):
    """The answer names an ask the history no longer waits on (answered, cancelled, or never
    asked), or another answer or message resolved it first."""


class AlreadyApproved(Conflict):
    """The caller approved this call already; it waits for the other approvers."""


class ConfirmationExpired(Conflict):
    """A confirmation was confirmed after its ``expiresAt``: nothing was sent."""


# --- problems of the web edge ----------------------------------------------------------------


class ProblemError(HandrailError):
    """An error shown to the client as problem JSON: ``{status, title, detail, code?, fields?}``.
    Raised only by `handrail.server`."""

    status: int = 400

    def __init__(
        self,
        title: str,
        detail: str | None = None,
        *,
        status: int | None = None,
        code: str | None = None,
        fields: Fields | None = None,
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


class PayloadTooLarge(ProblemError):
    status = 413
