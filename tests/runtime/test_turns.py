"""The turn runtime end to end, in process: a real SQLite store and the scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from doubles import FlakyModel, RecordingModel
from examples import PLAN, plan_card
from handrail.errors import Conflict, Forbidden, InvalidRequest, NotFound
from handrail.policy import ToolHints
from handrail.runtime.agent import Agent, Tool, ToolError
from handrail.runtime.models.base import ModelEvent, ModelRequest
from handrail.runtime.models.scripted import ScriptedModel
from handrail.runtime.runtime import Runtime
from handrail.runtime.turn import Principal
from handrail.server.problems import problem_for
from handrail.store import Store

ALICE = Principal(user_id="alice")
BOB = Principal(user_id="bob")


def command(tool: str, args: dict[str, Any]) -> str:
    return f"{tool} {json.dumps(args)}"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def make_runtime(store: Store, model: Any = None, **agent_options: Any) -> Runtime:
    agent = Agent("assistant", instructions="Be brief.", **agent_options)
    return Runtime(store=store, agents=agent, model=model or ScriptedModel())


async def run(turn_coro: Any) -> list[dict[str, Any]]:
    turn = await turn_coro
    return [event async for event in turn.stream()]


async def rows(store: Store, history_id: str) -> list[dict[str, Any]]:
    return [r.data for r in await store.histories.rows(history_id)]


async def test_wire_example_ask_pause_answer_resume(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    assert len(events) == 2
    ask, done = events
    history_id = ask["historyId"]
    call_id = ask["ask"]["toolCallId"]
    assert ask == {
        "ask": {
            "toolCallId": call_id,
            "kind": "choice",
            "input": PLAN,
            "simple": plan_card(call_id),
        },
        "historyId": history_id,
    }
    assert done == {
        "done": True,
        "historyId": history_id,
        "title": command("ask_choice", PLAN)[:59] + "…",
        "pendingAsk": {"toolCallId": call_id},
    }
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is not None
    assert history.pending_ask.prompt_index == 1

    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    events = await run(runtime.start_answer(ALICE, history_id, answer))
    reply = "ask_choice returned: " + compact(
        {"action": "accept", "content": {"selected": ["team"]}}
    )
    assert events[0] == {"askResolved": {"toolCallId": call_id, "action": "accept"}}
    assert "".join(e["text"] for e in events if "text" in e) == reply
    assert events[-1] == {"done": True, "historyId": history_id, "title": done["title"]}
    stored = await rows(store, history_id)
    assert [r["type"] for r in stored] == ["user", "tool-call", "tool-result", "assistant"]
    assert stored[1]["ask"] == {"kind": "choice", "status": "answered"}
    assert stored[1]["toolName"] == "ask_choice"
    assert stored[1]["args"] == PLAN
    assert stored[2]["result"] == {"action": "accept", "content": {"selected": ["team"]}}
    assert stored[3] == {"type": "assistant", "text": reply}
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is None
    log = await store.requests.list(history_id)
    assert [r.metadata for r in log] == [
        {"ask": {"kind": "choice", "toolCallId": call_id, "phase": "asked"}},
        {"ask": {"kind": "choice", "toolCallId": call_id, "action": "accept", "phase": "answered"}},
    ]
    await runtime.aclose()


async def test_plain_message_gets_the_scripted_reply(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, "hello there"))
    assert "".join(e["text"] for e in events if "text" in e) == "You said: hello there"
    assert events[-1]["done"] is True
    assert "pendingAsk" not in events[-1]


async def test_invalid_ask_goes_back_to_the_model_and_never_reaches_the_client(
    store: Store,
) -> None:
    runtime = make_runtime(store)
    bad = {**PLAN, "options": PLAN["options"][:1]}
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", bad)))
    assert not any("ask" in e for e in events)
    text = "".join(e["text"] for e in events if "text" in e)
    assert text.startswith("ask_choice failed: Invalid ask_choice input")
    assert "TOO_FEW" not in text
    assert "options" in text
    history_id = events[-1]["historyId"]
    assert [r["type"] for r in await rows(store, history_id)] == ["user", "assistant"]


async def test_two_asks_in_one_step_cancel_the_second(store: Store) -> None:
    runtime = make_runtime(store)
    confirm = {"prompt": "Send it?"}
    prompt = command("ask_choice", PLAN) + "\n" + command("ask_confirm", confirm)
    events = await run(runtime.start_prompt(ALICE, prompt))
    ask = next(e for e in events if "ask" in e)
    assert ask["ask"]["kind"] == "choice"
    stored = await rows(store, ask["historyId"])
    assert [(r["type"], r.get("ask", {}).get("status")) for r in stored] == [
        ("user", None),
        ("tool-call", "pending"),
        ("tool-call", "cancelled"),
        ("tool-result", None),
    ]
    assert stored[3]["result"] == {"action": "cancel", "reason": "one_ask_at_a_time"}


async def test_decline_and_cancel_answers(store: Store) -> None:
    runtime = make_runtime(store)
    for action, extra, status in (
        ("decline", {}, "answered"),
        ("cancel", {"reason": "changed my mind"}, "cancelled"),
    ):
        events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
        history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
        answer = {"toolCallId": call_id, "action": action, **extra}
        events = await run(runtime.start_answer(ALICE, history_id, answer))
        assert events[0] == {"askResolved": {"toolCallId": call_id, "action": action}}
        stored = await rows(store, history_id)
        assert stored[1]["ask"]["status"] == status
        assert stored[2]["result"] == {"action": action, **extra}


async def test_confirm_decline_is_refused_and_the_ask_stays_pending(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, command("ask_confirm", {"prompt": "Go?"})))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    with pytest.raises(InvalidRequest) as caught:
        await runtime.start_answer(ALICE, history_id, {"toolCallId": call_id, "action": "decline"})
    assert problem_for(caught.value)["title"] == "Invalid askResponse"
    assert caught.value.fields == [
        {
            "path": "action",
            "code": "DECLINE_NOT_ALLOWED",
            "message": "This ask cannot be skipped.",
            "fix": "Answer the ask with action accept (confirmed: false denies).",
        }
    ]
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is not None


async def test_a_second_ask_after_an_answer(store: Store) -> None:
    class AskAgain(FlakyModel):
        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            self.calls += 1
            if self.calls == 2:  # the continuation after the first answer asks again
                from handrail.runtime.messages import ToolCall
                from handrail.runtime.models.base import StepEnd, ToolCallPart

                yield ToolCallPart(
                    call=ToolCall(
                        id="call_second", name="ask_confirm", arguments={"prompt": "Sure?"}
                    )
                )
                yield StepEnd(finish_reason="tool_calls")
                return
            async for event in self.inner.stream(request):
                yield event

    runtime = make_runtime(store, model=AskAgain())
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, first = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    answer = {"toolCallId": first, "action": "accept", "content": {"selected": ["team"]}}
    events = await run(runtime.start_answer(ALICE, history_id, answer))
    assert [next(iter(e)) for e in events] == ["askResolved", "ask", "done"]
    assert events[1]["ask"]["toolCallId"] == "call_second"
    history = await store.histories.get(history_id)
    assert history is not None
    assert history.pending_ask is not None
    assert history.pending_ask.prompt_index == 1  # the same user message as the first ask
    events = await run(
        runtime.start_answer(
            ALICE,
            history_id,
            {"toolCallId": "call_second", "action": "accept", "content": {"confirmed": True}},
        )
    )
    text = "".join(e["text"] for e in events if "text" in e)
    assert text == "ask_confirm returned: " + compact(
        {"action": "accept", "content": {"confirmed": True}}
    )
    log = await store.requests.list(history_id)
    assert log[1].metadata == {
        "ask": {"kind": "choice", "toolCallId": first, "action": "accept", "phase": "answered"},
        "nextAsk": {"kind": "confirm", "toolCallId": "call_second", "phase": "asked"},
    }


async def test_a_prompt_cancels_the_pending_ask_first(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    events = await run(runtime.start_prompt(ALICE, "never mind", history_id=history_id))
    assert events[0] == {"askResolved": {"toolCallId": call_id, "action": "cancel"}}
    stored = await rows(store, history_id)
    assert [r["type"] for r in stored] == ["user", "tool-call", "tool-result", "user", "assistant"]
    assert stored[1]["ask"]["status"] == "cancelled"
    assert stored[2]["result"] == {"action": "cancel", "reason": "user_sent_message"}
    with pytest.raises(Conflict):
        await runtime.start_answer(
            ALICE,
            history_id,
            {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}},
        )


async def test_two_prompts_cancel_one_ask_once(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id = events[0]["historyId"]
    first, second = await asyncio.gather(
        run(runtime.start_prompt(ALICE, "one", history_id=history_id)),
        run(runtime.start_prompt(ALICE, "two", history_id=history_id)),
    )
    resolved = [e for e in [*first, *second] if "askResolved" in e]
    assert len(resolved) == 1
    stored = await rows(store, history_id)
    cancels = [r for r in stored if r["type"] == "tool-result"]
    assert len(cancels) == 1
    assert sorted(r["text"] for r in stored if r["type"] == "user")[1:] == ["one", "two"]


async def test_two_concurrent_answers_one_wins(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    results = await asyncio.gather(
        runtime.start_answer(ALICE, history_id, answer),
        runtime.start_answer(ALICE, history_id, answer),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["NotPending", "Turn"]
    await runtime.aclose()
    stored = await rows(store, history_id)
    assert len([r for r in stored if r["type"] == "tool-result"]) == 1


async def test_model_failure_before_output_undoes_the_answer(store: Store) -> None:
    model = FlakyModel(fail_on={2})
    runtime = make_runtime(store, model=model)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    events = await run(runtime.start_answer(ALICE, history_id, answer))
    assert [next(iter(e)) for e in events] == ["askResolved", "error", "done"]
    assert events[-1] == {
        "done": True,
        "historyId": history_id,
        "pendingAsk": {"toolCallId": call_id},
    }
    stored = await rows(store, history_id)
    assert [r["type"] for r in stored] == ["user", "tool-call"]
    assert stored[1]["ask"]["status"] == "pending"
    # The audit log says the ask was answered, then opened again.
    audit = [r.action for r in await store.audit.for_history(history_id)]
    assert audit == ["gate.asked", "gate.answered", "gate.reopened"]
    # The same answer then succeeds.
    events = await run(runtime.start_answer(ALICE, history_id, answer))
    assert events[-1] == {"done": True, "historyId": history_id, "title": events[-1]["title"]}
    assert len([r for r in await rows(store, history_id) if r["type"] == "tool-result"]) == 1


async def test_model_failure_after_output_keeps_the_answer(store: Store) -> None:
    model = FlakyModel(fail_after_text_on={2})
    runtime = make_runtime(store, model=model)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    events = await run(runtime.start_answer(ALICE, history_id, answer))
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "askResolved"
    assert kinds[-2:] == ["error", "done"]
    assert "text" in kinds
    assert "pendingAsk" not in events[-1]
    stored = await rows(store, history_id)
    assert stored[1]["ask"]["status"] == "answered"
    with pytest.raises(Conflict) as caught:
        await runtime.start_answer(ALICE, history_id, answer)
    assert problem_for(caught.value)["title"] == "This ask is no longer pending"


async def test_owner_checks_and_unknown_history(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["team"]}}
    with pytest.raises(Forbidden):
        await runtime.start_answer(BOB, history_id, answer)
    with pytest.raises(Forbidden):
        await runtime.start_prompt(BOB, "hi", history_id=history_id)
    with pytest.raises(NotFound):
        await runtime.start_answer(ALICE, "0" * 24, answer)
    with pytest.raises(Conflict):
        await runtime.start_answer(ALICE, history_id, {**answer, "toolCallId": "call_other"})


async def test_compact_turn_offers_only_compact_kinds(store: Store) -> None:
    runtime = make_runtime(store)
    events = await run(
        runtime.start_prompt(
            ALICE, command("ask_markdown", {"prompt": "Edit this"}), surface="compact"
        )
    )
    text = "".join(e["text"] for e in events if "text" in e)
    assert text.startswith("ask_markdown failed: There is no tool named 'ask_markdown'.")
    events = await run(
        runtime.start_prompt(ALICE, command("ask_confirm", {"prompt": "Go?"}), surface="compact")
    )
    assert events[0]["ask"]["simple"]["handoff"] is False
    with pytest.raises(InvalidRequest) as caught:
        await runtime.start_prompt(ALICE, "hi", surface="watch")
    assert problem_for(caught.value)["title"] == "surface is not a known surface"


async def test_host_tool_runs_and_tool_error_reaches_the_model(store: Store) -> None:
    notes = ["Groceries"]

    def delete_note(title: str) -> dict[str, Any]:
        if title not in notes:
            raise ToolError(f"No note is titled {title!r}. The notes are: {', '.join(notes)}.")
        notes.remove(title)
        return {"deleted": title}

    tool = Tool(
        name="delete_note",
        description="Delete a note by title.",
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
        function=delete_note,
        hints=ToolHints(consequential=False),  # mutating: runs at "non-consequential"
    )
    runtime = make_runtime(store, tools=[tool])
    await store.permissions.set("alice", "local:assistant", "non-consequential")
    events = await run(
        runtime.start_prompt(ALICE, "call delete_note " + compact({"title": "Taxes"}))
    )
    text = "".join(e["text"] for e in events if "text" in e)
    assert text == "delete_note failed: No note is titled 'Taxes'. The notes are: Groceries."
    assert [next(iter(e)) for e in events][:2] == ["toolCall", "toolResult"]
    events = await run(
        runtime.start_prompt(ALICE, "call delete_note " + compact({"title": "Groceries"}))
    )
    text = "".join(e["text"] for e in events if "text" in e)
    assert text == 'delete_note returned: {"deleted":"Groceries"}'


async def test_pause_in_one_runtime_answer_from_another(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first = await Store.open(url, blob_dir=tmp_path / "files")
    runtime = make_runtime(first)
    events = await run(runtime.start_prompt(ALICE, command("ask_choice", PLAN)))
    history_id, call_id = events[0]["historyId"], events[0]["ask"]["toolCallId"]
    await runtime.aclose()
    await first.close()

    second = await Store.open(url, blob_dir=tmp_path / "files")
    try:
        runtime = make_runtime(second)
        answer = {"toolCallId": call_id, "action": "accept", "content": {"selected": ["starter"]}}
        events = await run(runtime.start_answer(ALICE, history_id, answer))
        text = "".join(e["text"] for e in events if "text" in e)
        assert text == "ask_choice returned: " + compact(
            {"action": "accept", "content": {"selected": ["starter"]}}
        )
    finally:
        await second.close()


PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)
RECEIPT = {"prompt": "Upload the receipt.", "accept": ["image", "pdf"], "maxFiles": 2}


async def _files_ask(runtime: Runtime) -> tuple[str, str]:
    events = await run(runtime.start_prompt(ALICE, command("ask_files", RECEIPT)))
    return events[0]["historyId"], events[0]["ask"]["toolCallId"]


async def test_files_answer_by_file_id_and_data_url(store: Store) -> None:
    import base64

    from handrail.runtime.messages import ToolResultMessage

    model = RecordingModel()
    runtime = make_runtime(store, model=model)
    history_id, call_id = await _files_ask(runtime)
    upload = await store.files.create("alice", "receipt.png", "image/png", PNG)
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    answer = {
        "toolCallId": call_id,
        "action": "accept",
        "content": {
            "files": [
                {
                    "fileId": upload.id,
                    "filename": "receipt.png",
                    "mimeType": "image/png",
                    "size": len(PNG),
                },
                {
                    "url": data_url,
                    "filename": "scan.png",
                    "mimeType": "image/png",
                    "size": len(PNG),
                },
            ]
        },
    }
    await run(runtime.start_answer(ALICE, history_id, answer))
    stored_answer = {
        "action": "accept",
        "content": {
            "files": [
                {
                    "fileId": upload.id,
                    "filename": "receipt.png",
                    "mimeType": "image/png",
                    "size": len(PNG),
                },
                {"filename": "scan.png", "mimeType": "image/png", "size": len(PNG)},
            ]
        },
    }
    stored = await rows(store, history_id)
    assert stored[2]["result"] == stored_answer
    assert "data:" not in json.dumps(list(stored))
    for record in await store.requests.list(history_id):
        assert "data:" not in record.prompt
        assert "base64" not in json.dumps(record.metadata)
    shown = model.requests[-1].messages[-1]
    assert isinstance(shown, ToolResultMessage)
    assert shown.content == stored_answer
    assert [(p.filename, p.mime_type, p.data) for p in shown.parts] == [
        ("receipt.png", "image/png", PNG),
        ("scan.png", "image/png", PNG),
    ]


async def test_files_answer_errors_leave_the_ask_pending(store: Store) -> None:
    import base64

    runtime = make_runtime(store, asks={"maxFileSizeBytes": 1000})
    history_id, call_id = await _files_ask(runtime)
    bobs = await store.files.create("bob", "b.png", "image/png", PNG)
    pdf_bytes_as_png = "data:image/png;base64," + base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
    cases = [
        (
            {"fileId": bobs.id, "filename": "b.png", "mimeType": "image/png", "size": len(PNG)},
            "content.files[0].fileId",
            "FILE_NOT_OWNED",
        ),
        (
            {"url": pdf_bytes_as_png, "filename": "a.png", "mimeType": "image/png", "size": 15},
            "content.files[0].mimeType",
            "MIME_MISMATCH",
        ),
        (
            {
                "url": "data:image/png;base64," + base64.b64encode(PNG + b"\0" * 2000).decode(),
                "filename": "big.png",
                "mimeType": "image/png",
                "size": 10,
            },
            "content.files[0].size",
            "FILE_TOO_LARGE",
        ),
    ]
    for ref, path, code in cases:
        answer = {"toolCallId": call_id, "action": "accept", "content": {"files": [ref]}}
        with pytest.raises(InvalidRequest) as caught:
            await runtime.start_answer(ALICE, history_id, answer)
        assert problem_for(caught.value)["title"] == "Invalid askResponse"
        assert [(f["path"], f["code"]) for f in caught.value.fields] == [(path, code)]  # type: ignore[union-attr]
        history = await store.histories.get(history_id)
        assert history is not None
        assert history.pending_ask is not None
