"""Test parts shared by the runtime, server and store tests: the scripted model with injected
faults or held mid-turn, the notes application of tool-safety-classes.md as tools, and a
process that stops inside a call (`stops_in`)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable, Collection
from typing import Any, Protocol, TypeVar

import pytest

from handrail.asks import PendingAsk
from handrail.runtime.models.base import ModelError, ModelEvent, ModelRequest
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.tools import ToolError
from handrail.store.records import History

F = TypeVar("F", bound=Callable[..., Any])


def stops_in(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> asyncio.Event:
    """A process that stops when it calls `owner.name`: the call never returns and nothing
    after it runs (no clean-up, as after a crash); the event is set once it is reached."""
    reached = asyncio.Event()

    async def stopped(*_args: object, **_kwargs: object) -> None:
        reached.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(owner, name, stopped)
    return reached


STARTING_NOTES = (
    ("Shopping list", "Coffee, oats, lemons."),
    ("Old draft", "An outline nobody needs any more."),
    ("Meeting agenda", "Budget, hiring, the launch."),
)


class FlakyModel:
    """The scripted model, failing on chosen calls: before any output (`fail_on`) or after its
    text (`fail_after_text_on`). Calls are counted from 1."""

    def __init__(
        self,
        *,
        fail_on: Collection[int] = (),
        fail_after_text_on: Collection[int] = (),
    ) -> None:
        self.inner = ScriptedModel()
        self.calls = 0
        self.fail_on = set(fail_on)
        self.fail_after_text_on = set(fail_after_text_on)

    @property
    def name(self) -> str:
        return "flaky"

    @property
    def supports_tools(self) -> bool:
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        if self.calls in self.fail_on:
            raise ModelError("injected failure")
        async for event in self.inner.stream(request):
            yield event
        if self.calls in self.fail_after_text_on:
            raise ModelError("injected failure after text")


class GatedModel:
    """The scripted model, keeping each request; once `armed`, it waits on `release` before
    each step (a process that stops mid-turn, in the crash tests)."""

    def __init__(self) -> None:
        self.inner = ScriptedModel()
        self.requests: list[ModelRequest] = []
        self.armed = False
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()

    @property
    def name(self) -> str:
        return "gated"

    @property
    def supports_tools(self) -> bool:
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if self.armed:
            self.waiting.set()
            await self.release.wait()
        async for event in self.inner.stream(request):
            yield event


class RecordingModel(FlakyModel):
    """Keeps every request, to check what the model was shown."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        async for event in super().stream(request):
            yield event


class HasToolDecorator(Protocol):
    def tool(self, **options: Any) -> Callable[[F], F]: ...


def add_notes_tools(target: HasToolDecorator, notes: list[dict[str, str]], ran: list[str]) -> None:
    """Register the notes application on `target` (an `Agent` or a `ToolSet`): list_notes
    (read-only), add_note (mutating), delete_note (consequential, destructive) and the
    notes_house_style skill. `ran` records every tool body that ran."""

    @target.tool(read_only=True, open_world=False)
    def list_notes() -> list[dict[str, str]]:
        """List every note, with its title and body."""
        ran.append("list_notes")
        return notes

    @target.tool(read_only=False, consequential=False, open_world=False)
    def add_note(title: str, body: str) -> str:
        """Add a note with a title and a body."""
        ran.append("add_note")
        notes.append({"title": title, "body": body})
        return f"Added the note “{title}”."

    @target.tool(consequential=True, destructive=True, open_world=False)
    def delete_note(title: str) -> str:
        """Delete the note with this exact title. It cannot be undone."""
        ran.append("delete_note")
        for index, note in enumerate(notes):
            if note["title"] == title:
                del notes[index]
                return f"Deleted the note “{title}”."
        titles = ", ".join(n["title"] for n in notes)
        raise ToolError(f"No note is titled “{title}”. The notes are: {titles}.")

    @target.tool(read_only=True, skill=True, open_world=False)
    def notes_house_style() -> str:
        """How notes in this app should be titled and written. Read this before adding a
        note."""
        return (
            "Title a note with two to four words in sentence case. Write the body as one "
            "line. Never delete a note without saying which one first."
        )


def starting_notes() -> list[dict[str, str]]:
    return [{"title": title, "body": body} for title, body in STARTING_NOTES]


def history_record(name: str, pending: PendingAsk | None = None) -> History:
    """A history of alice's with the assistant as a commit at version 1 left it, named `name`
    and waiting on `pending` (for the tests of what a process keeps of its commits)."""
    now = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    return History(
        id=name,
        owner_id="alice",
        agent="assistant",
        title=None,
        pending_ask=pending,
        version=1,
        created=now,
        updated=now,
    )
