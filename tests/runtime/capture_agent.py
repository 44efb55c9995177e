"""A process adapter's agent for the tests: it records what it got, then replies.

Each run writes ``<CAPTURE_DIR>/<n>.json``: the step request, the instructions file's path, its
mode and its content, and the whole environment it got (``environ``). Then,
by ``CAPTURE_MODE``: ``reply`` (the default) answers like the scripted model (``call <tool>
<json>`` calls the tool; a tool result is reported; anything else gets ``You said: ...``) with
the session id it was offered, or ``s-<n>``; ``fail`` exits 3; ``garbage`` writes text that is
not JSON; ``shape`` writes JSON that is not a step reply; ``sleep`` sleeps a minute.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

request = json.load(sys.stdin)
folder = Path(os.environ["CAPTURE_DIR"])
n = len(list(folder.glob("*.json"))) + 1
path = os.environ["HANDRAIL_CONNECTION_INSTRUCTIONS_FILE"]
with open(path, encoding="utf-8") as file:
    content = file.read()
capture = {
    "request": request,
    "path": path,
    "mode": stat.S_IMODE(os.stat(path).st_mode),
    "folderMode": stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode),
    "content": content,
    "environ": dict(os.environ),
}
(folder / f"{n}.json").write_text(json.dumps(capture), encoding="utf-8")
mode = os.environ.get("CAPTURE_MODE", "reply")
if mode == "fail":
    sys.stderr.write("something broke\n")
    sys.exit(3)
if mode == "garbage":
    sys.stdout.write("this is not json")
    sys.exit(0)
if mode == "shape":
    json.dump({"tool_calls": []}, sys.stdout)
    sys.exit(0)
if mode == "sleep":
    time.sleep(60)
last = request["messages"][-1]
if last["kind"] == "tool-result":
    reply = {"text": f"{last['toolName']} returned: {json.dumps(last['content'])}"}
elif last.get("text", "").startswith("call "):
    _, name, rest = last["text"].split(" ", 2)
    reply = {"toolCalls": [{"id": f"call_{n}", "name": name, "arguments": json.loads(rest)}]}
else:
    reply = {"text": f"You said: {last.get('text', '')}"}
reply["sessionId"] = request["sessionId"] or f"s-{n}"
json.dump(reply, sys.stdout)
