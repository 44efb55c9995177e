"""An agent run by handrail's ``http`` adapter: handrail POSTs each step request here.

The request's top-level ``connectionInstructions`` (``{text, digest}`` or null; the same is in
``context.connectionInstructions``) is owned by the server: append its text to the prompt after
the agent's instructions. Do not reuse a session made under another digest: handrail sends
``sessionId: null`` when the instructions changed.

A toy with no model (see `think`), on the standard library only:

    python examples/adapters/http_agent.py 9000

    agents:
      - name: remote
        adapter: {type: http, url: "http://127.0.0.1:9000/step"}
"""

from __future__ import annotations

import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def system_prompt(request: dict[str, Any]) -> str:
    parts = [request["agent"]["instructions"]]
    if request["connectionInstructions"] is not None:
        parts.append(request["connectionInstructions"]["text"])
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


class Step(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        reply = think(system_prompt(request), request)
        reply["sessionId"] = request["sessionId"] or f"session-{uuid.uuid4().hex[:12]}"
        body = json.dumps(reply).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet


def serve(port: int) -> ThreadingHTTPServer:
    return ThreadingHTTPServer(("127.0.0.1", port), Step)


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 9000).serve_forever()
