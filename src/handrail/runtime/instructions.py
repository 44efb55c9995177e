"""Connection instructions per turn: which connections' guidance a caller's turn gets.

`resolve_instructions` reads only what is saved and in memory: each connection's instruction
setting and the tool lists the agent holds now (no call to any server), and the caller's
permission levels and grants. A connection gives a block when its instructions are enabled,
every required field is set, the agent may use it, and at least one of its tools is not denied
to the caller under the current policy (levels, grants, admins' overrides: a tool that needs an
approval or a permission ask counts, a denied one does not). It is read again every turn, so a
revoked connection or a tool taken away shows at once.

Guidance grants nothing: every tool call still passes every gate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..connections.instructions import (
    InstructionBlock,
    InstructionSource,
    Snapshot,
    compose_snapshot,
)
from ..policy import decide
from ..store import Store
from .agent import Agent
from .turn import Principal

__all__ = ["ResolvedInstructions", "SourceView", "resolve_instructions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceView:
    """One connection that has instructions, and why it does or does not give a block
    (`reason`: None when it does)."""

    source: InstructionSource
    block: InstructionBlock | None
    reason: str | None

    def to_json(self) -> dict[str, object]:
        setting = self.source.setting or {}
        out: dict[str, object] = {
            "connectionId": self.source.connection_id,
            "name": self.source.name,
            "connector": self.source.connector,
            "method": self.source.method,
            "enabled": bool(setting.get("enabled")),
            "text": setting.get("text") or "",
            "template": setting.get("template"),
            "delivered": self.block is not None,
            "reason": self.reason,
            "missing": list(self.source.missing),
            "docsUrl": self.source.docs_url,
        }
        if self.block is not None:
            out["source"] = self.block.source()
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedInstructions:
    """The snapshot (None: no blocks) and every connection with instructions considered."""

    snapshot: Snapshot | None
    sources: tuple[SourceView, ...] = ()


async def resolve_instructions(
    store: Store, agent: Agent, principal: Principal, *, history_id: str | None
) -> ResolvedInstructions:
    """The instructions a turn of `agent` for `principal` in `history_id` gets now."""
    candidates = agent.instruction_sources()
    if not candidates:
        return ResolvedInstructions(snapshot=None)
    connections = agent.connections
    levels: dict[str, str] | None = None
    granted: dict[str, set[str]] = {}
    views: list[SourceView] = []
    for connection_id in sorted(candidates):
        source = candidates[connection_id]
        if not source.enabled:
            views.append(SourceView(source=source, block=None, reason="turned off"))
            continue
        if source.missing:
            reason = "required settings are not set: " + ", ".join(source.missing)
            views.append(SourceView(source=source, block=None, reason=reason))
            continue
        tool_set = connections.get(connection_id)
        if tool_set is None or not tool_set.tools:
            views.append(SourceView(source=source, block=None, reason="no tools are offered"))
            continue
        if levels is None:
            levels = {
                p.connection_id: p.level for p in await store.permissions.list(principal.user_id)
            }
            for grant in await store.grants.list(principal.user_id):
                if grant.scope == "always" or (
                    history_id is not None and grant.history_id == history_id
                ):
                    granted.setdefault(grant.connection_id, set()).add(grant.tool_name)
        level = levels.get(connection_id)
        mine = granted.get(connection_id, set())
        usable = [
            tool.name
            for tool in tool_set.tools.values()
            if decide(
                tool.safety(trusted=tool_set.trusted),
                level=level,  # type: ignore[arg-type]
                granted=tool.name in mine,
                asks_enabled=agent.asks is not None,
            ).action
            != "deny"
        ]
        if not usable:
            reason = "none of its tools may be used by you under the current policy"
            views.append(SourceView(source=source, block=None, reason=reason))
            continue
        block = source.block(level=level, granted_tools=sorted(mine & set(usable)))
        views.append(SourceView(source=source, block=block, reason=None))
    snapshot = compose_snapshot(v.block for v in views if v.block is not None)
    return ResolvedInstructions(snapshot=snapshot, sources=tuple(views))
