"""The scripted model: every command, replies to tool results, ids, the playbook."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _model_wire import collect, collect_until_error

from handrail.runtime.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from handrail.runtime.models import Model
from handrail.runtime.models.base import (
    ModelError,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallPart,
    ToolSpec,
)
from handrail.runtime.models.scripted import ScriptedModel


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(system="You are a test.", messages=list(messages))


def user(text: str) -> ModelRequest:
    return request(UserMessage(text=text))


def call(call_id: str, name: str, **arguments: object) -> ToolCallPart:
    return ToolCallPart(call=ToolCall(id=call_id, name=name, arguments=dict(arguments)))


def text_of(events: Sequence[object]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def test_is_a_model_and_says_it_is_scripted() -> None:
    model = ScriptedModel()
    assert isinstance(model, Model)
    assert model.name == "scripted"
    assert model.supports_tools is True
    assert "not AI" in (ScriptedModel.__doc__ or "")


async def test_plain_message_is_echoed_in_word_deltas() -> None:
    events = await collect(ScriptedModel(), user("hello there, model"))
    assert events == [
        TextDelta(text="You "),
        TextDelta(text="said: "),
        TextDelta(text="hello "),
        TextDelta(text="there, "),
        TextDelta(text="model"),
        StepEnd(finish_reason="stop"),
    ]


async def test_whole_message_is_echoed_with_its_lines() -> None:
    message = "  first line\n\nsecond line  "
    events = await collect(ScriptedModel(), user(message))
    assert text_of(events) == f"You said: {message}"


@pytest.mark.parametrize(
    ("line", "name", "arguments"),
    [
        (
            'ask_choice {"prompt": "Pick", "select": "one"}',
            "ask_choice",
            {"prompt": "Pick", "select": "one"},
        ),
        ('ask_confirm {"prompt": "Go?"}', "ask_confirm", {"prompt": "Go?"}),
        ('ask_markdown {"prompt": "Write"}', "ask_markdown", {"prompt": "Write"}),
        ('ask_form {"prompt": "Fill", "fields": []}', "ask_form", {"prompt": "Fill", "fields": []}),
        (
            'ask_files {"prompt": "Send", "accept": ["pdf"]}',
            "ask_files",
            {"prompt": "Send", "accept": ["pdf"]},
        ),
        ('clarify {"prompts": [{"id": "a"}]}', "clarify", {"prompts": [{"id": "a"}]}),
        ('call lookup {"city": "Oslo"}', "lookup", {"city": "Oslo"}),
        ("call list_notes", "list_notes", {}),
        ("ask_confirm", "ask_confirm", {}),
        ('  ask_confirm\t{"prompt": "Tabs"}  ', "ask_confirm", {"prompt": "Tabs"}),
    ],
)
async def test_each_command_calls_its_tool(
    line: str, name: str, arguments: dict[str, object]
) -> None:
    events = await collect(ScriptedModel(), user(line))
    assert events == [call("call_1_0", name, **arguments), StepEnd(finish_reason="tool_calls")]


async def test_several_commands_run_in_one_step_in_order() -> None:
    message = 'ask_confirm {"prompt": "Sure?"}\n\ncall lookup {"q": "é"}\nclarify {}\n'
    events = await collect(ScriptedModel(), user(message))
    assert events == [
        call("call_1_0", "ask_confirm", prompt="Sure?"),
        call("call_1_1", "lookup", q="é"),
        call("call_1_2", "clarify"),
        StepEnd(finish_reason="tool_calls"),
    ]


async def test_a_message_mixing_commands_and_text_is_echoed() -> None:
    message = 'Please do this:\nask_confirm {"prompt": "Go?"}'
    events = await collect(ScriptedModel(), user(message))
    assert text_of(events) == f"You said: {message}"
    assert not [event for event in events if isinstance(event, ToolCallPart)]


@pytest.mark.parametrize("message", ["fail now", "Fail", "failing", "ask_", "calls x {}", ""])
async def test_words_that_are_not_commands_are_echoed(message: str) -> None:
    events = await collect(ScriptedModel(), user(message))
    assert text_of(events) == f"You said: {message}"


async def test_fail_raises_a_model_error() -> None:
    events, error = await collect_until_error(ScriptedModel(), user("fail"))
    assert events == []
    assert isinstance(error, ModelError)
    assert str(error) == "The scripted model failed on purpose (`fail` on line 1)."


async def test_fail_after_text_streams_the_text_then_raises() -> None:
    events, error = await collect_until_error(
        ScriptedModel(), user("fail-after-text Partial answer here")
    )
    assert events == [
        TextDelta(text="Partial "),
        TextDelta(text="answer "),
        TextDelta(text="here"),
    ]
    assert isinstance(error, ModelError)
    assert "fail-after-text" in str(error)


async def test_commands_before_fail_run_then_it_raises() -> None:
    events, error = await collect_until_error(
        ScriptedModel(), user('call lookup {"q": 1}\nfail\ncall never {}')
    )
    assert events == [call("call_1_0", "lookup", q=1)]
    assert str(error) == "The scripted model failed on purpose (`fail` on line 2)."


async def test_bad_json_gets_a_helpful_reply_and_runs_nothing() -> None:
    message = (
        'call lookup {"q": 1}\nask_choice {"prompt": "x",}\nclarify [1, 2]\ncall\nask_form "no"'
    )
    events = await collect(ScriptedModel(), user(message))
    assert events[-1] == StepEnd(finish_reason="stop")
    assert not [event for event in events if isinstance(event, ToolCallPart)]
    assert text_of(events) == "\n".join(
        [
            "The scripted model (not AI) could not run these commands:",
            "- line 2 (ask_choice): the JSON is not valid: Expecting property name enclosed in "
            "double quotes (column 16).",
            "- line 3 (clarify): the input must be a JSON object, not an array.",
            "- line 4 (call): name the tool to call, as in `call lookup {}`.",
            "- line 5 (ask_form): the input must be a JSON object, not a str value.",
            "Each command line is `ask_<kind> <json>`, `clarify <json>`, `call <tool> <json>`, "
            "`fail` or `fail-after-text <text>`, where <json> is one JSON object (or nothing, "
            "for {}).",
        ]
    )


async def test_replies_to_tool_results_one_line_each() -> None:
    history: list[Message] = [
        UserMessage(text="ask_confirm {}\ncall lookup {}\ncall broken {}"),
        AssistantMessage(
            tool_calls=(
                ToolCall(id="call_1_0", name="ask_confirm", arguments={}),
                ToolCall(id="call_1_1", name="lookup", arguments={}),
                ToolCall(id="call_1_2", name="broken", arguments={}),
            )
        ),
        ToolResultMessage(
            tool_call_id="call_1_0",
            tool_name="ask_confirm",
            content={"action": "accept", "content": {"confirmed": True, "note": "ça va"}},
        ),
        ToolResultMessage(tool_call_id="call_1_1", tool_name="lookup", content="plain string"),
        ToolResultMessage(
            tool_call_id="call_1_2", tool_name="broken", content="It broke.", is_error=True
        ),
    ]
    events = await collect(ScriptedModel(), request(*history))
    assert events[-1] == StepEnd(finish_reason="stop")
    assert not [event for event in events if isinstance(event, ToolCallPart)]
    assert text_of(events) == "\n".join(
        [
            'ask_confirm returned: {"action":"accept","content":{"confirmed":true,"note":"ça va"}}',
            'lookup returned: "plain string"',
            "broken failed: It broke.",
        ]
    )


async def test_a_failed_result_with_json_content_is_shown_as_compact_json() -> None:
    history: list[Message] = [
        UserMessage(text="call x {}"),
        AssistantMessage(tool_calls=(ToolCall(id="c", name="x", arguments={}),)),
        ToolResultMessage(
            tool_call_id="c", tool_name="x", content={"code": "E", "n": [1, 2]}, is_error=True
        ),
    ]
    events = await collect(ScriptedModel(), request(*history))
    assert text_of(events) == 'x failed: {"code":"E","n":[1,2]}'


async def test_ids_are_unique_across_turns() -> None:
    model = ScriptedModel()
    history: list[Message] = []
    seen: list[str] = []
    for turn in range(3):
        history.append(UserMessage(text="call a {}\ncall b {}"))
        events = await collect(model, request(*history))
        calls = [event.call for event in events if isinstance(event, ToolCallPart)]
        history.append(AssistantMessage(tool_calls=tuple(calls)))
        for c in calls:
            history.append(ToolResultMessage(tool_call_id=c.id, tool_name=c.name, content=turn))
        history.append(AssistantMessage(text=text_of(await collect(model, request(*history)))))
        seen.extend(c.id for c in calls)
    assert seen == ["call_1_0", "call_1_1", "call_6_0", "call_6_1", "call_11_0", "call_11_1"]
    assert len(set(seen)) == len(seen)


async def test_ids_never_repeat_an_id_already_in_the_history() -> None:
    # A trimmed or hand-made history could hold an id the position would give again.
    history: list[Message] = [
        AssistantMessage(tool_calls=(ToolCall(id="call_2_0", name="a", arguments={}),)),
        UserMessage(text="call a {}\ncall b {}"),
    ]
    events = await collect(ScriptedModel(), request(*history))
    ids = [event.call.id for event in events if isinstance(event, ToolCallPart)]
    assert ids == ["call_2_0_1", "call_2_1"]


async def test_same_history_gives_the_same_step() -> None:
    history = user('call a {"x": 1}')
    assert await collect(ScriptedModel(), history) == await collect(ScriptedModel(), history)


async def test_playbook_maps_plain_prompts_to_commands() -> None:
    model = ScriptedModel(
        playbook={"  Book a Table ": 'ask_form {"prompt": "When?"}\ncall list_tables {}'}
    )
    events = await collect(model, user("book a table\n"))
    assert events == [
        call("call_1_0", "ask_form", prompt="When?"),
        call("call_1_1", "list_tables"),
        StepEnd(finish_reason="tool_calls"),
    ]
    other = await collect(model, user("book a table please"))
    assert text_of(other) == "You said: book a table please"
    # The commands still work with a playbook.
    events, error = await collect_until_error(model, user("fail-after-text x"))
    assert events == [TextDelta(text="x")]
    assert isinstance(error, ModelError)


async def test_ignores_the_tools_on_offer() -> None:
    tools = [ToolSpec(name="lookup", description="Look up.", input_schema={"type": "object"})]
    events = await collect(
        ScriptedModel(), ModelRequest(system="", messages=[UserMessage(text="hi")], tools=tools)
    )
    assert text_of(events) == "You said: hi"


@pytest.mark.parametrize(
    "messages",
    [[], [UserMessage(text="hi"), AssistantMessage(text="You said: hi")]],
    ids=["empty", "assistant-last"],
)
async def test_needs_a_user_message_or_tool_results_last(messages: list[Message]) -> None:
    events, error = await collect_until_error(ScriptedModel(), request(*messages))
    assert events == []
    assert isinstance(error, ModelError)
