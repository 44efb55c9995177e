"""The authorization matrix, generated from the app's routes: the harness of
``test_access_matrix.py`` and ``bench/reliability.py``.

`route_calls` walks ``app.routes`` (every method of every route, the web UI's included) and
pairs each with its operation in ``/openapi.json``. A route is public when the document leaves
it out (the web UI's shell and static files, the document itself) or its operation says
``security: []``. For each route, `check_route` builds a fresh world of alice's (a conversation
with a canary title and prompt, paused on an ask; a grant, a saved level, a confirmation and a
file of hers) and calls the route naming her things, as each caller:

- nobody, and five kinds of bad token: 401 problem JSON with ``WWW-Authenticate: Bearer`` on
  every route that is not public; public routes answer 200 and show nothing of alice's;
- bob (another user): 403 or 404 where the request names something of alice's, and a body
  without her canaries (nor, on a list, her ids), and afterwards no row of hers changed;
- root (an admin): the same, except the reads the document allows admins (an operation whose
  403 says "admins may read"), which answer 200 with her data; never a write;
- alice (the owner): a 2xx, which shows that each request above was one the route takes.

Routes whose operation summary ends "(admin)" (changing the connections everyone's agents use,
the activity log) are the admin's: alice and bob get 403 and change no row; root gets past the
check (any answer but 401, 403 or a 5xx). A connection, like a permission level's connection
id and the web UI's files, is no one user's: reading it is allowed, and shows no canary.

A route the matrix cannot name things for (a new resource in a path, a new body) fails with
what to add, so a new route is never silently left out.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from reliability_helpers import db_state
from server_helpers import TOKENS, Api, command
from starlette.routing import Mount, Route

from handrail.demo.agent import DEMO_AGENT_NAME, PLAN_PICKER
from handrail.server.web import FAVICON_PATH, SHELL_PATHS, STATIC_PREFIX
from handrail.store.outbox import DeliveryRepo, new_delivery

__all__ = [
    "BAD_AUTHORIZATIONS",
    "CANARIES",
    "CAPABILITY_ROUTES",
    "PUBLIC_ROUTES",
    "Outcome",
    "RouteCall",
    "World",
    "check_route",
    "make_world",
    "route_calls",
]

#: The routes that need no token: the web UI's shell, static files and icon, and the document.
PUBLIC_ROUTES: Final = frozenset(
    {
        *(f"GET {p}" for p in SHELL_PATHS),
        f"GET {STATIC_PREFIX}/{{path:path}}",
        f"GET {FAVICON_PATH}",
        "GET /openapi.json",
    }
)

#: Routes that need no token because a secret in the URL authorizes them: the OAuth callback
#: (its ``state``) and an email's one-time answer link (its signed token). Called with no such
#: secret or a forged one, by anyone, they answer a 4xx, change no row and show nothing.
CAPABILITY_ROUTES: Final = frozenset(
    {"GET /api/oauth/callback", "GET /links/{token}", "POST /links/{token}"}
)

#: Records an admin reads whole (ids of everyone's things, never their text): the audit log
#: and the delivery log.
ADMIN_LISTS: Final = frozenset(
    {"GET /api/audit", "GET /api/deliveries", "GET /api/deliveries/{id}"}
)

CANARY_TITLE: Final = "canary-title-4b1d"
CANARY_PROMPT: Final = "canary-prompt-4b1d"
CANARY_FILE: Final = "canary-file-4b1d.txt"
CANARY_PREVIEW: Final = "canary-preview-4b1d"
#: Text of alice's that no one else may ever see.
CANARIES: Final = (CANARY_TITLE, CANARY_PROMPT, CANARY_FILE, CANARY_PREVIEW)

#: Authorization headers that name nobody.
BAD_AUTHORIZATIONS: Final = (
    "Bearer not-a-token",
    f"Bearer {TOKENS['alice']}x",
    f"Basic {TOKENS['alice']}",
    TOKENS["alice"],
    "Bearer",
    f"Bearer {TOKENS['alice'].upper()}",
)

ANSWER: Final = {"action": "accept", "content": {"selected": ["team"]}}


@dataclass(frozen=True, kw_only=True)
class RouteCall:
    """One method of one route, with its operation in the document (None when left out)."""

    method: str
    template: str
    params: tuple[str, ...]
    operation: Mapping[str, Any] | None

    @property
    def key(self) -> str:
        return f"{self.method} {self.template}"

    @property
    def public(self) -> bool:
        return self.operation is None or self.operation.get("security") == []

    @property
    def admin_only(self) -> bool:
        """Whether the document says only an admin may call it (its summary ends "(admin)"),
        as for changing the connections everyone's agents use."""
        return self.operation is not None and "(admin)" in str(self.operation.get("summary"))

    @property
    def admin_reads(self) -> bool:
        """Whether the document lets an admin read another user's thing here."""
        if self.operation is None or self.method != "GET":
            return False
        forbidden = self.operation.get("responses", {}).get("403", {})
        return "admins may read" in str(forbidden.get("description", ""))


def _document_path(template: str) -> str:
    return re.sub(r"\{(\w+):\w+\}", r"{\1}", template)


def route_calls(app: Any, document: Mapping[str, Any]) -> list[RouteCall]:
    """Every method (but HEAD) of every route of `app`, in the order of the routes."""
    calls = []
    for route in app.routes:
        if isinstance(route, Mount):
            raise AssertionError(f"the matrix does not know the mount {route.path!r}")
        assert isinstance(route, Route), route
        for method in sorted((route.methods or set()) - {"HEAD"}):
            item = document["paths"].get(_document_path(route.path), {})
            operation = item.get(method.lower()) if route.include_in_schema else None
            calls.append(
                RouteCall(
                    method=method,
                    template=route.path,
                    params=tuple(route.param_convertors),
                    operation=operation,
                )
            )
    return calls


@dataclass(frozen=True, kw_only=True)
class World:
    """Alice's things, fresh for one route."""

    history_id: str
    tool_call_id: str
    grant_id: str
    confirmation_id: str
    file_id: str
    connection_id: str
    static_file: str
    delivery_id: str

    @property
    def ids(self) -> tuple[str, ...]:
        return (
            self.history_id,
            self.grant_id,
            self.confirmation_id,
            self.file_id,
            self.delivery_id,
        )


async def make_world(api: Api) -> World:
    """A conversation of alice's titled `CANARY_TITLE`, holding `CANARY_PROMPT` and paused on
    the plan ask; a grant for it, her saved level, a confirmation and an uploaded file."""
    import datetime as dt

    created = await api.post("/histories", {"title": CANARY_TITLE})
    assert created.status_code == 201, created.text
    history_id = created.json()["data"]["id"]
    await api.say(CANARY_PROMPT, history_id)
    paused = await api.say(command("ask_choice", dict(PLAN_PICKER)), history_id)
    saved = await api.request("PUT", "/permissions/local:notes", json={"level": "read-only"})
    assert saved.status_code == 200, saved.text
    grant = await api.store.grants.add(
        "alice", "local:notes", "delete_note", "conversation", history_id=history_id
    )
    confirmation = await api.store.confirmations.create(
        history_id=history_id,
        user_id="alice",
        connection_id="http:booking",
        tool_name="book_slot",
        tool_call_id="call_canary",
        request={"method": "POST", "path": "/bookings"},
        digest="0" * 64,
        preview={"title": CANARY_PREVIEW},
        expires_at=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
    )
    upload = await api.request(
        "POST", "/files/upload", files={"file": (CANARY_FILE, b"canary bytes", "text/plain")}
    )
    assert upload.status_code in (200, 201), upload.text
    # A webhook delivery of an event of hers, already delivered (so no worker picks it up).
    delivery = dataclasses.replace(
        new_delivery(
            event_id=f"evt_{history_id}",
            channel="webhook",
            target="canary-hook",
            user_id="alice",
            kind="ask.created",
            payload={"historyId": history_id},
        ),
        status="delivered",
    )
    assert await DeliveryRepo(api.store.db).enqueue(delivery)
    static = await api.client.get("/")
    match = re.search(r'/static/([\w./-]+\.js)"', static.text)
    assert match, "the shell names no script"
    return World(
        history_id=history_id,
        tool_call_id=paused.ask["toolCallId"],
        grant_id=grant.id,
        confirmation_id=confirmation.id,
        file_id=upload.json()["data"]["id"],
        connection_id="local:notes",
        static_file=match.group(1),
        delivery_id=delivery.id,
    )


# --- requests ----------------------------------------------------------------------------------


def _resource(template: str) -> str:
    parts = [p for p in template.split("/") if p and not p.startswith("{")]
    if parts and parts[0] == "api":
        parts = parts[1:]
    return parts[0] if parts else ""


def _path_value(call: RouteCall, name: str, world: World) -> str:
    values = {
        "histories": world.history_id,
        "c": world.history_id,
        "grants": world.grant_id,
        "confirmations": world.confirmation_id,
        "permissions": world.connection_id,
        "connections": world.connection_id,
        "static": world.static_file,
        "approvals": world.history_id,
        "deliveries": world.delivery_id,
        "links": "forged-link-token",
        "agents": DEMO_AGENT_NAME,
    }
    resource = _resource(call.template)
    if resource not in values:
        raise AssertionError(
            f"{call.key}: the matrix does not know which of alice's things {{{name}}} names "
            f"under /{resource}; add it to _path_value"
        )
    return values[resource]


def _schema_name(call: RouteCall) -> tuple[str | None, Any]:
    assert call.operation is not None
    content = call.operation["requestBody"]["content"]
    media, entry = next(iter(content.items()))
    schema = entry.get("schema", {})
    ref = schema.get("$ref", "")
    return media, ref.rsplit("/", 1)[-1] if ref else schema


def _example(schema: Mapping[str, Any]) -> Any:
    """The simplest instance of an inline schema (its first enum value, its required fields)."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {k: _example(properties.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    return "x"


def _bodies(call: RouteCall, world: World) -> list[dict[str, Any]]:
    """The request bodies to try on `call`, as httpx keyword arguments (`[{}]`: no body). The
    first is the owner's; each names alice's things where the body can."""
    if call.operation is None or "requestBody" not in call.operation:
        return [{}]
    media, schema = _schema_name(call)
    answer = {"toolCallId": world.tool_call_id, **ANSWER}
    if media == "multipart/form-data":
        return [{"files": {"file": ("mine.txt", b"mine", "text/plain")}}]
    named: dict[str, list[Any]] = {
        "HistoryCreate": [{"title": "mine"}],
        "HistoryUpdate": [{"title": "taken over"}],
        "PromptRequest": [
            {"historyId": world.history_id, "askResponse": answer},
            {"historyId": world.history_id, "prompt": "taken over"},
        ],
        "TurnRequest": [
            {"askResponse": answer},
            {"toolCallId": world.tool_call_id, "buttonId": "option:team"},
            {"prompt": "taken over"},
        ],
    }
    if call.key == "POST /api/approvals/{historyId}":
        # An approver's answer: the owner may answer through it too.
        return [{"json": answer}]
    if isinstance(schema, str):
        if schema not in named:
            raise AssertionError(f"{call.key}: the matrix has no body for {schema}; add one")
        return [{"json": body} for body in named[schema]]
    return [{"json": _example(schema)}]


def _url(call: RouteCall, world: World) -> str:
    url = call.template
    for name in call.params:
        url = re.sub(r"\{" + name + r"(:\w+)?\}", _path_value(call, name, world), url)
    return url


#: Path resources that are not alice's alone: a connection is everyone's (its id also names
#: the caller's own level for it), and the web UI's pages and files are the same for everyone.
SHARED_RESOURCES: Final = frozenset({"permissions", "connections", "c", "static", "agents"})


def _names_alices(call: RouteCall, body: Mapping[str, Any]) -> bool:
    """Whether the request names something of alice's (in its path or its body)."""
    in_path = bool(call.params) and _resource(call.template) not in SHARED_RESOURCES
    return in_path or "historyId" in str(body.get("json", ""))


# --- checking ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one route did for each caller; `problems` lists what should not have happened."""

    key: str
    statuses: dict[str, list[int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    calls: int = 0


def _is_problem(response: httpx.Response, status: int) -> bool:
    if response.status_code != status:
        return False
    if response.headers.get("content-type") != "application/problem+json":
        return False
    body = response.json()
    return bool(body.get("status") == status and body.get("requestId"))


def _leaks(response: httpx.Response, world: World, url: str) -> list[str]:
    text = response.text
    found = [canary for canary in CANARIES if canary in text]
    # An id the caller sent may be echoed back ("no history has the id ..."); others not.
    found += [i for i in world.ids if i in text and i not in url]
    return found


def _alices_rows(
    before: dict[str, list[str]], after: dict[str, list[str]], world: World
) -> list[str]:
    """Rows of alice's that `after` changed, lost or gained (others may change their own)."""

    def alices(row: str) -> bool:
        return "'alice'" in row or any(i in row for i in world.ids)

    changed = []
    for table in sorted(set(before) | set(after)):
        old, new = set(before.get(table, [])), set(after.get(table, []))
        changed += [f"{table} lost {row[:160]}" for row in sorted(old - new) if alices(row)]
        changed += [f"{table} gained {row[:160]}" for row in sorted(new - old) if alices(row)]
    return changed


async def _send(
    api: Api, call: RouteCall, url: str, body: Mapping[str, Any], authorization: str | None
) -> httpx.Response:
    headers = {} if authorization is None else {"Authorization": authorization}
    return await api.client.request(call.method, url, headers=headers, **body)


async def _check_capability(
    api: Api,
    call: RouteCall,
    url: str,
    bodies: list[dict[str, Any]],
    world: World,
    outcome: Outcome,
) -> None:
    """Without the secret its URL must carry, a capability route refuses everyone alike (a
    4xx), changes no row and shows nothing of alice's: a token does not stand in for it."""
    authorizations = (None, *BAD_AUTHORIZATIONS, *(f"Bearer {TOKENS[u]}" for u in TOKENS))
    for authorization in authorizations:
        for body in bodies:
            before = await db_state(api)
            response = await _send(api, call, url, body, authorization)
            outcome.calls += 1
            outcome.statuses.setdefault(str(authorization), []).append(response.status_code)
            after = await db_state(api)
            what = f"{authorization!r} {body or ''}"
            if not 400 <= response.status_code < 500:
                outcome.problems.append(f"{what}: {response.status_code}, not a 4xx")
            if after != before:
                outcome.problems.append(f"{what}: a refused call changed rows")
            if leaked := _leaks(response, world, url):
                outcome.problems.append(f"{what} saw {leaked}")


async def _check_admin_only(
    api: Api,
    call: RouteCall,
    url: str,
    bodies: list[dict[str, Any]],
    world: World,
    outcome: Outcome,
) -> None:
    """Users get 403 and change nothing; the admin gets past the check (any answer but 401,
    403 and a 5xx: a configured connection, say, cannot be changed, 409)."""
    for user in ("alice", "bob", "root"):
        for body in bodies:
            before = await db_state(api)
            response = await _send(api, call, url, body, f"Bearer {TOKENS[user]}")
            outcome.calls += 1
            outcome.statuses.setdefault(user, []).append(response.status_code)
            after = await db_state(api)
            what = f"{user} {body or ''}"
            if user != "root":
                if not _is_problem(response, 403):
                    outcome.problems.append(f"{what}: {response.status_code}, not 403")
                if after != before:
                    outcome.problems.append(f"{what}: a refused call changed rows")
            elif response.status_code in (401, 403) or response.status_code >= 500:
                outcome.problems.append(f"{what} (the admin): {response.status_code}")
            if leaked := _leaks(response, world, url):
                outcome.problems.append(f"{what} saw {leaked}")


async def check_route(api: Api, call: RouteCall) -> Outcome:
    """Call `call` as every kind of caller (see the module docstring)."""
    world = await make_world(api)
    outcome = Outcome(key=call.key)
    url = _url(call, world)
    bodies = _bodies(call, world)

    def note(who: str, response: httpx.Response) -> None:
        outcome.calls += 1
        outcome.statuses.setdefault(who, []).append(response.status_code)

    if call.key in CAPABILITY_ROUTES:
        await _check_capability(api, call, url, bodies, world, outcome)
        return outcome

    for authorization in (None, *BAD_AUTHORIZATIONS):
        who = "anonymous" if authorization is None else "bad token"
        response = await _send(api, call, url, bodies[0], authorization)
        note(who, response)
        if call.public:
            if response.status_code != 200:
                outcome.problems.append(f"{who}: {response.status_code} on a public route")
        elif not _is_problem(response, 401):
            outcome.problems.append(f"{who} ({authorization!r}): {response.status_code}")
        elif response.headers.get("www-authenticate") != "Bearer":
            outcome.problems.append(f"{who}: a 401 without WWW-Authenticate: Bearer")
        if leaked := _leaks(response, world, url):
            outcome.problems.append(f"{who} saw {leaked}")

    if call.admin_only:
        await _check_admin_only(api, call, url, bodies, world, outcome)
        return outcome

    for user in ("bob", "root"):
        for body in bodies:
            before = await db_state(api)
            response = await _send(api, call, url, body, f"Bearer {TOKENS[user]}")
            note(user, response)
            after = await db_state(api)
            what = f"{user} {body or ''}"
            reads = user == "root" and call.admin_reads
            if reads:
                if response.status_code != 200 or CANARY_TITLE not in response.text:
                    outcome.problems.append(f"{what}: {response.status_code}, not alice's data")
            elif call.public:
                if response.status_code != 200:
                    outcome.problems.append(f"{what}: {response.status_code} on a public route")
            elif user == "root" and call.key in ADMIN_LISTS:
                if response.status_code != 200:
                    outcome.problems.append(f"{what}: {response.status_code} on an admin's record")
            elif _names_alices(call, body):
                if response.status_code not in (403, 404) or not (
                    _is_problem(response, response.status_code)
                ):
                    outcome.problems.append(f"{what}: {response.status_code} {response.text[:200]}")
            elif response.status_code >= 300:
                outcome.problems.append(f"{what}: {response.status_code} on their own list")
            # The audit log is an admin's to read whole: its records name alice's ids (never
            # her canaries: it holds digests and names, not her text).
            lists_all = user == "root" and call.key in ADMIN_LISTS
            if lists_all:
                if leaked := [c for c in CANARIES if c in response.text]:
                    outcome.problems.append(f"{what} saw {leaked}")
            elif not reads and (leaked := _leaks(response, world, url)):
                outcome.problems.append(f"{what} saw {leaked}")
            if changed := _alices_rows(before, after, world):
                outcome.problems.append(f"{what} changed alice's rows: {changed[:3]}")

    response = await _send(api, call, url, bodies[0], f"Bearer {TOKENS['alice']}")
    note("alice", response)
    if not 200 <= response.status_code < 300:
        outcome.problems.append(f"alice (the owner): {response.status_code} {response.text[:200]}")
    return outcome
