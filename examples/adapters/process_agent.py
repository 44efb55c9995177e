"""An agent run by handrail's ``process`` adapter: one step per run.

handrail writes the step request to stdin and reads the reply from stdout. The connection
instructions that apply are in the JSON file ``HANDRAIL_CONNECTION_INSTRUCTIONS_FILE`` names
(empty when none apply): read it during the step and append its text to the model's prompt.

This one is a toy with no model, so that it runs anywhere: ``call <tool> <json>`` calls that tool
(through handrail's gates, like any model's call), a tool result is reported back, anything else
is answered with how the prompt it would send a model is made. Swap `think` for a real model.

The process gets none of the server's environment but ``HOME``, ``PATH`` and a few more like
them: a real model's API key goes in the adapter's ``env``, read from the server's environment
with ``{secret_env: NAME}``, such as ``env: {OPENAI_API_KEY: {secret_env: OPENAI_API_KEY}}``.

    agents:
      - name: outside
        instructions: You help with releases.
        adapter: {type: process, command: python, args: [examples/adapters/process_agent.py]}
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any


def read_instructions() -> dict[str, Any] | None:
    """The snapshot ``{text, digest}``, or None when no connection instructions apply."""
    path = os.environ["HANDRAIL_CONNECTION_INSTRUCTIONS_FILE"]
    with open(path, encoding="utf-8") as file:
        content = file.read()
    return json.loads(content) if content else None


def system_prompt(request: dict[str, Any], instructions: dict[str, Any] | None) -> str:
    """The agent's own instructions, then the connection instructions."""
    parts = [request["agent"]["instructions"]]
    if instructions is not None:
        parts.append(instructions["text"])
    return "\n\n".join(p for p in parts if p)


def think(system: str, request: dict[str, Any]) -> dict[str, Any]:
    """One step of a toy agent (a real one calls its model with `system` and the messages)."""
    last = request["messages"][-1]
    if last["kind"] == "tool-result":
        outcome = "failed" if last.get("isError") else "returned"
        return {"text": f"{last['toolName']} {outcome}: {json.dumps(last['content'])}"}
    text = last.get("text", "")
    if text.startswith("call "):
        _, name, *rest = text.split(" ", 2)
        arguments = json.loads(rest[0]) if rest else {}
        return {
            "toolCalls": [
                {"id": f"call_{uuid.uuid4().hex[:12]}", "name": name, "arguments": arguments}
            ]
        }
    return {"text": f"You said: {text} (my prompt has {len(system)} characters)"}


def main() -> None:
    request = json.load(sys.stdin)
    instructions = read_instructions()
    reply = think(system_prompt(request, instructions), request)
    # Keep the session handrail offers; start one when it offers none (a new conversation, or
    # the connection instructions changed).
    reply["sessionId"] = request["sessionId"] or f"session-{uuid.uuid4().hex[:12]}"
    json.dump(reply, sys.stdout)


if __name__ == "__main__":
    main()
