"""Saved connections at run time: `ConnectionHub` keeps each saved MCP connection's link open,
offers its tools to the agents that may use them, and carries out admins' changes.

Every agent of the runtime reads the hub as a tool source (`Agent.add_tool_source`), so an
agent's tools at each turn are its own plus the saved connections it may use, from memory: a
connection saved, changed or deleted in this process shows at the next turn; one changed in
another process (same database) within `SYNC_EVERY` seconds. The tools of a connection pass the
same policy as any other: its ``id`` is the ``connectionId`` of permission levels, grants and
gates, and its hints (from the server's annotations, only ever stricter when the connection is
not trusted) or an admin's override give each tool its safety class.

A tool the model calls runs through the connection's `McpLink`; a result the server marks as an
error, a failure, a timeout and a dead server all reach the model as a tool error that names
the way forward. The server's ``instructions`` are stored for admins and never put into a
prompt.

Secrets are decrypted only to start a link (and to mask them in its log); they are never in a
response, a row (the store holds their ciphertext), a log line or a prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .._util import Failing, iso, new_id, utc_now
from ..actions import ActionSet, ActionTool
from ..connections import (
    Catalog,
    ListedTool,
    McpCallFailed,
    McpLink,
    MissingValue,
    SecretBox,
    SecretsUnreadable,
    tool_prefix,
)
from ..connections.approvals import check_approvals
from ..connections.instructions import (
    InstructionSource,
    check_setting,
    saved_source,
    template_setting,
)
from ..connections.oauth import OAUTH_SECRET, OAuthLink, OAuthSaved, SignIn, SignIns
from ..store import Store
from ..store.connections import (
    ActivityRecord,
    ActivityRepo,
    ConnectionNotFound,
    ConnectionRecord,
    ConnectionRepo,
    PrefixTaken,
    SecretsChange,
)
from ..store.paging import Page, Position
from .agent import Agent, SourcedSets
from .connection_checks import (
    CREATE_FIELDS,
    CUSTOM,
    ConnectionReadOnly,
    ConnectionUnknown,
    InvalidConnection,
    NameTaken,
    NoInstructionsTemplate,
    UnknownApp,
    agent_names,
    app_definition,
    checked_overrides,
    checked_secrets,
    checked_settings,
    custom_launch,
    invalid,
    name_taken,
    public_changes,
    timeout_of,
)
from .connection_launch import action_set_of, authorizes, mcp_launch, sentence
from .connection_tools import ConnectionTool, action_tools, managed_values, mcp_tools
from .tools import ToolSet
from .turn import Principal

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "SYNC_EVERY",
    "ConnectionHub",
    "ConnectionReadOnly",
    "ConnectionTool",
    "InvalidConnection",
    "NameTaken",
    "NoInstructionsTemplate",
    "Signer",
    "UnknownApp",
]

log = logging.getLogger("handrail.connections")

#: Seconds a tool call may take unless the connection says otherwise.
DEFAULT_CALL_TIMEOUT: Final = 60.0
#: How often a process reads which connections other processes saved, changed or removed.
SYNC_EVERY: Final = 2.0
NAME_MAX: Final = 80


@dataclass(frozen=True, kw_only=True)
class Signer:
    """The admin whose change starts a connection now, and where the browser comes back to
    when its server requires signing in (the server's OAuth callback URL)."""

    user_id: str
    redirect_uri: str


@dataclass(kw_only=True)
class _Live:
    """One saved connection in this process: its row, its link and the tools it offers."""

    record: ConnectionRecord
    link: McpLink | None = None
    tool_set: ToolSet | None = None
    #: An action set connection's HTTP actions, by the names the model calls them.
    actions: dict[str, tuple[ActionSet, ActionTool]] = field(default_factory=dict)
    #: Tools left out because their model name is taken (each names both).
    clashes: list[str] = field(default_factory=list)

    def usable_by(self, agent: str) -> bool:
        return self.record.agents is None or agent in self.record.agents


class ConnectionHub:
    """The saved connections of one runtime (see the module's docs)."""

    def __init__(
        self,
        store: Store,
        *,
        catalog: Catalog,
        secrets: SecretBox,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        sync_every: float = SYNC_EVERY,
        connect_timeout: float = 30.0,
        users: Iterable[str] | None = None,
    ) -> None:
        self.store = store
        #: The user ids a connection's approvers may name (None: any id, as with JWTs).
        self.users: frozenset[str] | None = None if users is None else frozenset(users)
        self.catalog = catalog
        self.secrets = secrets
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.sync_every = sync_every
        self.repo = ConnectionRepo(store.db)
        self.activity = ActivityRepo(store.db)
        self._live: dict[str, _Live] = {}
        self._agents: list[Agent] = []
        self._generation = 0
        self._cache: dict[str, tuple[int, SourcedSets]] = {}
        self._sync_task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._lock = asyncio.Lock()
        #: The sign-ins (OAuth) under way in this process.
        self.sign_ins = SignIns()

    # --- life -------------------------------------------------------------------------------

    async def start(self, agents: Iterable[Agent]) -> None:
        """Serve `agents` and start every saved connection (each waits for its server)."""
        for agent in agents:
            self._agents.append(agent)
            agent.add_tool_source(self.sourced)
        await self.sync()
        if self.sync_every > 0:
            self._sync_task = asyncio.create_task(self._sync_loop(), name="handrail-connections")

    async def aclose(self) -> None:
        self._closing.set()
        if self._sync_task is not None:
            # Let a sync under way finish (it may be starting or stopping a server): cancelling
            # it there would leave a child process behind.
            try:
                async with asyncio.timeout(self.connect_timeout + 20):
                    await asyncio.shield(self._sync_task)
            except TimeoutError:
                self._sync_task.cancel()
        for agent in self._agents:
            agent.remove_tool_source(self.sourced)
        self._agents.clear()
        links = [live.link for live in self._live.values() if live.link is not None]
        self._live.clear()
        self._changed()
        await asyncio.gather(*(link.aclose() for link in links), return_exceptions=True)

    async def _sync_loop(self) -> None:
        reads = Failing(log, "reading the saved connections")
        while not self._closing.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.sync_every):
                    await self._closing.wait()
            if self._closing.is_set():
                return
            try:
                await self.sync()
            except Exception:
                reads.failed(again_s=self.sync_every)
            else:
                reads.succeeded()

    async def sync(self) -> None:
        """Bring this process's links in line with the saved connections."""
        async with self._lock:
            versions = await self.repo.versions()
            for connection_id in [c for c in self._live if c not in versions]:
                await self._stop(connection_id)
            todo = [
                c
                for c, version in versions.items()
                if c not in self._live or self._live[c].record.version != version
            ]
            records = [await self.repo.get(c) for c in todo]
            # A server waiting for a sign-in that another process has since made (its tokens
            # are saved, the version stays): start it again with them.
            for connection_id, live in self._live.items():
                if connection_id in todo or live.link is None or not live.link.needs_sign_in:
                    continue
                fresh = await self.repo.get(connection_id)
                if fresh is not None and fresh.secrets != live.record.secrets:
                    records.append(fresh)
            await asyncio.gather(*(self._restart(r) for r in records if r is not None))

    def _changed(self) -> None:
        self._generation += 1

    # --- the tool source ----------------------------------------------------------------------

    def sourced(self, agent: Agent) -> SourcedSets:
        """The tool sets of the saved connections `agent` may use, as they are now."""
        cached = self._cache.get(agent.name)
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        usable = [
            live
            for live in sorted(self._live.values(), key=lambda one: one.record.id)
            if live.tool_set is not None and live.usable_by(agent.name)
        ]
        actions = {name: a for live in usable for name, a in live.actions.items()}
        result = SourcedSets(
            tool_sets=tuple(live.tool_set for live in usable if live.tool_set is not None),
            actions=actions,
            guidance={
                live.record.id: self.instruction_source(live.record)
                for live in usable
                if live.record.agent_instructions is not None
            },
        )
        self._cache[agent.name] = (self._generation, result)
        return result

    # --- starting links ---------------------------------------------------------------------

    async def _stop(self, connection_id: str) -> None:
        live = self._live.pop(connection_id, None)
        self._changed()
        if live is not None and live.link is not None:
            await live.link.aclose()

    async def _restart(self, record: ConnectionRecord, signer: Signer | None = None) -> _Live:
        old = self._live.get(record.id)
        if old is not None and old.link is not None:
            await old.link.aclose()
        # Starting here, whatever another process wrote of its own start.
        starting = {**record.status, "state": "starting"}
        starting.pop("message", None)
        live = _Live(record=dataclasses.replace(record, status=starting))
        self._live[record.id] = live
        self._changed()
        await self._start(live, signer)
        return live

    async def _start(self, live: _Live, signer: Signer | None = None) -> None:
        record = live.record
        if record.kind == "actions":
            await self._start_actions(live)
            return
        try:
            launch, secrets, oauth_text = mcp_launch(record, self.catalog, self.secrets)
        except (MissingValue, SecretsUnreadable) as exc:
            await self._set_status(live, "error", sentence(str(exc)))
            return

        async def changed(link: McpLink) -> None:
            """The server came back (or failed again) after its first start."""
            if self._live.get(record.id) is live:
                await self._link_status(live, link)

        oauth: OAuthLink | None = None
        if launch.transport == "http" and launch.url and not authorizes(launch.headers):

            async def save(saved: OAuthSaved) -> None:
                await self._save_oauth(live, saved)

            oauth = OAuthLink(
                connection_id=record.id,
                name=record.name,
                server_url=launch.url,
                saved=OAuthSaved.from_secret(oauth_text),
                save=save,
                sign_ins=self.sign_ins,
                can_save=self.secrets.has_key,
                signer=signer.user_id if signer is not None else None,
                redirect_uri=signer.redirect_uri if signer is not None else None,
            )
        link = McpLink(
            name=record.name,
            launch=launch,
            secrets=list(secrets.values()),
            call_timeout=record.call_timeout or self.call_timeout,
            connect_timeout=self.connect_timeout,
            on_change=changed,
            oauth=oauth,
        )
        live.link = link
        await link.start()
        if self._live.get(record.id) is not live:
            await link.aclose()  # removed or replaced meanwhile
            return
        await self._link_status(live, link)

    async def _link_status(self, live: _Live, link: McpLink) -> None:
        """Show how the link is: connected (with its tools), waiting on a sign-in, or in
        error (saying when only a sign-in can help)."""
        if link.state == "connected":
            await self._listed(live, link.tools, link.instructions)
        elif link.sign_in is not None and link.state == "starting":
            await self._set_status(
                live,
                "starting",
                f"Waiting for {link.sign_in.user_id} to sign in to {live.record.name} in their "
                "browser.",
                sign_in="waiting",
            )
        else:
            await self._set_status(
                live,
                "error",
                link.message or "The server did not start.",
                sign_in="needed" if link.needs_sign_in else None,
            )

    async def _save_oauth(self, live: _Live, saved: OAuthSaved) -> None:
        """Keep what a sign-in (or a token refresh) gave among the sealed secrets: among those
        stored when it is written, not those this link started with, which an admin may have
        changed since in another process (this link then starts again with them)."""
        token = saved.to_secret()

        def with_token(stored: str | None) -> str | None:
            return self.secrets.seal({**self._readable(stored), OAUTH_SECRET: token})

        try:
            sealed = await self.repo.change_secrets(live.record.id, with_token)
        except ConnectionNotFound:
            return  # removed meanwhile: its link stops
        live.record = dataclasses.replace(live.record, secrets=sealed)

    async def _start_actions(self, live: _Live) -> None:
        """An HTTP action set: compiled from its file, under the connection's id and name,
        at the connection's ``baseUrl`` when it sets one. The secrets its file names
        (``auth.secret_env``, ``{source: secret, env: NAME}``) are the connection's own secrets
        of those names, never the server's environment."""
        record = live.record
        definition = self.catalog.get(record.app)
        action_set = action_set_of(record, definition, self.secrets)
        if isinstance(action_set, str):
            await self._set_status(live, "error", action_set)
            return
        built = action_tools(
            record,
            action_set,
            taken=self._static_names(),
            managed=managed_values(definition, record),
        )
        live.actions, live.clashes = built.actions, built.clashes
        live.tool_set = ToolSet(record.id, record.name, tools=built.tools, trusted=record.trusted)
        live.record = dataclasses.replace(record, tools=built.listing, server_instructions=None)
        self._changed()
        message = "; ".join(live.clashes) if live.clashes else None
        await self._set_status(live, "error" if message else "connected", message, listed=True)

    async def _listed(
        self, live: _Live, tools: Sequence[ListedTool], instructions: str | None
    ) -> None:
        listing = [t.to_json() for t in tools]
        live.record = dataclasses.replace(
            live.record, tools=listing, server_instructions=instructions
        )
        self._build_tool_set(live)
        message = "; ".join(live.clashes) if live.clashes else None
        await self._set_status(live, "error" if message else "connected", message, listed=True)

    async def _set_status(
        self,
        live: _Live,
        state: str,
        message: str | None,
        *,
        listed: bool = False,
        sign_in: str | None = None,
    ) -> None:
        status: dict[str, Any] = {
            "state": state,
            "toolCount": len(live.tool_set.tools) if live.tool_set is not None else 0,
            "listedAt": iso(utc_now()) if listed else live.record.status.get("listedAt"),
        }
        if message:
            status["message"] = message
        if sign_in:
            status["signIn"] = sign_in
        live.record = dataclasses.replace(live.record, status=status)
        self._changed()
        await self.repo.set_status(
            live.record.id,
            status,
            tools=live.record.tools if listed else None,
            server_instructions=live.record.server_instructions,
            version=live.record.version,
        )

    def _build_tool_set(self, live: _Live) -> None:
        """The tools of a listed connection, named for the model, with their classes."""
        record = live.record
        tools, live.clashes = mcp_tools(
            record,
            live.link,
            taken=self._static_names(),
            managed=managed_values(self.catalog.get(record.app), record),
        )
        live.tool_set = ToolSet(record.id, record.name, tools=tools, trusted=record.trusted)
        self._changed()

    def _static_names(self) -> dict[str, str]:
        """Every tool name of the agents' own connections, with the connection's name."""
        names: dict[str, str] = {}
        for agent in self._agents:
            for tool_set in agent._sets.values():
                for name in tool_set.tools:
                    names.setdefault(name, f"the connection {tool_set.name!r}")
        return names

    # --- reading ------------------------------------------------------------------------------

    def config_connections(self) -> dict[str, tuple[ToolSet, list[str]]]:
        """The connections of the configuration (the agents' own tool sets with tools), with
        the agents that have them."""
        found: dict[str, tuple[ToolSet, list[str]]] = {}
        for agent in self._agents:
            for connection_id, tool_set in agent._sets.items():
                if not tool_set.tools:
                    continue
                entry = found.setdefault(connection_id, (tool_set, []))
                entry[1].append(agent.name)
        return found

    def instruction_source(self, record: ConnectionRecord) -> InstructionSource:
        """What the saved connection could give a turn as instructions (see
        `handrail.connections.instructions.saved_source`)."""
        return saved_source(
            self.catalog.get(record.app),
            connection_id=record.id,
            name=record.name,
            app=record.app,
            kind=record.kind,
            settings=record.settings,
            secret_keys=record.secret_keys,
            setting=record.agent_instructions,
        )

    def saved(self) -> list[ConnectionRecord]:
        return sorted(
            (live.record for live in self._live.values()), key=lambda r: (r.created, r.id)
        )

    def live_record(self, connection_id: str) -> ConnectionRecord | None:
        live = self._live.get(connection_id)
        return live.record if live is not None else None

    def tool_set_of(self, connection_id: str) -> ToolSet | None:
        live = self._live.get(connection_id)
        if live is not None:
            return live.tool_set
        config = self.config_connections().get(connection_id)
        return config[0] if config else None

    def visible_to(self, principal: Principal, agents: Sequence[str]) -> list[ConnectionRecord]:
        """The saved connections `principal` may read: every one for an admin, else those an
        agent of `agents` may use."""
        records = self.saved()
        if principal.is_admin:
            return records
        return [r for r in records if r.agents is None or set(r.agents) & set(agents)]

    async def record_of(self, connection_id: str) -> ConnectionRecord:
        """The saved connection (read again when another process saved it)."""
        record = self.live_record(connection_id)
        if record is None:
            record = await self.repo.get(connection_id)
        if record is None:
            if connection_id in self.config_connections():
                raise ConnectionReadOnly(
                    f"The connection {connection_id!r} comes from the configuration file; "
                    "change it there and restart the server."
                )
            raise ConnectionUnknown(f"No connection has the id {connection_id!r}.")
        return record

    async def activity_page(self, *, limit: int, after: Position | None) -> Page[ActivityRecord]:
        return await self.activity.list_page(limit=limit, after=after)

    # --- changes ------------------------------------------------------------------------------

    async def create(
        self, principal: Principal, body: Mapping[str, Any], *, signer: Signer | None = None
    ) -> ConnectionRecord:
        """Save a new connection from a checked ``POST /connections`` body and start it (a
        server that requires signing in waits on `signer`'s sign-in)."""
        app = str(body["app"])
        definition = app_definition(self.catalog, app)
        kind = definition.kind if definition is not None else str(body.get("kind") or "")
        fields: dict[str, str] = {}
        launch = custom_launch(body, kind, fields) if definition is None else None
        if definition is not None:
            for key in ("kind", "mcp", "actions"):
                if key in body:
                    fields[key] = f"is for custom connections only; the app {app} says it"
        settings = checked_settings(definition, body.get("settings") or {}, fields)
        secrets = checked_secrets(definition, body.get("secrets") or {}, fields)
        overrides = checked_overrides(body.get("overrides") or {}, fields)
        approvals, problems = check_approvals(body.get("approvals"), users=self.users)
        fields.update(problems)
        agents = agent_names(body.get("agents"), {a.name for a in self._agents}, fields)
        name = str(body["name"]).strip()
        protocol = str(body.get("protocol") or (launch or {}).get("protocol") or "auto")
        instructions = None
        if "agentInstructions" in body:
            instructions, problems = check_setting(body["agentInstructions"])
            fields.update(problems)
        elif definition is not None and definition.agent_instructions is not None:
            # A new connection adopts its app's current template, on.
            instructions = template_setting(definition.agent_instructions)
        if fields:
            raise invalid(fields)
        prefix = tool_prefix(name)
        self._check_prefix(prefix, name, None)
        now = utc_now()
        record = ConnectionRecord(
            id=new_id(),
            app=app,
            name=name,
            prefix=prefix,
            kind=kind,
            protocol=protocol,
            launch=launch,
            settings=settings,
            secrets=self.secrets.seal(secrets),
            secret_keys=tuple(sorted(secrets)),
            trusted=bool(body.get("trusted", False)),
            agents=agents,
            overrides=overrides,
            approvals=approvals,
            agent_instructions=instructions,
            status={"state": "starting", "toolCount": 0, "listedAt": None},
            call_timeout=timeout_of(body.get("timeout")),
            created=now,
            updated=now,
        )
        try:
            await self.repo.add(record)
        except PrefixTaken:
            raise self._name_taken(prefix, name) from None
        await self.activity.add(
            actor=principal.user_id,
            action="connection.created",
            subject=record.id,
            changes=public_changes(record, CREATE_FIELDS),
        )
        async with self._lock:
            live = await self._restart(record, signer)
        return live.record

    async def update(
        self,
        principal: Principal,
        connection_id: str,
        body: Mapping[str, Any],
        *,
        signer: Signer | None = None,
    ) -> ConnectionRecord:
        """Apply a checked ``PATCH /connections/{id}`` body; the link starts again when what
        it runs on changed."""
        record = await self.record_of(connection_id)
        definition = app_definition(self.catalog, record.app) if record.app != CUSTOM else None
        fields: dict[str, str] = {}
        changes: dict[str, Any] = {}
        if "name" in body:
            name = str(body["name"]).strip()
            changes["name"] = name
            changes["prefix"] = tool_prefix(name)
        if "settings" in body:
            merged = {**record.settings}
            for key, value in (body["settings"] or {}).items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            changes["settings"] = checked_settings(definition, merged, fields)
        if "secrets" in body:
            if definition is None and record.app != CUSTOM:
                fields["secrets"] = "cannot be checked: the app is not in the catalog"
            # Saved under another key: the ones sent now replace them all.
            current = self._readable(record.secrets)
            current.pop(OAUTH_SECRET, None)  # the sign-in's, not the admin's
            for key, value in (body["secrets"] or {}).items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            checked = checked_secrets(definition, current, fields)
            changes["secrets"] = self._with_stored_sign_in(checked)
            changes["secret_keys"] = tuple(sorted(checked))
        if "trusted" in body:
            changes["trusted"] = bool(body["trusted"])
        if "agents" in body:
            changes["agents"] = agent_names(body["agents"], {a.name for a in self._agents}, fields)
        if "overrides" in body:
            changes["overrides"] = checked_overrides(body["overrides"] or {}, fields)
        if "approvals" in body:
            listed = [str(t.get("name")) for t in record.tools] if record.tools else None
            # An action set's read-only actions run without a gate: no approver holds them.
            unheld = [
                str(t.get("name"))
                for t in record.tools
                if record.kind == "actions" and (t.get("annotations") or {}).get("readOnlyHint")
            ]
            changes["approvals"], problems = check_approvals(
                body["approvals"], users=self.users, tools=listed, unheld=unheld
            )
            fields.update(problems)
        if "protocol" in body:
            changes["protocol"] = str(body["protocol"])
        if "timeout" in body:
            changes["call_timeout"] = timeout_of(body["timeout"])
        if "agentInstructions" in body:
            setting, problems = check_setting(body["agentInstructions"])
            fields.update(problems)
            changes["agent_instructions"] = setting
        if "mcp" in body:
            if record.app != CUSTOM:
                fields["mcp"] = f"is for custom connections only; the app {record.app} says it"
            else:
                changes["launch"] = custom_launch(body, record.kind, fields)
        if fields:
            raise invalid(fields)
        if "prefix" in changes and changes["prefix"] != record.prefix:
            self._check_prefix(changes["prefix"], changes["name"], record.id)
        elif "prefix" in changes:
            del changes["prefix"]
        try:
            updated = await self.repo.update(record.id, record.version, changes)
        except PrefixTaken:
            raise self._name_taken(changes.get("prefix", ""), changes.get("name", "")) from None
        await self.activity.add(
            actor=principal.user_id,
            action="connection.updated",
            subject=record.id,
            changes=public_changes(updated, changes, body=body),
        )
        return await self._after_change(updated, changes, signer)

    def _with_stored_sign_in(self, secrets: dict[str, Any]) -> SecretsChange:
        """An admin's `secrets`, sealed with the sign-in's tokens stored when the change is
        written (a refresh in any process may have renewed them since the row was read)."""

        def sealed(stored: str | None) -> str | None:
            token = self._readable(stored).get(OAUTH_SECRET)
            return self.secrets.seal(secrets if token is None else {**secrets, OAUTH_SECRET: token})

        return sealed

    def _readable(self, sealed: str | None) -> dict[str, str]:
        """The secrets `sealed` holds; none when they were sealed under another key (what is
        written now replaces them)."""
        try:
            return self.secrets.open(sealed)
        except SecretsUnreadable:
            return {}

    async def _after_change(
        self,
        updated: ConnectionRecord,
        changes: Mapping[str, Any],
        signer: Signer | None = None,
    ) -> ConnectionRecord:
        """Start the link again, unless only the instructions changed: they are read per
        turn, so the server keeps running (and its listing stays)."""
        async with self._lock:
            live = self._live.get(updated.id)
            if set(changes) <= {"agent_instructions"} and live is not None:
                live.record = dataclasses.replace(
                    live.record,
                    agent_instructions=updated.agent_instructions,
                    version=updated.version,
                    updated=updated.updated,
                )
                self._changed()
                return live.record
            live = await self._restart(updated, signer)
        return live.record

    async def reset_instructions(
        self, principal: Principal, connection_id: str
    ) -> ConnectionRecord:
        """Adopt the app's current template as the connection's instructions, keeping the
        toggle (on when it had no instructions). `NoInstructionsTemplate` when its app has
        none."""
        record = await self.record_of(connection_id)
        definition = self.catalog.get(record.app) if record.app != CUSTOM else None
        template = definition.agent_instructions if definition is not None else None
        if template is None:
            raise NoInstructionsTemplate(
                f"The connection {record.name!r} has no default instructions to reset to: its "
                "app has no template. Edit its instructions instead, or set them to null.",
                code="NO_INSTRUCTIONS_TEMPLATE",
            )
        current = record.agent_instructions
        enabled = bool(current.get("enabled")) if isinstance(current, Mapping) else True
        setting = template_setting(template, enabled=enabled)
        changes = {"agent_instructions": setting}
        updated = await self.repo.update(record.id, record.version, changes)
        await self.activity.add(
            actor=principal.user_id,
            action="connection.instructions.reset",
            subject=record.id,
            changes={"agentInstructions": setting},
        )
        return await self._after_change(updated, changes)

    async def delete(self, principal: Principal, connection_id: str) -> None:
        """Remove a saved connection: its tools leave the next turn, its server stops."""
        record = await self.record_of(connection_id)
        await self.repo.delete(record.id)
        await self.activity.add(
            actor=principal.user_id,
            action="connection.deleted",
            subject=record.id,
            changes={"name": record.name, "app": record.app},
        )
        async with self._lock:
            await self._stop(record.id)

    async def refresh(
        self, principal: Principal, connection_id: str, *, signer: Signer | None = None
    ) -> ConnectionRecord:
        """List the connection's tools again (starting its server again when it is down, or
        when it waits on a sign-in: then `signer` may sign in)."""
        record = await self.record_of(connection_id)
        live = self._live.get(record.id)
        link = live.link if live is not None else None
        if link is None or link.needs_sign_in or link.sign_in is not None:
            async with self._lock:
                live = await self._restart(await self.repo.get(record.id) or record, signer)
        else:
            assert live is not None
            try:
                tools = await link.refresh()
            except McpCallFailed as exc:
                await self._set_status(live, "error", str(exc))
            else:
                await self._listed(live, tools, link.instructions)
        await self.activity.add(
            actor=principal.user_id,
            action="connection.refreshed",
            subject=record.id,
            changes={"toolCount": live.record.status.get("toolCount", 0)},
        )
        return live.record

    async def authorize(
        self, principal: Principal, connection_id: str, *, signer: Signer
    ) -> ConnectionRecord:
        """Start the connection again so that `signer` signs in to its server (OAuth): the
        answer's status carries the sign-in's URL (`pending_sign_in`) when the server asks
        for one."""
        record = await self.record_of(connection_id)
        if record.kind != "mcp-http":
            raise InvalidConnection(
                f"The connection {record.name} is not an HTTP MCP server, so there is nothing "
                "to sign in to.",
                code="CONNECTION_NO_SIGN_IN",
            )
        async with self._lock:
            live = await self._restart(await self.repo.get(record.id) or record, signer)
        await self.activity.add(
            actor=principal.user_id,
            action="connection.authorized",
            subject=record.id,
            changes={"signIn": live.record.status.get("signIn") or live.record.status["state"]},
        )
        return live.record

    def pending_sign_in(self, connection_id: str, user_id: str) -> SignIn | None:
        """The sign-in `user_id` started for the connection and has not finished."""
        sign_in = self.sign_ins.pending(connection_id)
        return sign_in if sign_in is not None and sign_in.user_id == user_id else None

    async def finish_sign_in(
        self,
        state: str | None,
        *,
        code: str | None,
        error: str | None = None,
        error_description: str | None = None,
        iss: str | None = None,
    ) -> ConnectionRecord:
        """The browser came back from the authorization server: hand its answer to the
        sign-in named by `state` (`SignInUnknown` when there is none) and wait for the
        connection to connect or fail."""
        live = None
        sign_in = self.sign_ins.get(state)
        if sign_in is not None:
            live = self._live.get(sign_in.connection_id)
        before = live.link.reports if live is not None and live.link is not None else 0
        sign_in = self.sign_ins.finish(
            state, code=code, error=error, error_description=error_description, iss=iss
        )
        if live is not None and live.link is not None:
            await live.link.wait_reported(before, self.connect_timeout + 5)
        live = self._live.get(sign_in.connection_id)
        if live is None:
            return await self.record_of(sign_in.connection_id)
        return live.record

    # --- checks ---------------------------------------------------------------------------------

    def _check_prefix(self, prefix: str, name: str, own_id: str | None) -> None:
        for live in self._live.values():
            if live.record.prefix == prefix and live.record.id != own_id:
                raise self._name_taken(prefix, name, live.record)

    def _name_taken(
        self, prefix: str, name: str, other: ConnectionRecord | None = None
    ) -> NameTaken:
        if other is None:
            other = next(
                (live.record for live in self._live.values() if live.record.prefix == prefix),
                None,
            )
        return name_taken(prefix, name, other)
